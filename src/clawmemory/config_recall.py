"""The ``[recall]`` and ``[time]`` sections: how recall ranks and reads time (split out of
``config`` for length; import them from there). docs/configuration.md documents each key.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from clawmemory.config_base import Section, zone

__all__ = ["RecallSettings", "TimeSettings"]


_LISTS = ("keyword", "vector", "entity")


# The settings each fusion formula reads (search/fusion.py); the others are inert under it.
_FUSION_SETTINGS: dict[str, tuple[str, ...]] = {
    "calibrated": ("calibrated_text_weight", "calibrated_vector_weight",
                   "calibrated_entity_weight", "calibrated_floor", "keyword_top_bonus",
                   "keyword_tie"),
    "weighted": ("text_weight", "vector_weight", "entity_weight"),
    "rrf": ("rrf_k", "list_weights"),
}


class RecallSettings(Section):
    limit: int = Field(default=5, ge=1, le=1000)  # 000 recall_limit
    # auto (hybrid when an embedder works, else keyword) | keyword | vector | hybrid
    mode: Literal["auto", "keyword", "vector", "hybrid"] = "auto"
    # A longer query is refused before any parsing: the sanitiser keeps 32 words and the
    # embedding model reads ~256 tokens, so more text only costs time.
    max_query_chars: int = Field(default=10_000, ge=1, le=1_000_000)
    list_weights: dict[str, float] = Field(
        default_factory=lambda: {"keyword": 1.0, "vector": 1.0, "entity": 0.5}
    )
    # a neighbour reached by depth=1 scores its parent's score × this
    link_decay: float = Field(default=0.5, ge=0, le=1)
    # × the fused score of adjacent turns (ADR 0005)
    neighbour_weight: float = Field(default=0.15, ge=0)
    # + this × the best score among the session_top best other candidates of the same session
    # (ADR 0020; 0 = off)
    session_weight: float = Field(default=0.25, ge=0, le=1)
    session_top: int = Field(default=5, ge=1, le=1000)
    # Vector mode ranks by ((cos + 1) / 2) ** this × the factors: plain cosines are too flat
    # for a × 1.5 time factor not to outrank meaning (ADR 0031; 1 = off).
    vector_sharpness: float = Field(default=4.0, ge=1, le=20)
    # Knowledge updates (search/updates.py): of two hits stating the same thing differently,
    # the newer ranks first and the older is marked superseded in its explanation.
    latest_first: bool = True
    # A memory said by the one the question names ("What did Melanie paint?": Melanie's own
    # turns, by ``source_role``) × (1 + this). LoCoMo hybrid: every category up or level at
    # 0.1, the adversarial questions (which name the wrong speaker) fall from 0.2 on; keyword
    # and vector mode lose them a little already at 0.1 (ADR 0026).
    speaker_boost: float = Field(default=0.1, ge=0, le=10)
    # "auto" mode without vectors: fuse the keyword and entity lists (004's fallback when no
    # embedder works) instead of keyword search alone
    entity_without_vectors: bool = False
    # weighted fusion: weight of the entity list (max-normalised)
    entity_weight: float = Field(default=0.0, ge=0)
    co_recall: bool = False  # 003 v2 co-recall links (off: see docs/benchmark-history.md)
    co_recall_increment: float = Field(default=0.1, ge=0)
    co_recall_boost: float = Field(default=0.05, ge=0)
    co_recall_max_boost: float = Field(default=0.2, ge=0)
    # candidates per list before re-ranking
    candidate_pool: int = Field(default=50, ge=1, le=100_000)
    # Vector similarity is cosine around the namespace's mean vector once it holds this many
    # vectors (0 = plain cosine). Measured on LoCoMo: ADR 0007.
    centre_min_rows: int = Field(default=50, ge=0)
    # ... and only while that mean (of unit vectors) is at least this long: texts that share a
    # direction (one conversation) gain from centring, diverse ones lose (ADR 0029). 0: always.
    centre_min_norm: float = Field(default=0.39, ge=0, le=1)
    rrf_k: int = Field(default=60, ge=0)  # 002/004
    # "calibrated" (each list standardised; ADR 0011), "weighted" (000) or "rrf" (002/004)
    fusion: Literal["calibrated", "weighted", "rrf"] = "calibrated"
    calibrated_text_weight: float = Field(default=0.6, ge=0)  # × z(keyword) (ADR 0011)
    calibrated_vector_weight: float = Field(default=0.4, ge=0)  # × z(cosine) (ADR 0011)
    # × entity score / best entity score (ADR 0011)
    calibrated_entity_weight: float = Field(default=0.1, ge=0)
    # z-scores below −this count as −this (ADR 0011)
    calibrated_floor: float = Field(default=0.5, ge=0, le=10)
    # added to the keyword list's best match (ADR 0011)
    keyword_top_bonus: float = Field(default=0.5, ge=0)
    # Keyword candidates holding the same query words within this share of the best of them
    # score as that best: their BM25 differences are document length (ADR 0011). 0 = off.
    keyword_tie: float = Field(default=0.2, ge=0, lt=1)
    # The relevance floor (search/floor.py, ADR 0011): a recall whose candidates show no sign
    # of relevance returns nothing. Cosines are the (centred) cosines recall explains.
    relevance_floor: bool = True
    # hybrid: a candidate this similar is relevant by itself
    floor_cosine: float = Field(default=0.45, ge=-1, le=1)
    # hybrid: ... or holding this share of the query's words
    floor_keyword_share: float = Field(default=0.34, ge=0, le=1)
    # hybrid: ... or holding a query word at this cosine
    floor_keyword_cosine: float = Field(default=0.25, ge=-1, le=1)
    # vector mode: the best candidate's cosine at least this
    floor_vector_cosine: float = Field(default=0.3, ge=-1, le=1)
    # found by similarity alone: dropped below this
    floor_candidate_cosine: float = Field(default=0.15, ge=-1, le=1)
    # the first two, where cosines are plain (small namespace)
    floor_plain_cosine: float = Field(default=0.25, ge=-1, le=1)
    # the last two, where cosines are plain
    floor_plain_candidate: float = Field(default=0.1, ge=-1, le=1)
    # Recall's access counts are written by a background thread this long after the first
    # queued one (search/access.py); 0 writes them in the request path.
    touch_delay_s: float = Field(default=1.0, ge=0, le=3600)
    text_weight: float = Field(default=0.4, ge=0)  # weighted mode, as 000 (ADR 0004, ADR 0007)
    vector_weight: float = Field(default=0.6, ge=0)  # weighted mode, as 000 (ADR 0004, ADR 0007)
    score_weight: float = Field(default=0.2, ge=0, le=1)  # 003: exp(score * 0.2)
    # "koshi" (003: 1/(1+rate*days)), "half-life" (000), "none"
    recency: Literal["koshi", "half-life", "none"] = "koshi"
    # 003's rate is 0.01 (the koshi profile): a memory of six months counted 0.36 of today's,
    # which buried old answers in a long history (LoCoMo asked at its end: R@10 0.763 -> 0.718).
    # 0.0002 keeps "newest first among equals" (a year: x0.93) for 0.001 of that R@10 (0.764
    # with no recency at all; ADR 0026).
    recency_per_day: float = Field(default=0.0002, ge=0)
    recency_half_life_s: float = Field(default=0.0, ge=0)  # 000; only with recency = "half-life"
    stopwords: bool = True  # drop English function words from keyword queries (see sanitize.py)
    # Keyword matches by stem (the index's porter stemmer: "running" finds "runs"). False
    # (003): a keyword hit must hold one of the query's words as written.
    stems: bool = True
    weight_key: float = Field(default=2.0, ge=0)  # 000: key matches weigh twice content matches
    weight_content: float = Field(default=1.0, ge=0)
    weight_tags: float = Field(default=1.5, ge=0)
    weight_source: float = Field(default=0.5, ge=0)
    # A dialogue turn's context: the words of the turns before it (storage.keyword_context,
    # ADR 0036), 0.3 of a word of the turn's own (swept 0.15-0.7 on LoCoMo and LongMemEval).
    # PostgreSQL ranks it with weight_source: ts_rank has four weight labels.
    weight_context: float = Field(default=0.3, ge=0)

    @field_validator("list_weights")
    @classmethod
    def _known_lists(cls, weights: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(weights) - set(_LISTS))
        if unknown:
            raise ValueError(f"unknown candidate list {unknown[0]!r}; the lists are "
                             f"{', '.join(_LISTS)}")
        if any(w < 0 for w in weights.values()):
            raise ValueError("weights must be 0 or more")
        return weights

    @model_validator(mode="after")
    def _no_inert_setting(self) -> RecallSettings:
        """A setting the chosen formula never reads is a mistake the user would not notice."""
        for formula, names in _FUSION_SETTINGS.items():
            if formula == self.fusion:
                continue
            for name in names:
                if name not in _FUSION_SETTINGS[self.fusion]:
                    self._inert(name, f'recall.fusion is "{self.fusion}"',
                                f'set recall.fusion = "{formula}" to use it, or remove'
                                f" recall.{name}")
        if (self.recency_half_life_s > 0 and "recency" not in self.model_fields_set
                and self.recency == "koshi"):
            self.recency = "half-life"  # a half-life alone asks for 000's formula
        if self.recency != "half-life":
            self._inert("recency_half_life_s", f'recall.recency is "{self.recency}"',
                        'set recall.recency = "half-life" to use it, or remove '
                        "recall.recency_half_life_s")
        elif self.recency_half_life_s <= 0:
            raise ValueError('recency = "half-life" needs recency_half_life_s > 0 (seconds for '
                             'a memory\'s weight to halve, e.g. 2592000 for 30 days), or set '
                             'recall.recency = "none"')
        if self.recency != "koshi":
            self._inert("recency_per_day", f'recall.recency is "{self.recency}"',
                        'set recall.recency = "koshi" to use it, or remove recall.recency_per_day')
        if not self.co_recall:
            for name in ("co_recall_increment", "co_recall_boost", "co_recall_max_boost"):
                self._inert(name, "recall.co_recall is false",
                            f"set recall.co_recall = true to use it, or remove recall.{name}")
        return self


class TimeSettings(Section):
    """Time in recall and on the write path (ADR 0017): ``since``/``until``/``as_of`` given as
    expressions, time expressions in queries, and event times read from stored text."""

    # The zone in which "yesterday", "last March" and dates without a time of day are read:
    # an IANA name ("Europe/Berlin"), "UTC", or "local" (this machine's zone).
    time_zone: str = "UTC"
    # Languages of time expressions (dateparser codes); more languages cost parsing time.
    languages: list[str] = Field(default_factory=lambda: ["en"], min_length=1, max_length=20)
    # Memories whose event time (or, without one, creation time) lies in a period the query
    # names ("last March", "four weeks ago") rank higher: × (1 + query_boost) inside it,
    # less the further outside. 0 turns the factor off.
    query_boost: float = Field(default=0.5, ge=0, le=10)
    # Hybrid recall also takes the memories of that period as candidates (the most similar
    # ones when vectors exist): a question such as "what did I do yesterday?" shares no
    # word with what was done.
    query_candidates: bool = True
    # A question about the newest or oldest occasion ("most recently", "the last time",
    # "the first time") ranks candidates by when they happened: × (1 + order_boost) for the
    # newest (oldest), × 1 for the other end. 0 turns it off.
    order_boost: float = Field(default=0.5, ge=0, le=10)
    # A question asking for a time ("When did...?") ranks memories that state one ("last
    # Friday", "in 2022", a date) × (1 + answer_boost): the statement that answers it.
    answer_boost: float = Field(default=1.0, ge=0, le=10)
    # A stored text with exactly one unambiguous day ("yesterday", "3 days ago", "on
    # 15 July 2023") gets that day as its event_time, read against the event_time given
    # (or the time of storing).
    from_text: bool = True

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        zone(value)  # raises ValueError naming the problem
        return value

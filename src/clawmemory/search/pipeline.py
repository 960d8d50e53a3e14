"""The retrieval pipeline: candidate lists -> fusion -> ranking factors -> links -> explained hits.

Candidate lists, each best first:

* ``keyword``: the store's full-text index (BM25), or substring matching when the index finds
  nothing (000's LIKE fallback);
* ``vector``: nearest neighbours of the query embedding (when an embedder is configured);
* ``entity``: memories linked to entities named in the query (004);
* ``time`` (hybrid, when the query names a period: "last March", ADR 0017): the memories that
  happened in that period, the most similar to the query first.

Fusion (``search/fusion.py``) is ``calibrated`` by default (each list standardised on its own
candidates; ADR 0011), or 000's ``weighted`` formula, or RRF (002/004). A single list keeps its
own relevance. The fused score is multiplied by the ranking factors (reinforcement, recency,
confidence, the co-recall boost when enabled, and ``time`` when the query names a period);
``depth=1`` then follows links one hop (000).
"""

from __future__ import annotations

import functools
import math
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import RankInfo, Store, TextHit, is_turn
from clawmemory.config import RecallSettings, TimeSettings
from clawmemory.model import (
    Explanation,
    Filter,
    Hit,
    Link,
    MemoryRecord,
    event_or_created,
)
from clawmemory.search import fusion
from clawmemory.search.floor import apply_floor
from clawmemory.search.fusion import Fused
from clawmemory.search.ranking import factors
from clawmemory.search.sanitize import (
    MAX_LIKE_WORDS,
    content_terms,
    like_tokens,
    sanitize_terms,
)
from clawmemory.search.temporal import (
    Period,
    asks_order,
    asks_when,
    order_factors,
    query_periods,
    states_time,
    time_factor,
    zone,
)
from clawmemory.search.updates import latest_first
from clawmemory.text import phrase_count, stems_starting, tokenize
from clawmemory.vectors.base import VectorStore

if TYPE_CHECKING:  # numpy loads on first vector use, not at import
    import numpy as np
    import numpy.typing as npt

__all__ = ["Candidates", "RecallRequest", "Retriever"]

EntitySearch = Callable[[str, str, int], list[tuple[str, str, float]]]
# The memories of a named period considered for the ``time`` list: the newest this many (the
# vector search then picks the most similar of them).
_PERIOD_CAP = 10_000


@dataclass(frozen=True, slots=True)
class RecallRequest:
    namespace: str
    query: str
    limit: int
    flt: Filter
    now: float
    mode: str = "keyword"  # keyword | vector | hybrid
    depth: int = 0


@dataclass
class Candidates:
    """One ranked candidate list: (ranking fields, raw relevance) best first."""

    name: str
    measure: str
    items: list[tuple[RankInfo, float]] = field(default_factory=list)
    via: str | None = None
    detail: dict[str, str] = field(default_factory=dict)  # per-id note (matched entity)
    texts: dict[str, str] = field(default_factory=dict)  # searchable texts the search read


# A ranked candidate: its id, final score, ranking factors and session support (or None); its
# explanation is made only if it is kept.
_Ranked = tuple[str, float, dict[str, float], float | None]

# Smoothing's links of the keyword and entity candidates, read beside the recall.
_LinksAhead = Future[dict[str, list[Link]]] | None


@dataclass
class _Prepared:
    """Fusion's and ranking's work on the keyword and entity candidates, done while the vector
    side runs (after it, every step is on the recall's critical path): the candidates of the
    first ``lists`` lists, calibrated fusion's keyword half and each candidate's factors."""

    fused: dict[str, Fused]
    lists: int
    side: fusion.KeywordSide | None
    factors: dict[str, dict[str, float]]


class Retriever:
    def __init__(
        self,
        store: Store,
        cfg: RecallSettings,
        *,
        vectors: VectorStore | None = None,
        embed_query: Callable[[str], npt.NDArray[np.float32]] | None = None,
        entity_search: EntitySearch | None = None,
        time_cfg: TimeSettings | None = None,
    ) -> None:
        self.store = store
        self.cfg = cfg
        self.time_cfg = time_cfg or TimeSettings()
        self.vectors = vectors
        self.embed_query = embed_query
        self.entity_search = entity_search
        # Milliseconds per stage of the last recall (embed, vector, keyword, entity, fusion):
        # for bench/speed.py and profiling; the vector side runs beside keyword and entity.
        self.stages: dict[str, float] = {}

    # --- candidate lists -----------------------------------------------------------------------
    def _terms(self, req: RecallRequest) -> list[str]:
        """The query's search terms: its words less function words (``recall.stopwords``)."""
        terms = sanitize_terms(req.query)
        return content_terms(terms) if self.cfg.stopwords else terms

    def keyword(self, req: RecallRequest, pool: int) -> tuple[Candidates, list[str]]:
        terms = self._terms(req)
        hits = self.store.keyword_search(req.namespace, terms, req.flt, limit=pool) if terms else []
        if hits and not self.cfg.stems:
            hits = self._as_written(req.namespace, hits, terms)
        if hits:
            texts = {h.info.id: h.text for h in hits if h.text is not None}
            return Candidates("keyword", "bm25", [(h.info, h.relevance) for h in hits],
                              texts=texts), terms
        tokens = like_tokens(req.query)
        if len(content_terms(tokens)) > MAX_LIKE_WORDS:  # a long query: no fallback (sanitize)
            tokens = []
        hits = self.store.like_search(req.namespace, tokens, req.flt, limit=pool) if tokens else []
        return (
            Candidates(
                "keyword",
                "tokens_found",
                [(h.info, h.relevance) for h in hits],
                via="like-fallback",
            ),
            tokens,
        )

    def _as_written(self, namespace: str, hits: list[TextHit], terms: list[str]) -> list[TextHit]:
        """The hits holding one of ``terms`` as written (``recall.stems = false``, 003): the
        index matches by stem, so "runs" finds "running"; 003 matches words, not stems."""
        records = {r.id: r for r in self.store.get_many(namespace, [h.info.id for h in hits])}
        words = [re.compile(rf"(?<!\w){re.escape(t)}(?!\w)", re.IGNORECASE) for t in terms]
        kept = []
        for h in hits:
            r = records.get(h.info.id)
            text = r.searchable if r else ""
            if any(w.search(text) for w in words):
                kept.append(h)
        return kept

    def vector(
        self, req: RecallRequest, qv: npt.NDArray[np.float32], pool: int,
        known: dict[str, RankInfo] | None = None,
    ) -> Candidates:
        assert self.vectors is not None
        # Headroom for the neighbours the filter drops: a restrictive filter may drop many, no
        # filter only the invalidated (corrected) ones. On PostgreSQL each neighbour is an
        # index walk step and a row read.
        k = pool * 2 if req.flt.restrictive else pool + max(10, pool // 5)
        found = self.vectors.search(req.namespace, qv, k)
        items = self._records(req, found, pool, known)
        if len(items) < req.limit and req.flt.restrictive:
            # The filter removed most neighbours: search again among the allowed ids only.
            allowed = [r.id for r in self.store.list(req.namespace, req.flt, limit=100_000)]
            items = self._records(
                req, self.vectors.search(req.namespace, qv, pool, allowed=allowed), pool
            )
        return Candidates("vector", "cosine", items)

    def _vector_side(
        self, req: RecallRequest, pool: int, embedded: Future[Any] | None = None,
        known: dict[str, RankInfo] | None = None,
    ) -> tuple[Any, Candidates]:
        """The query embedding (handed to ``embedded`` as soon as it is there) and the vector
        list (``known``: the ranking fields the other lists have read by then)."""
        assert self.embed_query is not None
        t = time.perf_counter()
        try:
            qv = self.embed_query(req.query)
        except BaseException as exc:
            if embedded is not None:
                embedded.set_exception(exc)
            raise
        if embedded is not None:
            embedded.set_result(qv)
        t1 = time.perf_counter()
        found = self.vector(req, qv, pool, known)
        self.stages["embed"], self.stages["vector"] = _ms(t, t1), _ms(t1, time.perf_counter())
        return qv, found

    def entity(
        self, req: RecallRequest, pool: int, known: dict[str, RankInfo] | None = None
    ) -> Candidates:
        assert self.entity_search is not None
        found = self.entity_search(req.namespace, req.query, pool * 2)
        items = self._records(req, [(mid, score) for mid, _, score in found], pool, known)
        return Candidates("entity", "entities", items, detail={mid: name for mid, name, _ in found})

    def periods(self, req: RecallRequest) -> tuple[Period, ...]:
        """The periods the query names ("last March"), read against the recall's time."""
        t = self.time_cfg
        if t.query_boost <= 0 and not t.query_candidates:
            return ()
        return query_periods(req.query, req.now, zone(t.time_zone), tuple(t.languages))

    def period_list(
        self, req: RecallRequest, periods: Sequence[Period], qv: npt.NDArray[np.float32],
        pool: int,
    ) -> Candidates:
        """The memories that happened in the named periods, the most similar first."""
        assert self.vectors is not None
        allowed: dict[str, None] = {}
        for p in periods:
            flt = replace(req.flt, since=max(p.start, req.flt.since or p.start),
                          until=min(p.end, req.flt.until or p.end))
            if flt.since is not None and flt.until is not None and flt.since < flt.until:
                allowed.update((r.id, None) for r in self.store.list(
                    req.namespace, flt, limit=_PERIOD_CAP, order="newest"))
        if not allowed:
            return Candidates("time", "cosine")
        found = self.vectors.search(req.namespace, qv, pool, allowed=list(allowed))
        return Candidates("time", "cosine", self._records(req, found, pool))

    def _records(
        self, req: RecallRequest, scored: Sequence[tuple[str, float]], pool: int,
        known: dict[str, RankInfo] | None = None,
    ) -> list[tuple[RankInfo, float]]:
        """The first ``pool`` of ``scored`` that pass the filter, with their ranking fields.
        The ids are read ``pool`` at a time (a search asks for headroom the filter rarely
        uses), and ids in ``known`` (ranked by another list, through the same filter) are not
        read again."""
        known = known if known is not None else {}
        ids = [i for i, _ in scored]
        infos: dict[str, RankInfo] = {}
        start = 0
        while start < len(ids):
            part = ids[start:start + pool]
            start += len(part)
            infos.update((i, known[i]) for i in part if i in known)
            missing = [i for i in part if i not in known]
            if missing:
                infos.update(self.store.rank_info(req.namespace, missing, req.flt))
            if len(infos) >= pool:
                break
        return [(infos[i], s) for i, s in scored if i in infos][:pool]

    # --- the whole pipeline --------------------------------------------------------------------
    def recall(self, req: RecallRequest) -> list[Hit]:
        pool = max(self.cfg.candidate_pool, req.limit * 2)
        qv = None
        vector_side = None
        embedded: Future[Any] = Future()
        # The ranking fields the keyword list has read, for the vector side to reuse (it reads
        # this dict while this thread fills it; a missing id is read from the store).
        known: dict[str, RankInfo] = {}
        if req.mode in ("vector", "hybrid") and self.vectors is not None and self.embed_query:
            # The query embedding and the matrix product release the GIL, as do SQLite's
            # queries: on two cores the vector side overlaps the keyword and entity lists.
            vector_side = _executor().submit(self._vector_side, req, pool, embedded, known)
        lists, terms = self._text_lists(req, pool, known)
        ahead = self._similarities_ahead(req, lists, embedded) if vector_side else None
        # A keyword recall has no embedding to hide the read behind: a thread would only add
        # its hand-over (~0.3 ms a recall, 2k memories) and the wait; _links reads them here.
        links_ahead = self._links_ahead(req, lists) if vector_side is not None else None
        periods = self.periods(req)  # the date parser runs while the query is embedded
        records: dict[str, MemoryRecord] = {}
        t = time.perf_counter()
        term_sets = self._term_sets(req, lists, terms, records) if req.mode == "hybrid" else {}
        prepared = self._prepare(lists, req, term_sets)
        self.stages["fusion"] = _ms(t, time.perf_counter())  # fusion's input and first half
        t = time.perf_counter()
        if vector_side is not None:
            qv, candidates = vector_side.result()
            lists.append(candidates)
        t1 = time.perf_counter()
        self.stages["wait"] = _ms(t, t1)  # what the vector side added after the other lists
        if periods and qv is not None and req.mode == "hybrid" and self.time_cfg.query_candidates:
            lists.append(self.period_list(req, periods, qv, pool))
        links = self._links(req, lists, links_ahead)
        fused = self._fuse(lists, req, qv, term_sets, ahead, prepared)
        fused = apply_floor(fused, req.mode, self.cfg, len(terms), term_sets,
                            centred=self._centred(req),
                            words_of=lambda: self._words_of(req, fused, records))
        if links is not None:
            # Smoothing needs BM25's sharp scores; cosine alone is too flat (measured: ADR 0005).
            self._smooth(fused, links)
        order, when, dated, ordered = self._time_inputs(fused, req, periods, records)
        ranked = self._rank(fused, req, periods, when, dated, ordered, prepared.factors)
        if self.cfg.session_weight > 0 and req.mode != "vector":
            ranked = self._session_support(ranked, fused)
        ranked = ranked[: req.limit]
        hits = self._materialise(ranked, fused, req.namespace, records)
        if self.cfg.latest_first and order != "earliest":  # "the first time": the older one wanted
            hits = latest_first(hits, req.query)
        if req.depth > 0:
            hits = hits + self._neighbours(hits, req)
        out = self._with_matched_terms(hits, terms, lists, periods)
        self.stages["fusion"] += _ms(t1, time.perf_counter())
        return out

    def _text_lists(
        self, req: RecallRequest, pool: int, known: dict[str, RankInfo]
    ) -> tuple[list[Candidates], list[str]]:
        """The keyword and entity lists (as the mode asks) and the query's search terms; the
        keyword hits' ranking fields go into ``known``."""
        lists: list[Candidates] = []
        terms: list[str] = []
        t = time.perf_counter()
        if req.mode in ("keyword", "hybrid"):
            kw, terms = self.keyword(req, pool)
            lists.append(kw)
            known.update((c.id, c) for c, _ in kw.items)
        t1 = time.perf_counter()
        if req.mode == "hybrid" and self.entity_search is not None:
            lists.append(self.entity(req, pool, known))
        self.stages.update(keyword=_ms(t, t1), entity=_ms(t1, time.perf_counter()))
        return lists, terms

    def _links_ahead(self, req: RecallRequest, lists: Sequence[Candidates]) -> _LinksAhead:
        """Smoothing's links of the keyword and entity candidates, read beside the rest of
        the recall while the query is embedded (None when smoothing is off or there are none)."""
        ids = self._smoothed(req, lists)
        return _executor().submit(self.store.links, req.namespace, ids) if ids else None

    def _links(
        self, req: RecallRequest, lists: Sequence[Candidates], ahead: _LinksAhead
    ) -> dict[str, list[Link]] | None:
        """Every candidate's links (None when smoothing is off): those read ahead, and those
        of the candidates the vector side added, read here. Handed to a thread, that read
        waited ~1.3 ms (p50, 20k) for the GIL while this thread fused, and the recall then
        waited for it (per query alternating, 3 runs: recall p50 -0.1 to -0.8 ms, p95 -0.7
        to -3.1 ms). Every candidate's: the floor only removes some, and each id's links are
        the same whichever ids are asked with it."""
        if self.cfg.neighbour_weight <= 0 or req.mode == "vector":
            return None
        out = ahead.result() if ahead is not None else {}  # every id asked is a key
        if rest := [i for i in self._smoothed(req, lists) if i not in out]:
            out.update(self.store.links(req.namespace, rest))
        return out

    def _smoothed(self, req: RecallRequest, lists: Sequence[Candidates]) -> list[str]:
        """The candidates smoothing needs the links of, in the order listed ([] when it is
        off)."""
        if self.cfg.neighbour_weight <= 0 or req.mode == "vector":
            return []
        return list(dict.fromkeys(c.id for lst in lists for c, _ in lst.items))

    def _time_inputs(
        self, fused: dict[str, Fused], req: RecallRequest, periods: Sequence[Period],
        records: dict[str, MemoryRecord],
    ) -> tuple[str | None, dict[str, float], set[str] | None, dict[str, float]]:
        """What the time factors read: the order the question asks for ("latest",
        "earliest" or None), when each candidate happened, the candidates stating a time
        (a "when" question; None otherwise) and the event-order factors."""
        answer = self.time_cfg.answer_boost > 0 and asks_when(req.query)
        # Event order needs sharp scores, as smoothing does: on cosine alone (vector mode) its
        # ×1.5 for the newest, linear down to the oldest, re-sorts a flat list by date (ADR 0030).
        ordering = self.time_cfg.order_boost > 0 and req.mode != "vector"
        order = asks_order(req.query) if ordering else None
        when = self._when(fused, req, records) if periods or answer or order else {}
        dated = {m for m in when if states_time(records[m].content)} if answer else None
        ordered = order_factors(when, order, self.time_cfg.order_boost) if order else {}
        return order, when, dated, ordered

    def _centred(self, req: RecallRequest) -> bool:
        """Whether this namespace's cosines are centred ones (vectors/matrix.py)."""
        return self.vectors is not None and self.vectors.centred(req.namespace)

    def _similarities_ahead(
        self, req: RecallRequest, lists: Sequence[Candidates], embedded: Future[Any]
    ) -> Future[dict[str, float]] | None:
        """The cosines of the keyword and entity candidates, asked for beside the rest of the
        recall as soon as the query embedding is there (fusion needs them; on PostgreSQL they
        are a query of their own). Submitted after the vector side, so the pool never runs
        this before the embedding it waits for is being computed."""
        ids = list(dict.fromkeys(c.id for lst in lists for c, _ in lst.items))
        if not ids or self.vectors is None:
            return None
        vectors = self.vectors
        return _executor().submit(
            lambda: vectors.similarities(req.namespace, embedded.result(), ids))

    def _prepare(
        self, lists: Sequence[Candidates], req: RecallRequest,
        term_sets: dict[str, frozenset[str]],
    ) -> _Prepared:
        """The work ``_fuse`` and ``_rank`` would do on the candidates of ``lists`` (the
        keyword and entity lists), done ahead: the same values, in the same order."""
        fused: dict[str, Fused] = {}
        _add_lists(fused, lists)
        side = (fusion.keyword_side(fused, self.cfg, term_sets)  # only hybrid recalls fuse
                if req.mode == "hybrid" and self.cfg.fusion == "calibrated" else None)
        fs = {mid: factors(f.info, req.now, self.cfg) for mid, f in fused.items()}
        return _Prepared(fused, len(lists), side, fs)

    def _fuse(
        self, lists: list[Candidates], req: RecallRequest, qv: npt.NDArray[np.float32] | None,
        term_sets: dict[str, frozenset[str]], ahead: Future[dict[str, float]] | None = None,
        prepared: _Prepared | None = None,
    ) -> dict[str, Fused]:
        """The candidates of every list, fused (``prepared``: those of its first lists, and
        calibrated fusion's keyword half, done ahead)."""
        fused, done = (prepared.fused, prepared.lists) if prepared is not None else ({}, 0)
        _add_lists(fused, lists[done:])
        active = [c for c in lists if c.items]
        if qv is not None and self.vectors is not None:  # cosine for every candidate, to explain
            # The vector list's own scores are these cosines: ask only for the other candidates
            # (on PostgreSQL each one is a row read).
            sims = ahead.result() if ahead is not None else {}
            unscored = [m for m, f in fused.items()
                        if "cosine" not in f.lists.get("vector", {}) and m not in sims]
            if unscored:
                sims = {**sims, **self.vectors.similarities(req.namespace, qv, unscored)}
            for mid, sim in sims.items():  # every id asked for is a candidate
                fused[mid].lists.setdefault("vector", {}).setdefault("cosine", round(sim, 6))
        if len(active) == 1 and len(lists) == 1:  # vector or keyword mode: no fusion
            sharp = self.cfg.vector_sharpness
            for f in fused.values():
                raw = f.lists[active[0].name][active[0].measure]
                f.score = ((raw + 1) / 2) ** sharp if active[0].measure == "cosine" else raw
        elif self.cfg.fusion == "calibrated":
            fusion.calibrated(fused, self.cfg, term_sets,
                              prepared.side if prepared is not None else None)
        elif self.cfg.fusion == "weighted":
            fusion.weighted(fused, self.cfg)
        else:
            fusion.rrf(fused, self.cfg)
        return fused

    def _term_sets(
        self, req: RecallRequest, lists: Sequence[Candidates], terms: Sequence[str],
        records: dict[str, MemoryRecord],
    ) -> dict[str, frozenset[str]]:
        """The query words each BM25 candidate contains (for calibrated fusion's ties and the
        relevance floor), from the texts the keyword search read, else from the records (kept
        in ``records`` for the hits)."""
        kw = next((c for c in lists if c.name == "keyword" and c.measure == "bm25"), None)
        if kw is None or not kw.items:
            return {}
        ids = [info.id for info, _ in kw.items]
        texts = dict(kw.texts)
        if missing := [i for i in ids if i not in texts]:
            read = self.store.get_many(req.namespace, missing)
            records.update((r.id, r) for r in read)
            texts.update((r.id, r.searchable) for r in read)
        return fusion.matched_terms([(i, texts[i]) for i in ids if i in texts], terms)

    def _words_of(
        self, req: RecallRequest, fused: dict[str, Fused], records: dict[str, MemoryRecord]
    ) -> tuple[int, dict[str, frozenset[str]]]:
        """The query's word count and the query words each candidate holds (vector mode's
        floor asks when no candidate is similar enough; its records are kept for the hits)."""
        terms = self._terms(req)
        missing = [m for m in fused if m not in records]
        records.update((r.id, r) for r in self.store.get_many(req.namespace, missing))
        held = fusion.matched_terms(
            [(m, r.searchable)
             for m in fused if (r := records.get(m)) is not None], terms)
        return len(terms), held

    def _smooth(self, fused: dict[str, Fused], links: dict[str, list[Link]]) -> None:
        """Adjacent turns of a dialogue support each other: each candidate gains
        ``neighbour_weight`` × the fused score of its sequence-linked candidates (``links``:
        each candidate's links)."""
        base = {m: f.score for m, f in fused.items()}
        for mid, f in fused.items():
            support = sum(base[lk.other_id] for lk in links.get(mid, ())
                          if lk.origin == "sequence" and lk.other_id in base)
            if support:
                f.lists["neighbours"] = {"support": round(support, 6)}
                f.score += self.cfg.neighbour_weight * support

    def _session_support(
        self, ranked: list[_Ranked], fused: dict[str, Fused]
    ) -> list[_Ranked]:
        """Turns of one conversation support each other beyond their neighbours (ADR 0020):
        each candidate gains ``session_weight`` × the best final score among the
        ``session_top`` best *other* candidates of its session. The answer to "What did Maria
        do after the race?" sits a few turns from the turn that names the race, but shares no
        word with the question. Memories without a session, and recalls whose best candidates
        have none, rank as before."""
        top: dict[str, list[tuple[str, float]]] = {}
        for mid, score, _, _ in ranked[: self.cfg.session_top]:
            if (session := fused[mid].info.session_id) is not None:
                top.setdefault(session, []).append((mid, score))
        if not top:
            return ranked
        out: list[_Ranked] = []
        for mid, score, fs, _ in ranked:
            session = fused[mid].info.session_id
            mates = [s for m, s in top.get(session, ()) if m != mid] if session else []
            if not mates:
                out.append((mid, score, fs, None))
                continue
            best = max(mates)
            out.append((mid, score + self.cfg.session_weight * best, fs, best))
        out.sort(key=lambda t: (-t[1], t[0]))
        return out

    def _when(
        self, fused: dict[str, Fused], req: RecallRequest, records: dict[str, MemoryRecord]
    ) -> dict[str, float]:
        """When each candidate's remembered thing happened (its records are kept for the hits:
        the ranking fields carry no event time)."""
        missing = [m for m in fused if m not in records]
        records.update((r.id, r) for r in self.store.get_many(req.namespace, missing))
        return {m: event_or_created(records[m]) for m in fused if m in records}

    def _rank(
        self, fused: dict[str, Fused], req: RecallRequest, periods: Sequence[Period] = (),
        when: dict[str, float] | None = None, dated: set[str] | None = None,
        ordered: dict[str, float] | None = None,
        computed: dict[str, dict[str, float]] | None = None,
    ) -> list[_Ranked]:
        """Candidates by final score (``computed``: factors computed ahead, each used once)."""
        boosts = self._co_recall_boosts(fused, req) if self.cfg.co_recall else {}
        speaking = _speaker_factors(fused, req.query, self.cfg.speaker_boost)
        boost = self.time_cfg.query_boost
        computed = computed if computed is not None else {}
        ranked: list[_Ranked] = []
        for mid, f in fused.items():
            fs = computed.get(mid) or factors(f.info, req.now, self.cfg)
            if mid in boosts:
                fs["co_recall"] = boosts[mid]
            if periods and boost > 0 and when and mid in when:
                fs["time"] = time_factor(when[mid], tuple(periods), boost)
            if dated is not None:  # the question asks "when": a memory stating a time
                fs["states_time"] = 1.0 + self.time_cfg.answer_boost * (mid in dated)
            if ordered and mid in ordered:  # "most recently", "the first time": by event order
                fs["order"] = ordered[mid]
            if mid in speaking:  # said by the one the question names
                fs["speaker"] = speaking[mid]
            ranked.append((mid, f.score * math.prod(fs.values()), fs, None))
        ranked.sort(key=lambda t: (-t[1], t[0]))
        return ranked

    def _materialise(
        self, ranked: Sequence[_Ranked], fused: dict[str, Fused], namespace: str,
        known: dict[str, MemoryRecord],
    ) -> list[Hit]:
        """The hits, explained: only the candidates kept are (a recall ranks ~150)."""
        missing = [m for m, _, _, _ in ranked if m not in known]
        records = {**known, **{r.id: r for r in self.store.get_many(namespace, missing)}}
        hits = []
        for mid, final, fs, support in ranked:
            if mid not in records:
                continue
            f = fused[mid]
            lists = f.lists if support is None else {
                **f.lists, "session": {"support": round(support, 6)}}
            hits.append(Hit(records[mid], final, Explanation(
                lists=lists, fused=f.score, factors=fs, via=f.via, final=final, floor=f.kept)))
        return hits

    def _co_recall_boosts(self, fused: dict[str, Fused], req: RecallRequest) -> dict[str, float]:
        """003 v2: memories often recalled together lift each other, boundedly."""
        top = sorted(fused, key=lambda m: -fused[m].score)[: req.limit * 2]
        links = self.store.links(req.namespace, top)
        present = set(top)
        out = {}
        for mid in top:
            total = sum(
                lk.strength
                for lk in links[mid]
                if lk.origin == "co-recall" and lk.other_id in present
            )
            if total > 0:
                out[mid] = 1 + min(self.cfg.co_recall_max_boost, self.cfg.co_recall_boost * total)
        return out

    def _neighbours(self, hits: list[Hit], req: RecallRequest) -> list[Hit]:
        """000 depth=1: follow each hit's links one hop, skipping what is already there."""
        seen = {h.memory.id for h in hits}
        links = self.store.links(req.namespace, list(seen))
        wanted: dict[str, tuple[Hit, float]] = {}
        for h in hits:
            for lk in links.get(h.memory.id, []):
                if lk.other_id not in seen and lk.other_id not in wanted:
                    wanted[lk.other_id] = (h, lk.strength)
        allowed = self.store.rank_info(req.namespace, list(wanted), req.flt)
        out = []
        for r in self.store.get_many(req.namespace, list(allowed)):
            parent, strength = wanted[r.id]
            score = parent.score * self.cfg.link_decay
            explain = Explanation(
                lists={"link": {"strength": strength}},
                fused=parent.score,
                factors={"link_decay": self.cfg.link_decay},
                via=f"link:{parent.memory.id}",
                final=score,
            )
            out.append(Hit(r, score, explain))
        out.sort(key=lambda h: -h.score)
        return out[: req.limit]

    def _with_matched_terms(
        self, hits: list[Hit], terms: Sequence[str], lists: Sequence[Candidates],
        periods: Sequence[Period] = (),
    ) -> list[Hit]:
        """Which query words each hit contains, stem-aware, the entity it is linked to and the
        named period it lies in (for the explanation)."""
        if not hits:
            return hits
        fallback = any(c.via == "like-fallback" for c in lists)
        entity_names = next((c.detail for c in lists if c.name == "entity"), {})
        term_tokens = [(t, tt) for t in terms if (tt := tokenize(t))]
        phrases = any(len(tt) > 1 for _, tt in term_tokens)
        initials = {tt[0][0] for _, tt in term_tokens}
        out = []
        for h in hits:
            r = h.memory
            if fallback:
                text = f"{r.content} {r.key or ''}".lower()
                words = [t for t in terms if t in text]
            else:
                text = r.searchable
                # A phrase needs every token in order; a word only the words sharing its stem's
                # initial (a stem keeps its word's first letter: text.words).
                tokens = tokenize(text) if phrases else []
                stems = set(tokens) if phrases else stems_starting(text, initials)
                words = [t for t, tt in term_tokens
                         if (phrase_count(tokens, tt) if len(tt) > 1 else tt[0] in stems)]
            e = h.explain
            if not (fallback or words or e.via) and "keyword" in e.lists and is_turn(r):
                e = replace(e, via="context")  # the turns before it hold the words (ADR 0036)
            if r.id in entity_names and "entity" in h.explain.lists:
                words.append(f"entity:{entity_names[r.id]}")
            at = event_or_created(r)
            words.extend(f"time:{p.text}" for p in periods if p.start <= at < p.end)
            out.append(
                Hit(
                    r,
                    h.score,
                    replace(e, matched_terms=tuple(words)),
                )
            )
        return out


def _add_lists(fused: dict[str, Fused], lists: Sequence[Candidates]) -> None:
    """Each candidate of ``lists`` into ``fused`` (the first list holding it gives its ranking
    fields), with its rank and raw score in each list."""
    for c in lists:
        for rank, (cand, raw) in enumerate(c.items, start=1):
            f = fused.setdefault(cand.id, Fused(cand))
            f.lists[c.name] = {"rank": rank, c.measure: round(raw, 6)}
            if c.via:
                f.via = c.via


def _speaker_factors(fused: dict[str, Fused], query: str, boost: float) -> dict[str, float]:
    """``1 + boost`` for each candidate said by someone the query names as a whole word (its
    ``source_role``, case folded: "What did Melanie paint?" names Melanie); a recall's
    candidates have few speakers, so each is looked for once."""
    if boost <= 0:
        return {}
    low = query.casefold()
    named: dict[str, bool] = {}
    out = {}
    for mid, f in fused.items():
        role = f.info.source_role
        if not role:
            continue
        if role not in named:
            who = role.casefold().strip()
            named[role] = bool(who) and re.search(
                rf"(?<!\w){re.escape(who)}(?!\w)", low) is not None
        if named[role]:
            out[mid] = 1.0 + boost
    return out


def _ms(start: float, end: float) -> float:
    return 1000 * (end - start)


@functools.cache
def _executor() -> ThreadPoolExecutor:
    """One small pool per process for the vector side of recalls (created on first use)."""
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="clawmemory-recall")


"""The relevance floor: a recall that finds nothing relevant returns nothing.

Ranking orders candidates; it never says that none of them is wanted. Without a floor, a
vector search always returns its nearest neighbours, however far ("banana bread recipe"
returned all five memories of a store about work). The floor asks, per mode, whether the
recall's candidates hold any evidence of relevance (ADR 0011 has the calibration):

* ``keyword``: a BM25 match is evidence (003: a memory holding a query word is a hit), so
  keyword mode has no further floor;
* ``vector``: some candidate's cosine is at least ``floor_vector_cosine``;
* ``hybrid``: some candidate is linked to an entity the query names, or happened in a period
  the query names (the ``time`` list, ADR 0017), or has cosine
  ``floor_cosine``, or holds ``floor_keyword_share`` of the query's words, or holds a query
  word and has cosine ``floor_keyword_cosine`` (BM25 matches only: what the substring
  fallback finds when the index matched none of the query's words is no evidence).

When the recall passes, candidates found by similarity alone (no query word, entity or period)
with a cosine below ``floor_candidate_cosine`` are dropped: they are the far neighbours every vector
search returns. ``recall.relevance_floor = false`` turns all of it off.

Those cosines are centred (ADR 0007), which spreads them wider than plain cosines. A namespace
with fewer than ``centre_min_rows`` vectors has plain cosines; there ``floor_plain_cosine``
replaces the first two thresholds and ``floor_plain_candidate`` the last two (measured on the
packaged MiniLM: an off-topic question's best plain cosine against a handful of memories is
0.06 (median) to 0.23 (worst of 100); a paraphrased question and its fact 0.55 to 0.75).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clawmemory.config import RecallSettings
from clawmemory.search.fusion import Fused

__all__ = ["apply_floor"]


@dataclass(frozen=True, slots=True)
class _Thresholds:
    alone: float  # hybrid: relevant by similarity alone
    vector: float  # vector mode: the best candidate
    with_word: float  # hybrid: holding a query word and this similar
    candidate: float  # found by similarity alone: kept from here


def _thresholds(cfg: RecallSettings, centred: bool) -> _Thresholds:
    if centred:
        return _Thresholds(cfg.floor_cosine, cfg.floor_vector_cosine, cfg.floor_keyword_cosine,
                           cfg.floor_candidate_cosine)
    return _Thresholds(cfg.floor_plain_cosine, cfg.floor_plain_cosine,
                       cfg.floor_plain_candidate, cfg.floor_plain_candidate)


def apply_floor(
    fused: dict[str, Fused], mode: str, cfg: RecallSettings, n_terms: int,
    term_sets: Mapping[str, frozenset[str]], *, centred: bool,
) -> dict[str, Fused]:
    """``fused`` without what the floor removes: everything when nothing is relevant.
    ``centred``: the cosines are centred ones (the namespace has a centre)."""
    if not cfg.relevance_floor or mode == "keyword" or not fused:
        return fused
    t = _thresholds(cfg, centred)
    if not any(_evidence(f, mode, t, cfg, n_terms, term_sets.get(m)) for m, f in fused.items()):
        return {}
    return {m: f for m, f in fused.items()
            if "keyword" in f.lists or "entity" in f.lists or "time" in f.lists
            or _cosine(f) >= t.candidate}


def _cosine(f: Fused) -> float:
    return f.lists.get("vector", {}).get("cosine", -1.0)


def _evidence(
    f: Fused, mode: str, t: _Thresholds, cfg: RecallSettings, n_terms: int,
    words: frozenset[str] | None,
) -> bool:
    cos = _cosine(f)
    if mode == "vector":
        return cos >= t.vector
    if "entity" in f.lists or "time" in f.lists or cos >= t.alone:
        return True
    kw = f.lists.get("keyword")
    if kw is None or "bm25" not in kw:
        # The substring fallback runs when the index found none of the query's words; what
        # it finds then are fragments and function words ("what", "of"): no evidence.
        return False
    share = len(words) / n_terms if words is not None and n_terms else 0.0
    return share >= cfg.floor_keyword_share or cos >= t.with_word

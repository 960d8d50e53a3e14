"""The relevance floor: a recall that finds nothing relevant returns nothing.

Ranking orders candidates; it never says that none of them is wanted. Without a floor, a
vector search always returns its nearest neighbours, however far ("banana bread recipe"
returned all five memories of a store about work). The floor asks, per mode, whether the
recall's candidates hold any evidence of relevance (ADR 0011 has the calibration):

* ``keyword``: a BM25 match is evidence (003: a memory holding a query word is a hit), so
  keyword mode has no further floor;
* ``vector``: some candidate's cosine is at least ``floor_vector_cosine``, or, failing that,
  some candidate holds ``floor_keyword_share`` of the query's words (at most two are asked
  for) with cosine ``floor_keyword_cosine`` (a memory on the question's topic: on a held-out
  set the cosine rule alone emptied the answer for 2 of 39 fair questions, one of them
  ranking its answer first with the floor off);
* ``hybrid``: some candidate is linked to an entity the query names, or happened in a period
  the query names (the ``time`` list, ADR 0017), or has cosine
  ``floor_cosine``, or holds ``floor_keyword_share`` of the query's words, or holds a query
  word and has cosine ``floor_keyword_cosine`` (BM25 matches only: what the substring
  fallback finds when the index matched none of the query's words is no evidence).

When the recall passes, candidates found by similarity alone (no query word, entity or period)
with a cosine below ``floor_candidate_cosine`` are dropped: they are the far neighbours every vector
search returns. ``recall.relevance_floor = false`` turns all of it off. Each hit's explanation
says why the floor kept it (``Explanation.floor``).

A keyword match counts as a matched word only when the word tells memories apart, or the
candidate holds every word of the query. FTS5 gives a word held by at least half of the
namespace's memories an idf of 1e-6 (its BM25 then sums to under ``UNINFORMATIVE_BM25``), and
the substring fallback's fragments are no word at all: such a candidate is treated as found by
similarity alone, for the gate and for the trim. In a small namespace this is what kept
"every day" finding "User prefers dark mode in every editor" (BM25 1e-6, cosine 0.08); "16"
still finds the one memory about Postgres 16 (it holds the whole query). PostgreSQL's idf
never reaches zero, so there only the fallback's fragments are affected.

Those cosines are centred (ADR 0007), which spreads them wider than plain cosines. A namespace
with fewer than ``centre_min_rows`` vectors, or a mean shorter than ``centre_min_norm``
(ADR 0029), has plain cosines; there ``floor_plain_cosine``
replaces the first two thresholds and ``floor_plain_candidate`` the last two (measured on the
packaged MiniLM: an off-topic question's best plain cosine against a handful of memories is
0.06 (median) to 0.23 (worst of 100); a paraphrased question and its fact 0.55 to 0.75).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from clawmemory.config import RecallSettings
from clawmemory.search.fusion import Fused

__all__ = ["UNINFORMATIVE_BM25", "apply_floor"]

# FTS5 clamps a non-positive idf to 1e-6, so a candidate holding only such words scores at most
# 1e-6 × (k1 + 1) per query term (a query has at most sanitize.MAX_TERMS): far below this, while
# the smallest real idf (a word in just under half of the memories) gives ~0.01.
UNINFORMATIVE_BM25 = 1e-4


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
    words_of: Callable[[], tuple[int, Mapping[str, frozenset[str]]]] | None = None,
) -> dict[str, Fused]:
    """``fused`` without what the floor removes: everything when nothing is relevant.
    ``centred``: the cosines are centred ones (the namespace has a centre). ``words_of``
    (vector mode): the query's word count and the words each candidate holds, asked for only
    when no candidate is similar enough."""
    if not cfg.relevance_floor or mode == "keyword" or not fused:
        return fused
    t = _thresholds(cfg, centred)
    if mode == "vector":
        return _vector_floor(fused, cfg, t, words_of)
    if not any(_evidence(f, mode, t, cfg, n_terms, term_sets.get(m)) for m, f in fused.items()):
        return {}
    kept = {}
    for m, f in fused.items():
        f.kept = _reason(f, t, n_terms, term_sets.get(m))
        if f.kept is not None:
            kept[m] = f
    return kept


def _reason(f: Fused, t: _Thresholds, n_terms: int, words: frozenset[str] | None) -> str | None:
    """Why the floor keeps ``f`` once the recall passed, or None when it drops it."""
    if _word_match(f, n_terms, words):
        return "holds a query word"
    if "entity" in f.lists:
        return "linked to an entity the query names"
    if "time" in f.lists:
        return "happened in the period the query names"
    if _cosine(f) >= t.candidate:
        return f"cosine {_cosine(f):.2f} >= {t.candidate:.2f}"
    return None


def _vector_floor(
    fused: dict[str, Fused], cfg: RecallSettings, t: _Thresholds,
    words_of: Callable[[], tuple[int, Mapping[str, frozenset[str]]]] | None,
) -> dict[str, Fused]:
    """Vector mode: similar enough, or (failing that) on the question's topic by its words."""
    if any(_cosine(f) >= t.vector for f in fused.values()):
        topical: Mapping[str, frozenset[str]] = {}
        n_terms = 0
    else:
        n_terms, topical = words_of() if words_of is not None else (0, {})
        if not any(_on_topic(f, n_terms, topical.get(m), cfg, t) for m, f in fused.items()):
            return {}
    kept = {}
    for m, f in fused.items():
        if _on_topic(f, n_terms, topical.get(m), cfg, t):
            f.kept = "holds the query's words (no memory was similar enough by cosine alone)"
        elif _cosine(f) >= t.candidate:
            f.kept = f"cosine {_cosine(f):.2f} >= {t.candidate:.2f}"
        else:
            continue
        kept[m] = f
    return kept


def _on_topic(f: Fused, n_terms: int, words: frozenset[str] | None, cfg: RecallSettings,
              t: _Thresholds) -> bool:
    """Holds ``floor_keyword_share`` of the question's words, or two of a long question's
    (a ten-word question rarely shares four with its answer), and is somewhat similar."""
    if not words or not n_terms:
        return False
    need = min(2, math.ceil(cfg.floor_keyword_share * n_terms))
    return len(words) >= need and _cosine(f) >= t.with_word


def _word_match(f: Fused, n_terms: int, words: frozenset[str] | None) -> bool:
    """``f`` holds a query word that tells memories apart, or all of the query's words
    (module docstring)."""
    bm25 = f.lists.get("keyword", {}).get("bm25")
    if bm25 is None:
        return False
    return bm25 >= UNINFORMATIVE_BM25 or (words is not None and 0 < n_terms <= len(words))


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
    if not _word_match(f, n_terms, words):
        # The substring fallback runs when the index found none of the query's words; what
        # it finds then are fragments and function words ("what", "of"): no evidence. Nor is
        # a word most memories hold.
        return False
    share = len(words) / n_terms if words is not None and n_terms else 0.0
    return share >= cfg.floor_keyword_share or cos >= t.with_word

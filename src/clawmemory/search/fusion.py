"""Fusion: the candidate lists of one recall -> one relevance per candidate.

Three formulas (``recall.fusion``):

* ``calibrated`` (default, ADR 0011): each list is standardised on its own candidates, so a
  list's say depends on how far a candidate stands out in it, not on the list's raw scale:

      fused = 0.6 × z(keyword) + 0.4 × z(cosine) + 0.5 × [best keyword match]
              + 0.1 × entity/max(entity)

  ``z`` is (score − mean) / standard deviation over the list's own members, floored at −0.5
  (a candidate the list does not hold, or holds near its bottom, is not punished without
  bound), then shifted by +0.5 so fused scores are ≥ 0. Before standardising, keyword scores
  of candidates that contain the *same query words* and lie within 20 % of the best of them
  are raised to that best: BM25 differences between such memories come from their length,
  which says nothing about which one the query means ("new hobby of Jonas Fischer": every
  fact about him matches the name, and BM25 prefers the shortest). The vector list then
  decides among them. The keyword list's first place (after that) earns the bonus: BM25's
  best match is right far more often than its second (LoCoMo R@1).
* ``weighted`` (000, ADR 0004/0007): ``0.4 × bm25/max + 0.6 × (cos + 1)/2 (+ entity)``.
* ``rrf`` (002/004): ``Σ w_list / (k + rank)``.

A single list keeps its own relevance (keyword mode is 003's BM25, vector mode the cosine).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from clawmemory.backends.base import RankInfo
from clawmemory.config import RecallSettings
from clawmemory.text import phrase_count, stem, stems_starting, tokenize

__all__ = ["Fused", "KeywordSide", "calibrated", "keyword_side", "matched_terms", "rrf", "weighted"]


@dataclass
class Fused:
    """One candidate during fusion: its ranking fields, fused score, and per-list details
    (rank, raw score, standardised score) for the explanation."""

    info: RankInfo
    score: float = 0.0
    lists: dict[str, dict[str, float]] = field(default_factory=dict)
    via: str | None = None
    kept: str | None = None  # why the relevance floor kept it (search/floor.py)


def rrf(fused: Mapping[str, Fused], cfg: RecallSettings) -> None:
    k, weights = cfg.rrf_k, cfg.list_weights
    for f in fused.values():
        f.score = sum(weights.get(name, 1.0) / (k + info["rank"])
                      for name, info in f.lists.items() if "rank" in info)


def weighted(fused: Mapping[str, Fused], cfg: RecallSettings) -> None:
    top = max((f.lists.get("keyword", {}).get("bm25", 0.0) for f in fused.values()), default=0.0)
    top_ent = max((f.lists.get("entity", {}).get("entities", 0.0) for f in fused.values()),
                  default=0.0)
    for f in fused.values():
        text = f.lists.get("keyword", {}).get("bm25", 0.0) / top if top > 0 else 0.0
        cos = f.lists.get("vector", {}).get("cosine")
        vec = (cos + 1) / 2 if cos is not None else 0.0  # 000: no embedding -> 0
        ent = f.lists.get("entity", {}).get("entities", 0.0) / top_ent if top_ent else 0.0
        f.score = cfg.text_weight * text + cfg.vector_weight * vec + cfg.entity_weight * ent


@dataclass(frozen=True, slots=True)
class KeywordSide:
    """Calibrated fusion's part that the keyword and entity lists decide alone: the keyword
    scores (ties raised), their z-scores, the best of them and the best entity score. Known
    before the vector list is, so a recall computes it while the query is embedded."""

    keyword: dict[str, float]
    z: dict[str, float]
    best: float
    top_entity: float


def keyword_side(
    fused: Mapping[str, Fused], cfg: RecallSettings,
    term_sets: Mapping[str, frozenset[str]] | None = None,
) -> KeywordSide:
    """``calibrated``'s keyword half over ``fused`` (only the keyword and entity lists' entries
    count: any other list's candidates may be there or not)."""
    keyword = _keyword_scores(fused, term_sets or {}, cfg.keyword_tie)
    top_ent = max((f.lists.get("entity", {}).get("entities", 0.0) for f in fused.values()),
                  default=0.0)
    return KeywordSide(keyword, _standardised(keyword, set(keyword), cfg.calibrated_floor),
                       max(keyword.values(), default=0.0), top_ent)


def calibrated(
    fused: Mapping[str, Fused], cfg: RecallSettings,
    term_sets: Mapping[str, frozenset[str]] | None = None, side: KeywordSide | None = None,
) -> None:
    """The default fusion (module docstring). ``term_sets``: the query words each keyword
    candidate contains; without them keyword scores are used as they are. ``side``: the
    keyword half, when it was computed ahead (``keyword_side``)."""
    floor = cfg.calibrated_floor
    side = side if side is not None else keyword_side(fused, cfg, term_sets)
    keyword, zk, best, top_ent = side.keyword, side.z, side.best, side.top_entity
    cosine = {m: f.lists["vector"]["cosine"] for m, f in fused.items()
              if "cosine" in f.lists.get("vector", {})}
    in_vector = {m for m, f in fused.items() if "rank" in f.lists.get("vector", {})}
    zv = _standardised(cosine, in_vector, floor)
    weights = cfg.calibrated_text_weight + cfg.calibrated_vector_weight
    for mid, f in fused.items():
        k, v = zk.get(mid, -floor), zv.get(mid, -floor)
        if "keyword" in f.lists and mid in zk:
            f.lists["keyword"]["z"] = round(k, 4)
        if "vector" in f.lists and mid in zv:
            f.lists["vector"]["z"] = round(v, 4)
        ent = f.lists.get("entity", {}).get("entities", 0.0)
        f.score = (floor * weights + cfg.calibrated_text_weight * k
                   + cfg.calibrated_vector_weight * v
                   + (cfg.keyword_top_bonus if best > 0 and keyword.get(mid) == best else 0.0)
                   + (cfg.calibrated_entity_weight * ent / top_ent if top_ent > 0 else 0.0))


def _keyword_scores(
    fused: Mapping[str, Fused], term_sets: Mapping[str, frozenset[str]], tie: float
) -> dict[str, float]:
    """Keyword relevance per keyword candidate; BM25 scores of candidates with the same query
    words within ``tie`` of the best of them are raised to it (module docstring)."""
    raw = {m: s for m, f in fused.items()
           if (s := f.lists.get("keyword", {}).get("bm25", f.lists.get("keyword", {}).get(
               "tokens_found", 0.0))) > 0}
    if not term_sets or tie <= 0:
        return raw
    best: dict[frozenset[str], float] = {}
    for mid, s in raw.items():
        words = term_sets.get(mid)
        if words is not None:
            best[words] = max(best.get(words, 0.0), s)
    out = {}
    for mid, s in raw.items():
        words = term_sets.get(mid)
        top = best.get(words, s) if words is not None else s
        out[mid] = top if s >= (1 - tie) * top else s
    return out


def _standardised(scores: Mapping[str, float], members: set[str], floor: float) -> dict[str, float]:
    """z-scores over the list's own members (every candidate with a score gets one), floored
    at ``-floor``. A list that cannot spread (one member, or all equal) gives its members 1."""
    vals = [scores[m] for m in members if m in scores]
    n = len(vals)
    mean = sum(vals) / n if n else 0.0
    sd = math.sqrt(sum((x - mean) ** 2 for x in vals) / n) if n else 0.0
    if n < 2 or sd < 1e-9:
        return {m: 1.0 if m in members else -floor for m in scores}
    return {m: max((s - mean) / sd, -floor) for m, s in scores.items()}


def matched_terms(
    texts: Sequence[tuple[str, str]], terms: Sequence[str]
) -> dict[str, frozenset[str]]:
    """The query words each memory's searchable text (``(id, text)``,
    ``model.searchable_text``) contains, stem-aware (as the index matches them). Only the
    words that start like a query word's stem are stemmed, so this stays cheap on long text."""
    stems: dict[str, str] = {}
    phrases: list[tuple[str, tuple[str, ...]]] = []  # numbers and identifiers ("3.12")
    for t in terms:
        toks = tuple(tokenize(t))
        if len(toks) > 1:
            phrases.append((t, toks))
        elif toks:
            stems.setdefault(toks[0], t)
    if not stems and not phrases:
        return {mid: frozenset() for mid, _ in texts}
    pattern = _prefix_pattern(tuple(sorted(stems))) if stems else None
    initials = {s[0] for s in stems}
    out = {}
    for mid, text in texts:
        tokens = tokenize(text) if phrases else None  # a phrase needs every token, in order
        if tokens is not None:
            held = set(tokens)
        elif pattern is not None and text.isascii():  # only words that start like a query word
            held = {stem(w) for w in pattern.findall(text.lower())}
        else:  # diacritics folded exactly as the index folds them; a stem keeps its initial
            held = stems_starting(text, initials)
        found = {stems[s] for s in held if s in stems}
        found.update(t for t, toks in phrases if tokens and phrase_count(tokens, toks))
        out[mid] = frozenset(found)
    return out


@lru_cache(maxsize=1024)
def _prefix_pattern(stems: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + "|".join(re.escape(s) for s in stems) + r")\w*")

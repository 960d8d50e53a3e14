"""The retrieval pipeline: candidates -> ranking factors -> explained hits.

Candidates come from the store's full-text index (BM25), falling back to substring matching
(000) when the index finds nothing. Each hit's explanation records the list it came from, its
rank and raw relevance there, every factor, and the final score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from clawmemory.config import RecallSettings
from clawmemory.model import Explanation, Filter, Hit
from clawmemory.search.ranking import factors
from clawmemory.search.sanitize import like_tokens, sanitize_terms
from clawmemory.store.base import Store, TextHit

__all__ = ["RecallRequest", "keyword_hits"]


@dataclass(frozen=True, slots=True)
class RecallRequest:
    namespace: str
    query: str
    limit: int
    flt: Filter
    now: float


def keyword_hits(store: Store, req: RecallRequest, cfg: RecallSettings) -> list[Hit]:
    """Keyword recall: BM25 candidates (or the LIKE fallback), re-ranked by the factors."""
    pool = max(cfg.candidate_pool, req.limit * 4)
    terms = sanitize_terms(req.query)
    candidates = store.keyword_search(req.namespace, terms, req.flt, limit=pool) if terms else []
    via = None
    if not candidates:
        tokens = like_tokens(req.query)
        candidates = store.like_search(req.namespace, tokens, req.flt, limit=pool)
        via = "like-fallback"
        terms = tokens
    hits = _rank(candidates, "keyword", via, req.now, cfg)[: req.limit]
    return _with_matched_terms(store, req.namespace, hits, terms, via)


def _rank(
    candidates: Sequence[TextHit], list_name: str, via: str | None, now: float,
    cfg: RecallSettings,
) -> list[Hit]:
    measure = "bm25" if via is None else "tokens_found"
    hits = []
    for rank, cand in enumerate(candidates, start=1):
        f = factors(cand.record, now, cfg)
        final = cand.relevance * math.prod(f.values())
        explain = Explanation(
            lists={list_name: {"rank": rank, measure: round(cand.relevance, 6)}},
            fused=cand.relevance, factors=f, via=via, final=final,
        )
        hits.append(Hit(cand.record, final, explain))
    hits.sort(key=lambda h: h.score, reverse=True)
    return hits


def _with_matched_terms(
    store: Store, namespace: str, hits: list[Hit], terms: Sequence[str], via: str | None
) -> list[Hit]:
    if not hits or not terms:
        return hits
    ids = [h.memory.id for h in hits]
    if via is None:
        matched = store.matched_terms(namespace, ids, terms)
    else:
        matched = {
            h.memory.id: [t for t in terms
                          if t in h.memory.content.lower() or t in (h.memory.key or "").lower()]
            for h in hits
        }
    out = []
    for h in hits:
        e = h.explain
        explain = Explanation(tuple(matched.get(h.memory.id, ())), e.lists, e.fused, e.factors,
                              e.via, e.final)
        out.append(Hit(h.memory, h.score, explain))
    return out

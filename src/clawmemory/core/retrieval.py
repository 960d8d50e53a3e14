"""Recall: the checked query and filters, the choice of mode, the retriever (search/pipeline.py)
with its vector and entity lists, and what a recall leaves behind (access counts, co-recall
links). The archive has its own keyword search (``recall_archive``)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from clawmemory.backends.base import Store
from clawmemory.config import Settings
from clawmemory.core.entities import EntitySource
from clawmemory.core.vectors import VectorService
from clawmemory.entities import candidate_names
from clawmemory.errors import InvalidInputError
from clawmemory.model import Explanation, Filter, Hit
from clawmemory.search.access import tracker_for
from clawmemory.search.pipeline import RecallRequest, Retriever
from clawmemory.search.sanitize import content_terms, sanitize_terms
from clawmemory.search.temporal import TIME_FILTERS, filter_times, zone
from clawmemory.text import stem, tokenize
from clawmemory.validation import check_filter, check_flag, check_limit, check_query

__all__ = ["MODES", "Retrieval", "checked_filter"]

MODES = ("auto", "keyword", "vector", "hybrid")


def checked_filter(settings: Settings, clock: Callable[[], float], **fields: Any) -> Filter:
    """A checked filter; the time arguments (``since``, ``until``, ``created_since``,
    ``created_until``, ``as_of``) are read against the clock (search/temporal.py)."""
    cfg = settings.storage
    times = {name: fields.pop(name) for name in TIME_FILTERS if name in fields}
    if any(v is not None for v in times.values()):
        t = settings.time
        fields.update(filter_times(times, clock(), zone(t.time_zone), tuple(t.languages)))
    return check_filter(fields, cfg.max_metadata_chars, cfg.max_metadata_depth)


class Retrieval:
    """Recall in one namespace."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        namespace: str,
        clock: Callable[[], float],
        *,
        vectors: VectorService,
        entities: EntitySource,
    ) -> None:
        self.store = store
        self.settings = settings
        self.namespace = namespace
        self.clock = clock
        self.vectors = vectors
        self.entities = entities

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        exclude_session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        metadata: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        mode: str | None = None,
        depth: int = 0,
        archive: bool = False,
        touch: bool = True,
        **times: Any,
    ) -> builtins.list[Hit]:
        """``Memory.recall``: every argument checked before anything is read, then the live
        set (or the archive) searched, best first."""
        query = check_query(query, self.settings.recall.max_query_chars)  # before any parsing
        limit = check_limit(limit if limit is not None else self.settings.recall.limit)
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 3:
            raise InvalidInputError("depth must be 0, 1, 2 or 3")
        flt = checked_filter(self.settings, self.clock, kind=kind, tags=tags,
                             session_id=session_id, exclude_session_id=exclude_session_id,
                             narrative_id=narrative_id, task_id=task_id, metadata=metadata,
                             include_invalid=include_invalid, **times)
        check_flag(touch, "touch")
        check_flag(archive, "archive")
        if mode is not None and (not isinstance(mode, str) or mode.lower() not in MODES):
            raise InvalidInputError(f"mode must be one of {', '.join(MODES)}")
        if not query.strip():
            return []  # 000: empty queries return immediately
        if archive:
            return self.recall_archive(query, limit)
        now = self.clock()
        chosen = self.mode(mode)
        # The question's own time: periods it names ("four weeks ago") and recency are read
        # against ``as_of`` when given (a question asked then), else against now.
        asked = flt.as_of if flt.as_of is not None else now
        req = RecallRequest(self.namespace, query, limit, flt, asked, chosen, depth)
        hits = self.retriever(chosen).recall(req)
        if touch and hits:
            self.after_recall(hits, now)
            hits = [
                Hit(
                    h.memory.evolve(last_accessed=now, access_count=h.memory.access_count + 1),
                    h.score,
                    h.explain,
                )
                for h in hits
            ]
        return hits

    def mode(self, mode: str | None) -> str:
        """The mode a recall runs in: the one asked for (or configured), "auto" resolved to
        hybrid when vectors work, else keyword; vector modes without vectors are refused."""
        mode = (mode or self.settings.recall.mode).lower()
        if mode == "keyword":
            return mode
        available = self.vectors.vectors() is not None
        if mode == "auto" and not available and self.settings.recall.entity_without_vectors:
            # 004's fallback: FTS5 and entity lists fused; hybrid without a vector list
            return "hybrid" if self.entities.layer() else "keyword"
        if mode == "auto":
            return "hybrid" if available else "keyword"
        if not available:
            raise InvalidInputError(f"{mode} recall needs vectors: {self.vectors.vector_status()}")
        return mode

    def retriever(self, mode: str = "hybrid") -> Retriever:
        """The search pipeline for ``mode``. Keyword recall never loads the embedding model
        (a cold `clawmem recall --mode keyword` must not pay for it)."""
        vectors = None if mode == "keyword" else self.vectors.vectors()
        return Retriever(
            self.store,
            self.settings.recall,
            time_cfg=self.settings.time,
            vectors=vectors,
            embed_query=self.vectors.embed_query if vectors is not None else None,
            entity_search=self.entity_search if self.entities.layer() else None,
        )

    def entity_search(
        self, namespace: str, query: str, limit: int
    ) -> builtins.list[tuple[str, str, float]]:
        """The entity candidate list: memories linked to the entities the query names."""
        layer = self.entities.layer()
        if layer is None:
            return []
        index, ner = layer
        names = candidate_names(query, ner)
        hits = index.search(namespace, names, limit) if names else []
        return [(h.memory_id, h.entity_name, h.score) for h in hits]

    def after_recall(self, hits: builtins.list[Hit], now: float) -> None:
        """Side effects of a recall: access bookkeeping (queued for a background write, see
        search/access.py) and (003 v2) co-recall links."""
        ids = [h.memory.id for h in hits]
        tracker_for(self.store, self.settings.recall.touch_delay_s).record(
            self.namespace, ids, now)
        if self.settings.recall.co_recall:
            top = ids[:5]
            inc = self.settings.recall.co_recall_increment
            for i, a in enumerate(top):
                for b in top[i + 1 :]:
                    self.store.link(self.namespace, a, b, strength=inc, origin="co-recall")

    def recall_archive(self, query: str, limit: int | None = None) -> builtins.list[Hit]:
        """Keyword search over the archive (003): archived memories matching ``query``, best
        first. Each hit explains itself with ``via="archive"`` and its rank in the archive list;
        the score is RRF-shaped (``1 / (rrf_k + rank)``) because archived memories have no live
        ranking factors. The archive is read-only here: nothing is touched or restored."""
        cfg = self.settings.recall
        count = check_limit(limit if limit is not None else cfg.limit)
        terms = sanitize_terms(query) if isinstance(query, str) else []
        if cfg.stopwords:
            terms = content_terms(terms)
        if not terms:
            return []
        hits = []
        for rank, r in enumerate(self.store.archive_search(self.namespace, terms, count), 1):
            stems = set(tokenize(f"{r.key or ''} {r.content} {' '.join(r.tags)} {r.source or ''}"))
            score = 1.0 / (cfg.rrf_k + rank)
            explain = Explanation(
                matched_terms=tuple(t for t in terms if stem(t) in stems),
                lists={"archive": {"rank": float(rank)}},
                fused=score,
                via="archive",
                final=score,
            )
            hits.append(Hit(r, score, explain))
        return hits

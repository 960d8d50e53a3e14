"""The import/export and vector-maintenance half of ``Memory`` (a mixin, so engine.py stays one
readable service): snapshots, every importer's write path, reindex and backfill."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from clawmemory.errors import InvalidInputError
from clawmemory.model import Filter, MemoryRecord
from clawmemory.snapshot import ParsedSnapshot, dump_snapshot, parse_snapshot

if TYPE_CHECKING:
    from clawmemory.components import Components
    from clawmemory.config import Settings
    from clawmemory.engine import Memory
    from clawmemory.store.base import Store

__all__ = ["ImportReport", "PortabilityMixin"]


class ImportReport(dict[str, int]):
    """Counts from an import: ``created``, ``skipped``, ``links``."""


class PortabilityMixin:
    """Methods of ``Memory`` that move memories in and out, or rebuild their vectors."""

    store_backend: Store
    settings: Settings
    namespace: str
    clock: Callable[[], float]
    components: Components

    if TYPE_CHECKING:

        def _transaction(self) -> AbstractContextManager[Any]: ...

        def _mentions(self, records: Sequence[MemoryRecord]) -> builtins.list[Any]: ...

        def _derive(self, results: Sequence[tuple[MemoryRecord, bool]],
                    mentions: Sequence[Any]) -> builtins.list[tuple[str, str, int, int]]: ...

        def _fill(self, records: Sequence[MemoryRecord],
                  entries: Sequence[tuple[str, str, int, int]],
                  preceding: dict[str, builtins.list[MemoryRecord]], *,
                  background: bool = False) -> None: ...

        def _mirror(self, written: Sequence[MemoryRecord] = (),
                    removed: Sequence[MemoryRecord] = ()) -> None: ...

        def with_namespace(self, namespace: str) -> Memory: ...

    # --- portability (000) ---------------------------------------------------------------------
    def export_snapshot(self) -> str:
        """Every memory of this namespace as JSON (embeddings excluded). Lossless with
        ``import_snapshot``."""
        records: builtins.list[MemoryRecord] = []
        flt = Filter(include_invalid=True)
        while batch := self.store_backend.list(
            self.namespace, flt, limit=5000, offset=len(records), order="oldest"
        ):
            records.extend(batch)
        links = self.store_backend.links(self.namespace, [r.id for r in records])
        return dump_snapshot(self.namespace, records, links)

    def import_snapshot(
        self, text: str, *, source: str = "<snapshot>", dry_run: bool = False
    ) -> ImportReport:
        """Import a snapshot; entries whose key or id already exists are skipped. All or
        nothing: a malformed entry raises ImportFormatError and nothing is written."""
        if not isinstance(text, str):
            raise InvalidInputError(f"a snapshot is JSON text, not {type(text).__name__}")
        if not isinstance(source, str) or not isinstance(dry_run, bool):
            raise InvalidInputError("source must be text and dry_run true or false")
        parsed = parse_snapshot(
            text,
            namespace=self.namespace,
            now=self.clock(),
            max_chars=self.settings.storage.max_content_chars,
            source=source,
        )
        return self.import_records(parsed, dry_run=dry_run)

    def import_records(
        self,
        parsed: ParsedSnapshot,
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Write already-validated records (and links between them) in one all-or-nothing
        transaction, skipping ids and keys that already exist, then index what was created
        (embeddings in batches, entity links; ``progress(done, total)``). Every importer ends
        here."""
        # Every imported memory arrives now: its source's dates stay (provenance), but idle
        # clocks start at arrival, so an import never makes a memory look old to this store.
        now = self.clock()
        parsed = ParsedSnapshot(
            [r.evolve(namespace=self.namespace, stored_at=now) for r in parsed.records],
            parsed.links,
        )
        ids = [r.id for r in parsed.records]
        existing = {
            r.id
            for i in range(0, len(ids), 5000)
            for r in self.store_backend.get_many(self.namespace, ids[i : i + 5000])
        }
        fresh, seen = [], set(existing)
        for r in parsed.records:
            if r.id not in seen:
                seen.add(r.id)
                fresh.append(r)
        if dry_run:
            return ImportReport(
                created=len(fresh),
                skipped=len(parsed.records) - len(fresh),
                links=len(parsed.links),
            )
        if not fresh:
            return ImportReport(created=0, skipped=len(parsed.records), links=0)
        links_before = self.store_backend.stats(self.namespace).links
        mentions = self._mentions(fresh)
        # Records, links, entity links and vector-queue rows: all or nothing.
        with self._transaction():
            results = self.store_backend.put_many(
                fresh, skip_existing_keys=True, links=parsed.links)
            created = [(i, r) for i, (r, was_created) in enumerate(results) if was_created]
            entries = self._derive([(r, True) for _, r in created],
                                   [mentions[i] for i, _ in created] if mentions else [])
        new = [r for _, r in created]
        self._mirror(new)
        links = self.store_backend.stats(self.namespace).links - links_before
        self._index_imported(new, entries, progress)
        return ImportReport(
            created=len(new), skipped=len(parsed.records) - len(new), links=max(links, 0)
        )

    def _index_imported(
        self,
        records: Sequence[MemoryRecord],
        entries: Sequence[tuple[str, str, int, int]],
        progress: Callable[[int, int], None] | None,
    ) -> None:
        """Vectors of imported records, in batches (``progress(done, total)``)."""
        size = max(self.settings.embedder.batch_size, 256)
        queued = {e[1]: e for e in entries}
        for i in range(0, len(records), size):
            batch = records[i : i + size]
            self._fill(batch, [queued[r.id] for r in batch if r.id in queued], {})
            if progress:
                progress(min(i + size, len(records)), len(records))

    # --- vectors -------------------------------------------------------------------------------
    def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int:
        """Drop every stored vector and embed all memories again with the current embedder
        (after a model change). The model is locked per database, so this covers every
        namespace in the store, not just this one. Returns how many were embedded."""
        vectors = self.components.reset_vectors()
        views = [self.with_namespace(ns) for ns in self.store_backend.namespaces()]
        total = sum(v.store_backend.count(v.namespace, Filter()) for v in views)
        done = 0
        for view in views:

            def step(n: int, _: int, base: int = done) -> None:
                if progress:
                    progress(base + n, total)

            done += view._embed_missing(vectors, total, step, batch_size)
        return done

    def backfill(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int:
        """Embed the memories that have no vector yet: those queued (stored by a process that
        did not load the model, or killed before it stored the vector) and any other without
        one (stored while no embedder worked). Returns how many were embedded."""
        vectors = self.components.vectors()
        if vectors is None:
            raise InvalidInputError(self.components.vector_status())
        total = self.store_backend.count(self.namespace, Filter())
        return self._embed_missing(
            vectors, total - vectors.count(self.namespace), progress, batch_size
        )

    def repair(self) -> dict[str, int]:
        """Rebuild derived rows a crash or an older version left missing (``clawmem
        maintain`` runs it): vectors of queued or unembedded memories, entity links of
        memories never linked, and the turn-to-turn chain of sessions. Counts per kind."""
        from clawmemory.repair import repair

        return repair(self.with_namespace(self.namespace))

    def _embed_missing(
        self, vectors: Any, total: int, progress: Callable[[int, int], None] | None, batch_size: int
    ) -> int:
        done = 0
        queue = self.components.vector_queue()
        if queue is not None:  # queued first: their rows come off the queue with the vector
            from clawmemory.indexing import fill_vectors

            after = 0
            while rows := queue.pending(self.namespace, batch_size, after=after):
                done += fill_vectors(self.components, queue, rows)
                after = rows[-1][2]
                if progress:
                    progress(done, max(total, done))
        while ids := vectors.missing(self.namespace, batch_size):
            records = self.store_backend.get_many(self.namespace, ids)
            embedded = self.components.embed_documents(records)
            vectors.upsert(self.namespace, embedded)
            done += len(records)
            if progress:
                progress(done, max(total, done))
            if len(embedded) < len(ids):  # nothing could be embedded: stop instead of spinning
                break
        return done

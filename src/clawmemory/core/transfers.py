"""Moving memories in and out of a namespace (000 snapshots and every importer's write path)
and rebuilding vectors (reindex, backfill)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence

from clawmemory.backends.base import Store
from clawmemory.config import Settings
from clawmemory.core.indexing import fill_vectors
from clawmemory.core.vectors import VectorService
from clawmemory.core.writes import WritePath
from clawmemory.entities.base import with_source_entities
from clawmemory.errors import InvalidInputError
from clawmemory.model import ALREADY_PRESENT, Filter, ImportReport, MemoryRecord, ParsedImport
from clawmemory.snapshot import dump_snapshot, parse_snapshot
from clawmemory.vectors.base import QueueEntry, VectorStore

__all__ = ["ALREADY_PRESENT", "ImportReport", "Transfers"]

Progress = Callable[[int, int], None]


class Transfers:
    """Snapshots, imports and vector rebuilds of one namespace (reindex: of the whole store)."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        namespace: str,
        clock: Callable[[], float],
        *,
        writes: WritePath,
        vectors: VectorService,
    ) -> None:
        self.store = store
        self.settings = settings
        self.namespace = namespace
        self.clock = clock
        self.writes = writes
        self.vectors = vectors

    # --- portability (000) ---------------------------------------------------------------------
    def export_snapshot(self) -> str:
        """Every memory of this namespace as JSON (embeddings excluded). Lossless with
        ``import_snapshot``."""
        records: builtins.list[MemoryRecord] = []
        flt = Filter(include_invalid=True)
        while batch := self.store.list(
            self.namespace, flt, limit=5000, offset=len(records), order="oldest"
        ):
            records.extend(batch)
        links = self.store.links(self.namespace, [r.id for r in records])
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
            legacy_provenance=True,
        )
        return self.import_records(parsed, dry_run=dry_run)

    def import_records(
        self,
        parsed: ParsedImport,
        *,
        dry_run: bool = False,
        progress: Progress | None = None,
    ) -> ImportReport:
        """Write already-validated records (and links between them) in one all-or-nothing
        transaction, skipping ids and keys that already exist, then index what was created
        (embeddings in batches, entity links; ``progress(done, total)``). Every importer ends
        here. Episodes join their session's turn-to-turn chain as on every write; records the
        reader marks ``archived`` go to the archive (their source had archived them)."""
        # Every imported memory arrives now: its source's dates stay (provenance), but idle
        # clocks start at arrival, so an import never makes a memory look old to this store.
        now = self.clock()
        records = [r.evolve(namespace=self.namespace, stored_at=now) for r in parsed.records]
        fresh = self._fresh(records, parsed.archived)
        present = len(records) - len(fresh)
        skipped = present + len(parsed.skipped)
        if dry_run:  # the counts the import would have; the store is only read
            chained = self.writes.sequence_links(fresh, self.writes.preceding(fresh))
            return ImportReport(created=len(fresh), skipped=skipped,
                                links=len(parsed.links) + len(chained),
                                skips=parsed.skipped, present=present,
                                archived=sum(r.id in parsed.archived for r in fresh))
        if not fresh:
            return ImportReport(created=0, skipped=skipped, links=0, skips=parsed.skipped,
                                present=present)
        links_before = self.store.stats(self.namespace).links
        mentions = self.writes.mentions(fresh)
        if mentions and parsed.entities:  # the source's own typed entities join the NER's
            mentions = [with_source_entities(r.content, m, parsed.entities.get(r.id, ()))
                        for r, m in zip(fresh, mentions, strict=True)]
        # Records, links, entity links and vector-queue rows: all or nothing.
        with self.writes.transaction():
            preceding = self.writes.preceding(fresh)
            results = self.store.put_many(
                fresh, skip_existing_keys=True,
                links=[*parsed.links, *self.writes.sequence_links(fresh, preceding)])
            created = [(i, r) for i, (r, was_created) in enumerate(results) if was_created]
            entries = self.writes.derive([(r, True) for _, r in created],
                                   [mentions[i] for i, _ in created] if mentions else [])
            archived = self._archive_imported([r for _, r in created], parsed.archived)
        new = [r for _, r in created if r.id not in archived]
        self.writes.mirror(new)
        links = self.store.stats(self.namespace).links - links_before
        before = {fresh[i].id: p for i, p in enumerate(preceding) if p}
        self._index_imported(new, [e for e in entries if e[1] not in archived], before, progress)
        return ImportReport(created=len(created), skipped=len(records) - len(created)
                            + len(parsed.skipped), links=max(links, 0), skips=parsed.skipped,
                            present=len(records) - len(created), archived=len(archived))

    def _fresh(self, records: Sequence[MemoryRecord],
               archived: Mapping[str, float]) -> builtins.list[MemoryRecord]:
        """The records whose id is neither stored (live or archived) nor earlier in the
        batch (``archived``: the ids that arrive archived)."""
        ids = [r.id for r in records]
        existing = {
            r.id
            for i in range(0, len(ids), 5000)
            for r in self.store.get_many(self.namespace, ids[i : i + 5000])
        }
        # Archived ones only for records that arrive archived: one lookup each, and they are
        # what a second import of the same source would otherwise bring back as live copies.
        existing.update(rid for rid in archived
                        if self.store.find_archived(self.namespace, rid) is not None)
        fresh, seen = [], set(existing)
        for r in records:
            if r.id not in seen:
                seen.add(r.id)
                fresh.append(r)
        return fresh

    def _archive_imported(self, created: Sequence[MemoryRecord],
                          archived: Mapping[str, float]) -> set[str]:
        """Move the just-created records the source had archived into the archive, keeping
        the time it archived them (grouped: ``Store.archive`` takes one time per call)."""
        by_time: dict[float, builtins.list[str]] = {}
        for r in created:
            if r.id in archived:
                by_time.setdefault(archived[r.id], []).append(r.id)
        moved: set[str] = set()
        for at, ids in sorted(by_time.items()):
            self.store.archive(self.namespace, ids, at=at)
            moved.update(ids)
        return moved

    def _index_imported(
        self,
        records: Sequence[MemoryRecord],
        entries: Sequence[QueueEntry],
        preceding: dict[str, builtins.list[MemoryRecord]],
        progress: Progress | None,
    ) -> None:
        """Vectors of imported records, in batches (``progress(done, total)``); episodes are
        embedded with the turns before them, as on every write."""
        size = max(self.settings.embedder.batch_size, 256)
        queued = {e[1]: e for e in entries}
        for i in range(0, len(records), size):
            batch = records[i : i + size]
            entries = [queued[r.id] for r in batch if r.id in queued]
            self.writes.fill(batch, entries, preceding)
            if progress:
                progress(min(i + size, len(records)), len(records))

    # --- vectors -------------------------------------------------------------------------------
    def reindex(self, *, progress: Progress | None = None, batch_size: int = 256) -> int:
        """Drop every stored vector and embed all memories again with the current embedder
        (after a model change). The model is locked per database, so this covers every
        namespace in the store, not just this one. Returns how many were embedded."""
        vectors = self.vectors.reset_vectors()
        namespaces = self.store.namespaces()
        total = sum(self.store.count(ns, Filter()) for ns in namespaces)
        done = 0
        for ns in namespaces:

            def step(n: int, _: int, base: int = done) -> None:
                if progress:
                    progress(base + n, total)

            done += self._embed_missing(ns, vectors, total, step, batch_size)
        return done

    def backfill(self, *, progress: Progress | None = None, batch_size: int = 256) -> int:
        """Embed the memories of this namespace that have no vector yet: those queued (stored
        by a process that did not load the model, or killed before it stored the vector) and
        any other without one (stored while no embedder worked). Returns how many were
        embedded."""
        vectors = self.vectors.vectors()
        if vectors is None:
            raise InvalidInputError(self.vectors.vector_status())
        total = self.store.count(self.namespace, Filter())
        return self._embed_missing(
            self.namespace, vectors, total - vectors.count(self.namespace), progress, batch_size
        )

    def _embed_missing(self, namespace: str, vectors: VectorStore, total: int,
                       progress: Progress | None, batch_size: int) -> int:
        done = 0
        queue = self.vectors.vector_queue()
        if queue is not None:  # queued first: their rows come off the queue with the vector
            after = 0
            while rows := queue.pending(namespace, batch_size, after=after):
                done += fill_vectors(self.vectors, queue, rows)
                after = rows[-1][2]
                if progress:
                    progress(done, max(total, done))
        while ids := vectors.missing(namespace, batch_size):
            records = self.store.get_many(namespace, ids)
            embedded = self.vectors.embed_documents(records)
            vectors.upsert(namespace, embedded)
            done += len(records)
            if progress:
                progress(done, max(total, done))
            if len(embedded) < len(ids):  # nothing could be embedded: stop instead of spinning
                break
        return done

"""The write path of ``Memory`` (a mixin, so engine.py stays one readable service): a record is
committed together with everything derived from it, then its vector follows (ADR 0013).

In one transaction: the records, the link from each new turn to the previous turn of its
session (found inside the transaction, so concurrent turns of one session form one chain),
their entity links and their vector-queue rows. Then the vectors: right away, in the background
worker (``observe()``), or by the next process that has the model loaded.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from clawmemory.model import MemoryRecord

if TYPE_CHECKING:
    from clawmemory.backends.base import Store
    from clawmemory.backends.sqlite.queue import QueueEntry
    from clawmemory.components import Components
    from clawmemory.config import Settings

__all__ = ["WritePathMixin"]

def _after_previous(
    records: Sequence[MemoryRecord], preceding: Sequence[Sequence[MemoryRecord]]
) -> builtins.list[MemoryRecord]:
    """New turns timed no earlier than the turn they follow: a concurrent writer whose clock
    read later may have committed first, and turn order must stay the order of the chain."""
    out = []
    for record, prev in zip(records, preceding, strict=True):
        last = prev[-1].created_at if prev else record.created_at
        out.append(record if last <= record.created_at else record.evolve(
            created_at=last, updated_at=max(record.updated_at, last),
            last_accessed=max(record.last_accessed or last, last)))
    return out


class WritePathMixin:
    """The methods of ``Memory`` that write records with their derived rows."""

    store_backend: Store
    settings: Settings
    namespace: str
    clock: Callable[[], float]
    components: Components

    if TYPE_CHECKING:

        def _mirror(self, written: Sequence[MemoryRecord] = (),
                    removed: Sequence[MemoryRecord] = ()) -> None: ...

    def _write(
        self, records: Sequence[MemoryRecord], *, background: bool = False
    ) -> builtins.list[MemoryRecord]:
        """Write new records with everything derived from them: the link to the previous turn
        of their session, their entity links and their vector-queue rows, all in one
        transaction (which is the namespace's only writer from its start, so concurrent turns of
        one session form a single chain: ``_transaction``). Then their vectors: now
        (``vector_writes == "sync"``), by the background worker (``background``), or by the
        next process that has the model loaded (``"queue"``)."""
        records = self._event_times(records)
        mentions = self._mentions(records)  # pure computation: before the lock is taken
        with self._transaction():
            preceding = self._preceding(records)
            records = _after_previous(records, preceding)
            results = self.store_backend.put_many(
                records, skip_existing_keys=False, links=self._sequence_links(records, preceding)
            )
            entries = self._derive(results, mentions)
        stored = [r for r, _ in results]
        self._mirror(stored)
        self._fill(stored, entries, {s.id: p for s, p in zip(stored, preceding, strict=True)},
                   background=background)
        return stored

    def _event_times(self, records: Sequence[MemoryRecord]) -> Sequence[MemoryRecord]:
        """New records whose text names one day unambiguously ("yesterday", "on 15 July
        2023") get that day as ``event_time``, read against the event time given (a turn's
        session date) or the time of storing (``time.from_text``; search/temporal.py)."""
        cfg = self.settings.time
        if not cfg.from_text:
            return records
        from clawmemory.search.temporal import event_time_from_text, zone

        tz, languages = zone(cfg.time_zone), tuple(cfg.languages)
        out = []
        for r in records:
            reference = r.event_time if r.event_time is not None else r.created_at
            found = event_time_from_text(r.content, reference, tz, languages)
            out.append(r if found is None else r.evolve(event_time=found[0]))
        return out

    def _mentions(self, records: Sequence[MemoryRecord]) -> builtins.list[Any]:
        """The fast NER's mentions of each record ([] when entities are off)."""
        layer = self.components.entity_layer()
        return [layer[1].extract(r.content) for r in records] if layer is not None else []

    def _derive(
        self, results: Sequence[tuple[MemoryRecord, bool]], mentions: Sequence[Any]
    ) -> builtins.list[QueueEntry]:
        """Inside the records' write transaction: their entity links (``mentions`` per record,
        empty when entities are off; an updated record's stale links are dropped) and their
        vector-queue rows, returned as queue entries."""
        layer = self.components.entity_layer()
        if layer is not None and mentions:
            for replace in (False, True):
                items = [(r.id, m) for (r, created), m in zip(results, mentions, strict=True)
                         if created is not replace]
                if items:
                    layer[0].link_many(self.namespace, items, replace=replace)
        queue = self.components.vector_queue()
        if queue is None:
            return []
        return queue.enqueue(self.namespace, [r.id for r, _ in results], self.clock())

    def _fill(
        self,
        records: Sequence[MemoryRecord],
        entries: Sequence[QueueEntry],
        preceding: dict[str, builtins.list[MemoryRecord]],
        *,
        background: bool = False,
    ) -> None:
        """Vectors of records just written: now (``vector_writes == "sync"``), by the
        background worker (``background``), or left queued for the next process with the model
        loaded (``"queue"``). A failed embedding leaves the queue row, never the record."""
        queue = self.components.vector_queue()
        if queue is None:  # no queue on this backend: embed now, as it always did
            if self.components.vector_writes == "queue":
                return  # a one-shot command on an in-process store: nothing would keep them
            store = self.components.vectors()
            vectors = self.components.embed_documents(
                records, [preceding.get(r.id, []) for r in records])
            if store is not None and vectors:
                store.upsert(self.namespace, vectors)
            return
        if background:
            worker = self.components.worker()
            if worker is not None:
                worker.submit([e[2] for e in entries])
        elif self.components.vector_writes == "sync":
            from clawmemory.indexing import fill_vectors

            fill_vectors(self.components, queue, entries, preceding)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (re-entrant) where the store has them; elsewhere the
        process-wide write lock, which is all the atomicity an in-process backend has.

        From its first statement the transaction is its namespace's only writer, so what it
        reads before writing (a session's previous turn, the version it supersedes) cannot
        change under it: SQLite's write lock covers the whole file; PostgreSQL takes the
        namespace's advisory lock here (``lock_namespace``), not at the first insert, which
        came after the previous turn had been read and let concurrent turns fork a chain."""
        write = getattr(self.store_backend, "write", None)
        if not callable(write):
            with self.components.write_lock:
                yield
            return
        with write():
            lock = getattr(self.store_backend, "lock_namespace", None)
            if callable(lock):
                lock(self.namespace)
            yield

    def _preceding(
        self, records: Sequence[MemoryRecord]
    ) -> builtins.list[builtins.list[MemoryRecord]]:
        """The earlier turns of each new episode, looked up once (inside the write transaction)
        for both the embedding context and the sequence link."""
        n = max(
            self.settings.embedder.context_turns, 1 if self.settings.storage.sequence_links else 0
        )
        return self.components.preceding_turns(records, n, new=True)

    def _sequence_links(
        self, records: Sequence[MemoryRecord], preceding: Sequence[Sequence[MemoryRecord]]
    ) -> builtins.list[tuple[str, str, float, str]]:
        """Links from each episode to the turn before it in its session (origin "sequence"),
        so recall can follow a dialogue (depth=1, neighbour smoothing)."""
        if not self.settings.storage.sequence_links:
            return []
        return [
            (prev[-1].id, r.id, 1.0, "sequence")
            for r, prev in zip(records, preceding, strict=True)
            if prev and not r.key
        ]  # a keyed episode is an upsert target, not a turn

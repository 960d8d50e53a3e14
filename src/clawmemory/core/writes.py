"""The write path: a record is committed together with everything derived from it, then its
vector follows (ADR 0013). Every write of the engine goes through ``WritePath`` (store, update,
correct, restore, import, observe), so no write can skip a derived row.

In one transaction: the records, the link from each new turn to the previous turn of its
session (found inside the transaction, so concurrent turns of one session form one chain),
their entity links and their vector-queue rows. Then the vectors: right away, in the background
worker (``observe()``), or by the next process that has the model loaded. Right away means
computed beside the write (``WritePath.embed_ahead``) and stored after its commit.
"""

from __future__ import annotations

import builtins
import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import Store
from clawmemory.config import Settings
from clawmemory.core.entities import EntitySource
from clawmemory.core.indexing import embedding_failed, fill_vectors
from clawmemory.core.mirror import Mirrors
from clawmemory.core.vectors import VectorService, document_text
from clawmemory.entities.base import Mention
from clawmemory.errors import ClawMemoryError, InvalidInputError
from clawmemory.model import MemoryRecord, kind_policy, normalize_kind
from clawmemory.search.temporal import event_time_from_text, zone
from clawmemory.snapshot import new_id
from clawmemory.validation import (
    check_content,
    check_key,
    check_label,
    check_labels,
    check_metadata,
    check_provenance_id,
    check_tags,
    check_time,
)
from clawmemory.vectors.base import QueueEntry

if TYPE_CHECKING:  # numpy loads on first vector use, not at import
    import numpy as np
    import numpy.typing as npt

    F32 = npt.NDArray[np.float32]

__all__ = ["WritePath", "check_confidence"]

Mentions = builtins.list[Mention]
# ``store()``'s optional arguments with their defaults (``store_many`` items may omit them).
STORE_DEFAULTS: Mapping[str, Any] = {
    "key": None, "kind": "fact", "tags": (), "metadata": None, "session_id": None,
    "narrative_id": None, "task_id": None, "event_time": None, "source": None,
    "source_role": None, "source_ids": (), "confidence": 1.0,
}


def check_confidence(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InvalidInputError("confidence must be a number between 0 and 1")
    return float(value)


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


class WritePath:
    """Writes records of one namespace with their derived rows (``Memory``'s every write)."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        namespace: str,
        clock: Callable[[], float],
        *,
        vectors: VectorService,
        entities: EntitySource,
        mirrors: Mirrors,
        write_lock: threading.RLock,
    ) -> None:
        self.store = store
        self.settings = settings
        self.namespace = namespace
        self.clock = clock
        self.vectors = vectors
        self.entities = entities
        self.mirrors = mirrors
        # Serialises "find the previous turn + insert + link" on backends without transactions.
        self.write_lock = write_lock

    # --- new records ---------------------------------------------------------------------------
    def new_record(self, content: str, **fields: Any) -> MemoryRecord:
        """A checked new record of this namespace from ``store()``'s arguments (every one of
        them given: key, kind, tags, metadata, session_id, narrative_id, task_id, event_time,
        source, source_role, source_ids, confidence), stamped now."""
        cfg = self.settings.storage
        now = self.clock()
        kind = normalize_kind(fields.pop("kind"))
        return MemoryRecord(
            id=new_id(),
            content=check_content(content, cfg.max_content_chars),
            namespace=self.namespace,
            key=check_key(fields.pop("key"), cfg.max_key_chars),
            kind=kind,
            tags=check_tags(fields.pop("tags")),
            metadata=self.metadata(fields.pop("metadata")),
            event_time=check_time(fields.pop("event_time"), "event_time"),
            source_ids=check_labels(fields.pop("source_ids"), "source_ids"),
            session_id=check_label(fields.pop("session_id"), "session_id"),
            narrative_id=check_provenance_id(fields.pop("narrative_id"), "narrative_id"),
            task_id=check_provenance_id(fields.pop("task_id"), "task_id"),
            source=check_label(fields.pop("source"), "source"),
            source_role=check_label(fields.pop("source_role"), "source_role"),
            created_at=now,
            updated_at=now,
            stored_at=now,
            last_accessed=now,  # 000: last_accessed is updated on store
            decay_rate=kind_policy(kind).decay_rate,
            confidence=check_confidence(fields.pop("confidence")),
            **fields,
        )

    def metadata(self, metadata: Any) -> dict[str, Any]:
        """Checked metadata (size and depth limits of ``storage``)."""
        cfg = self.settings.storage
        return check_metadata(metadata, cfg.max_metadata_chars, cfg.max_metadata_depth)

    # --- writing -------------------------------------------------------------------------------
    def store_many(
        self, items: Iterable[Mapping[str, Any]], batch_size: int
    ) -> builtins.list[str]:
        """Store checked items (``store()``'s arguments each, ``content`` required) in batches
        of ``batch_size``, each batch one ``write``; returns the ids in order."""
        ids: builtins.list[str] = []
        batch: builtins.list[MemoryRecord] = []
        for item in items:
            fields = {**STORE_DEFAULTS, **item}
            batch.append(self.new_record(fields.pop("content"), **fields))
            if len(batch) >= batch_size:
                ids.extend(r.id for r in self.write(batch))
                batch = []
        if batch:
            ids.extend(r.id for r in self.write(batch))
        return ids

    def write(
        self, records: Sequence[MemoryRecord], *, background: bool = False
    ) -> builtins.list[MemoryRecord]:
        """Write new records with everything derived from them: the link to the previous turn
        of their session, their entity links and their vector-queue rows, all in one
        transaction (which is the namespace's only writer from its start, so concurrent turns of
        one session form a single chain: ``transaction``). Then their vectors: now
        (``vector_writes == "sync"``), by the background worker (``background``), or by the
        next process that has the model loaded (``"queue"``)."""
        ahead = None if background else self.embed_ahead(records)
        records = self.event_times(records)
        mentions = self.mentions(records)  # pure computation: before the lock is taken
        with self.transaction():
            preceding = self.preceding(records)
            records = _after_previous(records, preceding)
            results = self.store.put_many(
                records, skip_existing_keys=False, links=self.sequence_links(records, preceding)
            )
            entries = self.derive(results, mentions)
        stored = [r for r, _ in results]
        self.mirror(stored)
        self.fill(stored, entries, {s.id: p for s, p in zip(stored, preceding, strict=True)},
                  background=background, ahead=ahead)
        return stored

    def embed_ahead(self, records: Sequence[MemoryRecord]) -> _Ahead | None:
        """Start embedding records about to be written, on another thread, while this one
        reads their dates and names and writes them (``vector_writes == "sync"`` only): on two
        cores the model no longer waits for the parser. Their earlier turns are read here,
        outside the transaction; ``fill`` keeps only vectors whose text and context are still
        what the transaction wrote (a concurrent turn of the session changes the context)."""
        if not records or self.vectors.vector_writes != "sync" or self.vectors.embedder is None:
            return None
        preceding = self.preceding(records)
        job = _pool().submit(self.vectors.embed_documents, records, preceding)
        return _Ahead(records, self.vectors.contexts(preceding), job)

    def event_times(self, records: Sequence[MemoryRecord]) -> Sequence[MemoryRecord]:
        """New records whose text names one day unambiguously ("yesterday", "on 15 July
        2023") get that day as ``event_time``, read against the event time given (a turn's
        session date) or the time of storing (``time.from_text``; search/temporal.py)."""
        cfg = self.settings.time
        if not cfg.from_text:
            return records
        tz, languages = zone(cfg.time_zone), tuple(cfg.languages)
        out = []
        for r in records:
            reference = r.event_time if r.event_time is not None else r.created_at
            found = event_time_from_text(r.content, reference, tz, languages)
            out.append(r if found is None else r.evolve(event_time=found[0]))
        return out

    def mentions(self, records: Sequence[MemoryRecord]) -> builtins.list[Mentions]:
        """The fast NER's mentions of each record ([] when entities are off)."""
        layer = self.entities.layer()
        return [layer.ner.extract(r.content) for r in records] if layer is not None else []

    def derive(
        self, results: Sequence[tuple[MemoryRecord, bool]], mentions: Sequence[Mentions]
    ) -> builtins.list[QueueEntry]:
        """Inside the records' write transaction: their entity links (``mentions`` per record,
        empty when entities are off; an updated record's stale links are dropped) and their
        vector-queue rows, returned as queue entries."""
        layer = self.entities.layer()
        if layer is not None and mentions:
            for replace in (False, True):
                items = [(r.id, m) for (r, created), m in zip(results, mentions, strict=True)
                         if created is not replace]
                if items:
                    layer.entity_index.link_many(self.namespace, items, replace=replace)
        queue = self.vectors.vector_queue()
        if queue is None:
            return []
        return queue.enqueue(self.namespace, [r.id for r, _ in results], self.clock())

    def fill(
        self,
        records: Sequence[MemoryRecord],
        entries: Sequence[QueueEntry],
        preceding: Mapping[str, Sequence[MemoryRecord]],
        *,
        background: bool = False,
        ahead: _Ahead | None = None,
    ) -> None:
        """Vectors of records just written: now (``vector_writes == "sync"``), by the
        background worker (``background``), or left queued for the next process with the model
        loaded (``"queue"``). A failed embedding leaves the queue row, never the record.
        ``ahead``: the embedding ``embed_ahead`` started, used where it still holds."""
        queue = self.vectors.vector_queue()
        try:  # a failed embedding is not tried again: a provider that is down, once
            ready = ahead.usable(records, self.vectors.contexts(
                [preceding.get(r.id, []) for r in records])) if ahead is not None else None
        except ClawMemoryError as exc:
            if queue is None:
                raise
            embedding_failed(queue, entries, exc)
            return
        if queue is None:  # no queue on this backend: embed now, as it always did
            if self.vectors.vector_writes == "queue":
                return  # a one-shot command on an in-process store: nothing would keep them
            store = self.vectors.vectors()
            vectors = self.vectors.embed_documents(
                records, [preceding.get(r.id, []) for r in records], ready)
            if store is not None and vectors:
                store.upsert(self.namespace, vectors)
            return
        if background:
            worker = self.vectors.worker()
            if worker is not None:
                worker.submit([e[2] for e in entries])
        elif self.vectors.vector_writes == "sync":
            fill_vectors(self.vectors, queue, entries, preceding, ready)

    def mirror(
        self, written: Sequence[MemoryRecord] = (), removed: Sequence[MemoryRecord] = (),
        retired: Sequence[MemoryRecord] = (),
    ) -> None:
        """Write changes through to the Markdown mirror, if one is configured (a failure is
        logged, not raised: the database is the source of truth). ``removed``: forgotten, the
        notes go; ``retired``: taken out of the live set by the lifecycle, the notes go unless
        the user edited them since the last sync."""
        self.mirrors.write_through(self.namespace, written, removed, retired)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction (re-entrant) where the store has them; elsewhere the
        process-wide write lock, which is all the atomicity an in-process backend has.

        From its first statement the transaction is its namespace's only writer, so what it
        reads before writing (a session's previous turn, the version it supersedes) cannot
        change under it: SQLite's write lock covers the whole file; PostgreSQL takes the
        namespace's advisory lock here (``lock_namespace``), not at the first insert, which
        came after the previous turn had been read and let concurrent turns fork a chain."""
        write = getattr(self.store, "write", None)
        if not callable(write):
            with self.write_lock:
                yield
            return
        with write():
            lock = getattr(self.store, "lock_namespace", None)
            if callable(lock):
                lock(self.namespace)
            yield

    def preceding(
        self, records: Sequence[MemoryRecord]
    ) -> builtins.list[builtins.list[MemoryRecord]]:
        """The earlier turns of each new episode, looked up once (inside the write transaction)
        for both the embedding context and the sequence link."""
        n = max(
            self.settings.embedder.context_turns, 1 if self.settings.storage.sequence_links else 0
        )
        return self.vectors.preceding_turns(records, n, new=True)

    def sequence_links(
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


class _Ahead:
    """An embedding started before its records were written (``WritePath.embed_ahead``)."""

    def __init__(self, records: Sequence[MemoryRecord], contexts: Sequence[str],
                 job: Future[builtins.list[tuple[str, F32]]]) -> None:
        self.read = {r.id: (document_text(r), c)
                     for r, c in zip(records, contexts, strict=True)}
        self.job = job

    def usable(self, written: Sequence[MemoryRecord], contexts: Sequence[str]
               ) -> dict[str, F32]:
        """The vectors of ``written`` that were computed on the text and context they were
        written with (a keyed upsert may have kept an older id; a concurrent turn may have
        come first). A failure of the embedding is raised here, as ``embed_documents``
        raises it."""
        vectors = dict(self.job.result())
        return {r.id: vectors[r.id] for r, c in zip(written, contexts, strict=True)
                if r.id in vectors and self.read.get(r.id) == (document_text(r), c)}


@functools.cache
def _pool() -> ThreadPoolExecutor:
    """The threads that embed ahead of writes (created on first use; two writers at once)."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="clawmemory-write")

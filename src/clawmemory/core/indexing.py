"""Filling the vector queue (migration 004, ADR 0013): the same code embeds what ``store()``
just wrote, what ``observe()`` left to the background worker, and what a killed process or a
model-less ``clawmem add`` left behind (``maintain``, ``backfill``, the servers).

A queue row is taken off only in the transaction that stores its vector, and only when the
memory is still queued with the token that was read, so a vector of text that changed (or of a
memory forgotten) meanwhile is never stored. A failed embedding is logged and counted on the
row; the record itself is never touched.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from clawmemory.backends.base import Store
from clawmemory.errors import ClawMemoryError
from clawmemory.model import MemoryRecord
from clawmemory.vectors.base import QueueEntry, VectorQueue, VectorStore

if TYPE_CHECKING:  # numpy loads on first vector use, not at import
    import numpy as np
    import numpy.typing as npt

__all__ = ["Embedding", "VectorWorker", "drain_queue", "embedding_failed", "fill_vectors"]

log = logging.getLogger("clawmemory")

# The background worker leaves rows that failed this often to `clawmem maintain`, so a memory
# the model cannot embed does not keep a core busy.
WORKER_MAX_ATTEMPTS = 3


class Embedding(Protocol):
    """What filling the queue needs of the vector side (``core.vectors.VectorService``)."""

    @property
    def store(self) -> Store: ...

    def vectors(self) -> VectorStore | None: ...

    def embed_documents(
        self,
        records: Sequence[MemoryRecord],
        preceding: Sequence[Sequence[MemoryRecord]] | None = None,
        ready: Mapping[str, npt.NDArray[np.float32]] | None = None,
    ) -> list[tuple[str, npt.NDArray[np.float32]]]: ...


def embedding_failed(queue: VectorQueue, entries: Sequence[QueueEntry],
                     exc: ClawMemoryError) -> None:
    """Queued memories whose embedding failed: said once, counted on their queue rows."""
    log.warning("embedding %d queued memories failed (%s); they stay queued for"
                " `clawmem maintain`", len(entries), exc)
    queue.failed([e[2] for e in entries], str(exc))


def fill_vectors(
    embedding: Embedding,
    queue: VectorQueue,
    entries: Sequence[QueueEntry],
    preceding: Mapping[str, Sequence[MemoryRecord]] | None = None,
    ready: Mapping[str, npt.NDArray[np.float32]] | None = None,
) -> int:
    """Embed queued memories and store their vectors; returns how many were stored. Entries
    may span namespaces. ``preceding`` (id -> earlier turns) saves looking them up again when
    the caller just did, ``ready`` (id -> vector) the embedding it already has. Embedding
    errors are logged and counted on the queue rows."""
    vectors = embedding.vectors()
    if vectors is None or not entries:
        return 0
    stored = 0
    by_ns: dict[str, list[QueueEntry]] = {}
    for entry in entries:
        by_ns.setdefault(entry[0], []).append(entry)
    for ns, group in by_ns.items():
        records = embedding.store.get_many(ns, [e[1] for e in group])
        if not records:
            continue
        before = None if preceding is None else [preceding.get(r.id, []) for r in records]
        try:
            embedded = embedding.embed_documents(records, before, ready)
        except ClawMemoryError as exc:
            embedding_failed(queue, group, exc)
            continue
        stored += vectors.upsert(ns, embedded, queued={e[1]: e[3] for e in group})
    return stored


def drain_queue(
    embedding: Embedding,
    queue: VectorQueue,
    namespace: str | None,
    batch: int,
    max_attempts: int | None = None,
) -> int:
    """Embed everything queued (in ``namespace``, or everywhere), batch by batch; returns how
    many vectors were stored. One pass in queue order: rows that fail stay for the next one."""
    done = 0
    after = 0
    while rows := queue.pending(namespace, batch, after=after, max_attempts=max_attempts):
        done += fill_vectors(embedding, queue, rows)
        after = rows[-1][2]
    return done


class VectorWorker:
    """A background thread that embeds the queue after ``observe()`` has returned.

    ``submit(seqs)`` wakes it for rows this process queued. It works in bounded batches
    (``batch`` rows), newest rows of its own first, then whatever else waits (rows another
    process left). ``stop()`` lets it finish this process's own rows, then ends it."""

    def __init__(self, embedding: Embedding, queue: VectorQueue, batch: int) -> None:
        self.embedding = embedding
        self.queue = queue
        self.batch = batch
        self._cv = threading.Condition()
        self._own: set[int] = set()
        self._sweep: int | None = None  # sweeping the whole queue: the last seq done
        self._stopping = False
        self._thread: threading.Thread | None = None

    def submit(self, seqs: Sequence[int]) -> None:
        """Embed these queue rows (this process wrote them) soon."""
        with self._cv:
            if self._stopping:
                return  # closing: the rows stay queued for the next process
            self._own.update(seqs)
            self._start()

    def sweep(self) -> None:
        """Embed everything that waits, whoever queued it (a server that just warmed up)."""
        with self._cv:
            if not self._stopping and self._sweep is None:
                self._sweep = 0
                self._start()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="clawmemory-vectors",
                                            daemon=True)
            self._thread.start()
        self._cv.notify_all()

    def pending(self) -> int:
        """Rows this process queued that are not embedded yet."""
        with self._cv:
            return len(self._own)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until this process's own rows are done (and a sweep finished); False on
        timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._own and self._sweep is None, timeout)

    def stop(self) -> None:
        """Finish this process's own rows (a sweep stops after its current batch), then end
        the thread."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._own and self._sweep is None and not self._stopping:
                    self._cv.wait()
                if self._stopping:
                    self._sweep = None
                if not self._own and self._sweep is None:
                    self._cv.notify_all()
                    return  # stopping, and nothing of ours is left
                own = bool(self._own)
                after = min(self._own) - 1 if own else int(self._sweep or 0)
            rows = self._batch(after)
            with self._cv:
                if own and rows:
                    self._own.difference_update(r[2] for r in rows)
                elif own:  # ours were embedded elsewhere, forgotten, or keep failing
                    self._own.clear()
                elif rows:
                    self._sweep = rows[-1][2]
                else:
                    self._sweep = None
                self._cv.notify_all()

    def _batch(self, after: int) -> list[QueueEntry]:
        try:
            rows = self.queue.pending(None, self.batch, after=after,
                                      max_attempts=WORKER_MAX_ATTEMPTS)
            if rows:
                fill_vectors(self.embedding, self.queue, rows)
        except Exception:  # never let the thread die silently: the rows stay queued
            log.exception("background embedding failed; the memories stay queued for"
                          " `clawmem maintain`")
            return []
        return rows

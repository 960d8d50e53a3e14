"""Write-behind persistence (001 pipeline steps 8b and 13b): the caller's message pipeline hands
a write to one background thread and goes on; a write that fails is logged, never raised.

One thread per writer runs the writes in the order they were submitted, so the messages of a
conversation reach the store in the order they were spoken. The queue is bounded
(``history.write_queue_max``): a store that stops accepting writes for that long must not grow
the process without limit, so a write submitted to a full queue is dropped and logged as an
error (``dropped`` counts them). ``flush()`` waits until everything submitted so far is done.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clawmemory.errors import ClawMemoryError

__all__ = ["WriteBehind", "wait_drained"]

log = logging.getLogger("clawmemory.history")
AT_EXIT_FLUSH_S = 10.0  # how long interpreter exit waits for pending history writes


@dataclass(frozen=True, slots=True)
class _Job:
    what: str  # says in the log which write failed: "append telegram:42: (user)"
    run: Callable[[], object]


_STOP = _Job("stop", lambda: None)


class WriteBehind:
    """A single background writer. ``submit`` never blocks and never raises for a failed write."""

    def __init__(self, *, max_pending: int = 10_000, name: str = "clawmemory-history") -> None:
        self._queue: queue.Queue[_Job] = queue.Queue(maxsize=max_pending)
        self._name = name
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.failures = 0  # writes that raised
        self.dropped = 0  # writes refused because the queue was full or the writer closed
        self.last_error: str | None = None

    def submit(self, what: str, run: Callable[[], object]) -> bool:
        """Queue ``run`` (a store write); False when it was dropped (logged as an error)."""
        with self._lock:
            if self._closed:
                return self._drop(what, "the history writer is closed")
            self._start()
            try:
                self._queue.put_nowait(_Job(what, run))
            except queue.Full:
                return self._drop(what, f"{self._queue.maxsize} writes are already waiting")
        return True

    def _drop(self, what: str, why: str) -> bool:
        self.dropped += 1
        self.last_error = f"{what}: dropped ({why})"
        log.error("history: %s not persisted: %s", what, why)
        return False

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
            # A daemon thread dies with the interpreter: give pending writes a chance first.
            atexit.register(_flush_at_exit, weakref.ref(self))

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is _STOP:
                    return
                job.run()
            except ClawMemoryError as exc:
                self._failed(job, exc)
            except Exception as exc:
                # Not a storage error: a bug. Still logged and counted rather than raised, so
                # the writer thread lives on for the conversation's next writes (001: non-fatal).
                log.exception("history: %s failed unexpectedly", job.what)
                self._failed(job, exc)
            finally:
                self._queue.task_done()

    def _failed(self, job: _Job, exc: Exception) -> None:
        self.failures += 1
        self.last_error = f"{job.what}: {exc}"
        log.warning("history: %s not persisted: %s", job.what, exc)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every write submitted so far has run; False if ``timeout`` passed first."""
        done = threading.Event()
        with self._lock:
            if self._thread is None or self._closed:  # nothing started, or close() drained it
                return self._queue.unfinished_tasks == 0
            try:  # a marker behind the writes already queued: the writer runs them in order
                self._queue.put_nowait(_Job("flush", done.set))
            except queue.Full:
                full = True  # no room for a marker: watch the queue drain instead
            else:
                full = False
        return self._wait_empty(timeout) if full else done.wait(timeout)

    def _wait_empty(self, timeout: float | None) -> bool:
        return wait_drained(self._queue, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Run what is queued, then stop the thread. Later submits are dropped and logged."""
        with self._lock:
            if self._closed:
                return True
            self._closed = True
            thread = self._thread
            if thread is None:
                return True
            self._queue.put(_STOP)  # may wait for room: closing is allowed to wait
        thread.join(timeout)
        return not thread.is_alive()

    @property
    def pending(self) -> int:
        return self._queue.unfinished_tasks


def _flush_at_exit(ref: weakref.ref[WriteBehind]) -> None:
    writer = ref()
    if writer is not None:
        writer.flush(AT_EXIT_FLUSH_S)


def wait_drained(jobs: queue.Queue[Any], timeout: float | None) -> bool:
    """Wait until every item put on ``jobs`` is done (``task_done``); False if ``timeout``
    passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while jobs.unfinished_tasks:
        if deadline is not None and time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True

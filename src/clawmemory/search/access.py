"""Access bookkeeping off the request path: recalls queue their touches, a background thread
writes them.

Every recall counts as access (003: ``last_accessed`` and ``access_count``). Writing that in
the request path put a write transaction (and, now and then, a WAL checkpoint) into every
recall: one recall in a benchmark took 95 ms of its 139 ms there. Now ``record`` only queues
the touch; a daemon thread writes everything queued ``delay_s`` after the first touch, in one
transaction, replaying the touches in order, so counts and times are exactly what immediate
writes would have produced. ``close()`` (called by ``Memory.close``) and ``flush()`` write what
is queued at once; an interpreter that exits without closing still flushes (``atexit``).

One tracker per store object, shared by every namespace view of it. A read-only store records
nothing. ``delay_s = 0`` writes in the request path, as before.
"""

from __future__ import annotations

import atexit
import functools
import logging
import threading
import weakref
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from clawmemory.backends.base import Store

__all__ = ["AccessTracker", "close_tracker", "settle", "tracker_for"]

log = logging.getLogger("clawmemory")
_TRACKERS: weakref.WeakKeyDictionary[Any, AccessTracker] = weakref.WeakKeyDictionary()
_REGISTRY_LOCK = threading.Lock()


class AccessTracker:
    def __init__(self, store: Store, delay_s: float) -> None:
        self._store_ref = weakref.ref(store)  # the registry's key: the tracker must not own it
        self.delay_s = delay_s
        self._pending: list[tuple[str, tuple[str, ...], float]] = []
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one writer at a time keeps the replay in order
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def record(self, namespace: str, ids: Sequence[str], now: float) -> None:
        store = self._store_ref()
        if not ids or store is None or getattr(store, "read_only", False):
            return
        if self.delay_s <= 0 or self._closed:
            store.touch(namespace, ids, now)
            return
        with self._lock:
            self._pending.append((namespace, tuple(ids), now))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="clawmemory-access", daemon=True)
                self._thread.start()
        self._wake.set()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self) -> None:
        """Write every queued touch now (in the calling thread)."""
        with self._flushing:
            with self._lock:
                events, self._pending = self._pending, []
            store = self._store_ref()
            if not events or store is None:
                return
            try:
                _replay(store, events)
            except Exception:
                # Keep them for the next flush: a busy database must not lose counts.
                with self._lock:
                    self._pending[:0] = events
                raise

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        self.flush()

    def _run(self) -> None:
        while not self._closed:
            self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            # Let the touches of a burst of recalls gather, then write them together.
            threading.Event().wait(self.delay_s)
            if self._store_gone():
                return
            try:
                self.flush()
            except Exception as exc:
                if self._store_gone():
                    return
                # Best effort, retried: one line, not the tracebacks of a busy database.
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                log.warning("could not write access counts yet (%s); will retry", first)
                self._wake.set()
                threading.Event().wait(self.delay_s)


    def _store_gone(self) -> bool:
        """Whether the store was closed (or collected) under this tracker: a store closed
        without ``Memory.close`` (which writes the counts first) can take no more writes, and
        retrying would log a warning every ``delay_s`` for the life of the process. What is
        still queued is dropped: access counts, never a memory."""
        store = self._store_ref()
        if store is not None and not store.closed:
            return False
        with self._lock:
            dropped, self._pending = len(self._pending), []
        if dropped:
            log.debug("dropped %d access-count updates: the store was closed first", dropped)
        self._closed = True
        return True


def _replay(store: Store, events: Sequence[tuple[str, tuple[str, ...], float]]) -> None:
    """Write queued touches in order, in one transaction; a backend that can write a burst in
    one statement (PostgreSQL's ``touch_many``, ordered against deadlocks) does."""
    touch_many = getattr(store, "touch_many", None)
    if callable(touch_many):
        touch_many(events)
        return
    with _transaction(store):
        for namespace, ids, now in events:
            store.touch(namespace, ids, now)


def _transaction(store: Store) -> AbstractContextManager[object]:
    """One write transaction for the whole replay where the backend has them."""
    write = getattr(store, "write", None)
    return write() if callable(write) else nullcontext()


def tracker_for(store: Store, delay_s: float) -> AccessTracker:
    """The store's tracker (created on first use)."""
    with _REGISTRY_LOCK:
        tracker = _TRACKERS.get(store)
        if tracker is None:
            tracker = _TRACKERS[store] = AccessTracker(store, delay_s)
            _register_exit()
        return tracker


def settle(store: Store) -> None:
    """Write the store's queued touches, if any (cheap when there are none)."""
    with _REGISTRY_LOCK:
        tracker = _TRACKERS.get(store)
    if tracker is not None and tracker.pending:
        tracker.flush()


def close_tracker(store: Store) -> None:
    """Write the store's queued touches and stop its thread (before the store closes)."""
    with _REGISTRY_LOCK:
        tracker = _TRACKERS.pop(store, None)
    if tracker is not None:
        tracker.close()


@functools.cache
def _register_exit() -> None:
    atexit.register(_flush_all)


def _flush_all() -> None:  # pragma: no cover - runs at interpreter exit
    for tracker in list(_TRACKERS.values()):
        try:
            tracker.close()
        except Exception:
            log.debug("could not flush access counts at exit", exc_info=True)

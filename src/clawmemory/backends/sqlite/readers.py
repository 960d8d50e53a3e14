"""Read connections beside the store's one write connection (ADR 0006 item 5).

A recall reads from several threads at once: the keyword and entity lists on the caller's
thread, the vector side (its freshness check, the candidates' ranking fields) on the recall
pool, and a server answers several recalls at a time. On one connection behind one lock those
reads queued behind each other: at 20k memories the vector side waited ~3 ms per recall for
the keyword ranking to give the connection back. In WAL mode SQLite lets any number of
readers run beside the writer, each reading the last committed state, so reads outside a
write transaction take a connection of their own from this pool.

A reader holds no snapshot between statements (each read is its own statement in autocommit
mode), so it never keeps a checkpoint after a forget from scrubbing the write-ahead log for
longer than the statement it is running. Readers are ``query_only``: nothing can write through
them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_READERS", "ReaderPool"]

# More readers than the recall pool's threads plus a few server threads buys nothing: each
# one costs its own page cache and prepared statements.
MAX_READERS = 6


class ReaderPool:
    """Idle read connections, made on demand by ``connect`` up to ``limit``. ``take`` returns
    None when every reader is busy: the caller then reads on the write connection, as before
    the pool existed."""

    def __init__(self, connect: Callable[[], Any], limit: int = MAX_READERS) -> None:
        self._connect = connect
        self._limit = limit
        self._idle: list[Any] = []
        self._made = 0
        self._closed = False
        self._lock = threading.Lock()

    def take(self) -> Any | None:
        with self._lock:
            if self._closed:
                return None
            if self._idle:
                return self._idle.pop()
            if self._made >= self._limit:
                return None
            self._made += 1
        try:
            return self._connect()
        except BaseException:
            with self._lock:
                self._made -= 1
            raise

    def give(self, conn: Any) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()  # the store closed while this reader was out

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

"""The vector queue of a SQLite file (migration 004, ADR 0013): memories waiting for their
vector. Rows are written inside the writer's transaction (``SQLiteStore.write()`` is
re-entrant), and taken off by ``SQLiteVectors.upsert`` in the transaction that stores the
vector; triggers drop the row of a deleted memory and re-queue one whose text changed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clawmemory.vectors.base import QueueEntry, VectorQueue

if TYPE_CHECKING:
    from clawmemory.backends.sqlite.store import SQLiteStore

__all__ = ["QueueEntry", "SQLiteVectorQueue", "VectorQueue"]

_CHUNK = 500  # bound on bound parameters per statement


class SQLiteVectorQueue:
    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def enqueue(self, namespace: str, ids: Sequence[str], now: float) -> list[QueueEntry]:
        """Mark memories as waiting for their vector, each with a fresh token, and return their
        entries. Joins the caller's transaction, so a memory and its row commit together."""
        out: list[QueueEntry] = []
        with self.store.write():
            c = self.store.conn
            for i in range(0, len(ids), _CHUNK):
                part = ids[i : i + _CHUNK]
                rows = c.execute(
                    "SELECT id, seq FROM memories WHERE namespace = ? AND"
                    f" id IN ({', '.join('?' * len(part))})", (namespace, *part)).fetchall()
                for mid, seq in rows:
                    token = random.getrandbits(62)
                    c.execute("INSERT OR REPLACE INTO vector_queue (seq, namespace, token,"
                              " queued_at) VALUES (?, ?, ?, ?)", (seq, namespace, token, now))
                    out.append((namespace, str(mid), int(seq), token))
        return out

    def pending(
        self,
        namespace: str | None,
        limit: int,
        *,
        after: int = 0,
        max_attempts: int | None = None,
    ) -> list[QueueEntry]:
        """Waiting memories in queue order; every namespace when ``namespace`` is None.
        ``after``: only rows past this seq; ``max_attempts``: only rows that failed fewer
        times."""
        return [(str(ns), str(i), int(seq), int(tok)) for ns, i, seq, tok in self.store.query(
            "SELECT q.namespace, m.id, q.seq, q.token FROM vector_queue q JOIN memories m"
            " ON m.seq = q.seq WHERE (? IS NULL OR q.namespace = ?) AND q.seq > ?"
            " AND (? IS NULL OR q.attempts < ?) ORDER BY q.seq LIMIT ?",
            (namespace, namespace, after, max_attempts, max_attempts, limit))]

    def size(self, namespace: str | None) -> int:
        """How many memories wait (in one namespace, or in all when None)."""
        return int(self.store.query(
            "SELECT COUNT(*) FROM vector_queue WHERE ? IS NULL OR namespace = ?",
            (namespace, namespace))[0][0])

    def failed(self, seqs: Sequence[int], error: str) -> None:
        """Count a failed embedding attempt; the rows stay for a later repair."""
        with self.store.write():
            for seq in seqs:
                self.store.conn.execute(
                    "UPDATE vector_queue SET attempts = attempts + 1, last_error = ?"
                    " WHERE seq = ?", (error[:500], seq))

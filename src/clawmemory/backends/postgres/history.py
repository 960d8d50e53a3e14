"""The history store and the session ledger on the PostgreSQL backend's ``messages``,
``summaries`` and ``sessions`` tables, in the store's transactions: an append takes the
namespace's writer lock, so a position is read and taken by one writer at a time."""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import decode_tool_calls, encode_tool_calls
from clawmemory.llm.base import Message, Role

if TYPE_CHECKING:
    from clawmemory.backends.postgres.store import PostgresStore

__all__ = ["PostgresHistoryStore", "PostgresLedger"]

_COLUMNS = "role, content, tool_calls, tool_call_id, name, metadata"


def _message(row: Sequence[Any]) -> Message:
    role, content, tool_calls, tool_call_id, name, metadata = row
    r: Role = role
    return Message(r, content, tool_calls=decode_tool_calls(tool_calls),
                   tool_call_id=tool_call_id, name=name, metadata=json.loads(metadata))


class PostgresHistoryStore:
    """One namespace's history in a ``PostgresStore``. Errors are the store's StorageError."""

    def __init__(
        self, store: PostgresStore, namespace: str, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.namespace = namespace
        self.clock = clock

    def append(self, key: str, message: Message) -> int:
        values = (
            message.role, message.content, encode_tool_calls(message.tool_calls),
            message.tool_call_id, message.name,
            json.dumps(dict(message.metadata), ensure_ascii=False, sort_keys=True), self.clock(),
        )
        with self.store.write():
            self.store.lock_namespace(self.namespace)
            row = self.store.execute(
                f"INSERT INTO messages (namespace, session_id, seq, {_COLUMNS}, created_at)"
                " SELECT %s, %s, COALESCE(MAX(seq) + 1, 0), %s, %s, %s, %s, %s, %s, %s FROM"
                " messages WHERE namespace = %s AND session_id = %s RETURNING seq",
                (self.namespace, key, *values, self.namespace, key)).fetchone()
        return int(row[0])

    def recent(self, key: str, n: int) -> builtins.list[Message]:
        if n <= 0:
            return []
        rows = self.store.query(
            f"SELECT {_COLUMNS} FROM messages WHERE namespace = %s AND session_id = %s"
            " ORDER BY seq DESC LIMIT %s", (self.namespace, key, n))
        return [_message(r) for r in reversed(rows)]

    def all(self, key: str) -> builtins.list[Message]:
        rows = self.store.query(
            f"SELECT {_COLUMNS} FROM messages WHERE namespace = %s AND session_id = %s"
            " ORDER BY seq", (self.namespace, key))
        return [_message(r) for r in rows]

    def set_summary(self, key: str, summary: str, *, covers: int = 0) -> None:
        with self.store.write():
            self.store.execute(
                "INSERT INTO summaries (namespace, session_id, summary, updated_at, covers)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (namespace, session_id) DO UPDATE SET"
                " summary = excluded.summary, updated_at = excluded.updated_at,"
                " covers = excluded.covers", (self.namespace, key, summary, self.clock(), covers))

    def _summary_row(self, key: str) -> tuple[str, int] | None:
        rows = self.store.query(
            "SELECT summary, covers FROM summaries WHERE namespace = %s AND session_id = %s",
            (self.namespace, key))
        return (str(rows[0][0]), int(rows[0][1])) if rows else None

    def summary(self, key: str) -> str:
        row = self._summary_row(key)
        return row[0] if row else ""

    def covered(self, key: str) -> int:
        row = self._summary_row(key)
        return row[1] if row else 0

    def purge(self, key: str) -> None:
        with self.store.write():
            for table in ("messages", "summaries"):
                self.store.execute(f"DELETE FROM {table} WHERE namespace = %s AND"
                                   " session_id = %s", (self.namespace, key))

    def len(self, key: str, role: str | None = None) -> int:
        rows = self.store.query(
            "SELECT COUNT(*) FROM messages WHERE namespace = %s AND session_id = %s"
            " AND (%s::text IS NULL OR role = %s)", (self.namespace, key, role, role))
        return int(rows[0][0])

    def keys(self) -> builtins.list[str]:
        rows = self.store.query(
            "SELECT session_id FROM messages WHERE namespace = %s UNION"
            " SELECT session_id FROM summaries WHERE namespace = %s ORDER BY 1",
            (self.namespace, self.namespace))
        return [str(r[0]) for r in rows]


class PostgresLedger:
    """The 004 ``sessions_consolidations`` state in the store's ``sessions`` table."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def ensure(self, namespace: str, session_id: str, now: float) -> bool:
        with self.store.write():
            return bool(self.store.execute(
                "INSERT INTO sessions (namespace, session_id, first_seen_at) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING", (namespace, session_id, now)).rowcount)

    def pending(self, namespace: str, exclude: str | None) -> list[str]:
        rows = self.store.query(
            "SELECT session_id FROM sessions WHERE namespace = %s AND consolidated_at IS NULL"
            " AND session_id IS DISTINCT FROM %s ORDER BY first_seen_at, session_id",
            (namespace, exclude))
        return [str(r[0]) for r in rows]

    def mark(self, namespace: str, session_id: str, now: float) -> bool:
        with self.store.write():
            self.store.execute("INSERT INTO sessions (namespace, session_id, first_seen_at)"
                               " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                               (namespace, session_id, now))
            return bool(self.store.execute(
                "UPDATE sessions SET consolidated_at = %s WHERE namespace = %s AND"
                " session_id = %s AND consolidated_at IS NULL",
                (now, namespace, session_id)).rowcount)

    def reopen(self, namespace: str, session_id: str) -> bool:
        with self.store.write():
            return bool(self.store.execute(
                "UPDATE sessions SET consolidated_at = NULL WHERE namespace = %s AND"
                " session_id = %s AND consolidated_at IS NOT NULL",
                (namespace, session_id)).rowcount)

    def consolidated_at(self, namespace: str, session_id: str) -> float | None:
        rows = self.store.query(
            "SELECT consolidated_at FROM sessions WHERE namespace = %s AND session_id = %s",
            (namespace, session_id))
        return float(rows[0][0]) if rows and rows[0][0] is not None else None

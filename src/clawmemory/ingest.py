"""Hot-path ingestion (004 A12) and the session ledger consolidation works from.

``observe`` stores each user and agent message as an ``episode`` verbatim: no LLM call, no
extraction, one transaction (the record, its link to the previous turn, its entity links from
the fast regex NER, its vector-queue row); the engine's background worker embeds it afterwards. The
first message of a session registers the session as pending consolidation; the consolidator
later reads its episodes and marks it done (tools/consolidator.py).

Session state lives in the store's ``sessions`` table on SQLite. The other backends have no
such table, so their ledger is kept in this process only (one per store object) — enough for
the in-memory backend, and said plainly for the JSON one: its pending list does not survive a
restart. The ledger moves behind the ``Store`` protocol once the engine grows session methods.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from clawmemory.errors import InvalidInputError
from clawmemory.validation import check_content, check_label

if TYPE_CHECKING:
    from clawmemory.backends.base import Store
    from clawmemory.backends.sqlite.store import SQLiteStore
    from clawmemory.engine import Memory

__all__ = [
    "SessionLedger",
    "is_session_consolidated",
    "mark_session_consolidated",
    "observe",
    "pending_sessions",
    "register_session",
    "reopen_sessions",
    "session_ledger",
]

EPISODE_SOURCE = "conversation"  # 003 provenance tag for raw dialogue


class SessionLedger(Protocol):
    """Consolidation state per (namespace, session): when first seen, when consolidated."""

    def ensure(self, namespace: str, session_id: str, now: float) -> bool:
        """Register the session if new; True when it was new."""
        ...

    def pending(self, namespace: str, exclude: str | None) -> list[str]:
        """Unconsolidated sessions, first seen first, without ``exclude``."""
        ...

    def mark(self, namespace: str, session_id: str, now: float) -> bool:
        """Record consolidation (registering the session if needed); False if already done."""
        ...

    def consolidated_at(self, namespace: str, session_id: str) -> float | None: ...

    def reopen(self, namespace: str, session_id: str) -> bool:
        """Mark a consolidated session pending again; False when it was not consolidated."""
        ...


class _SQLiteLedger:
    """The 004 ``sessions_consolidations`` state in the store's ``sessions`` table."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def ensure(self, namespace: str, session_id: str, now: float) -> bool:
        with self.store.write():
            c = self.store.conn
            c.execute("INSERT OR IGNORE INTO sessions (namespace, session_id, first_seen_at)"
                      " VALUES (?, ?, ?)", (namespace, session_id, now))
            return bool(c.changes())

    def pending(self, namespace: str, exclude: str | None) -> list[str]:
        rows = self.store._query(
            "SELECT session_id FROM sessions WHERE namespace = ? AND consolidated_at IS NULL"
            " AND session_id IS NOT ? ORDER BY first_seen_at, session_id", (namespace, exclude))
        return [str(r[0]) for r in rows]

    def mark(self, namespace: str, session_id: str, now: float) -> bool:
        with self.store.write():
            c = self.store.conn
            c.execute("INSERT OR IGNORE INTO sessions (namespace, session_id, first_seen_at)"
                      " VALUES (?, ?, ?)", (namespace, session_id, now))
            c.execute("UPDATE sessions SET consolidated_at = ? WHERE namespace = ?"
                      " AND session_id = ? AND consolidated_at IS NULL",
                      (now, namespace, session_id))
            return bool(c.changes())

    def reopen(self, namespace: str, session_id: str) -> bool:
        with self.store.write():
            self.store.conn.execute(
                "UPDATE sessions SET consolidated_at = NULL WHERE namespace = ? AND"
                " session_id = ? AND consolidated_at IS NOT NULL", (namespace, session_id))
            return bool(self.store.conn.changes())

    def consolidated_at(self, namespace: str, session_id: str) -> float | None:
        rows = self.store._query(
            "SELECT consolidated_at FROM sessions WHERE namespace = ? AND session_id = ?",
            (namespace, session_id))
        return float(rows[0][0]) if rows and rows[0][0] is not None else None


@dataclass
class _Entry:
    first_seen_at: float
    consolidated_at: float | None = None


@dataclass
class _ProcessLedger:
    """Session state held in this process, for backends without a sessions table."""

    sessions: dict[tuple[str, str], _Entry] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ensure(self, namespace: str, session_id: str, now: float) -> bool:
        with self.lock:
            if (namespace, session_id) in self.sessions:
                return False
            self.sessions[namespace, session_id] = _Entry(now)
            return True

    def pending(self, namespace: str, exclude: str | None) -> list[str]:
        with self.lock:
            items = [(e.first_seen_at, sid) for (ns, sid), e in self.sessions.items()
                     if ns == namespace and e.consolidated_at is None and sid != exclude]
        return [sid for _, sid in sorted(items)]

    def mark(self, namespace: str, session_id: str, now: float) -> bool:
        with self.lock:
            entry = self.sessions.setdefault((namespace, session_id), _Entry(now))
            if entry.consolidated_at is not None:
                return False
            entry.consolidated_at = now
            return True

    def reopen(self, namespace: str, session_id: str) -> bool:
        with self.lock:
            entry = self.sessions.get((namespace, session_id))
            if entry is None or entry.consolidated_at is None:
                return False
            entry.consolidated_at = None
            return True

    def consolidated_at(self, namespace: str, session_id: str) -> float | None:
        with self.lock:
            entry = self.sessions.get((namespace, session_id))
            return entry.consolidated_at if entry else None

    def drop(self, namespace: str) -> None:
        """Forget the namespace's sessions (``Memory.forget_namespace``)."""
        with self.lock:
            for key in [k for k in self.sessions if k[0] == namespace]:
                del self.sessions[key]


_PROCESS_LEDGERS: weakref.WeakKeyDictionary[Store, _ProcessLedger] = weakref.WeakKeyDictionary()
_LEDGERS_LOCK = threading.Lock()


def session_ledger(mem: Memory) -> SessionLedger:
    """The session ledger of ``mem``'s store."""
    from clawmemory.backends.sqlite.store import SQLiteStore

    store = mem.store_backend
    if isinstance(store, SQLiteStore):
        return _SQLiteLedger(store)
    if store.backend == "postgres":
        from clawmemory.backends.postgres.history import PostgresLedger
        from clawmemory.backends.postgres.store import PostgresStore

        assert isinstance(store, PostgresStore)
        return PostgresLedger(store)
    with _LEDGERS_LOCK:
        ledger = _PROCESS_LEDGERS.get(store)
        if ledger is None:
            ledger = _PROCESS_LEDGERS[store] = _ProcessLedger()
    mem.components.on_forget_namespace(ledger.drop)
    return ledger


def _session(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError("session_id must be non-empty text")
    return check_label(session_id, "session_id") or ""


def register_session(mem: Memory, session_id: str) -> bool:
    """Register a session as pending consolidation; True when it was not known before."""
    return session_ledger(mem).ensure(mem.namespace, _session(session_id), mem.clock())


def pending_sessions(mem: Memory, exclude_session_id: str | None = None) -> list[str]:
    """Sessions not consolidated yet, oldest first (004 get_pending_consolidations)."""
    return session_ledger(mem).pending(mem.namespace, exclude_session_id)


def mark_session_consolidated(mem: Memory, session_id: str) -> bool:
    """Record that a session was consolidated; False when it already was."""
    return session_ledger(mem).mark(mem.namespace, _session(session_id), mem.clock())


def reopen_sessions(mem: Memory, session_ids: Sequence[str]) -> tuple[str, ...]:
    """Mark consolidated sessions pending again (a fact derived from them was forgotten, ADR
    0022); returns those that were consolidated."""
    ledger = session_ledger(mem)
    return tuple(s for s in session_ids if ledger.reopen(mem.namespace, s))


def is_session_consolidated(mem: Memory, session_id: str) -> bool:
    return session_ledger(mem).consolidated_at(mem.namespace, _session(session_id)) is not None


def observe(mem: Memory, role: str, content: str, session_id: str) -> str:
    """Store one dialogue turn as an ``episode`` and return its id (004 hot path).

    ``role`` is ``"user"`` or the agent's name. The session is registered for consolidation
    on its first message. Everything is checked before the first write."""
    if not isinstance(role, str) or not role.strip():
        raise InvalidInputError("role must be non-empty text ('user' or the agent's name)")
    check_label(role, "role")
    sid = _session(session_id)
    check_content(content, mem.settings.storage.max_content_chars)
    register_session(mem, sid)
    record = mem._new_record(
        content, key=None, kind="episode", tags=(), metadata=None, session_id=sid,
        event_time=mem.clock(), source=EPISODE_SOURCE, source_role=role.strip(), source_ids=(),
        confidence=1.0,
    )
    # Returns once the episode, its links and its queue row are committed: the vector follows
    # in the background worker (ADR 0013), keyword recall sees the episode at once.
    return mem._write([record], background=True)[0].id

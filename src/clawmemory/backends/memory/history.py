"""History stores kept in this process: ``InMemoryHistoryStore`` (001's in-memory store, for
tests and backends without a messages table) and ``NullHistoryStore`` (memory disabled: the
``none`` backend keeps nothing, as 001 degrades without a store)."""

from __future__ import annotations

import builtins
import threading
from dataclasses import dataclass, field

from clawmemory.llm.base import Message

__all__ = ["InMemoryHistoryStore", "NullHistoryStore", "ProcessHistories", "ProcessLedger"]


@dataclass
class _Log:
    messages: list[Message] = field(default_factory=list)
    summary: str = ""
    covers: int = 0


class InMemoryHistoryStore:
    """Message logs in a dict under one lock (001 ``InMemoryHistoryStore``). Messages are
    frozen values, so handing them out needs no copy."""

    def __init__(self) -> None:
        self._logs: dict[str, _Log] = {}
        self._lock = threading.Lock()

    def append(self, key: str, message: Message) -> int:
        with self._lock:
            log = self._logs.setdefault(key, _Log())
            log.messages.append(message)
            return len(log.messages) - 1

    def recent(self, key: str, n: int) -> builtins.list[Message]:
        with self._lock:
            log = self._logs.get(key)
            return log.messages[-n:] if log and n > 0 else []

    def all(self, key: str) -> builtins.list[Message]:
        with self._lock:
            log = self._logs.get(key)
            return list(log.messages) if log else []

    def set_summary(self, key: str, summary: str, *, covers: int = 0) -> None:
        with self._lock:
            log = self._logs.setdefault(key, _Log())
            log.summary, log.covers = summary, covers

    def summary(self, key: str) -> str:
        with self._lock:
            log = self._logs.get(key)
            return log.summary if log else ""

    def covered(self, key: str) -> int:
        with self._lock:
            log = self._logs.get(key)
            return log.covers if log else 0

    def purge(self, key: str) -> None:
        with self._lock:
            self._logs.pop(key, None)

    def len(self, key: str, role: str | None = None) -> int:
        with self._lock:
            log = self._logs.get(key)
            if log is None:
                return 0
            if role is None:
                return len(log.messages)
            return sum(1 for m in log.messages if m.role == role)

    def keys(self) -> builtins.list[str]:
        with self._lock:
            return sorted(self._logs)

    def clear(self) -> None:
        """Forget every key (the namespace is being forgotten)."""
        with self._lock:
            self._logs.clear()


class NullHistoryStore:
    """Keeps nothing: appends are accepted and dropped, reads are empty."""

    def append(self, key: str, message: Message) -> int:
        return 0

    def recent(self, key: str, n: int) -> builtins.list[Message]:
        return []

    def all(self, key: str) -> builtins.list[Message]:
        return []

    def set_summary(self, key: str, summary: str, *, covers: int = 0) -> None:
        return None

    def summary(self, key: str) -> str:
        return ""

    def covered(self, key: str) -> int:
        return 0

    def purge(self, key: str) -> None:
        return None

    def len(self, key: str, role: str | None = None) -> int:
        return 0

    def keys(self) -> builtins.list[str]:
        return []


class ProcessHistories:
    """In-process history stores of one ``Store`` that has no messages table, per namespace."""

    def __init__(self) -> None:
        self.stores: dict[str, InMemoryHistoryStore] = {}
        self.lock = threading.Lock()

    def get(self, namespace: str) -> InMemoryHistoryStore:
        with self.lock:
            return self.stores.setdefault(namespace, InMemoryHistoryStore())

    def drop(self, namespace: str) -> None:
        with self.lock:
            found = self.stores.pop(namespace, None)
        if found is not None:
            found.clear()  # a Conversation may still hold this store object


@dataclass
class _Entry:
    first_seen_at: float
    consolidated_at: float | None = None


@dataclass
class ProcessLedger:
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

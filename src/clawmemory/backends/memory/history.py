"""History stores kept in this process: ``InMemoryHistoryStore`` (001's in-memory store, for
tests and backends without a messages table) and ``NullHistoryStore`` (memory disabled: the
``none`` backend keeps nothing, as 001 degrades without a store)."""

from __future__ import annotations

import builtins
import threading
from dataclasses import dataclass, field

from clawmemory.llm.base import Message

__all__ = ["InMemoryHistoryStore", "NullHistoryStore"]


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

    def len(self, key: str) -> int:
        with self._lock:
            log = self._logs.get(key)
            return len(log.messages) if log else 0

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

    def len(self, key: str) -> int:
        return 0

    def keys(self) -> builtins.list[str]:
        return []

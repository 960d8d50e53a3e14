"""The response cache (000 ``ResponseCache``): identical LLM calls answered from disk.

Key: FNV-1a 64-bit over ``model``, the system prompt and the user message, with a NUL byte
between fields (so "ab"+"c" and "a"+"bc" differ). Eviction on every ``put``: first a TTL pass
(entries older than ``ttl_s``), then, if still over ``max_entries``, the least recently used.
Storage: a JSON array, loaded on construction and rewritten atomically after every ``put``
(temporary file, fsync, rename; the file is private to its owner, 0600).

``CachedLLM`` puts it in front of any ``LLM`` for the calls the key describes exactly: system
messages plus one user message, no tools. Anything else (a conversation, a tool loop) goes to
the model every time. Off by default (000 ``response_cache = false``): the file keeps answers
verbatim. ``Memory.forget`` scrubs and deletes the file (answers may quote what was
forgotten), and every cache notices when its file changed or vanished under it (another
process forgot something, or cached an answer) and reloads, so no forgotten answer is served
or written back from memory.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from clawmemory import private
from clawmemory.config import RESPONSE_CACHE_FILE
from clawmemory.errors import StorageError
from clawmemory.llm.base import LLM, Completion, Message

__all__ = ["CACHE_FILE", "CACHE_HIT", "CachedLLM", "ResponseCache", "cache_key", "fnv1a_64"]

log = logging.getLogger("clawmemory")

CACHE_FILE = RESPONSE_CACHE_FILE  # 000: ~/.ptrclaw/response_cache.json
CACHE_HIT = "cache"  # the stop_reason of a Completion answered from the cache
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = 0xFFFFFFFFFFFFFFFF
_SEPARATOR = b"\x00"


def fnv1a_64(data: bytes) -> int:
    """FNV-1a, 64-bit."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def cache_key(model: str, system_prompt: str, user_message: str) -> int:
    """000's key: FNV-1a 64 over the three fields, NUL-separated, UTF-8."""
    return fnv1a_64(_SEPARATOR.join(
        s.encode("utf-8", "surrogatepass") for s in (model, system_prompt, user_message)))


@dataclass(slots=True)
class _Entry:
    key: str  # 16 hex digits
    response: str
    created_at: float
    last_access: float


class ResponseCache:
    """Thread-safe. ``path`` (a ``Path`` or a str, ``~`` expanded) None keeps the cache in
    memory only."""

    def __init__(
        self,
        path: str | Path | None,
        *,
        ttl_s: float = 3600,
        max_entries: int = 100,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self.ttl_s = ttl_s
        self.max_entries = max(1, max_entries)
        self._clock = clock
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None  # the file as last read or written
        self._entries: dict[str, _Entry] = self._load()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def get(self, model: str, system_prompt: str, user_message: str) -> str | None:
        """The cached answer, or None (missing or older than the TTL)."""
        key = f"{cache_key(model, system_prompt, user_message):016x}"
        now = self._clock()
        with self._lock:
            self._sync()
            entry = self._entries.get(key)
            if entry is None or now - entry.created_at > self.ttl_s:
                return None
            entry.last_access = now
            return entry.response

    def put(self, model: str, system_prompt: str, user_message: str, response: str) -> None:
        """Store an answer, evict (TTL, then LRU) and save. A failed save is logged: the
        answer was good, only its caching is lost."""
        key = f"{cache_key(model, system_prompt, user_message):016x}"
        now = self._clock()
        with self._lock:
            self._sync()
            self._entries[key] = _Entry(key, response, now, now)
            self._evict(now)
            snapshot = [asdict(e) for e in self._entries.values()]
            if self.path is None:
                return
            try:
                # ASCII JSON: a lone surrogate in an answer cannot make the write fail.
                private.atomic_write(self.path, json.dumps(snapshot).encode())
            except StorageError as exc:
                log.warning("response cache not saved: %s", exc)
            self._seen = _stat(self.path)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            if self.path is not None:
                private.scrub_file(self.path)
            self._seen = None

    def _evict(self, now: float) -> None:
        for key in [k for k, e in self._entries.items() if now - e.created_at > self.ttl_s]:
            del self._entries[key]
        excess = len(self._entries) - self.max_entries
        if excess > 0:
            oldest = sorted(self._entries.values(), key=lambda e: e.last_access)[:excess]
            for entry in oldest:
                del self._entries[entry.key]

    def _sync(self) -> None:
        """Reload when the file is not the one this cache last read or wrote: ``forget``
        deleted it (the entries in RAM may quote what was forgotten), or another process
        cached an answer."""
        if self.path is not None and _stat(self.path) != self._seen:
            self._entries = self._load()

    def _load(self) -> dict[str, _Entry]:
        self._seen = _stat(self.path) if self.path is not None else None
        if self.path is None or self._seen is None:
            return {}
        try:
            rows = json.loads(self.path.read_text(encoding="utf-8"))
            entries = [_Entry(str(r["key"]), str(r["response"]), float(r["created_at"]),
                              float(r["last_access"])) for r in rows]
        except (OSError, ValueError, TypeError, KeyError) as exc:
            # A cache is disposable: a damaged file is replaced by the next put, not fatal.
            log.warning("response cache %s is unreadable, starting empty: %s", self.path, exc)
            return {}
        return {e.key: e for e in entries}


class CachedLLM:
    """An ``LLM`` that answers repeated single-turn calls from a ``ResponseCache``. A hit costs
    no tokens: its ``Completion`` has zero usage and ``stop_reason`` ``"cache"``."""

    def __init__(self, inner: LLM, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model = inner.model

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        fields = None if tools else _single_turn(messages)
        if fields is not None:
            hit = self.cache.get(self.model, *fields)
            if hit is not None:
                return Completion(hit, model=self.model, stop_reason=CACHE_HIT)
        answer = self.inner.chat(messages, tools=tools, temperature=temperature,
                                 max_tokens=max_tokens)
        if fields is not None and not answer.tool_calls:
            self.cache.put(self.model, *fields, answer.text)
        return answer

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _single_turn(messages: Sequence[Message]) -> tuple[str, str] | None:
    """(system prompt, user message) when ``messages`` is exactly that, else None."""
    if not messages or messages[-1].role != "user" or messages[-1].tool_calls:
        return None
    if any(m.role != "system" for m in messages[:-1]):
        return None
    return "\n\n".join(m.content for m in messages[:-1]), messages[-1].content

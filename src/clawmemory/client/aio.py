"""``AsyncMemory``: the memory API's operations as coroutines (``api.AsyncMemoryAPI``), for async
agent frameworks.

It wraps any ``MemoryAPI``, local (``Memory``) or remote (``RemoteMemory``), and runs each call
in a worker thread (``asyncio.to_thread``), so the event loop never waits on SQLite, the
embedding model or the network. Each method is derived from the protocol's (same name,
arguments, result and errors) and calls the wrapped memory's own: there is one implementation
of every operation, not a sync and an async copy.

    async with AsyncMemory.open("http://127.0.0.1:8765", api_key=key) as mem:
        await mem.store("User prefers dark mode", kind="preference")
        hits = await mem.recall("dark theme")
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine, Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from clawmemory.api import AsyncMemoryAPI, MemoryAPI

__all__ = ["ASYNC_METHODS", "AsyncMemory", "install_opener"]

# ``Memory.open``: the façade sits above this client layer and installs it (clawmemory.memory),
# so the client never imports the façade.
_opener: Callable[..., MemoryAPI] | None = None


def install_opener(opener: Callable[..., MemoryAPI]) -> None:
    """Set what ``AsyncMemory.open`` opens with (the composition root's ``Memory.open``)."""
    global _opener  # noqa: PLW0603 - set once, by the composition root at import
    _opener = opener

P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(
    method: Callable[Concatenate[MemoryAPI, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """The coroutine twin of one ``MemoryAPI`` operation. ``functools.wraps`` keeps the
    protocol's signature visible to ``inspect.signature`` (the parity tests read it)."""
    name = method.__name__

    @functools.wraps(method)
    async def call(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, R] = getattr(self.sync, name)  # the remote one for a RemoteMemory
        return await asyncio.to_thread(bound, *args, **kwargs)

    call.__qualname__ = f"AsyncMemory.{name}"
    return call


class AsyncMemory:
    """A ``MemoryAPI`` with ``await``. ``sync`` is the wrapped memory (local or remote)."""

    def __init__(self, memory: MemoryAPI) -> None:
        self.sync = memory

    @classmethod
    def open(cls, path: Any = None, **options: Any) -> AsyncMemory:
        """``Memory.open(path, **options)`` wrapped: a path, nothing (the default store), or a
        server's URL with ``api_key=``."""
        if _opener is None:
            raise RuntimeError("no opener installed: import clawmemory (its façade installs"
                               " Memory.open)")
        return cls(_opener(path, **options))

    @property
    def namespace(self) -> str:
        return self.sync.namespace

    def with_namespace(self, namespace: str) -> AsyncMemory:
        return AsyncMemory(self.sync.with_namespace(namespace))

    async def aclose(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    store = _in_thread(MemoryAPI.store)
    store_many = _in_thread(MemoryAPI.store_many)
    get = _in_thread(MemoryAPI.get)
    update = _in_thread(MemoryAPI.update)
    forget = _in_thread(MemoryAPI.forget)
    forget_namespace = _in_thread(MemoryAPI.forget_namespace)
    observe = _in_thread(MemoryAPI.observe)
    reinforce = _in_thread(MemoryAPI.reinforce)
    demote = _in_thread(MemoryAPI.demote)
    confirm = _in_thread(MemoryAPI.confirm)
    correct = _in_thread(MemoryAPI.correct)
    history = _in_thread(MemoryAPI.history)
    derived = _in_thread(MemoryAPI.derived)
    list = _in_thread(MemoryAPI.list)

    async def count(self, *, kind: str | Iterable[str] | None = None,
                    include_invalid: bool = False, **filters: Any) -> int:
        return await asyncio.to_thread(self.sync.count, kind=kind,
                                       include_invalid=include_invalid, **filters)

    search_by_metadata = _in_thread(MemoryAPI.search_by_metadata)
    recall = _in_thread(MemoryAPI.recall)
    link = _in_thread(MemoryAPI.link)
    unlink = _in_thread(MemoryAPI.unlink)
    neighbors = _in_thread(MemoryAPI.neighbors)
    links = _in_thread(MemoryAPI.links)
    entity_info = _in_thread(MemoryAPI.entity_info)
    entities_of = _in_thread(MemoryAPI.entities_of)
    stats = _in_thread(MemoryAPI.stats)
    archived = _in_thread(MemoryAPI.archived)
    restore = _in_thread(MemoryAPI.restore)
    maintain = _in_thread(MemoryAPI.maintain)
    preview_maintenance = _in_thread(MemoryAPI.preview_maintenance)
    runs = _in_thread(MemoryAPI.runs)
    repair = _in_thread(MemoryAPI.repair)
    backfill = _in_thread(MemoryAPI.backfill)
    reindex = _in_thread(MemoryAPI.reindex)
    sync_notes = _in_thread(MemoryAPI.sync_notes)
    export_snapshot = _in_thread(MemoryAPI.export_snapshot)
    import_snapshot = _in_thread(MemoryAPI.import_snapshot)
    import_records = _in_thread(MemoryAPI.import_records)
    warm_up = _in_thread(MemoryAPI.warm_up)
    flush = _in_thread(MemoryAPI.flush)


ASYNC_METHODS = tuple(n for n, v in vars(AsyncMemory).items()
                      if not n.startswith("_") and callable(v) and n not in ("open",))

if TYPE_CHECKING:  # mypy proves the class implements the protocol, signature by signature
    _IMPLEMENTS: type[AsyncMemoryAPI] = AsyncMemory

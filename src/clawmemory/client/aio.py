"""``AsyncMemory``: the ``Memory`` methods as coroutines, for async agent frameworks.

It wraps a ``Memory``, local or remote (``RemoteMemory``), and runs each call in a worker
thread (``asyncio.to_thread``), so the event loop never waits on SQLite, the embedding model or
the network. Each method is derived from ``Memory``'s own (same name, arguments, result and
errors): there is one implementation of every operation, not a sync and an async copy.

    async with AsyncMemory.open("http://127.0.0.1:8765", api_key=key) as mem:
        await mem.store("User prefers dark mode", kind="preference")
        hits = await mem.recall("dark theme")
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, TypeVar

from clawmemory.engine import Memory

__all__ = ["ASYNC_METHODS", "AsyncMemory"]

P = ParamSpec("P")
R = TypeVar("R")


def _in_thread(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    name = method.__name__

    async def call(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, R] = getattr(self.sync, name)  # the remote one for a RemoteMemory
        return await asyncio.to_thread(bound, *args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call


class AsyncMemory:
    """``Memory`` with ``await``. ``sync`` is the wrapped ``Memory`` (local or remote)."""

    def __init__(self, memory: Memory) -> None:
        self.sync = memory

    @classmethod
    def open(cls, path: Any = None, **options: Any) -> AsyncMemory:
        """``Memory.open(path, **options)`` wrapped: a path, nothing (the default store), or a
        server's URL with ``api_key=``."""
        return cls(Memory.open(path, **options))

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

    store = _in_thread(Memory.store)
    store_many = _in_thread(Memory.store_many)
    get = _in_thread(Memory.get)
    update = _in_thread(Memory.update)
    forget = _in_thread(Memory.forget)
    forget_namespace = _in_thread(Memory.forget_namespace)
    observe = _in_thread(Memory.observe)
    reinforce = _in_thread(Memory.reinforce)
    demote = _in_thread(Memory.demote)
    confirm = _in_thread(Memory.confirm)
    correct = _in_thread(Memory.correct)
    history = _in_thread(Memory.history)
    derived = _in_thread(Memory.derived)
    list = _in_thread(Memory.list)

    async def count(self, *, kind: str | Iterable[str] | None = None,
                    include_invalid: bool = False, **filters: Any) -> int:
        return await asyncio.to_thread(self.sync.count, kind=kind,
                                       include_invalid=include_invalid, **filters)

    search_by_metadata = _in_thread(Memory.search_by_metadata)
    recall = _in_thread(Memory.recall)
    link = _in_thread(Memory.link)
    unlink = _in_thread(Memory.unlink)
    neighbors = _in_thread(Memory.neighbors)
    links = _in_thread(Memory.links)
    entity_info = _in_thread(Memory.entity_info)
    entities_of = _in_thread(Memory.entities_of)
    stats = _in_thread(Memory.stats)
    archived = _in_thread(Memory.archived)
    restore = _in_thread(Memory.restore)
    maintain = _in_thread(Memory.maintain)
    preview_maintenance = _in_thread(Memory.preview_maintenance)
    runs = _in_thread(Memory.runs)
    repair = _in_thread(Memory.repair)
    backfill = _in_thread(Memory.backfill)
    reindex = _in_thread(Memory.reindex)
    export_snapshot = _in_thread(Memory.export_snapshot)
    import_snapshot = _in_thread(Memory.import_snapshot)
    import_records = _in_thread(Memory.import_records)
    warm_up = _in_thread(Memory.warm_up)
    flush = _in_thread(Memory.flush)


ASYNC_METHODS = tuple(n for n, v in vars(AsyncMemory).items()
                      if not n.startswith("_") and callable(v) and n not in ("open",))

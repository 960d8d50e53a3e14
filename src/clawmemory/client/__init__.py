"""One client for local and remote memory: ``RemoteMemory`` (the ``Memory`` interface over a
server's REST API; ``Memory.open("http://...")`` returns one) and ``AsyncMemory`` (the same
methods as coroutines, over either). ``RemoteMemory`` (and httpx) load on first use, so
``import clawmemory`` stays quick."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clawmemory.client.aio import AsyncMemory

if TYPE_CHECKING:
    from clawmemory.client.remote import RemoteMemory

__all__ = ["AsyncMemory", "RemoteMemory"]


def __getattr__(name: str) -> Any:
    if name == "RemoteMemory":
        from clawmemory.client.remote import RemoteMemory

        return RemoteMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""One client for local and remote memory: ``RemoteMemory`` (the ``Memory`` interface over a
server's REST API; ``Memory.open("http://...")`` returns one) and ``AsyncMemory`` (the same
methods as coroutines, over either)."""

from clawmemory.client.aio import AsyncMemory
from clawmemory.client.remote import RemoteMemory

__all__ = ["AsyncMemory", "RemoteMemory"]

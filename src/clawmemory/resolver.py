"""Per-agent memory (001 ``multiagent.Factory`` as a ``HistoryResolver``): each agent its own
database, opened on first use.

    with MemoryResolver(load_settings()) as agents:
        mem = agents.resolve("assistant")      # {home}/agents/assistant/memory.db, opened now
        assert agents.resolve("assistant") is mem
        agents.resolve("support")              # None when agents.support.memory.enabled = false

- **Where** (001): ``{agents.NAME.data_dir}/memory.db`` when the agent has a ``data_dir``, else
  ``{home}/agents/NAME/memory.db`` (``memory.json`` for the ``json`` backend; the
  ``memory`` and ``none`` backends keep no file). The other settings are the caller's, with
  ``agent.agent_name`` set to NAME.
- **Disabled** (001): ``agents.NAME.memory.enabled = false`` (or an empty ``data_dir``):
  ``resolve`` returns None and nothing is opened or created.
- **Lazy and cached** (001): nothing is opened before the first ``resolve(NAME)``; later calls
  return the same ``Memory``. A first call from several threads at once opens it once
  (double-checked locking: a cached agent costs no lock).
- **Closed together** (001 ``Factory.Close``): ``close()`` (or leaving the ``with`` block)
  closes every memory opened; ``resolve`` afterwards is an error.

It sits beside the façade (the memory layer), not in ``clawmemory.agent``: the command line
opens memories through it on every start, and the agent package loads the LLM steps.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from clawmemory.config import AgentEntry, Backend, Settings
from clawmemory.core.vectors import VectorWrites
from clawmemory.errors import ConfigError, InvalidInputError
from clawmemory.memory import Memory

__all__ = ["MemoryResolver", "agent_db", "check_agent_name"]

# An agent's name becomes a folder name: no separators, no dot-dot, nothing hidden.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def check_agent_name(name: object) -> str:
    """``name`` if it can name an agent's folder, else InvalidInputError."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise InvalidInputError(
            f"agent name {name!r} cannot name a folder: use letters, digits, '_', '-' and '.'"
            " (at most 128, starting with a letter or digit)")
    return name


def agent_db(settings: Settings, name: str) -> Path:
    """The database file of agent ``name`` under the per-agent layout (001)."""
    entry = settings.agents.get(check_agent_name(name)) or AgentEntry()
    folder = entry.data_dir.expanduser() if entry.data_dir is not None else (
        settings.home_dir() / "agents" / name)
    return folder / ("memory.json" if settings.backend == Backend.JSON.value else "memory.db")


class MemoryResolver:
    """Each agent's ``Memory``, opened lazily, cached, closed together (module docstring)."""

    def __init__(
        self,
        settings: Settings,
        *,
        create: bool = True,
        vector_writes: VectorWrites = "sync",
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``create=False``: an agent whose database does not exist yet is a NotFoundError
        (as ``Memory.open``); ``vector_writes``, ``clock``: as ``Memory.open``'s."""
        if settings.backend == Backend.POSTGRES.value:
            raise ConfigError('storage.layout = "per-agent" keeps a database file per agent;'
                              " the postgres backend has none (use a namespace per agent)")
        if settings.db is not None:
            raise ConfigError('storage.layout = "per-agent" opens each agent\'s own database'
                              " (agents.NAME.data_dir); db (--db / CLAWMEM_DB) names a single"
                              " one: unset it")
        self.settings = settings
        self._create = create
        self._vector_writes: VectorWrites = vector_writes
        self._clock = clock
        self._opened: dict[str, Memory | None] = {}
        self._lock = threading.Lock()
        self._closed = False

    def enabled(self, name: str) -> bool:
        """Whether agent ``name`` has memory (``agents.NAME.memory.enabled``, default true)."""
        entry = self.settings.agents.get(check_agent_name(name))
        return entry is None or entry.memory.enabled

    def resolve(self, name: str) -> Memory | None:
        """Agent ``name``'s memory, opened on the first call and the same object afterwards;
        None when its memory is disabled (nothing is opened or created then)."""
        check_agent_name(name)
        try:
            return self._opened[name]  # the fast path: no lock once opened
        except KeyError:
            pass
        with self._lock:
            if self._closed:
                raise InvalidInputError("this MemoryResolver is closed")
            if name not in self._opened:  # checked again: another thread may have opened it
                self._opened[name] = self._open(name)
            return self._opened[name]

    def _open(self, name: str) -> Memory | None:
        if not self.enabled(name):
            return None
        agent = self.settings.agent.model_copy(update={"agent_name": name})
        settings = self.settings.model_copy(
            update={"db": agent_db(self.settings, name), "agent": agent})
        return Memory.open(settings=settings, create=self._create, clock=self._clock,
                           vector_writes=self._vector_writes)

    @property
    def opened(self) -> dict[str, Memory | None]:
        """The agents resolved so far: their memory, or None (disabled)."""
        with self._lock:
            return dict(self._opened)

    def close(self) -> None:
        """Close every memory opened (001 ``Factory.Close``). Idempotent."""
        with self._lock:
            self._closed = True
            opened, self._opened = self._opened, {}
        for mem in opened.values():
            if mem is not None:
                mem.close()

    def __enter__(self) -> MemoryResolver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

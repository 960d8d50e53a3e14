"""Per-agent memory (001 ``multiagent.Factory``): ``MemoryResolver`` opens each agent's own
database at the documented path on first use, caches it, returns None for an agent whose memory
is disabled (creating nothing), opens once when threads race for it, and closes them all."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from clawmemory import ClawMemoryError, ConfigError, InvalidInputError, Memory, Settings
from clawmemory.resolver import MemoryResolver, agent_db


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``default_home()`` for the test: the agents' default folders go under it."""
    monkeypatch.setenv("CLAWMEM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def per_agent(**values: Any) -> Settings:
    return Settings(storage={"layout": "per-agent"}, embedder={"provider": "none"}, **values)


def files(root: Path) -> list[str]:
    """The database files under ``root`` (SQLite's -wal and -shm beside them left out)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and not p.name.endswith(("-wal", "-shm")))


def test_two_agents_get_two_files_at_the_documented_paths_lazily(
    home: Path, tmp_path: Path
) -> None:
    settings = per_agent(agents={"support": {"data_dir": str(tmp_path / "support-data")}})
    with MemoryResolver(settings) as agents:
        assert not home.exists() and files(tmp_path) == []  # nothing before the first resolve
        assistant = agents.resolve("assistant")
        assert assistant is not None and agents.resolve("assistant") is assistant  # cached
        assert files(tmp_path) == ["home/agents/assistant/memory.db"]
        support = agents.resolve("support")
        assert support is not None and support is not assistant
        assistant.store("Ada prefers tea")
        support.store("Ticket 42 is about billing")
        assert files(tmp_path) == ["home/agents/assistant/memory.db",
                                   "support-data/memory.db"]
        assert [r.content for r in assistant.list()] == ["Ada prefers tea"]
        assert [r.content for r in support.list()] == ["Ticket 42 is about billing"]
        assert (assistant.settings.agent.agent_name, support.settings.agent.agent_name) == (
            "assistant", "support")
    assert agent_db(settings, "x") == home / "agents" / "x" / "memory.db"


def test_a_disabled_agent_resolves_to_none_and_creates_nothing(
    home: Path, tmp_path: Path
) -> None:
    settings = per_agent(agents={"off": {"memory": {"enabled": False}},
                                 "blank": {"data_dir": ""}})  # 001: an empty data_dir too
    with MemoryResolver(settings) as agents:
        assert agents.resolve("off") is None and agents.resolve("blank") is None
        assert not agents.enabled("off") and agents.enabled("anyone-else")
        assert agents.opened == {"off": None, "blank": None}
    assert files(tmp_path) == [] and not home.exists()


def test_close_closes_every_memory_opened_and_refuses_more(home: Path) -> None:
    agents = MemoryResolver(per_agent())
    opened = [agents.resolve(name) for name in ("a", "b", "c")]
    agents.close()
    for mem in opened:
        assert mem is not None
        with pytest.raises(ClawMemoryError):
            mem.store("after close")
    with pytest.raises(InvalidInputError, match="closed"):
        agents.resolve("a")
    agents.close()  # twice is harmless


def test_threads_resolving_one_agent_at_once_open_it_once(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opens: list[str] = []
    real_open = Memory.open

    def counting_open(*args: Any, **kwargs: Any) -> Memory:
        opens.append(str(kwargs["settings"].db))
        return real_open(*args, **kwargs)

    monkeypatch.setattr(Memory, "open", counting_open)
    start = threading.Barrier(8)
    got: list[Memory | None] = []

    def resolve(agents: MemoryResolver) -> None:
        start.wait()
        got.append(agents.resolve("assistant"))

    with MemoryResolver(per_agent()) as agents:
        threads = [threading.Thread(target=resolve, args=(agents,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert len(got) == 8 and all(m is got[0] and m is not None for m in got)
    assert opens == [str(home / "agents" / "assistant" / "memory.db")]


def test_what_the_per_agent_layout_refuses(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"db \(--db / CLAWMEM_DB\) names a single one"):
        MemoryResolver(per_agent(db=str(home / "one.db")))
    with pytest.raises(ConfigError, match="postgres backend"):
        MemoryResolver(per_agent(db="postgresql://u@localhost/db"))
    with MemoryResolver(per_agent()) as agents:
        for bad in ("../escape", "a/b", ".hidden", ""):
            with pytest.raises(InvalidInputError, match="cannot name a folder"):
                agents.resolve(bad)
    assert not home.exists()

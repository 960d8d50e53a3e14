"""The none backend (000 NoneMemory): memory disabled, and the agent keeps working.

Documented behaviour: every operation succeeds and keeps nothing. Writes are discarded,
reads are empty, counts are zero, links fail (False). The factory falls back to it, with a
warning, when the configured backend cannot be loaded; an unknown backend name is refused.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from clawmemory import ConfigError, Filter, Memory, MemoryRecord, NotFoundError, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.none.store import NoneStore
from clawmemory.backends.registry import open_store
from conftest import START, Clock


@pytest.fixture
def none_mem(clock: Clock) -> Memory:
    return Memory(NoneStore(), Settings(backend="none"), clock=clock)


def test_none_store_satisfies_the_protocol() -> None:
    store = NoneStore()
    assert isinstance(store, Store)
    assert store.backend == "none"


def test_writes_are_discarded(none_mem: Memory) -> None:
    rid = none_mem.store("remember this", key="k", tags=["t"], metadata={"a": 1})
    assert isinstance(rid, str) and rid
    with pytest.raises(NotFoundError):
        none_mem.get(rid)
    with pytest.raises(NotFoundError):
        none_mem.get("k")
    assert none_mem.list() == []
    assert none_mem.list(include_invalid=True, order="oldest") == []


def test_reads_are_empty_and_counts_zero(none_mem: Memory) -> None:
    none_mem.store("something about python")
    assert none_mem.recall("python") == []
    assert none_mem.recall("p") == []  # the LIKE fallback finds nothing either
    assert none_mem.count() == 0
    assert none_mem.count(kind="fact", include_invalid=True) == 0
    assert none_mem.search_by_metadata("a", 1) == []
    stats = none_mem.stats()
    assert stats["backend"] == "none" and stats["total"] == 0 and stats["links"] == 0
    assert stats["archived"] == 0 and none_mem.archived() == []


def test_changes_to_missing_memories_raise_not_found(none_mem: Memory) -> None:
    rid = none_mem.store("gone at once")
    for change in (lambda: none_mem.update(rid, content="x"), lambda: none_mem.forget(rid),
                   lambda: none_mem.reinforce(rid), lambda: none_mem.correct(rid, "y"),
                   lambda: none_mem.neighbors(rid), lambda: none_mem.restore(rid)):
        with pytest.raises(NotFoundError):
            change()


def test_links_fail(none_mem: Memory) -> None:
    a, b = none_mem.store("a"), none_mem.store("b")
    assert none_mem.link(a, b) is False
    assert none_mem.unlink(a, b) is False
    store = NoneStore()
    assert store.link("default", a, b, strength=1.0, origin="manual") is False
    assert store.unlink("default", a, b) is False
    assert store.links("default", [a, b]) == {a: [], b: []}


def test_store_level_operations_keep_nothing() -> None:
    store = NoneStore()
    rec = MemoryRecord(id="x", content="c", key="k", created_at=START, updated_at=START)
    assert store.put(rec) == (rec, True)
    assert store.put_many([rec], skip_existing_keys=True) == [(rec, True)]
    store.replace(rec)
    store.touch("default", ["x"], START)
    assert store.get("default", "x") is None and store.get("default", "k") is None
    assert store.get_many("default", ["x"]) == []
    assert store.list("default", Filter(include_invalid=True), limit=10) == []
    assert store.count("default", Filter()) == 0
    assert store.keyword_search("default", ["c"], Filter(), limit=5) == []
    assert store.like_search("default", ["c"], Filter(), limit=5) == []
    assert store.delete("default", ["x"]) == 0
    assert store.delete_namespace("default") == 0
    assert store.namespaces() == []
    assert store.stats("default").total == 0


def test_export_is_empty_and_import_keeps_nothing(none_mem: Memory) -> None:
    none_mem.store("ignored")
    assert json.loads(none_mem.export_snapshot())["entries"] == []
    none_mem.import_snapshot(json.dumps([{"key": "k", "content": "imported"}]))
    assert none_mem.count(include_invalid=True) == 0


VALID = "use one of: sqlite, memory, json, postgres, none"


@pytest.mark.parametrize("name", ["bogus", "postgre", "SQLite3", ""])
def test_an_unknown_backend_is_refused_and_creates_nothing(name: str, tmp_path: Path) -> None:
    # It fell back to none with a warning here while the CLI refused it (issue 22): every
    # memory written meanwhile was lost. Now Settings and the factory (for settings copied
    # without validation) refuse it alike, naming the valid ones.
    with pytest.raises(ConfigError, match=f"invalid setting backend: unknown backend "
                                          f"{name!r}; {VALID}"):
        Settings(backend=name, db=tmp_path / "memory.db")
    unchecked = Settings(db=tmp_path / "memory.db").model_copy(update={"backend": name})
    with pytest.raises(ConfigError, match=f"unknown backend {name!r}; {VALID}"):
        open_store(unchecked)
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_a_backend_name_is_taken_in_any_case() -> None:
    assert Settings(backend=" SQLite ").backend == "sqlite"


def test_factory_opens_none_silently_when_asked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="clawmemory"):
        store = open_store(Settings(backend="none"))
    assert isinstance(store, NoneStore)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_memory_open_with_an_unknown_backend_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ConfigError, match=f"unknown backend 'nonexistent'; {VALID}"):
        Memory.open(tmp_path / "x.db", backend="nonexistent")
    with pytest.raises(ConfigError, match="unknown backend 'nonexistent'"):
        Memory.open(tmp_path / "x.db", backend="nonexistent", settings=Settings())
    config = tmp_path / "config.toml"
    config.write_text('backend = "sqlite3"\n', encoding="utf-8")
    monkeypatch.setenv("CLAWMEM_CONFIG", str(config))
    with pytest.raises(ConfigError, match=f"unknown backend 'sqlite3'; {VALID}"):
        Memory.open(tmp_path / "x.db")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.toml"]

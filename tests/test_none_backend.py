"""The none backend (000 NoneMemory): memory disabled, and the agent keeps working.

Documented behaviour: every operation succeeds and keeps nothing. Writes are discarded,
reads are empty, counts are zero, links fail (False). The factory falls back to it, with a
warning, when the configured backend is unknown or cannot be loaded.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from clawmemory import Filter, Memory, MemoryRecord, NotFoundError, Settings
from clawmemory.store.base import Store
from clawmemory.store.factory import open_store
from clawmemory.store.none import NoneStore
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


@pytest.mark.parametrize("name", ["bogus", "postgre", "SQLite3", ""])
def test_factory_falls_back_to_none_with_a_warning(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(backend=name, db=tmp_path / "memory.db")
    with caplog.at_level(logging.WARNING, logger="clawmemory"):
        store = open_store(settings)
    assert isinstance(store, NoneStore)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert repr(name.lower()) in warnings[0].getMessage()
    assert "none" in warnings[0].getMessage()
    assert list(tmp_path.iterdir()) == []  # nothing was created


def test_factory_opens_none_silently_when_asked(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="clawmemory"):
        store = open_store(Settings(backend="none"))
    assert isinstance(store, NoneStore)
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_memory_open_with_an_unknown_backend_still_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="clawmemory"):
        mem = Memory.open(tmp_path / "x.db", backend="nonexistent")
    with mem:
        assert mem.store_backend.backend == "none"
        mem.store("the agent keeps working")
        assert mem.recall("agent") == []
    assert any("nonexistent" in r.getMessage() for r in caplog.records)

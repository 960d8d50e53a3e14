"""SQLite keyword search internals that only show at scale: ranking inside FTS5 before the
join (with an exact fallback for selective filters) and pruning of very common terms."""

from __future__ import annotations

from pathlib import Path

import pytest

import clawmemory.backends.sqlite.store as sqlite_store
from clawmemory import Memory, Settings


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    return Memory.open(tmp_path / "m.db", settings=Settings(db=tmp_path / "m.db",
                                                            embedder={"provider": "none"}))


def test_selective_filter_still_finds_its_few_matches(mem: Memory) -> None:
    # 300 better-ranked matches in another namespace would fill the pre-join window.
    mem.with_namespace("big").store_many({"content": f"apple apple apple {i}"} for i in range(300))
    mem.store("one apple pie recipe")
    hits = mem.recall("apple", mode="keyword")
    assert [h.memory.content for h in hits] == ["one apple pie recipe"]
    mem.store_many({"content": f"apple note {i}", "kind": "event"} for i in range(300))
    assert [h.memory.content for h in mem.recall("apple", kind="fact", mode="keyword")] == [
        "one apple pie recipe"]


def test_very_common_terms_are_pruned_only_on_large_tables(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.store_many({"content": f"common filler line {i}"} for i in range(60))
    rare = mem.store("common filler with a zebra")

    def found(query: str) -> list[str]:
        return [h.memory.id for h in mem.recall(query, mode="keyword", limit=100, touch=False)]

    assert len(found("common zebra")) == 61  # a small table: "common" is still searched
    monkeypatch.setattr(sqlite_store, "COMMON_TERM_DOCS", 10)
    monkeypatch.setattr(sqlite_store, "COMMON_TERM_SHARE", 0.05)
    assert found("common zebra") == [rare]  # now "common" is too common to search
    assert len(found("common filler")) == 61  # unless every word is: then all are searched
    hits = mem.recall("common zebra", mode="keyword")
    assert hits[0].memory.id == rare
    assert "common" in hits[0].explain.matched_terms  # explanations still use the full query

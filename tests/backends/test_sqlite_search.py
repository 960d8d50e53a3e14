"""SQLite keyword search internals that only show at scale: ranking inside FTS5 before the
join (with an exact fallback for selective filters), pruning of very common terms, and the
bound on the rows ranked (``storage.keyword_candidates``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import clawmemory.backends.sqlite.keyword as sqlite_keyword
from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.sql import fts_query
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.model import Filter


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


def test_a_filter_that_drops_the_best_rows_gets_the_best_rows_it_allows(mem: Memory) -> None:
    """The best rows are read ``limit`` at a time (with their ties) until enough pass the
    filter: 90 better "apple" notes of another kind fill the first reads, and the recall still
    returns every one of the 30 events, best first, ties in the order they were stored."""
    mem.store_many({"content": f"apple apple apple note {i}", "kind": "fact"} for i in range(90))
    events = mem.store_many(
        {"content": f"apple {'pie ' * (i % 3)}event {i}", "kind": "event"} for i in range(30))
    exact = [i for i, _ in _exact(mem, "apple") if i in set(events)]
    assert len(exact) == 30
    hits = mem.store_backend.keyword_search(mem.namespace, ["apple"], Filter(kinds=("event",)),
                                            limit=20)
    assert [h.info.id for h in hits] == exact[:20]
    assert [i for i, _ in _bounded(mem, "apple", 50)] == [i for i, _ in _exact(mem, "apple")[:50]]
    recalled = mem.recall("apple", kind="event", mode="keyword", limit=30, touch=False)
    assert {h.memory.id for h in recalled} == set(events)


def test_very_common_terms_are_pruned_only_on_large_tables(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    mem.store_many({"content": f"common filler line {i}"} for i in range(60))
    rare = mem.store("common filler with a zebra")

    def found(query: str) -> list[str]:
        return [h.memory.id for h in mem.recall(query, mode="keyword", limit=100, touch=False)]

    assert len(found("common zebra")) == 61  # a small table: "common" is still searched
    monkeypatch.setattr(sqlite_keyword, "COMMON_TERM_DOCS", 10)
    monkeypatch.setattr(sqlite_keyword, "COMMON_TERM_SHARE", 0.05)
    assert found("common zebra") == [rare]  # now "common" is too common to search
    assert len(found("common filler")) == 61  # unless every word is: then all are searched
    hits = mem.recall("common zebra", mode="keyword")
    assert hits[0].memory.id == rare
    assert "common" in hits[0].explain.matched_terms  # explanations still use the full query


def _exact(mem: Memory, query: str) -> list[tuple[str, float]]:
    """Every row matching any word of ``query``, ranked by FTS5's bm25 (the unbounded order)."""
    store = mem.store_backend
    assert isinstance(store, SQLiteStore)
    rows = store.query(
        "SELECT m.id, -bm25(memories_fts, ?, ?, ?, ?, ?) AS rel FROM memories_fts JOIN memories m"
        " ON m.seq = memories_fts.rowid WHERE memories_fts MATCH ? ORDER BY rel DESC",
        [*store._weights, fts_query(query.split())])
    return [(r[0], float(r[1])) for r in rows]


def _bounded(mem: Memory, query: str, limit: int) -> list[tuple[str, float]]:
    hits = mem.store_backend.keyword_search(mem.namespace, query.split(), Filter(), limit=limit)
    return [(h.info.id, h.relevance) for h in hits]


def test_keyword_ranking_is_bounded_past_keyword_candidates_and_exact_below(
    tmp_path: Path,
) -> None:
    """``storage.keyword_candidates`` = 100. Below it every matching row is ranked (the exact
    order); past it only the rows the rarest words pick (newest first, at most 100) are: the
    row holding the rare words still comes first, with its exact score, while an old row of
    the common word alone, which exact ranking puts second, is never ranked."""
    mem = Memory.open(settings=Settings(db=tmp_path / "m.db", embedder={"provider": "none"},
                                        storage={"keyword_candidates": 100}))
    best = mem.store("zebra quartz common")
    old = mem.store("common common common common")
    mem.store_many({"content": f"common filler line number {i}"} for i in range(300))
    mem.store_many({"content": f"rare word {i} here"} for i in range(80))
    below = _exact(mem, "rare word")
    assert len(below) == 80 and _bounded(mem, "rare word", 80) == below
    exact = _exact(mem, "zebra quartz common")
    assert [i for i, _ in exact[:2]] == [best, old]
    bounded = _bounded(mem, "zebra quartz common", 10)
    assert bounded[0] == pytest.approx(exact[0])  # the same row, the same score
    assert old not in [i for i, _ in bounded]  # older than the newest 100 rows of "common"
    scores = dict(exact)
    assert all(rel == pytest.approx(scores[i]) for i, rel in bounded)
    # Both words past the cap: the rows holding both are ranked first.
    mem.store_many({"content": f"alpha {i}"} for i in range(150))
    both = mem.store("alpha beta")
    mem.store_many({"content": f"beta {i}"} for i in range(150))
    assert _bounded(mem, "alpha beta", 5)[0][0] == both

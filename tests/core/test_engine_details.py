"""Behaviours of the store, search and engine modules that mutation testing found unpinned.

Each test pins one behaviour exactly through the path a user takes (the CLI in-process, the
``Memory`` API; the ``Store`` protocol where a store's own order is pinned), so a changed
constant, sort key or argument in that code fails it. ``clawmem copy`` runs in-process here
(its other tests run it as a subprocess, which mutation testing cannot see).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_postgres import SECRETS, HashEmbedder, fill, snapshot
from typer.testing import CliRunner

from clawmemory import Filter, InvalidInputError, Memory, Settings
from clawmemory.backends.base import RunRecord, Store
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.backends.none.store import NoneStore
from clawmemory.backends.sqlite.store import SQLiteStore
from conftest import DAY, Clock, backend_params, memory_on, postgres_url


def _invoke(*args: str) -> Any:
    from clawmemory.interfaces.cli.app import app, register_extensions

    register_extensions(app)
    return CliRunner().invoke(app, ["--json", *args], catch_exceptions=False)


def _clawmem(*args: str) -> Any:
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- transfer: clawmem copy, in-process -----------------------------------------------------
def test_copy_to_postgresql_and_back_keeps_every_count_and_value(
        request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> None:
    """``clawmem copy`` SQLite -> PostgreSQL -> SQLite: the exact counts per kind (invalid
    memories included), entities with their aliases, and vectors read back from pgvector."""
    source = tmp_path / "agent.db"
    mem = Memory(SQLiteStore(source), Settings(), clock=clock, embedder=HashEmbedder())
    mem.store_many({"content": f"filler note {i} about the pier"} for i in range(3))
    fill(mem, SECRETS, clock)
    expected = snapshot(mem)
    mem.close()
    url = postgres_url(request, tmp_path / "pg")
    want = {"memories": 8, "archived": 1, "links": 1, "entities": 7, "memory_entities": 13,
            "messages": 1, "summaries": 1, "sessions": 1, "maintenance_runs": 1, "vectors": 7,
            "queued": 1}
    back = tmp_path / "back.db"
    for a, b in ((str(source), url), (url, str(back))):
        assert _clawmem("copy", "--from", a, "--to", b) == {"namespaces": {"default": want}}
    for where in (url, str(back)):
        with Memory.open(where, clock=clock, embedder=HashEmbedder()) as mem:
            assert snapshot(mem) == expected, where


def test_copy_refuses_a_destination_that_holds_memories(
        tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"})
    for name in ("a.db", "b.db"):
        with Memory.open(tmp_path / name, settings=settings) as mem:
            mem.store(f"a note in {name}")
    refused = _invoke("copy", "--from", str(tmp_path / "a.db"), "--to", str(tmp_path / "b.db"))
    assert (refused.exit_code, refused.stderr) == (2, "error: the destination already holds"
                                                      " memories; copy into an empty store\n")
    with Memory.open(tmp_path / "b.db", settings=settings) as mem:
        assert [r.content for r in mem.list()] == ["a note in b.db"]


# --- none backend: a maintenance run is recorded nowhere, and reported as run -----------------
def test_a_maintenance_run_on_the_none_backend_reports_its_job_and_namespace(
        clock: Clock) -> None:
    mem = Memory(NoneStore(), Settings(backend="none"), namespace="agent-7", clock=clock)
    [run] = mem.maintain("decay")
    assert run == RunRecord(0, "agent-7", "decay", clock.now, clock.now, "ok", {
        "hygiene_archived": 0, "idle_archived": 0, "idle_survived": 0, "decayed": 0,
        "invalidated": 0, "prune_archived": 0, "live_bytes": 0}, "nothing to do")
    assert mem.runs() == []


# --- keyword search: the store keeps the most relevant when it cuts to the pool ----------------
@pytest.mark.parametrize("backend", backend_params(), indirect=True)
def test_keyword_recall_keeps_the_best_match_when_the_pool_is_smaller_than_the_hits(
        store: Store, clock: Clock) -> None:
    """Four memories match; the pool (2) holds only the two best, so the best one must be
    among what the store returns, and it comes first."""
    settings = Settings(embedder={"provider": "none"}, recall={"candidate_pool": 1})
    mem = memory_on(store, settings, clock, None)
    for i in range(3):
        mem.store(f"note {i}: the harbour came up once among many other unrelated words today")
    strong = mem.store("harbour harbour harbour")
    assert [h.memory.id for h in mem.recall("harbour", mode="keyword", limit=1)] == [strong]


# --- fusion ------------------------------------------------------------------------------------
def test_weighted_fusion_scores_a_vector_only_hit_without_any_text_share(
        tmp_path: Path, clock: Clock) -> None:
    """000's formula: a memory the keyword list did not find has text 0, not a keyword score."""
    settings = Settings(recall={"fusion": "weighted", "text_weight": 0.4, "vector_weight": 0.6})
    mem = Memory(SQLiteStore(tmp_path / "m.db"), settings, clock=clock, embedder=HashEmbedder())
    both = mem.store("alpha beta gamma")
    vector_only = mem.store("delta epsilon")
    hits = {h.memory.id: h.explain for h in mem.recall("alpha beta", mode="hybrid")}
    assert set(hits) == {both, vector_only}
    assert set(hits[vector_only].lists) == {"vector"}
    cos = hits[vector_only].lists["vector"]["cosine"]
    assert hits[vector_only].fused == pytest.approx(0.6 * (cos + 1) / 2)
    cos = hits[both].lists["vector"]["cosine"]
    assert hits[both].fused == pytest.approx(0.4 * 1.0 + 0.6 * (cos + 1) / 2)


def test_weighted_fusion_adds_the_entity_list_max_normalised(
        tmp_path: Path, clock: Clock) -> None:
    """text × 0.4 + (cosine + 1) / 2 × 0.6 + entities / best entities × 0.5."""
    settings = Settings(recall={"fusion": "weighted", "text_weight": 0.4, "vector_weight": 0.6,
                                "entity_weight": 0.5})
    mem = Memory(SQLiteStore(tmp_path / "m.db"), settings, clock=clock, embedder=HashEmbedder())
    named = mem.store("Zyzzogeton met the team at the harbour")
    mem.store("Zyzzogeton left early")  # two mentions: each scores 1/2 in the entity list
    hits = {h.memory.id: h.explain for h in mem.recall("Zyzzogeton", mode="hybrid")}
    assert sorted(hits[named].lists) == ["entity", "keyword", "vector"]
    assert hits[named].lists["entity"]["entities"] == pytest.approx(0.5)
    cos = hits[named].lists["vector"]["cosine"]
    assert hits[named].fused == pytest.approx(0.4 + 0.6 * (cos + 1) / 2 + 0.5)


def test_a_number_in_the_query_is_evidence_for_the_memory_holding_it(
        tmp_path: Path, clock: Clock) -> None:
    """Hybrid recall's relevance floor: with similarity set to count for nothing, holding the
    query's only word ("3.12", the phrase "3" "12") is what makes the memory relevant."""
    settings = Settings(recall={"floor_plain_cosine": 1.0, "floor_plain_candidate": 1.0})
    mem = Memory(SQLiteStore(tmp_path / "m.db"), settings, clock=clock, embedder=HashEmbedder())
    mid = mem.store("the service runs on python 3.12 since spring")
    mem.store("the service was moved to a new rack")
    assert [h.memory.id for h in mem.recall("3.12", mode="hybrid")] == [mid]


# --- temporal ----------------------------------------------------------------------------------
def test_n_days_ago_is_that_moment_not_the_start_of_that_day(
        tmp_path: Path, clock: Clock) -> None:
    """Now is 2023-11-14 22:13:20 UTC: "2 days ago" is 2023-11-12 22:13:20, so an event an
    hour before it (the same day) is before, one an hour after it is since."""
    mem = Memory(SQLiteStore(tmp_path / "m.db"), Settings(embedder={"provider": "none"}),
                 clock=clock)
    mem.store("an hour before", event_time=clock.now - 2 * DAY - 3600)
    after = mem.store("an hour after", event_time=clock.now - 2 * DAY + 3600)
    assert [r.id for r in mem.list(since="2 days ago")] == [after]
    assert mem.count(until="2 days ago") == 1


def test_an_unreadable_time_is_refused_with_the_forms_that_are_read(
        tmp_path: Path, clock: Clock) -> None:
    mem = Memory(SQLiteStore(tmp_path / "m.db"), Settings(embedder={"provider": "none"}),
                 clock=clock)
    with pytest.raises(InvalidInputError) as refused:
        mem.list(until="when pigs fly")
    assert str(refused.value) == (
        "until: cannot read 'when pigs fly' as a time; use ISO 8601 (2024-01-15,"
        " 2024-01-15T09:30:00Z), epoch seconds, or an expression such as 'yesterday',"
        " '2 weeks ago', 'last March'")


# --- recall pipeline ---------------------------------------------------------------------------
def test_entity_candidates_are_read_twice_the_pool_deep(tmp_path: Path, clock: Clock) -> None:
    """The entity list reads 2 × pool of the entity's most recent memories, then filters: with
    a pool of 2, the fifth most recent mention (the only one the filter keeps) is not read."""
    settings = Settings(recall={"candidate_pool": 1})
    mem = Memory(SQLiteStore(tmp_path / "m.db"), settings, clock=clock, embedder=HashEmbedder())
    kept = mem.store("Zyzzogeton opened the harbour office", tags=["keep"])
    for i in range(4):
        mem.store(f"Zyzzogeton wrote report number {i}")
    [hit] = mem.recall("Zyzzogeton", mode="hybrid", tags=["keep"], limit=1)
    assert (hit.memory.id, sorted(hit.explain.lists)) == (kept, ["keyword", "vector"])


def _snapshot(entries: dict[str, str]) -> str:
    return json.dumps({"format": "clawmemory.snapshot", "version": 1, "entries": [
        {"id": i, "content": c} for i, c in entries.items()]})


def test_co_recall_boosts_the_best_scored_candidates_not_the_first_ids(clock: Clock) -> None:
    """Co-recall looks at the 2 × limit best-scored candidates: the two strong memories (ids
    sorting last) lift each other; the weak ones (ids sorting first) are not what is looked at."""
    settings = Settings(embedder={"provider": "none"}, recall={"co_recall": True})
    mem = Memory(MemoryStore(), settings, clock=clock)
    mem.import_snapshot(_snapshot({
        "0000000000000001": "solar notes", "0000000000000002": "panel notes",
        "ffff000000000001": "solar panel inverter, solar panel fault",
        "ffff000000000002": "solar panel warranty, solar panel claim"}))
    for _ in range(3):
        assert {h.memory.id for h in mem.recall("solar panel", mode="keyword", limit=2)} == {
            "ffff000000000001", "ffff000000000002"}
    hit = mem.recall("solar panel", mode="keyword", limit=1)[0]
    assert hit.explain.factors["co_recall"] == pytest.approx(1 + 0.05 * 0.3)


@pytest.mark.parametrize("backend", backend_params("memory", "json", "postgres"), indirect=True)
def test_keyword_search_breaks_a_relevance_tie_newest_first(store: Store, clock: Clock) -> None:
    """Equal matches come newest first from these stores, so cutting to the limit keeps the
    newest (SQLite leaves ties in FTS5's order: not part of the Store contract)."""
    mem = memory_on(store, Settings(embedder={"provider": "none"}), clock, None)
    ids = [mem.store("harbour note") for _ in range(3)]
    hits = store.keyword_search("default", ["harbour"], Filter(), limit=2)
    assert [h.info.id for h in hits] == [ids[2], ids[1]]
    assert hits[0].relevance == hits[1].relevance


# --- engine ------------------------------------------------------------------------------------
def test_archived_lists_fifty_by_default(tmp_path: Path, clock: Clock) -> None:
    mem = Memory(SQLiteStore(tmp_path / "m.db"), Settings(embedder={"provider": "none"}),
                 clock=clock)
    ids = mem.store_many({"content": f"old note {i}"} for i in range(51))
    assert mem.store_backend.archive(mem.namespace, ids, at=clock.now) == 51
    assert len(mem.archived()) == 50
    assert len(mem.archived(limit=100)) == 51


@pytest.mark.parametrize("backend", backend_params(), indirect=True)
def test_stats_name_the_backend(store: Store, clock: Clock, backend: Any) -> None:
    mem = memory_on(store, Settings(embedder={"provider": "none"}), clock, None)
    assert (mem.stats()["backend"], store.stats("default").backend) == (backend.name,
                                                                         backend.name)


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_a_confirmed_memory_keeps_its_protection_when_its_kind_changes(mem: Memory) -> None:
    confirmed = mem.store("the deploy key lives in the vault", kind="fact")
    assert mem.confirm(confirmed).decay_rate == 0.0
    mem.update(confirmed, kind="event")
    assert (mem.get(confirmed).kind, mem.get(confirmed).decay_rate) == ("event", 0.0)
    # an unconfirmed one lives by its new kind's rule
    plain = mem.store("a fact about tea", kind="fact")
    mem.update(plain, kind="event")
    event_rate = mem.get(mem.store("an event", kind="event")).decay_rate
    assert mem.get(plain).decay_rate == event_rate > 0


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_recall_names_the_flag_it_refuses(mem: Memory) -> None:
    with pytest.raises(InvalidInputError) as refused:
        mem.recall("tea", archive="yes")  # type: ignore[arg-type]
    assert str(refused.value) == "archive must be true or false, not str"
    with pytest.raises(InvalidInputError) as refused:
        mem.recall("tea", touch=1)  # type: ignore[arg-type]
    assert str(refused.value) == "touch must be true or false, not int"


@pytest.mark.parametrize("kind", ["memory", "json"])
def test_forget_takes_the_vector_out_of_the_loaded_index(tmp_path: Path, kind: str) -> None:
    # the in-process backends hold every vector in memory: a forgotten one must go there too
    from clawmemory.backends.jsonfile.store import JSONFileStore

    store = MemoryStore() if kind == "memory" else JSONFileStore(tmp_path / "m.json")
    mem = Memory(store, Settings(), embedder=HashEmbedder())
    ids = [mem.store(text) for text in ("green tea", "black tea", "tea house")]
    mem.recall("tea", mode="vector")  # loads the index
    mem.forget(ids[0])
    index = mem.components.loaded_vectors()
    assert index is not None and index.count(mem.namespace) == 2
    assert {h.memory.id for h in mem.recall("green tea", mode="vector")} == set(ids[1:])
    mem.close()

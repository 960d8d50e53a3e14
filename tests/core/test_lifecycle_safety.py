"""Maintenance never loses what a user stored (issue 9): by default every memory a lifecycle job
takes out of the live set goes to the archive, where it can be listed and restored; idle clocks
start at the later of last access, last write and arrival in this store, so imports and upserted
entries are not mistaken for old ones; ``--dry-run`` shows a run memory by memory and changes
nothing. Real stores, real processes for the CLI, a clock the tests move for the API."""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clawmemory import InvalidInputError, Memory, NotFoundError, Settings
from clawmemory.backends.jsonfile.store import JSONFileStore
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.core import lifecycle
from clawmemory.core.jobs import JobContext, preview_all, preview_job, run_job
from conftest import DAY, START, Clock, backend_params, old_database

CLAWMEM = Path(sys.executable).parent / "clawmem"
QUICK = {"CLAWMEM_EMBEDDER__PROVIDER": "none"}  # maintenance never embeds; no model to load
NO_EMBEDDER = {"provider": "none"}


def clawmem(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLAWMEM), *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, **QUICK, **(env or {})})


def ok(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.startswith(("{", "[")) else done.stdout


def with_lifecycle(mem: Memory, **changes: Any) -> Memory:
    cfg = mem.settings.model_copy(
        update={"lifecycle": mem.settings.lifecycle.model_copy(update=changes)})
    return Memory(mem.store_backend, cfg, namespace=mem.namespace, clock=mem.clock)


def live_ids(mem: Memory) -> set[str]:
    return {r.id for r in mem.list(include_invalid=True, limit=10_000)}


def archived_ids(mem: Memory) -> set[str]:
    return {e.record.id for e in mem.archived(limit=10_000)}


def rows_of(mem: Memory) -> list[dict[str, Any]]:
    return [r.to_dict() for r in mem.list(include_invalid=True, limit=10_000, order="oldest")]


def files(folder: Path) -> dict[str, bytes]:
    """Every file's bytes but SQLite's -shm, the WAL index every reader writes its marks in."""
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.endswith("-shm")}


# --- imports are not old to this store -----------------------------------------------------------
def test_imported_2023_knowledge_survives_three_maintenance_runs(tmp_path: Path) -> None:
    stamps = [1_672_531_200 + i * 30 * 86_400 for i in range(4)]  # Jan-Apr 2023
    source = tmp_path / "ptrclaw.json"
    source.write_text(json.dumps({"entries": [
        {"key": f"fact-{i}", "content": f"PtrClaw fact number {i}", "category": "knowledge",
         "timestamp": ts, "last_accessed": 0} for i, ts in enumerate(stamps)]}))
    db = tmp_path / "agent.db"
    before = time.time()
    assert ok(clawmem("--db", db, "--json", "import", "--from", "ptrclaw-json", source))[
        "created"] == 4

    for _ in range(3):
        runs = ok(clawmem("--db", db, "--json", "maintain"))["runs"]
        (decay,) = [r for r in runs if r["job"] == "decay"]
        assert decay["outcome"] == "ok"
        assert (decay["counts"]["idle_archived"], decay["counts"]["invalidated"]) == (0, 0)

    listed = ok(clawmem("--db", db, "--json", "list"))["memories"]
    assert sorted(m["key"] for m in listed) == ["fact-0", "fact-1", "fact-2", "fact-3"]
    by_key = {m["key"]: m for m in listed}
    for i, ts in enumerate(stamps):  # provenance kept; arrival is the import
        assert by_key[f"fact-{i}"]["created_at"] == ts
        assert by_key[f"fact-{i}"]["stored_at"] >= before
        assert by_key[f"fact-{i}"]["confidence"] > 0.999  # decayed for seconds, not years
    assert ok(clawmem("--db", db, "--json", "list", "--archive"))["memories"] == []


# --- idle facts go to the archive and come back --------------------------------------------------
def forty_idle_facts(tmp_path: Path, **lifecycle: Any) -> tuple[Memory, Clock, list[str]]:
    clock = Clock()
    cfg = Settings(embedder=NO_EMBEDDER, lifecycle=lifecycle)
    mem = Memory.open(tmp_path / "agent.db", settings=cfg, clock=clock)
    ids = [mem.store(f"idle fact number {i} about quokka{i}") for i in range(40)]
    clock.advance(45 * DAY)
    return mem, clock, ids


def default_rolls(seed: int, n: int) -> list[bool]:
    """What the idle purge rolls with the default survival chance (0.05), oldest first."""
    replay = random.Random(seed)
    return [replay.random() < Settings().lifecycle.knowledge_survival_chance for _ in range(n)]


def test_forty_idle_facts_are_archived_by_default_and_each_can_be_restored(
    tmp_path: Path
) -> None:
    mem, clock, ids = forty_idle_facts(tmp_path)
    wins = default_rolls(3, 40)
    assert sum(wins) == 2  # the seed gives survivors and losers: 0.05 exercised, not bypassed
    survivors = {i for i, won in zip(ids, wins, strict=True) if won}

    run = run_job(mem, "decay", JobContext(rng=random.Random(3)))

    assert (run.counts["idle_archived"], run.counts["idle_survived"]) == (38, 2)
    assert live_ids(mem) == survivors
    assert archived_ids(mem) == set(ids) - survivors  # nothing deleted
    entries = mem.archived(limit=100)
    assert {e.archived_at for e in entries} == {clock.now}
    gone = [i for i in ids if i not in survivors]
    n = ids.index(gone[0])
    (hit,) = mem.recall(f"quokka{n}", archive=True)  # searchable while archived
    assert hit.memory.id == gone[0]

    # Memory.restore: back in recall, its idle clock restarted
    first = mem.restore(gone[0])
    assert (first.stored_at, first.content) == (clock.now, f"idle fact number {n} about quokka{n}")
    assert [h.memory.id for h in mem.recall(f"quokka{n}")] == [gone[0]]
    assert run_job(mem, "decay", JobContext(rng=random.Random(0))).counts["idle_archived"] == 0
    with pytest.raises(NotFoundError):
        mem.restore(gone[0])
    mem.close()

    # clawmem restore, several at once; an id not in the archive is reported, exit 1
    db = tmp_path / "agent.db"
    done = clawmem("--db", db, "--json", "restore", *gone[1:], "not-archived")
    assert done.returncode == 1
    assert done.stderr.startswith("error: not in the archive of namespace 'default':")
    report = json.loads(done.stdout)
    assert [r["id"] for r in report["restored"]] == gone[1:]
    assert report["missing"] == ["not-archived"]
    assert ok(clawmem("--db", db, "--json", "list", "--archive"))["memories"] == []
    assert len(ok(clawmem("--db", db, "--json", "list", "--limit", "100"))["memories"]) == 40


def test_purge_delete_is_the_explicit_hard_delete(tmp_path: Path) -> None:
    mem, _, ids = forty_idle_facts(tmp_path, purge="delete")
    wins = default_rolls(3, 40)
    run = run_job(mem, "decay", JobContext(rng=random.Random(3)))
    assert (run.counts["idle_deleted"], run.counts["idle_survived"]) == (38, 2)
    assert "idle_archived" not in run.counts
    assert live_ids(mem) == {i for i, won in zip(ids, wins, strict=True) if won}
    assert archived_ids(mem) == set()
    assert mem.stats()["archived"] == 0
    mem.close()


def test_cli_maintain_archives_what_it_retires_and_list_archive_shows_it(
    tmp_path: Path
) -> None:
    db = tmp_path / "agent.db"
    past = Clock(time.time() - 40 * DAY)
    cfg = Settings(embedder=NO_EMBEDDER, lifecycle={"knowledge_survival_chance": 0.0})
    with Memory.open(db, settings=cfg, clock=past) as mem:
        chat = mem.store("the agent was halfway through the deploy checklist",
                         kind="conversation", key="chat-state")
        fact = mem.store("the staging database resets every Monday")
        core = mem.store("I am the release assistant", kind="core")
    env = {"CLAWMEM_LIFECYCLE__KNOWLEDGE_SURVIVAL_CHANCE": "0"}
    before = files(tmp_path)

    preview = ok(clawmem("--db", db, "--json", "maintain", "decay", "--dry-run", env=env))
    shown = ok(clawmem("--db", db, "maintain", "--dry-run", env={**env, "COLUMNS": "200"}))

    assert files(tmp_path) == before  # not a byte changed, no run recorded
    assert preview["dry_run"] is True
    (decay,) = preview["previews"]
    assert [(c["step"], c["action"], c["id"], c["kind"]) for c in decay["changes"]] == [
        ("hygiene", "archive", chat, "conversation"), ("idle", "archive", fact, "fact")]
    assert decay["changes"][0]["key"] == "chat-state"
    assert decay["changes"][1]["reason"].startswith("unused for 40.0 days")
    assert (decay["counts"]["hygiene_archived"], decay["counts"]["idle_archived"]) == (1, 1)
    assert "default: decay would: hygiene_archived 1, idle_archived 1" in shown
    assert "default: reflect is: skipped: no LLM configured" in shown
    assert chat in shown and fact in shown and "why: unused for 40.0 days" in shown
    assert shown.rstrip().endswith("dry run: nothing was changed")
    assert ok(clawmem("--db", db, "--json", "runs"))["runs"] == []

    ok(clawmem("--db", db, "maintain", "decay", env=env))

    assert {m["id"] for m in ok(clawmem("--db", db, "--json", "list"))["memories"]} == {core}
    archive = ok(clawmem("--db", db, "--json", "list", "--archive"))
    assert {m["id"] for m in archive["memories"]} == {chat, fact}
    assert all(m["archived_at"] > past.now for m in archive["memories"])
    table = ok(clawmem("--db", db, "list", "--archive"))
    assert "archived (UTC)" in table and chat in table and fact in table
    refused = clawmem("--db", db, "list", "--archive", "--kind", "fact")
    assert (refused.returncode, refused.stderr) == (
        2, "error: --archive takes only --limit and --offset\n")
    assert ok(clawmem("--db", db, "restore", chat, fact)).splitlines() == [
        f"restored {chat}", f"restored {fact}"]
    listed = ok(clawmem("--db", db, "--json", "list"))["memories"]
    assert {m["id"] for m in listed} == {core, chat, fact}
    assert next(m for m in listed if m["id"] == chat)["key"] == "chat-state"


# --- idle clocks: upserts and arrival ------------------------------------------------------------
@pytest.mark.parametrize("backend", backend_params(), indirect=True)
def test_upserts_keep_a_conversation_entry_alive_past_hygiene_max_age(
    mem: Memory, clock: Clock
) -> None:
    first = mem.store("step 1 of the checklist", kind="conversation", key="state")
    for step in range(2, 6):  # an upsert every 3 days: 12 days after it was first created
        clock.advance(3 * DAY)
        assert mem.store(f"step {step} of the checklist", kind="conversation",
                         key="state") == first
    stored = mem.get("state")
    assert (stored.created_at, stored.updated_at, stored.stored_at) == (
        START, START + 12 * DAY, START)  # an upsert keeps the arrival
    clock.advance(7 * DAY)  # exactly hygiene_max_age since the last upsert: kept
    assert run_job(mem, "decay").counts["hygiene_archived"] == 0
    assert mem.get("state").content == "step 5 of the checklist"
    clock.advance(1)
    assert run_job(mem, "decay").counts["hygiene_archived"] == 1
    assert archived_ids(mem) == {first}


@pytest.mark.parametrize("backend", backend_params(), indirect=True)
def test_an_import_starts_idle_recency_and_decay_clocks_at_arrival(
    mem: Memory, clock: Clock
) -> None:
    old = START - 400 * DAY
    snapshot = json.dumps([{"key": "tea", "content": "The user drinks green tea",
                            "category": "knowledge", "timestamp": old, "last_accessed": old}])
    half_life = mem.settings.recall.model_copy(
        update={"recency": "half-life", "recency_half_life_s": DAY})
    mem = Memory(mem.store_backend, mem.settings.model_copy(update={"recall": half_life}),
                 clock=clock)
    assert mem.import_snapshot(snapshot)["created"] == 1
    imported = mem.get("tea")
    assert (imported.created_at, imported.stored_at) == (old, START)
    (hit,) = mem.recall("green tea", touch=False)
    assert hit.explain.factors["recency"] == 1.0  # age counts from arrival, not 2022
    koshi = Memory(mem.store_backend, Settings(embedder=NO_EMBEDDER), clock=clock)
    (hit,) = koshi.recall("green tea", touch=False)
    assert hit.explain.factors["recency"] == 1.0
    clock.advance(DAY)
    (hit,) = mem.recall("green tea", touch=False)
    assert hit.explain.factors["recency"] == pytest.approx(0.5, rel=1e-12)
    counts = run_job(mem, "decay").counts
    assert (counts["idle_archived"], counts["decayed"]) == (0, 1)
    assert mem.get("tea").confidence == pytest.approx(math.exp(-0.1), rel=1e-12)


def test_half_life_counts_from_the_last_upsert(tmp_path: Path) -> None:
    clock = Clock()
    cfg = Settings(embedder=NO_EMBEDDER,
                   recall={"recency": "half-life", "recency_half_life_s": DAY})
    with Memory.open(tmp_path / "m.db", settings=cfg, clock=clock) as mem:
        mem.store("the build runs on Tuesdays", key="build")
        clock.advance(3 * DAY)
        (hit,) = mem.recall("build Tuesdays", touch=False)
        assert hit.explain.factors["recency"] == pytest.approx(0.125, rel=1e-12)
        mem.store("the build runs on Wednesdays", key="build")
        (hit,) = mem.recall("build", touch=False)
        assert hit.explain.factors["recency"] == 1.0


# --- schema and files from before arrival times --------------------------------------------------
def test_a_database_from_before_arrival_times_is_migrated_and_backfilled(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    old_database(db, 2)  # what schema version 2 wrote
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO memories (id, namespace, kind, content, created_at, updated_at,"
                 " last_accessed) VALUES ('a', 'default', 'fact', 'old fact', ?, ?, NULL)",
                 (START - 100 * DAY, START - 10 * DAY))
    conn.close()
    store = SQLiteStore(db)
    try:
        assert store.schema_version() >= 3
        record = store.get("default", "a")
        assert record is not None and record.stored_at == START - 10 * DAY
    finally:
        store.close()


def test_a_json_store_file_without_arrival_times_loads(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_text(json.dumps([
        {"id": "a", "key": "k", "content": "old fact", "category": "knowledge",
         "timestamp": int(START - 100 * DAY), "updated_at": START - 10 * DAY},
        {"id": "b", "content": "older fact", "category": "knowledge",
         "timestamp": int(START - 50 * DAY)}]))
    store = JSONFileStore(path)
    assert [(r.id, r.stored_at) for r in store.get_many("default", ["a", "b"])] == [
        ("a", START - 10 * DAY), ("b", START - 50 * DAY)]
    mem = Memory(store, Settings(embedder=NO_EMBEDDER), clock=Clock())
    new = mem.store("new fact")
    again = JSONFileStore(path)  # written back with arrival times, read again
    assert {r.id: r.stored_at for r in again.get_many("default", ["a", "b", new])} == {
        "a": START - 10 * DAY, "b": START - 50 * DAY, new: START}


# --- previews ------------------------------------------------------------------------------------
def mixed_store(mem: Memory, clock: Clock) -> dict[str, str]:
    """One memory for each thing the decay job does, the right number of days later."""
    ids = {
        "chat": mem.store("the user was halfway through the checklist", kind="conversation"),
        "core": mem.store("I am the release assistant", kind="core"),
        "fading": mem.store("the user once liked jazz", kind="preference", confidence=0.2),
    }
    ids |= {f"fact{i}": mem.store(f"an old fact about topic {i}") for i in range(6)}
    clock.advance(20 * DAY)
    ids["recent"] = mem.store("a fact from last week", kind="event")
    clock.advance(12 * DAY)
    return ids


@pytest.mark.parametrize("backend", backend_params("sqlite", "json"), indirect=True)
def test_a_preview_changes_no_byte_and_shows_exactly_what_the_run_does(
    mem: Memory, clock: Clock, tmp_path: Path
) -> None:
    ids = mixed_store(mem, clock)
    small = with_lifecycle(mem, max_size_bytes=1, prune_percent=20,
                           knowledge_survival_chance=0.3)
    before, rows = files(tmp_path), rows_of(mem)

    previews = preview_all(small, JobContext(rng=random.Random(7)))

    assert files(tmp_path) == before and rows_of(mem) == rows
    assert mem.store_backend.runs(mem.namespace, 10) == []  # a preview records no run
    assert [(p.job, p.outcome) for p in previews] == [
        ("enrich", "skipped"), ("consolidate", "skipped"), ("decay", "ok"),
        ("reflect", "skipped"), ("repair", "ok")]
    decay = previews[2]
    planned = [(c.step, c.action, c.record.id) for c in decay.changes]
    name = {v: k for k, v in ids.items()}
    replay = random.Random(7)  # idle rolls, oldest first: the preference, then the facts
    rolled = [("idle", "survive" if replay.random() < 0.3 else "archive", n)
              for n in ("fading", *[f"fact{i}" for i in range(6)])]
    assert [r[1] for r in rolled] == ["archive", "survive", "archive", "survive", "archive",
                                      "archive", "survive"]
    assert [(s, a, name[i]) for s, a, i in planned] == [
        ("hygiene", "archive", "chat"), *rolled,
        ("decay", "decay", "recent"),  # survivors were just refreshed; core never decays
        ("prune", "archive", "recent"),  # 4 left, 20% -> 1: the lowest weight (0.3 x 0.89)
    ]
    chat = next(c for c in decay.changes if c.step == "hygiene")
    assert chat.to_dict() == {
        "step": "hygiene", "action": "archive", "id": ids["chat"], "key": None,
        "kind": "conversation", "content": "the user was halfway through the checklist",
        "reason": "conversation memory unused for 32.0 days (hygiene_max_age_s: 7.0 days)"}

    done = lifecycle.run_decay(small, random.Random(7))

    assert [(c.step, c.action, c.record.id) for c in done.changes] == planned
    assert {k: v for k, v in done.counts.items() if k != "live_bytes"} == {
        k: v for k, v in decay.counts.items() if k != "live_bytes"}
    assert archived_ids(mem) == {i for s, a, i in planned if a == "archive"}


# --- the guarantee, over any history -------------------------------------------------------------
OPERATION = st.one_of(
    st.tuples(st.just("store"), st.sampled_from(
        ["fact", "preference", "event", "conversation", "episode", "core"]),
        st.sampled_from([None, "k1", "k2"])),
    st.tuples(st.just("recall"), st.integers(0, 5)),
    st.tuples(st.just("advance"), st.floats(0, 60)),
    st.tuples(st.just("maintain"), st.integers(0, 2**16)),
    st.tuples(st.just("restore"), st.integers(0, 50)),
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(OPERATION, min_size=1, max_size=25), on_disk=st.booleans(),
       tight=st.booleans())
def test_under_the_default_policy_live_and_archive_together_never_shrink(
    ops: list[tuple[Any, ...]], on_disk: bool, tight: bool
) -> None:
    """Store, recall, let time pass, run maintenance (pruning too, when the size limit is
    tight), restore: every id ever stored is always live or archived."""
    clock = Clock()
    cfg = Settings(embedder=NO_EMBEDDER, lifecycle={"max_size_bytes": 1 if tight else 10**8,
                                                    "prune_percent": 30})
    with tempfile.TemporaryDirectory() as tmp:
        mem = Memory.open(Path(tmp) / "m.db", settings=cfg, clock=clock,
                          backend="sqlite" if on_disk else "memory")
        known: set[str] = set()
        for op in ops:
            if op[0] == "store":
                known.add(mem.store(f"note about topic{len(known) % 6}", kind=op[1], key=op[2]))
            elif op[0] == "recall":
                mem.recall(f"topic{op[1]}")
            elif op[0] == "advance":
                clock.advance(op[1] * DAY)
            elif op[0] == "maintain":
                assert run_job(mem, "decay", JobContext(rng=random.Random(op[1]))).outcome == "ok"
            elif (archive := sorted(archived_ids(mem))):
                mem.restore(archive[op[1] % len(archive)])
            live, archived = live_ids(mem), archived_ids(mem)
            assert known <= live | archived
            assert not live & archived
        mem.close()


def test_the_property_test_reaches_the_archive() -> None:
    """The history above is not vacuous: idle time and maintenance do archive memories."""
    clock = Clock()
    mem = Memory(SQLiteStore(":memory:"), Settings(embedder=NO_EMBEDDER), clock=clock)
    kept = mem.store("note about topic1", kind="conversation")
    clock.advance(8 * DAY)
    assert run_job(mem, "decay", JobContext(rng=random.Random(0))).counts[
        "hygiene_archived"] == 1
    assert archived_ids(mem) == {kept}
    assert preview_job(mem, "decay").counts["hygiene_archived"] == 0


# --- the archive as a user sees it ---------------------------------------------------------------
@pytest.mark.parametrize("backend", backend_params(), indirect=True)
def test_the_archive_lists_most_recently_archived_first_and_stats_count_it(
    mem: Memory, clock: Clock
) -> None:
    a, b, c = (mem.store(f"memory {n}") for n in ("apple", "banana", "cherry")
               if clock.advance())
    record_b = mem.get(b)
    idle_purge = with_lifecycle(mem, knowledge_survival_chance=0.0)  # archives all idle facts
    clock.advance(30 * DAY)
    assert {h.memory.id for h in mem.recall("apple cherry", mode="keyword")} == {a, c}
    clock.advance(DAY)
    first = clock.now
    assert lifecycle.knowledge_decay(idle_purge).counts["idle_archived"] == 1  # b: 31 days idle
    clock.advance(30 * DAY + 5)
    assert lifecycle.knowledge_decay(idle_purge).counts["idle_archived"] == 2  # a and c now
    listed = mem.archived()
    assert [(e.record.id, e.archived_at) for e in listed] == [
        (c, clock.now), (a, clock.now), (b, first)]  # ties: the newest memory first
    assert [e.record.id for e in mem.archived(limit=1, offset=1)] == [a]
    assert listed[2].to_dict() == {**record_b.to_dict(), "archived_at": first}
    assert mem.stats()["archived"] == 3 and mem.stats()["total"] == 0
    assert mem.with_namespace("other").archived() == []
    for bad in (-1, 2**62, True, "1"):
        with pytest.raises(InvalidInputError):
            mem.archived(offset=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        mem.restore("")


def test_archiving_removes_the_mirror_note_and_restoring_writes_it_back(tmp_path: Path) -> None:
    clock = Clock()
    cfg = Settings(embedder=NO_EMBEDDER, storage={"mirror_dir": str(tmp_path / "notes")})
    with Memory.open(tmp_path / "m.db", settings=cfg, clock=clock) as mem:
        chat = mem.store("the agent was waiting for the build", kind="conversation")
        kept = mem.store("the build server is ci.example.com")
        notes = tmp_path / "notes" / "default"

        def noted() -> list[str]:
            return sorted(i for p in notes.rglob("*.md") for i in (chat, kept)
                          if f"id: {i}" in p.read_text())

        assert noted() == sorted([chat, kept])
        clock.advance(8 * DAY)
        assert run_job(mem, "decay").counts["hygiene_archived"] == 1
        assert noted() == [kept]
        mem.restore(chat)
        assert noted() == sorted([chat, kept])


def test_the_purge_policy_is_read_from_the_environment_and_checked(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    from clawmemory import ConfigError, load_settings

    assert load_settings().lifecycle.purge == "archive"
    monkeypatch.setenv("CLAWMEM_LIFECYCLE__PURGE", "delete")
    assert load_settings().lifecycle.purge == "delete"
    monkeypatch.setenv("CLAWMEM_LIFECYCLE__PURGE", "shred")
    with pytest.raises(ConfigError, match=r"lifecycle\.purge \(from CLAWMEM_LIFECYCLE__PURGE\)"):
        load_settings()

"""Exact behaviour no test protected: each test here fails for one small change of the code
(a mutant) that the whole suite let through before (issue 16's hand-made mutants, then
mutmut's survivors; docs/testing.md). Numbers are asserted exactly, through the public API.
"""

from __future__ import annotations

import json
import math
import random
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from test_lifecycle import make

from clawmemory import InvalidInputError, Memory, NotFoundError, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.core import lifecycle
from clawmemory.core.lifecycle import DECAYED_AT, Report
from clawmemory.model import KINDS, Kind
from clawmemory.portability import read_source
from clawmemory.tools import call_tool
from conftest import DAY, START, Clock, backend_params

KEYWORD = Settings(embedder={"provider": "none"})


def by_id(mem: Memory, query: str, **options: Any) -> dict[str, Any]:
    return {h.memory.id: h for h in mem.recall(query, mode="keyword", **options)}


# --- ranking factors (003) ---------------------------------------------------------------------
def test_reinforcement_is_exp_of_score_times_0_2(mem: Memory) -> None:
    up, down, plain = (mem.store(f"kayak trip {n}") for n in ("one", "two", "three"))
    mem.reinforce(up)
    mem.reinforce(up)
    mem.demote(down)
    factor = {rid: h.explain.factors["reinforcement"] for rid, h in by_id(mem, "kayak").items()}
    assert factor[up] == pytest.approx(math.exp(6 * 0.2), rel=1e-12)  # score 6: 3.32x
    assert factor[down] == pytest.approx(math.exp(-0.2), rel=1e-12)  # score -1: 0.82x
    assert factor[plain] == 1.0


def test_recency_loses_1_percent_a_day_since_the_last_access(mem: Memory, clock: Clock) -> None:
    mem.settings.recall.recency_per_day = 0.01  # 003's rate (the koshi profile)
    rid = mem.store("kayak trip")
    clock.advance(10 * DAY)  # never recalled: counted from creation
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(1 / 1.1, rel=1e-12)
    mem.flush()  # the access tracker writes the recall's access now, not touch_delay_s later
    clock.advance(20 * DAY)  # the recall above was the last access, 20 days ago
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(1 / 1.2, rel=1e-12)
    mem.flush()
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == 1.0  # just accessed


def test_by_default_an_old_memory_keeps_most_of_its_rank(mem: Memory, clock: Clock) -> None:
    # 1 / (1 + 0.0002 × days): half a year costs 3.5%, a year 6.8% (003's rate: 2.8x, 4.7x).
    rid = mem.store("kayak trip")
    clock.advance(182 * DAY)
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(
        1 / (1 + 0.0002 * 182), rel=1e-12)


def test_reinforce_restarts_the_recency_clock(mem: Memory, clock: Clock) -> None:
    rid = mem.store("kayak trip")
    clock.advance(50 * DAY)
    mem.reinforce(rid)
    assert mem.get(rid).last_accessed == START + 50 * DAY
    hit = by_id(mem, "kayak", touch=False)[rid]
    assert hit.explain.factors == {"reinforcement": pytest.approx(math.exp(0.6), rel=1e-12),
                                   "recency": 1.0, "confidence": 1.0}
    mem.demote(rid)  # demoting is not an access
    clock.advance(DAY)
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(1 / 1.0002)


# --- fusion and depth (000, 002, 004) ------------------------------------------------------------
@pytest.mark.parametrize("weights", [None, {"keyword": 1.0, "vector": 0.25, "entity": 2.0}])
def test_rrf_weighs_each_list_by_its_weight(
    clock: Clock, default_embedder: Any, weights: dict[str, float] | None
) -> None:
    recall: dict[str, Any] = {"fusion": "rrf"} | ({"list_weights": weights} if weights else {})
    mem = Memory(MemoryStore(), Settings(recall=recall), clock=clock, embedder=default_embedder)
    rid = mem.store("Alice Cooper plays the guitar on Fridays")
    mem.store("Bob Dylan writes songs")
    hit = mem.recall("Alice Cooper guitar")[0]
    assert hit.memory.id == rid
    ranks = {name: info["rank"] for name, info in hit.explain.lists.items()}
    assert ranks == {"keyword": 1, "vector": 1, "entity": 1}
    w = weights or {"keyword": 1.0, "vector": 1.0, "entity": 0.5}  # the default list weights
    assert hit.explain.fused == pytest.approx(sum(w.values()) / 61, rel=1e-12)  # k = 60


def test_depth_1_neighbours_obey_the_filters(mem: Memory) -> None:
    trip = mem.store("kayak trip to the lake", kind="fact")
    paddles = mem.store("bought paddles", kind="event")
    cold = mem.store("the lake water is cold", kind="fact")
    mem.link(trip, paddles)
    mem.link(trip, cold)
    mem.correct(cold, "the lake water is warm")  # the old version is invalidated

    def found(**options: Any) -> list[str]:
        return [h.memory.id for h in mem.recall("trip", depth=1, mode="keyword", **options)]

    assert found() == [trip, paddles]  # the invalidated neighbour stays out
    assert found(kind="fact") == [trip]  # so does a neighbour of another kind
    everything = found(include_invalid=True)  # two neighbours of equal score: either order
    assert everything[0] == trip and sorted(everything[1:]) == sorted([paddles, cold])
    neighbour = by_id(mem, "trip", depth=1)[paddles]
    assert (neighbour.explain.via, neighbour.explain.factors) == (
        f"link:{trip}", {"link_decay": 0.5})
    assert neighbour.score == pytest.approx(by_id(mem, "trip")[trip].score * 0.5)


# --- scoping -----------------------------------------------------------------------------------
def test_recall_counts_access_only_in_its_own_namespace(mem: Memory, clock: Clock) -> None:
    rid = mem.store("the wifi password is hunter2")
    twin = mem.with_namespace("twin")
    assert twin.import_snapshot(mem.export_snapshot())["created"] == 1  # the same id there
    clock.advance(DAY)
    assert [h.memory.id for h in mem.recall("wifi", mode="keyword")] == [rid]
    assert (mem.get(rid).access_count, mem.get(rid).last_accessed) == (1, START + DAY)
    assert (twin.get(rid).access_count, twin.get(rid).last_accessed) == (0, START)
    twin.recall("wifi", mode="keyword")
    twin.recall("wifi", mode="keyword")
    assert (twin.get(rid).access_count, mem.get(rid).access_count) == (2, 1)


def test_forget_namespace_forgets_its_entities(mem: Memory) -> None:
    gone = mem.with_namespace("gone")
    gone.store("Alice Cooper plays the guitar")
    mem.store("Alice Cooper sings")
    assert gone.entity_info("Alice Cooper")["mention_count"] == 1
    assert gone.forget_namespace() == 1
    with pytest.raises(NotFoundError, match="no entity named 'Alice Cooper' in namespace 'gone'"):
        gone.entity_info("Alice Cooper")
    kept = mem.entity_info("Alice Cooper")
    assert (kept["mention_count"], [r.content for r in kept["memories"]]) == (
        1, ["Alice Cooper sings"])


def test_mention_counts_follow_forget_archive_and_restore(mem: Memory, clock: Clock) -> None:
    # Entity recall weighs each name by 1/mention_count: the count is the memories that
    # mention it now. SQLite and PostgreSQL once kept counting forgotten and archived ones.
    ids = [mem.store(f"Alice Cooper called about the {w}", kind="fact")
           for w in ("roof", "gutter", "fence")]
    assert mem.entity_info("Alice Cooper")["mention_count"] == 3
    mem.forget(ids[0])
    assert mem.entity_info("Alice Cooper")["mention_count"] == 2
    assert sorted(idle_out(mem, clock)) == sorted(ids[1:])
    mem.restore(ids[1])
    assert mem.entity_info("Alice Cooper")["mention_count"] == 1
    mem.restore(ids[2])
    info = mem.entity_info("Alice Cooper")
    assert (info["mention_count"], sorted(r.id for r in info["memories"])) == (
        2, sorted(ids[1:]))


def test_forget_takes_the_memory_out_of_its_entity(mem: Memory) -> None:
    a = mem.store("Alice Cooper plays the guitar")
    b = mem.store("Alice Cooper sings")
    mem.forget(a)
    info = mem.entity_info("Alice Cooper")
    assert [r.id for r in info["memories"]] == [b]
    mem.forget(b)
    with pytest.raises(NotFoundError):
        mem.entity_info("Alice Cooper")


# --- engine ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["preference", "event", "fact"])
def test_correct_keeps_the_kind(mem: Memory, kind: str) -> None:
    old = mem.store("the user likes tea", kind=kind, session_id="s1", source="chat")
    new = mem.correct(old, "the user likes coffee")
    assert (new.kind, new.session_id, new.source) == (kind, "s1", "chat")
    assert mem.get(new.id).kind == kind


# --- tools -------------------------------------------------------------------------------------
def test_koshi_memory_query_returns_five_by_default(mem: Memory) -> None:
    mem.store_many({"content": f"widget note {i}"} for i in range(12))
    answer = call_tool(mem, "memory_query", {"query": "widget"}, dialect="koshi")
    assert len(answer.text.splitlines()) == 5 and answer.data["count"] == 5
    more = call_tool(mem, "memory_query", {"query": "widget", "limit": 8}, dialect="koshi")
    assert more.data["count"] == 8


# --- vectors -----------------------------------------------------------------------------------
class Renamed:
    """The default embedder under another model name: the same dimension, another space."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner, self.name, self.dimension = inner, name, inner.dimension

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        rows: npt.NDArray[np.float32] = self.inner.embed(texts)
        return rows

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.inner.embed_query(text)
        return row


def test_another_model_of_the_same_dimension_is_refused_until_reindex(
    tmp_path: Path, default_embedder: Any
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, settings=Settings(), embedder=default_embedder) as mem:
        mem.store("the quick brown fox")
    other = Renamed(default_embedder, "another-384-d-model")
    with Memory.open(db, settings=Settings(), embedder=other) as mem:
        status = mem.stats()["vectors"]
        with pytest.raises(InvalidInputError, match="vector search disabled"):
            mem.recall("fox", mode="vector")
        assert "'another-384-d-model' gives 384-d vectors" in mem.stats()["vectors"], status
        assert mem.reindex() == 1
        assert mem.recall("fox", mode="vector")[0].memory.content == "the quick brown fox"


# --- import ------------------------------------------------------------------------------------
def test_sclaw_summaries_keep_their_own_time(tmp_path: Path) -> None:
    source = tmp_path / "sclaw.db"
    db = sqlite3.connect(source)
    db.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (2);
        CREATE TABLE facts (id TEXT PRIMARY KEY, content TEXT NOT NULL, source TEXT, tags TEXT,
            metadata TEXT, created_at DATETIME);
        CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT
            NULL, content TEXT NOT NULL DEFAULT '', created_at DATETIME);
        CREATE TABLE summaries (session_id TEXT PRIMARY KEY, summary TEXT NOT NULL,
            updated_at DATETIME);
        INSERT INTO summaries VALUES ('s1', 'Alice introduced herself.', '2024-01-15 11:00:00');
        INSERT INTO summaries VALUES ('s2', 'No time was recorded.', NULL);
    """)
    db.commit()
    db.close()
    imported_at = START + 400 * DAY
    with Memory.open(tmp_path / "m.db", settings=KEYWORD, clock=Clock(imported_at)) as mem:
        parsed = read_source("sclaw-db", source, namespace=mem.namespace, now=mem.clock(),
                             max_chars=mem.settings.storage.max_content_chars)
        assert mem.import_records(parsed)["created"] == 2
        when = {r.session_id: (r.created_at, r.updated_at, r.stored_at)
                for r in mem.list(kind="summary")}
    jan_15 = 1_705_316_400.0  # 2024-01-15 11:00:00 UTC
    assert when == {"s1": (jan_15, jan_15, imported_at),
                    "s2": (imported_at, imported_at, imported_at)}


# --- the archive and the lifecycle steps (lifecycle.py) ------------------------------------------
def idle_out(mem: Memory, clock: Clock) -> list[str]:
    """Archive every fact the way a user's store does: 31 idle days, then the idle purge (000).
    Its rolls come from a seeded source whose first ten all lose (above the 5% survival chance).
    Returns the archived ids, as ``archived()`` lists them."""
    clock.advance(31 * DAY)
    lifecycle.knowledge_decay(mem, random.Random(0))
    return [e.record.id for e in mem.archived(limit=100)]


def test_archive_recall_scores_each_hit_by_its_rank(mem: Memory, clock: Clock) -> None:
    # Pins the RRF-shaped score 1 / (rrf_k + rank) with ranks from 1, and the explanation.
    for n in range(3):
        mem.store(f"zebrafinch note {n}", kind="fact")
    assert len(idle_out(mem, clock)) == 3
    hits = mem.recall("zebrafinch", archive=True)
    assert [(h.score, h.explain.lists, h.explain.fused, h.explain.final, h.explain.via)
            for h in hits] == [(1 / (60 + rank), {"archive": {"rank": float(rank)}},
                                1 / (60 + rank), 1 / (60 + rank), "archive")
                               for rank in (1, 2, 3)]
    assert [type(h.score) for h in hits] == [float] * 3


def test_archive_recall_names_the_terms_found_in_key_tags_and_source(
    mem: Memory, clock: Clock
) -> None:
    # Pins the text matched_terms is read from: key, content, tags and source, each once, and
    # nothing for a memory without key or source.
    full = mem.store("travel plans", key="zanzibar", kind="fact", tags=["alpha", "beta"],
                     source="telegram")
    bare = mem.store("travel diary", kind="fact")
    assert sorted(idle_out(mem, clock)) == sorted([full, bare])
    hits = mem.recall("zanzibar alpha beta telegram travel xxxx", archive=True)
    assert {h.memory.id: h.explain.matched_terms for h in hits} == {
        full: ("zanzibar", "alpha", "beta", "telegram", "travel"), bare: ("travel",)}


def test_archive_recall_returns_the_limit_asked_for_else_the_configured_one(
    mem: Memory, clock: Clock
) -> None:
    # Pins that an explicit limit wins and that no limit means recall.limit (5).
    for n in range(7):
        mem.store(f"zebrafinch note {n}", kind="fact")
    assert len(idle_out(mem, clock)) == 7
    assert len(mem.recall("zebrafinch", archive=True, limit=6)) == 6
    assert len(mem.recall("zebrafinch", archive=True, limit=2)) == 2
    assert len(lifecycle.recall_archive(mem, "zebrafinch")) == 5
    assert len(lifecycle.recall_archive(mem, "zebrafinch", 7)) == 7


def test_archive_recall_of_a_query_that_is_not_text_finds_nothing(
    mem: Memory, clock: Clock
) -> None:
    # Pins lifecycle.recall_archive's answer to a non-text query: nothing, not a TypeError.
    mem.store("42 zebrafinch notes", kind="fact")
    assert len(idle_out(mem, clock)) == 1
    assert lifecycle.recall_archive(mem, 42) == []  # type: ignore[arg-type]
    assert lifecycle.recall_archive(mem, None) == []  # type: ignore[arg-type]


def test_restore_refuses_an_empty_id_as_bad_input(mem: Memory, clock: Clock) -> None:
    # Pins lifecycle.restore's own check: an empty id is bad input (not "not found").
    mem.store("travel plans", kind="fact")
    assert len(idle_out(mem, clock)) == 1
    for bad in ("", None, 7):
        with pytest.raises(InvalidInputError,
                           match=r"^an archived memory's id must be non-empty text$"):
            lifecycle.restore(mem, bad)  # type: ignore[arg-type]


def test_restore_of_an_unknown_id_or_a_key_names_it(mem: Memory, clock: Clock) -> None:
    # Pins the NotFoundError message, also for a key (restore takes ids only).
    mem.store("old deploy notes", key="deploy", kind="fact")
    assert len(idle_out(mem, clock)) == 1
    for ref in ("nope", "deploy"):
        with pytest.raises(NotFoundError) as caught:
            mem.restore(ref)
        assert str(caught.value) == (
            f"no archived memory with id {ref!r} in namespace {mem.namespace!r}")


def test_restore_brings_back_the_entity_links(mem: Memory, clock: Clock) -> None:
    # Pins that a restored (valid) memory is linked to the names it mentions again.
    rid = mem.store("Alice Cooper plays the guitar", kind="fact")
    assert idle_out(mem, clock) == [rid]
    with pytest.raises(NotFoundError):
        mem.entity_info("Alice Cooper")
    mem.restore(rid)
    info = mem.entity_info("Alice Cooper")
    assert (info["mention_count"], [r.id for r in info["memories"]]) == (1, [rid])


def test_restoring_an_invalidated_memory_queues_no_vector(
    tmp_path: Path, clock: Clock, default_embedder: Any
) -> None:
    # Pins that an invalidated memory comes back without a vector-queue row (only valid ones
    # are re-indexed): a queued row would give it a vector on the next embedding pass.
    with Memory.open(tmp_path / "m.db", settings=Settings(), clock=clock,
                     embedder=default_embedder) as mem:
        old = mem.store("the user was halfway through the checklist", kind="conversation")
        new = mem.correct(old, "the user finished the checklist").id
        clock.advance(8 * DAY)
        assert lifecycle.hygiene_purge(mem).counts == {"hygiene_archived": 2}
        restored = mem.restore(old)
        assert (restored.id, restored.valid_until) == (old, START)
        assert mem.stats()["vectors_queued"] == 0
        assert mem.restore(new).valid_until is None
        assert mem.stats()["vectors_queued"] == 0


def test_archived_memories_leave_the_vector_index(clock: Clock, default_embedder: Any) -> None:
    # Pins that archiving drops the in-RAM vectors: stale ones would fill the vector list.
    cfg = Settings(recall={"candidate_pool": 1}, lifecycle={"knowledge_survival_chance": 0.0})
    mem = Memory(MemoryStore(), cfg, clock=clock, embedder=default_embedder)
    facts = [mem.store(f"the zebra finch sings song number {n}", kind="fact") for n in range(4)]
    core = mem.store("zebra finches are small birds", kind="core")  # further from the query
    clock.advance(31 * DAY)
    assert lifecycle.knowledge_decay(mem).counts == {"idle_archived": 4, "idle_survived": 0}
    assert sorted(e.record.id for e in mem.archived()) == sorted(facts)
    # pool max(1, 2 x limit) = 2: the vector list reads the 4 nearest vectors
    assert [h.memory.id for h in mem.recall("zebra finch song", mode="vector", limit=1)] == [
        core]


STEPS = {"hygiene": lifecycle.hygiene_purge, "idle": lifecycle.knowledge_decay,
         "decay": lifecycle.confidence_decay, "prune": lifecycle.prune}


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
@pytest.mark.parametrize("step", list(STEPS))
def test_each_step_previews_with_dry_run_and_writes_nothing(
    mem: Memory, clock: Clock, step: str
) -> None:
    # Pins dry_run=True of each step on its own: the plan comes back, the store is untouched.
    cfg = mem.settings.model_copy(update={"lifecycle": mem.settings.lifecycle.model_copy(
        update={"knowledge_survival_chance": 0.0, "max_size_bytes": 1, "prune_percent": 100})})
    small = Memory(mem.store_backend, cfg, clock=clock)
    chat = small.store("the user was halfway through the checklist", kind="conversation")
    fact = small.store("the wifi password is hunter2", kind="fact")
    clock.advance(31 * DAY)

    def state() -> tuple[list[dict[str, Any]], list[str]]:
        rows = [r.to_dict() for r in small.list(include_invalid=True, order="oldest")]
        return rows, [e.record.id for e in small.archived()]

    before = state()
    report: Report = STEPS[step](small, dry_run=True)
    assert state() == before
    planned = {"hygiene": [("hygiene", "archive", chat)], "idle": [("idle", "archive", fact)],
               "decay": [("decay", "invalidate", fact)],
               "prune": [("prune", "archive", chat), ("prune", "archive", fact)]}[step]
    assert [(c.step, c.action, c.record.id) for c in report.changes] == planned


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_a_preview_shows_the_first_60_characters_of_a_memory_on_one_line(
    mem: Memory, clock: Clock
) -> None:
    # Pins the preview's content: blanks collapsed to one space, cut to 59 characters and "…"
    # past 60, whole at exactly 60.
    sixty = "a" * 28 + "\n\n  " + "b" * 31  # 60 characters once the blanks are one space
    longer = "c" * 30 + "\t" + "d" * 30  # 61
    for text in (sixty, longer):
        mem.store(text, kind="conversation")
    clock.advance(8 * DAY)
    shown = [c.to_dict()["content"] for c in lifecycle.hygiene_purge(mem, dry_run=True).changes]
    assert shown == ["a" * 28 + " " + "b" * 31, "c" * 30 + " " + "d" * 28 + "…"]


def test_hygiene_max_age_of_one_second_archives_what_is_idle_for_two(
    mem: Memory, clock: Clock
) -> None:
    # Pins that every positive hygiene_max_age_s purges, 1 second included (only 0 disables).
    chat = mem.store("the user was halfway through the checklist", kind="conversation")
    clock.advance(2)
    assert lifecycle.hygiene_purge(make(mem, hygiene_max_age_s=1)).counts == {
        "hygiene_archived": 1}
    assert [e.record.id for e in mem.archived()] == [chat]


def imported_with_rate(mem: Memory, content: str, kind: Kind, rate: float) -> str:
    """A memory imported from a snapshot that gives it a decay rate of its own."""
    scratch = mem.with_namespace("scratch")
    rid = scratch.store(content, kind=kind)
    snapshot = json.loads(scratch.export_snapshot())
    snapshot["entries"][0]["decay_rate"] = rate
    scratch.forget_namespace()
    assert mem.import_snapshot(json.dumps(snapshot))["created"] == 1
    assert mem.get(rid).decay_rate == rate
    return rid


def test_idle_purge_spares_a_kind_that_never_decays_whatever_the_memorys_own_rate(
    mem: Memory, clock: Clock
) -> None:
    # Pins that the idle purge picks memories by kind: an imported core memory carrying a rate
    # of 0.1 stays, a fact as idle goes.
    core = imported_with_rate(mem, "I am the agent's identity", "core", 0.1)
    fact = mem.store("the wifi password is hunter2", kind="fact")
    clock.advance(31 * DAY)
    assert lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 1, "idle_survived": 0}
    assert [e.record.id for e in mem.archived()] == [fact]
    assert mem.get(core).kind == "core"


def test_idle_purge_takes_kinds_marked_for_it_that_decay(
    mem: Memory, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pins the kinds table's two conditions, both needed: a kind marked for the idle purge that
    # never decays is spared (even a memory of it with a rate of its own), and so is a decaying
    # kind not marked for it.
    core = imported_with_rate(mem, "I am the agent's identity", "core", 0.1)
    event = mem.store("the deploy happened", kind="event")
    fact = mem.store("the wifi password is hunter2", kind="fact")
    table = dict(KINDS)
    table["core"] = replace(KINDS["core"], idle_purge=True)  # its decay_rate stays 0
    table["event"] = replace(KINDS["event"], idle_purge=False)  # its decay_rate stays 0.1
    monkeypatch.setattr(lifecycle, "KINDS", table)
    clock.advance(31 * DAY)
    assert lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 1, "idle_survived": 0}
    assert [e.record.id for e in mem.archived()] == [fact]
    assert sorted(r.id for r in mem.list()) == sorted([core, event])


def test_idle_purge_of_one_idle_day_archives_what_is_idle_for_longer(
    mem: Memory, clock: Clock
) -> None:
    # Pins that every positive knowledge_max_idle_days purges, 1 included (only 0 disables).
    fact = mem.store("the wifi password is hunter2", kind="fact")
    clock.advance(DAY + 1)
    tuned = make(mem, knowledge_max_idle_days=1, knowledge_survival_chance=0.0)
    assert lifecycle.knowledge_decay(tuned).counts == {"idle_archived": 1, "idle_survived": 0}
    assert [e.record.id for e in mem.archived()] == [fact]


def test_idle_purge_counts_more_than_the_limit_from_the_last_access(
    mem: Memory, clock: Clock
) -> None:
    # Pins "idle for longer than knowledge_max_idle_days": a fact recalled a day after it was
    # stored stays at exactly 30 idle days, and goes one second later.
    rid = mem.store("the wifi password is hunter2", kind="fact")
    clock.advance(DAY)
    assert [h.memory.id for h in mem.recall("wifi", mode="keyword")] == [rid]
    clock.advance(30 * DAY)
    assert lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 0, "idle_survived": 0}
    clock.advance(1)
    assert lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 1, "idle_survived": 0}


class Rolls(random.Random):
    """A random source that rolls the given numbers, in order."""

    def __init__(self, *rolls: float) -> None:
        super().__init__(0)
        self.rolls = list(rolls)

    def random(self) -> float:
        return self.rolls.pop(0)


def test_a_roll_equal_to_the_survival_chance_loses(mem: Memory, clock: Clock) -> None:
    # Pins "rng.random() < knowledge_survival_chance": a chance of 0 keeps nothing, not even on
    # a roll of exactly 0.0, and a roll of exactly the chance loses.
    other = mem.with_namespace("other")
    lone = other.store("the door code is 1234", kind="fact")
    ids = [mem.store(f"the wifi password is hunter{n}", kind="fact") for n in range(3)]
    clock.advance(31 * DAY)
    report = lifecycle.knowledge_decay(make(other, knowledge_survival_chance=0.0), Rolls(0.0))
    assert [(c.action, c.record.id) for c in report.changes] == [("archive", lone)]
    report = lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=0.5),
                                       Rolls(0.5, 0.25, 0.75))
    assert [(c.action, c.record.id) for c in report.changes] == [
        ("archive", ids[0]), ("survive", ids[1]), ("archive", ids[2])]


def test_idle_purge_explains_each_roll(mem: Memory, clock: Clock) -> None:
    # Pins the reasons the idle purge gives a winner and a loser of the survival roll.
    rid = mem.store("the wifi password is hunter2", kind="fact")
    clock.advance(31 * DAY)
    won = lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=1.0)).changes
    clock.advance(30.5 * DAY)
    lost = lifecycle.knowledge_decay(make(mem, knowledge_survival_chance=0.0)).changes
    assert [(c.action, c.record.id, c.reason) for c in won + lost] == [
        ("survive", rid, "unused for 31.0 days (knowledge_max_idle_days: 30); won the survival"
         " roll: its idle clock restarts"),
        ("archive", rid, "unused for 30.5 days (knowledge_max_idle_days: 30); lost the survival"
         " roll")]


def test_an_unknown_purge_policy_is_refused_with_the_two_it_can_be(
    mem: Memory, clock: Clock
) -> None:
    # Pins the error of settings built without validation (model_copy, model_construct).
    for step in (lifecycle.hygiene_purge, lifecycle.knowledge_decay):
        with pytest.raises(InvalidInputError) as caught:
            step(make(mem, purge="shred"))
        assert str(caught.value) == "lifecycle.purge must be 'archive' or 'delete', not 'shred'"


def test_correcting_a_conversation_memory_restarts_the_old_versions_hygiene_clock(
    mem: Memory, clock: Clock
) -> None:
    # Pins that a write is a use (idle_since counts updated_at): the corrected version was
    # written when it was invalidated, so it stays as long as its correction.
    old = mem.store("the user was halfway through the checklist", kind="conversation")
    clock.advance(5 * DAY)
    new = mem.correct(old, "the user finished the checklist").id
    clock.advance(7 * DAY)  # 12 days since the store, exactly 7 since the correction
    assert lifecycle.hygiene_purge(mem).counts == {"hygiene_archived": 0}
    clock.advance(1)
    assert lifecycle.hygiene_purge(mem).counts == {"hygiene_archived": 2}
    assert sorted(e.record.id for e in mem.archived()) == sorted([old, new])


def test_a_memory_imported_with_a_creation_time_ahead_decays_from_then(
    mem: Memory, clock: Clock
) -> None:
    # Pins that an idle clock never starts before the memory's creation, even when its other
    # times (here from a snapshot: written earlier, never accessed) and its arrival are older.
    scratch = mem.with_namespace("scratch")
    rid = scratch.store("the wifi password is hunter2", kind="fact")
    snapshot = json.loads(scratch.export_snapshot())
    snapshot["entries"][0].update(created_at=START + 10 * DAY, updated_at=START - 10 * DAY,
                                  last_accessed=None)
    scratch.forget_namespace()
    assert mem.import_snapshot(json.dumps(snapshot))["created"] == 1
    clock.advance(10 * DAY)
    assert lifecycle.confidence_decay(mem).counts == {"decayed": 0, "invalidated": 0}
    clock.advance(5 * DAY)
    assert lifecycle.confidence_decay(mem).counts == {"decayed": 1, "invalidated": 0}
    assert mem.get(rid).confidence == pytest.approx(math.exp(-0.5), rel=1e-12)

def test_decay_counts_from_creation_on_a_clock_that_starts_at_zero(store: Store) -> None:
    # Pins where decay time starts when no usable last run is recorded (none, not a time, not
    # finite): the idle clock alone, even at the epoch (a stand-in start of 1 s would show).
    clock = Clock(0.0)
    mem = Memory(store, KEYWORD, clock=clock)
    ids = [mem.store(f"fact {n}", kind="fact", metadata=extra) for n, extra in enumerate(
        ({}, {DECAYED_AT: "not a time"}, {DECAYED_AT: "inf"}))]
    clock.advance(DAY)
    assert lifecycle.confidence_decay(mem).counts == {"decayed": 3, "invalidated": 0}
    for rid in ids:
        assert mem.get(rid).confidence == pytest.approx(math.exp(-0.1), rel=1e-12)


def test_when_no_kind_decays_no_memory_does_whatever_its_own_rate(
    mem: Memory, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pins that the kinds table alone picks what decays: with no decaying kind, a fact that
    # still carries its rate of 0.1 keeps its confidence.
    rid = mem.store("the wifi password is hunter2", kind="fact")
    monkeypatch.setattr(lifecycle, "KINDS", {name: replace(policy, decay_rate=0.0)
                                             for name, policy in KINDS.items()})
    clock.advance(10 * DAY)
    assert lifecycle.confidence_decay(mem).counts == {"decayed": 0, "invalidated": 0}
    assert (mem.get(rid).decay_rate, mem.get(rid).confidence) == (0.1, 1.0)


def test_decay_explains_each_change_and_stamps_an_invalidation(
    mem: Memory, clock: Clock
) -> None:
    # Pins the reasons a decay run gives, and that invalidating a memory is an update of it
    # (updated_at and valid_until both now).
    kept = mem.store("the wifi password is hunter2", kind="fact")
    faint = mem.store("the user may like jazz", kind="preference", confidence=0.05)
    clock.advance(DAY)
    report = lifecycle.confidence_decay(mem)
    assert [(c.action, c.record.id, c.reason) for c in report.changes] == [
        ("decay", kept, "confidence 1 -> 0.905 after 1.0 more idle days at rate 0.1/day"),
        ("invalidate", faint, "confidence 0.05 -> 0.0452 after 1.0 more idle days at rate"
         " 0.1/day: under decay_threshold 0.05, invalidated (kept in the store)")]
    stamped = mem.get(faint)
    assert (stamped.valid_until, stamped.updated_at) == (START + DAY, START + DAY)
    assert mem.get(kept).updated_at == START


def test_decay_to_exactly_the_threshold_keeps_the_memory_valid(
    mem: Memory, clock: Clock
) -> None:
    # Pins "under decay_threshold": a confidence equal to it is not under it.
    rid = mem.store("the wifi password is hunter2", kind="fact")
    clock.advance(DAY)  # exactly one idle day: 1.0 -> e^-0.1
    report = lifecycle.confidence_decay(make(mem, decay_threshold=math.exp(-0.1)))
    assert report.counts == {"decayed": 1, "invalidated": 0}
    assert (mem.get(rid).confidence, mem.get(rid).is_valid) == (math.exp(-0.1), True)


@pytest.mark.parametrize("backend", backend_params("sqlite", "json"), indirect=True)
def test_prune_starts_only_above_the_size_limit(mem: Memory, clock: Clock) -> None:
    # Pins "live data larger than max_size_bytes": at exactly the limit nothing is archived.
    ids = [mem.store(f"fact {n}", kind="fact") for n in range(2)]
    size = lifecycle.prune(mem).counts["live_bytes"]  # the default 100 MB: nothing to do
    at_limit = lifecycle.prune(make(mem, max_size_bytes=size, prune_percent=100))
    assert at_limit.counts == {"prune_archived": 0, "live_bytes": size}
    over = lifecycle.prune(make(mem, max_size_bytes=size - 1, prune_percent=100))
    assert over.counts == {"prune_archived": 2, "live_bytes": size}
    assert sorted(e.record.id for e in mem.archived()) == sorted(ids)


@pytest.mark.parametrize("backend", backend_params("sqlite", "json"), indirect=True)
def test_prune_takes_the_percent_of_the_pool_rounded_up(mem: Memory, clock: Clock) -> None:
    # Pins n = ceil(pool x percent / 100): 33.5% of 3 memories is 1.005, so 2 are archived.
    ids = [mem.store(f"fact {n}", kind="fact") for n in range(3)]
    report = lifecycle.prune(make(mem, max_size_bytes=1, prune_percent=33.5))
    assert report.counts["prune_archived"] == 2
    assert [c.record.id for c in report.changes] == ids[:2]  # equal weights: oldest first


@pytest.mark.parametrize("backend", backend_params("sqlite", "json"), indirect=True)
def test_prune_explains_each_archive_with_the_size_and_the_weight(
    mem: Memory, clock: Clock
) -> None:
    # Pins the reason a pruned memory is given: the measure, the limit, the percent, its weight.
    dead = mem.store("the user was halfway through the checklist", kind="fact")
    mem.correct(dead, "the user finished the checklist")
    report = lifecycle.prune(make(mem, max_size_bytes=10, prune_percent=50))
    size = report.counts["live_bytes"]
    assert [(c.record.id, c.reason) for c in report.changes] == [
        (dead, f"live data {size} bytes > max_size_bytes 10: in the bottom 50% by weight (0)")]

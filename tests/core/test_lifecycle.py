"""Forgetting (lifecycle.py): hygiene, idle purge with survival, Ebbinghaus decay, pruning into
the archive. Every backend, real stores, a clock the tests move and seeded random sources, so
every count and every confidence is exact."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawmemory import Memory, MemoryRecord, NotFoundError, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.config import EmbedderSettings
from clawmemory.core import lifecycle
from clawmemory.core.lifecycle import (
    DECAYED_AT,
    confidence_decay,
    hygiene_purge,
    knowledge_decay,
    prune,
    prune_weight,
)
from clawmemory.model import KINDS
from conftest import DAY, EMBEDDINGS, START, Clock, backend_params


@pytest.fixture(params=EMBEDDINGS)
def embedding(request: pytest.FixtureRequest) -> str:
    """Every test here runs keyword-only and with the shipped default (conftest.EMBEDDINGS)."""
    return str(request.param)

NO_EMBEDDER = EmbedderSettings(provider="none")


def make(mem: Memory, **lifecycle_settings: object) -> Memory:
    """The same store and clock with other lifecycle settings."""
    cfg = mem.settings.model_copy(
        update={"lifecycle": mem.settings.lifecycle.model_copy(update=lifecycle_settings)}
    )
    return Memory(mem.store_backend, cfg, namespace=mem.namespace, clock=mem.clock)


def everything(mem: Memory) -> dict[str, MemoryRecord]:
    return {r.id: r for r in mem.list(include_invalid=True, limit=10_000)}


def archived(mem: Memory) -> set[str]:
    return {e.record.id for e in mem.archived(limit=10_000)}


def set_field(mem: Memory, id_: str, **changes: object) -> MemoryRecord:
    record = mem.get(id_).evolve(**changes)
    mem.store_backend.replace(record)
    return record


# --- 000 hygiene ---------------------------------------------------------------------------------
def test_hygiene_purges_conversation_older_than_max_age(mem: Memory, clock: Clock) -> None:
    old = mem.store("transient state from a week ago", kind="conversation")
    fact = mem.store("a fact as old as the oldest conversation", kind="fact")
    core = mem.store("I am the agent's identity", kind="core")
    clock.advance(DAY)
    young = mem.store("transient state from yesterday", kind="conversation")
    clock.now = START + 7 * DAY  # old is exactly max_age old: not older, kept
    assert hygiene_purge(mem).counts == {"hygiene_archived": 0}
    clock.advance(1)
    assert hygiene_purge(mem).counts == {"hygiene_archived": 1}
    assert set(everything(mem)) == {young, fact, core}
    with pytest.raises(NotFoundError):
        mem.get(old)
    assert archived(mem) == {old}  # out of the live set, into the archive


def test_hygiene_kinds_come_from_the_kinds_table(
    mem: Memory, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = mem.store("chat state", kind="conversation")
    event = mem.store("deploy happened", kind="event")
    clock.advance(30 * DAY)
    table = dict(KINDS)
    table["conversation"] = replace(KINDS["conversation"], hygiene_purge=False)
    table["event"] = replace(KINDS["event"], hygiene_purge=True)
    monkeypatch.setattr(lifecycle, "KINDS", table)
    assert hygiene_purge(mem).counts == {"hygiene_archived": 1}
    assert set(everything(mem)) == {conv}
    assert event not in everything(mem)


def test_hygiene_also_purges_invalidated_conversation_and_can_be_disabled(
    mem: Memory, clock: Clock
) -> None:
    gone = mem.store("chat state", kind="conversation")
    set_field(mem, gone, valid_until=START)
    clock.advance(8 * DAY)
    assert hygiene_purge(make(mem, hygiene_max_age_s=0)).counts == {"hygiene_archived": 0}
    assert hygiene_purge(mem).counts == {"hygiene_archived": 1}
    assert everything(mem) == {}
    assert archived(mem) == {gone}


# --- 000 knowledge decay -------------------------------------------------------------------------
def test_idle_knowledge_is_purged_unless_it_wins_the_seeded_survival_roll(
    mem: Memory, clock: Clock
) -> None:
    idle = [mem.store(f"idle fact number {i}" + " kiwi" * (i == 5), kind="fact")
            for i in range(40)]
    clock.advance(10 * DAY)
    recent = mem.store("a fact stored later", kind="fact")
    used = idle.pop(5)
    assert [h.memory.id for h in mem.recall("kiwi", mode="keyword")] == [used]  # at day 10
    clock.now = START + 31 * DAY
    chance = 0.3
    replay = random.Random(1234)
    wins = [replay.random() < chance for _ in idle]  # the rolls, in oldest-first order
    assert 0 < sum(wins) < len(idle)  # the seed exercises both outcomes

    counts = knowledge_decay(make(mem, knowledge_survival_chance=chance),
                             random.Random(1234)).counts

    survivors = {i for i, won in zip(idle, wins, strict=True) if won}
    assert counts == {"idle_archived": len(idle) - len(survivors),
                      "idle_survived": len(survivors)}
    left = everything(mem)
    assert set(left) == survivors | {used, recent}
    assert archived(mem) == set(idle) - survivors
    assert all(left[i].last_accessed == clock.now for i in survivors)
    assert left[used].last_accessed == START + 10 * DAY


@pytest.mark.parametrize(("chance", "purged", "survived"), [(0.0, 3, 0), (1.0, 0, 3)])
def test_survival_chance_zero_purges_all_and_one_keeps_all(
    mem: Memory, clock: Clock, chance: float, purged: int, survived: int
) -> None:
    for i in range(3):
        mem.store(f"fact {i}", kind="fact")
    clock.advance(31 * DAY)
    counts = knowledge_decay(make(mem, knowledge_survival_chance=chance), random.Random(0))
    assert counts.counts == {"idle_archived": purged, "idle_survived": survived}
    assert len(everything(mem)) == survived
    assert len(archived(mem)) == purged


def test_idle_purge_spares_protected_kinds_confirmed_invalidated_and_the_boundary(
    mem: Memory, clock: Clock
) -> None:
    keep = {
        mem.store("identity", kind="core"),
        mem.store("weekly insight", kind="reflection"),
        mem.store("raw dialogue turn", kind="episode"),
        mem.store("chat state", kind="conversation"),
        mem.confirm(mem.store("confirmed fact", kind="fact")).id,
    }
    corrected = mem.store("old version", kind="fact")
    keep |= {corrected, mem.correct(corrected, "new version").id}
    doomed = mem.store("plain fact", kind="preference")
    set_field(mem, doomed, last_accessed=0.0)  # 000: 0 = never accessed; falls back to created_at
    clock.now = START + 30 * DAY
    assert knowledge_decay(make(mem, knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 0, "idle_survived": 0}  # exactly 30 days idle is not longer than 30
    clock.advance(1)
    assert knowledge_decay(make(mem, knowledge_max_idle_days=0,
                                knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 0, "idle_survived": 0}
    corrected_new = next(r.id for r in everything(mem).values() if r.supersedes == corrected)
    assert [h.memory.id for h in mem.recall("new version", mode="keyword")] == [corrected_new]
    assert knowledge_decay(make(mem, knowledge_survival_chance=0.0)).counts == {
        "idle_archived": 1, "idle_survived": 0}
    assert set(everything(mem)) == keep
    assert archived(mem) == {doomed}


def test_purged_knowledge_takes_its_links_along(mem: Memory, clock: Clock) -> None:
    old = mem.store("an old fact", kind="fact")
    kept = mem.store("a core memory", kind="core")
    assert mem.link(old, kept)
    clock.advance(31 * DAY)
    knowledge_decay(make(mem, knowledge_survival_chance=0.0))
    assert mem.neighbors(kept) == [] and mem.stats()["links"] == 0


# --- 004 Ebbinghaus confidence decay -------------------------------------------------------------
def test_decay_follows_the_formula_with_each_memorys_own_rate(mem: Memory, clock: Clock) -> None:
    a = mem.store("fact at the default rate", kind="fact", confidence=0.9)
    b = mem.store("event at its own rate", kind="event")
    set_field(mem, b, decay_rate=0.25, confidence=0.8)
    clock.advance(3.5 * DAY)
    assert confidence_decay(mem).counts == {"decayed": 2, "invalidated": 0}
    got = everything(mem)
    assert got[a].confidence == pytest.approx(0.9 * math.exp(-0.1 * 3.5), rel=1e-12)
    assert got[b].confidence == pytest.approx(0.8 * math.exp(-0.25 * 3.5), rel=1e-12)
    assert got[a].metadata[DECAYED_AT] == clock.now
    assert got[a].is_valid and got[b].is_valid


def test_decay_twice_at_the_same_time_changes_nothing(mem: Memory, clock: Clock) -> None:
    mem.store("a fact", kind="fact")
    clock.advance(2 * DAY)
    confidence_decay(mem)
    before = everything(mem)
    assert confidence_decay(mem).counts == {"decayed": 0, "invalidated": 0}
    assert everything(mem) == before


def test_decay_in_daily_steps_equals_one_step_over_the_whole_time(
    mem: Memory, clock: Clock
) -> None:
    nightly, once = mem, mem.with_namespace("decayed-once")
    stepped = nightly.store("decayed every night", kind="fact")
    single = once.store("decayed once", kind="fact")
    for _ in range(5):
        clock.advance(DAY)
        confidence_decay(nightly)
    confidence_decay(once)
    assert once.get(single).confidence == pytest.approx(math.exp(-0.5), rel=1e-12)
    assert nightly.get(stepped).confidence == pytest.approx(math.exp(-0.5), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(steps=st.lists(st.floats(min_value=0.0, max_value=20.0), min_size=1, max_size=8))
def test_decay_is_independent_of_how_time_is_split(steps: list[float]) -> None:
    clock = Clock()
    mem = Memory(MemoryStore(), Settings(embedder=NO_EMBEDDER), clock=clock)
    rid = mem.store("a fact", kind="fact", confidence=1.0)
    for days in steps:
        clock.advance(days * DAY)
        confidence_decay(make(mem, decay_threshold=0.0))
    expected = math.exp(-0.1 * sum(steps))
    assert mem.get(rid).confidence == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_access_restarts_the_idle_clock(mem: Memory, clock: Clock) -> None:
    rid = mem.store("user likes tea", kind="preference")
    clock.advance(2 * DAY)
    confidence_decay(mem)
    clock.advance(1 * DAY)
    assert [h.memory.id for h in mem.recall("tea")] == [rid]  # recalled: used at day 3
    clock.advance(1 * DAY)
    confidence_decay(mem)  # one idle day since the recall, not two since the last run
    assert mem.get(rid).confidence == pytest.approx(math.exp(-0.1 * 3), rel=1e-12)


def test_decay_under_the_threshold_soft_deletes(mem: Memory, clock: Clock) -> None:
    rid = mem.store("Quentin Zamora moved to Reykjavik", kind="fact", confidence=0.06)
    layer = mem.components.entity_layer()
    assert layer is not None
    assert layer[0].entities_of(mem.namespace, [rid])[rid] != []
    clock.advance(DAY)
    assert confidence_decay(mem).counts == {"decayed": 1, "invalidated": 0}  # 0.06·e^-0.1 = 0.0543
    clock.advance(DAY)
    assert confidence_decay(mem).counts == {"decayed": 1, "invalidated": 1}  # 0.0491 < 0.05
    record = mem.get(rid)
    assert record.valid_until == clock.now
    assert record.confidence == pytest.approx(0.06 * math.exp(-0.2), rel=1e-12)
    assert mem.recall("Reykjavik") == []
    assert mem.count(include_invalid=True) == 1  # soft: never deleted
    assert layer[0].entities_of(mem.namespace, [rid]) == {rid: []}  # entity links dropped
    clock.advance(30 * DAY)
    assert confidence_decay(mem).counts == {"decayed": 0, "invalidated": 0}  # invalid: left alone


def test_protected_memories_never_decay(mem: Memory, clock: Clock) -> None:
    protected = [
        mem.store("identity", kind="core"),
        mem.store("weekly insight", kind="reflection"),
        mem.store("raw turn", kind="episode"),
        mem.store("chat state", kind="conversation"),
        mem.confirm(mem.store("confirmed fact", kind="fact")).id,
        # e.g. imported: its own rate says decay, its kind says never; the kind wins
        set_field(mem, mem.store("core with a rate", kind="core"), decay_rate=0.1).id,
    ]
    clock.advance(100 * DAY)
    assert confidence_decay(mem).counts == {"decayed": 0, "invalidated": 0}
    assert all(mem.get(i).confidence == 1.0 and mem.get(i).is_valid for i in protected)


def test_a_users_own_decayed_at_value_cannot_break_decay(mem: Memory, clock: Clock) -> None:
    rid = mem.store("fact", kind="fact", metadata={DECAYED_AT: "not a time"})
    clock.advance(DAY)
    confidence_decay(mem)
    assert mem.get(rid).confidence == pytest.approx(math.exp(-0.1), rel=1e-12)


# --- 003 pruning and the archive -----------------------------------------------------------------
# Pruning needs a size to measure: the file backends (the memory backend has none).
file_backends = pytest.mark.parametrize("backend", backend_params("sqlite", "json"), indirect=True)


def seeded_pool(mem: Memory, clock: Clock) -> list[str]:
    """20 prunable memories of varied score and age, plus protected ones."""
    rng = random.Random(99)
    ids = []
    for i in range(20):
        ids.append(mem.store(f"memory {i} about topic{i} zebrafinch{i}", kind="fact"))
        clock.advance(rng.uniform(0.1, 5) * DAY)
    for rid in rng.sample(ids, 6):
        mem.reinforce(rid)
    for rid in rng.sample(ids, 6):
        mem.demote(rid, 2)
    mem.store("identity that must never be archived", kind="core")
    set_field(mem, mem.store("a reflection", kind="reflection"), score=-50)
    clock.advance(DAY)
    return ids


@file_backends
def test_prune_archives_the_bottom_percent_by_ranking_weight(mem: Memory, clock: Clock) -> None:
    ids = seeded_pool(mem, clock)
    live = everything(mem)
    expected = sorted(ids, key=lambda i: prune_weight(mem, live[i], clock.now))[:2]
    small = make(mem, max_size_bytes=1, prune_percent=10)

    counts = prune(small).counts

    assert counts["prune_archived"] == 2 and counts["live_bytes"] > 1
    assert set(live) - set(everything(mem)) == set(expected)
    assert mem.stats()["archived"] == 2
    assert mem.count(include_invalid=True) + 2 == len(live)  # moved, never deleted
    for rid in expected:
        (hit,) = mem.recall(f"zebrafinch{ids.index(rid)}", archive=True)
        assert hit.memory == live[rid]  # the whole record, every field
        assert hit.explain.via == "archive"
        assert hit.explain.matched_terms == (f"zebrafinch{ids.index(rid)}",)
        assert rid not in [h.memory.id for h in mem.recall(f"zebrafinch{ids.index(rid)}")]


@file_backends
def test_prune_rounds_up_and_archives_an_invalidated_memory_before_a_demoted_one(
    mem: Memory, clock: Clock
) -> None:
    demoted = mem.store("often wrong", kind="fact")  # the oldest: first on a tie
    mem.demote(demoted, 2)
    clock.advance(DAY)
    dead = mem.store("corrected away", kind="fact")
    mem.reinforce(dead)  # valid, it would outweigh everything else
    set_field(mem, dead, valid_until=clock.now)
    mem.store("ordinary", kind="fact")
    live = everything(mem)
    as_if_valid = live[dead].evolve(valid_until=None)
    assert prune_weight(mem, live[demoted], clock.now) < prune_weight(mem, as_if_valid, clock.now)
    assert prune_weight(mem, live[dead], clock.now) == 0.0

    report = prune(make(mem, max_size_bytes=1))  # 1% of 3 rounds up to 1

    assert report.counts["prune_archived"] == 1
    assert archived(mem) == {dead}  # by weight (0), not by age or tie order
    assert [(c.step, c.action, c.record.id) for c in report.changes] == [
        ("prune", "archive", dead)]


@file_backends
def test_no_prune_under_the_size_limit(mem: Memory, clock: Clock) -> None:
    seeded_pool(mem, clock)
    counts = prune(mem).counts  # default limit: 100 MB
    assert counts["prune_archived"] == 0
    assert 0 < counts["live_bytes"] < mem.settings.lifecycle.max_size_bytes
    assert mem.stats()["archived"] == 0


@file_backends
def test_archive_survives_reopening_and_restore_brings_a_memory_back(
    mem: Memory, clock: Clock, open_store: Callable[[], Store], settings: Settings,
    embedding: str,
) -> None:
    ids = seeded_pool(mem, clock)
    prune(make(mem, max_size_bytes=1, prune_percent=50))
    archived = set(ids) - set(everything(mem))
    assert len(archived) == 10
    mem.store_backend.close()

    again = Memory(open_store(), settings, clock=clock)
    assert again.stats()["archived"] == 10
    assert {e.record.id for e in again.archived()} == archived
    rid = sorted(archived)[0]
    word = f"zebrafinch{ids.index(rid)}"
    assert [h.memory.id for h in again.recall(word, archive=True)] == [rid]
    restored = again.restore(rid)
    assert restored.id == rid
    assert [h.memory.id for h in again.recall(word, mode="keyword")] == [rid]
    # with the configured mode too, by its words and (the default) by its vector again
    back = {h.memory.id: h for h in again.recall(word, limit=50)}[rid]
    assert set(back.explain.lists) == ({"keyword"} if embedding == "keyword"
                                       else {"keyword", "vector"})
    assert again.recall(word, archive=True) == []
    with pytest.raises(NotFoundError):
        again.restore(rid)


def idle_out(mem: Memory, clock: Clock) -> set[str]:
    """Archive every knowledge memory the way a user's store does: 31 days idle, then the
    nightly idle purge (000, its survival chance 0). Returns the ids archived."""
    clock.advance(31 * DAY)
    before = archived(mem)
    knowledge_decay(make(mem, knowledge_survival_chance=0.0))
    return archived(mem) - before


def test_a_keyed_store_brings_the_archived_holder_of_its_key_back(
    mem: Memory, clock: Clock
) -> None:
    """A key names one memory, archived or not: storing under it again makes the next version
    of the archived one (its id, score and history), never a second memory beside it that
    ``forget(key)`` would miss."""
    rid = mem.store("old deploy notes", key="deploy", kind="fact")
    mem.reinforce(rid)
    assert idle_out(mem, clock) == {rid}
    newer = mem.store("new deploy notes", key="deploy", kind="fact")
    assert newer == rid
    assert mem.get("deploy").content == "new deploy notes"
    assert mem.get("deploy").score == 3
    assert mem.archived() == []
    with pytest.raises(NotFoundError):
        mem.restore(rid)
    mem.forget("deploy")
    assert mem.recall("deploy notes", archive=True, include_invalid=True) == []


@pytest.mark.parametrize("query", ["", "   ", "!!!", "a b c"])
def test_archive_recall_of_nothing_searchable_is_empty(
    mem: Memory, clock: Clock, query: str
) -> None:
    rid = mem.store("the archived words", kind="fact")
    assert idle_out(mem, clock) == {rid}
    assert mem.recall(query, archive=True) == []
    assert [h.memory.id for h in mem.recall("archived words", archive=True)] == [rid]


def test_archive_search_stays_in_its_namespace(mem: Memory, clock: Clock) -> None:
    other = mem.with_namespace("other")
    for m in (mem, other):
        m.store("shared secret word quokka", kind="fact")
    clock.advance(31 * DAY)
    for m in (mem, other):
        knowledge_decay(make(m, knowledge_survival_chance=0.0))
    assert [h.memory.namespace for h in mem.recall("quokka", archive=True)] == [mem.namespace]
    assert other.forget_namespace() == 0  # nothing live; its archive goes too
    assert other.recall("quokka", archive=True) == [] and other.archived() == []
    assert len(mem.recall("quokka", archive=True)) == 1


def test_memory_backend_never_prunes() -> None:
    clock = Clock()
    mem = Memory(MemoryStore(), Settings(embedder=NO_EMBEDDER), clock=clock)
    for i in range(5):
        mem.store(f"fact {i}", kind="fact")
    assert prune(make(mem, max_size_bytes=0)).counts == {"prune_archived": 0, "live_bytes": 0}
    assert mem.count() == 5
    live = {r.id for r in mem.list()}
    assert idle_out(mem, clock) == live  # the idle purge still archives there
    assert mem.count() == 0 and len(mem.recall("fact", archive=True)) == 5

"""Context blocks in each specification's exact form, over a real SQLite-backed ``Memory``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.context import (
    LayerCache,
    devclaw_layer,
    estimate_tokens,
    ptrclaw_enrich,
    relevant_memory_block,
    sandbox_context,
    soul_block,
    strip_memory_context,
)
from conftest import EMBEDDINGS, Clock, memory_on


@pytest.fixture(params=EMBEDDINGS)
def embedding(request: pytest.FixtureRequest) -> str:
    """Every test here runs keyword-only and with the shipped default (conftest.EMBEDDINGS)."""
    return str(request.param)


@pytest.fixture
def mem(tmp_path: Path, settings: Settings, clock: Clock, embedder: Any) -> Iterator[Memory]:
    made = memory_on(SQLiteStore(tmp_path / "memory.db"), settings, clock, embedder)
    yield made
    made.close()  # the background embedding worker first, then the store


def words(text: str) -> int:
    """A transparent estimator for budget arithmetic: one token per word."""
    return len(text.split())


def test_default_estimator_is_words_times_1_3() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("one two three") == 4  # 3.9 rounded up
    assert estimate_tokens("a b c d e f g h i j") == 13


# --- 000 [Memory context] -----------------------------------------------------------------------
MESSAGE = "Which Python setup should I use for scripting?"


@pytest.fixture
def linked(mem: Memory, clock: Clock) -> Memory:
    mem.store("Prefers Python for scripting", key="user-prefers-python")
    clock.advance()
    mem.store("Current project runs 3.12", key="project-runtime")  # no word of MESSAGE
    mem.link("user-prefers-python", "project-runtime")
    return mem


# Reached through its link only: with the default model too, the relevance floor (ADR 0011)
# drops a memory that only resembles the message (no word in common) from the direct hits.
PROJECT_RUNTIME = "- project-runtime: Current project runs 3.12\n"


def test_enrich_block_is_the_specification_example(linked: Memory, embedding: str) -> None:
    assert ptrclaw_enrich(linked, MESSAGE, recall_limit=5, enrich_depth=1) == (
        "[Memory context]\n"
        "- user-prefers-python: Prefers Python for scripting [links: project-runtime]\n"
        + PROJECT_RUNTIME +
        "[/Memory context]\n"
        "\n" + MESSAGE
    )


def test_enrich_depth_0_is_flat(linked: Memory, embedding: str) -> None:
    assert ptrclaw_enrich(linked, MESSAGE, recall_limit=5, enrich_depth=0) == (
        "[Memory context]\n"
        "- user-prefers-python: Prefers Python for scripting [links: project-runtime]\n"
        "[/Memory context]\n\n" + MESSAGE
    )


def test_enrich_without_a_match_or_memory_leaves_the_message_alone(
    linked: Memory, embedding: str
) -> None:
    # with the default model as without one: nothing relevant (the floor), nothing added
    assert ptrclaw_enrich(linked, "kubernetes cluster") == "kubernetes cluster"
    assert ptrclaw_enrich(None, MESSAGE) == MESSAGE
    assert ptrclaw_enrich(linked, "   ") == "   "


def test_enrich_drops_core_entries_and_core_neighbours(mem: Memory) -> None:
    mem.store("Loves Python deeply", key="soul:identity", kind="core")
    assert ptrclaw_enrich(mem, "python") == "python"  # only core matched: no block at all
    mem.store("Python 3.12 is installed", key="py")
    mem.link("py", "soul:identity")
    assert ptrclaw_enrich(mem, "python") == (
        "[Memory context]\n- py: Python 3.12 is installed [links: soul:identity]\n"
        "[/Memory context]\n\npython")


def test_enrich_over_fetches_then_trims_to_recall_limit(mem: Memory, clock: Clock) -> None:
    for i in range(3):  # core entries that match better than the knowledge ones
        mem.store(f"widget widget widget core {i}", key=f"core-{i}", kind="core")
    for i in range(4):
        mem.store(f"widget note {i}", key=f"note-{i}")
        clock.advance()
    block = ptrclaw_enrich(mem, "widget", recall_limit=3, enrich_depth=0)
    lines = block.splitlines()
    body = lines[1:lines.index("[/Memory context]")]
    # recall(limit=6) then core dropped: 3 notes survive, all within recall_limit
    assert len(body) == 3 and all(line.startswith("- note-") for line in body)
    # recall(limit=2) returns the two best, both core: nothing is left, so no block (000 rule)
    assert ptrclaw_enrich(mem, "widget", recall_limit=1, enrich_depth=0) == "widget"


def test_enrich_neighbours_are_deduplicated_and_bounded(mem: Memory) -> None:
    mem.store("alpha topic", key="a")
    mem.store("alpha again", key="b")
    for i in range(4):
        mem.store(f"neighbour {i}", key=f"n{i}")
        mem.link("a", f"n{i}")
    mem.link("a", "b")
    mem.link("b", "n0")
    block = ptrclaw_enrich(mem, "alpha", recall_limit=2, enrich_depth=1)
    body = block.split("[/Memory context]")[0].splitlines()[1:]
    keys = [line[2:].split(":")[0] for line in body]
    assert sorted(keys[:2]) == ["a", "b"]
    assert len(keys) == len(set(keys)) == 4  # 2 recalled + at most recall_limit neighbours


def test_strip_memory_context_round_trip(linked: Memory) -> None:
    enriched = ptrclaw_enrich(linked, MESSAGE)
    assert enriched != MESSAGE
    assert strip_memory_context(enriched) == MESSAGE
    assert strip_memory_context(MESSAGE) == MESSAGE
    twice = enriched.replace(MESSAGE, "first\n") + enriched
    assert strip_memory_context(twice) == "first\n" + MESSAGE
    assert strip_memory_context("a [Memory context]\n- x: y\n[/Memory context] b") == "a b"


# --- 000 soul block -----------------------------------------------------------------------------
def test_soul_block_format_and_newest_five_traits(mem: Memory, clock: Clock) -> None:
    mem.store("I am Ptr, curious and precise.", key="soul:identity", kind="core")
    mem.store("Sam, a backend developer in Lisbon.", key="soul:user", kind="core")
    mem.store("Be direct; ask before big changes.", key="soul:philosophy", kind="core")
    for name in ("humor", "directness", "brevity", "warmth", "rigor", "patience"):
        clock.advance()
        mem.store(f"{name} trait", key=f"personality:{name}", kind="core")
    clock.advance()
    mem.store("humor trait, refined", key="personality:humor", kind="core")  # upsert: newest
    mem.store("not core", key="personality:fake", kind="fact")
    assert soul_block(mem) == (
        "## Your Identity\nI am Ptr, curious and precise.\n\n"
        "## About your human\nSam, a backend developer in Lisbon.\n\n"
        "## Your philosophy\nBe direct; ask before big changes.\n\n"
        "## Learned traits\n"
        "- humor trait, refined\n- patience trait\n- rigor trait\n- warmth trait\n"
        "- brevity trait"
    )


def test_soul_block_parts_and_absence(mem: Memory) -> None:
    assert soul_block(mem) == ""
    mem.store("Not a core entry", key="soul:identity", kind="fact")
    assert soul_block(mem) == ""
    mem.store("Loves puns", key="personality:humor", kind="core")
    assert soul_block(mem) == "## Learned traits\n- Loves puns"


# --- 001 ## Relevant Memory ---------------------------------------------------------------------
def test_relevant_memory_block_format(mem: Memory, clock: Clock) -> None:
    mem.store("User prefers dark mode in the editor")
    clock.advance()
    mem.store("User's name is Alice")
    block = relevant_memory_block(mem, "user", max_facts=10, max_tokens=2000)
    assert block is not None
    lines = block.splitlines()
    assert lines[:2] == ["## Relevant Memory", ""]
    assert sorted(lines[2:]) == ["- User prefers dark mode in the editor",
                                 "- User's name is Alice"]


def test_relevant_memory_block_none_when_nothing(mem: Memory, embedding: str) -> None:
    assert relevant_memory_block(mem, "anything") is None
    mem.store("User prefers dark mode")
    assert relevant_memory_block(mem, "kubernetes") is None  # unrelated: below the floor
    assert relevant_memory_block(None, "dark") is None
    assert relevant_memory_block(mem, "dark", max_facts=0) is None


def test_relevant_memory_block_budgets_in_rank_order(mem: Memory) -> None:
    mem.store("tea tea tea tea one two three four five six")  # best match, 10 words
    mem.store("tea a b")  # weaker, 3 words
    assert relevant_memory_block(mem, "tea", max_facts=1, estimator=words) == (
        "## Relevant Memory\n\n- tea tea tea tea one two three four five six")
    # the first fact does not fit: the smaller second one must not jump the queue
    assert relevant_memory_block(mem, "tea", max_tokens=9, estimator=words) is None
    both = relevant_memory_block(mem, "tea", max_tokens=13, estimator=words)
    assert both is not None and both.count("\n- ") == 2
    one = relevant_memory_block(mem, "tea", max_tokens=12, estimator=words)
    assert one is not None and one.count("\n- ") == 1


# --- 002 LayerMemory ----------------------------------------------------------------------------
def test_devclaw_layer_format(mem: Memory, clock: Clock, embedding: str) -> None:
    mem.store("The API uses JWT tokens with 24h expiration", kind="fact")
    block = "## Relevant Memories\n\n- [fact] The API uses JWT tokens with 24h expiration\n"
    assert devclaw_layer(mem, "JWT expiration") == block
    assert devclaw_layer(mem, "kubernetes") == ""  # unrelated: below the floor
    assert devclaw_layer(mem, "") == ""


def test_devclaw_layer_truncates_with_a_count(mem: Memory) -> None:
    for i in range(11):
        mem.store(f"deploy note {i} with six words", kind="event")
    full = devclaw_layer(mem, "deploy", budget_tokens=10_000, estimator=words)
    assert full.count("- [event]") == 11 and "truncated" not in full
    # header 3 + marker ("..." 1 + 6) = 10; each line is 8 words: room for 3 lines in 34
    cut = devclaw_layer(mem, "deploy", budget_tokens=34, estimator=words)
    assert cut.startswith("## Relevant Memories\n\n- [event] deploy note")
    assert cut.count("- [event]") == 3
    assert cut.endswith("...\n[truncated - 8 more memories available]\n")
    assert words(cut) <= 34
    nothing_fits = devclaw_layer(mem, "deploy", budget_tokens=12, estimator=words)
    assert nothing_fits == ("## Relevant Memories\n\n...\n"
                            "[truncated - 11 more memories available]\n")


def test_devclaw_layer_default_budget_is_2000_tokens(mem: Memory) -> None:
    mem.store_many({"content": "deploy " + "word " * 200 + str(i)} for i in range(20))
    layer = devclaw_layer(mem, "deploy")
    assert estimate_tokens(layer) <= 2000
    assert "[truncated - " in layer


def test_context_numbers_come_from_settings(mem: Memory, clock: Clock) -> None:
    mem.settings.context.devclaw_budget_tokens = 60
    mem.settings.context.devclaw_max_results = 3
    mem.store_many({"content": f"deploy step {i} " + "word " * 10} for i in range(10))
    layer = devclaw_layer(mem, "deploy")
    assert estimate_tokens(layer) <= 60 and "[truncated - " in layer
    assert devclaw_layer(mem, "deploy", 10_000).count("- [") == 3  # max results from settings
    for i in range(4):
        mem.store(f"trait {i}", kind="core", key=f"personality:t{i}")
        clock.advance()
    mem.settings.context.soul_traits = 2
    assert soul_block(mem).count("- trait") == 2


class Spawned:
    """Captures background refreshes so a test runs them when it chooses."""

    def __init__(self) -> None:
        self.jobs: list[Callable[[], None]] = []

    def __call__(self, job: Callable[[], None]) -> None:
        self.jobs.append(job)

    def run(self) -> None:
        jobs, self.jobs = self.jobs, []
        for job in jobs:
            job()


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return f"layer {self.calls}"


def test_layer_cache_stale_while_revalidate() -> None:
    clock, spawned, compute = Clock(0.0), Spawned(), Counter()
    cache = LayerCache(clock=clock, spawn=spawned)
    assert cache.ttl_s == 30.0
    assert cache.get("s1", compute) == "layer 1"  # miss: computed now
    clock.advance(29.9)
    assert cache.get("s1", compute) == "layer 1" and compute.calls == 1  # fresh
    clock.advance(0.2)
    assert cache.get("s1", compute) == "layer 1"  # stale: old value at once...
    assert len(spawned.jobs) == 1 and compute.calls == 1  # ...and a refresh in background
    assert cache.get("s1", compute) == "layer 1" and len(spawned.jobs) == 1  # one in flight
    spawned.run()
    assert cache.get("s1", compute) == "layer 2"  # the next prompt gets the refreshed layer
    clock.advance(29)
    assert cache.get("s1", compute) == "layer 2" and not spawned.jobs  # fresh again


def test_layer_cache_keeps_the_old_layer_when_a_refresh_fails() -> None:
    clock, spawned = Clock(0.0), Spawned()
    cache = LayerCache(clock=clock, spawn=spawned)
    cache.get("s", lambda: "old")

    def failing() -> str:
        raise RuntimeError("search down")

    clock.advance(31)
    assert cache.get("s", failing) == "old"
    spawned.run()
    assert cache.get("s", lambda: "new") == "old"  # still stale: a new refresh is started
    spawned.run()
    assert cache.get("s", lambda: "newer") == "new"


def test_layer_cache_keys_invalidation_and_bound() -> None:
    cache = LayerCache(clock=Clock(0.0), spawn=Spawned(), max_entries=2)
    cache.get("a", lambda: "A")
    cache.get("b", lambda: "B")
    cache.get("c", lambda: "C")
    assert len(cache) == 2 and cache.get("a", lambda: "A2") == "A2"  # "a" was evicted
    cache.invalidate("a")
    assert cache.get("a", lambda: "A3") == "A3"
    cache.invalidate()
    assert len(cache) == 0


def test_layer_cache_refreshes_on_a_real_thread() -> None:
    # a daemon thread (it never holds up the interpreter's exit), named so that it can be told
    # apart in a thread dump
    clock = Clock(0.0)
    cache = LayerCache(clock=clock)
    seen: list[tuple[str, bool]] = []
    done = threading.Event()

    def refresh() -> str:
        me = threading.current_thread()
        seen.append((me.name, me.daemon))
        done.set()
        return "fresh"

    cache.get("s", lambda: "stale")
    clock.advance(60)
    assert cache.get("s", refresh) == "stale"
    assert done.wait(5)
    assert seen == [("clawmemory-layer-refresh", True)]
    for _ in range(100):  # the value is stored just after compute returns
        if cache.get("s", lambda: "unused") == "fresh":
            break
        threading.Event().wait(0.01)
    assert cache.get("s", lambda: "unused") == "fresh"


def test_devclaw_layer_through_the_cache(mem: Memory) -> None:
    clock, spawned = Clock(0.0), Spawned()
    cache = LayerCache(clock=clock, spawn=spawned)
    mem.store("The API uses JWT tokens", kind="fact")
    first = devclaw_layer(mem, "JWT", cache=cache, session_id="s1")
    mem.store("JWT secrets rotate monthly", kind="fact")
    assert devclaw_layer(mem, "JWT", cache=cache, session_id="s1") == first  # fresh: cached
    clock.advance(31)
    assert devclaw_layer(mem, "JWT", cache=cache, session_id="s1") == first  # stale: served
    spawned.run()
    refreshed = devclaw_layer(mem, "JWT", cache=cache, session_id="s1")
    assert refreshed.count("- [fact]") == 2
    assert devclaw_layer(mem, "JWT", cache=cache, session_id="s2").count("- [fact]") == 2


# --- 004 sandbox --------------------------------------------------------------------------------
def test_sandbox_context_other_sessions_and_latest_reflection(mem: Memory, clock: Clock) -> None:
    mem.store("Alice prefers tea", session_id="old")
    mem.store("Alice is in the current chat", session_id="now")
    mem.store("Alice said hello", kind="episode", session_id="old")
    mem.store("Alice has a cat")  # no session: still another session's knowledge
    mem.store("Last week: focus on sleep", kind="reflection", tags=["weekly"])
    clock.advance()
    mem.store("This week: Alice asked about tea twice", kind="reflection", tags=["weekly"])
    context = sandbox_context(mem, "Alice", session_id="now")
    head, insight = context.split("\n\n")
    assert head.splitlines()[0] == "## Relevant memory"
    assert sorted(head.splitlines()[1:]) == ["- Alice has a cat", "- Alice prefers tea"]
    assert insight == "## Weekly insight\nThis week: Alice asked about tea twice"


def test_sandbox_context_parts_and_absence(mem: Memory, embedding: str) -> None:
    assert sandbox_context(mem, "anything", "s1") == ""
    assert sandbox_context(None, "anything", "s1") == ""
    mem.store("Alice prefers tea", session_id="s0")
    assert sandbox_context(mem, "tea", "s1") == "## Relevant memory\n- Alice prefers tea"
    assert sandbox_context(mem, "tea", "s0") == ""
    mem.store("Sleep matters", kind="reflection")
    assert sandbox_context(mem, "kubernetes", "s1") == (  # unrelated: below the floor
        "## Weekly insight\nSleep matters")

"""Context blocks pinned where mutation testing found them unguarded (issue 16, context.py).

Each test names the behaviour it pins. All run keyword-only over a real SQLite file; memories
are stored an hour apart so that equally relevant ones rank newest first (recency), which
makes every block's order exact.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.context import (
    LayerCache,
    devclaw_layer,
    ptrclaw_enrich,
    relevant_memory_block,
    sandbox_context,
    soul_block,
    strip_memory_context,
)
from clawmemory.model import MemoryRecord
from conftest import Clock, memory_on

HOUR = 3600.0


@pytest.fixture
def mem(tmp_path: Path, settings: Settings, clock: Clock) -> Iterator[Memory]:
    made = memory_on(SQLiteStore(tmp_path / "memory.db"), settings, clock, None)
    yield made
    made.close()


@pytest.fixture
def put(mem: Memory, clock: Clock) -> Callable[..., None]:
    """``mem.store`` then an hour passes: later memories rank first among equals."""

    def _put(content: str, **fields: object) -> None:
        mem.store(content, **fields)  # type: ignore[arg-type]  # the fields of a test's choosing
        clock.advance(HOUR)

    return _put


def words(text: str) -> int:
    """One token per word: budgets become countable by hand."""
    return len(text.split())


def block(*lines: str, message: str) -> str:
    return "\n".join(["[Memory context]", *lines, "[/Memory context]"]) + "\n\n" + message


# --- 000 [Memory context] -----------------------------------------------------------------------
def test_enrich_lists_five_entries_by_default(mem: Memory, put: Callable[..., None]) -> None:
    # ptrclaw_enrich's default recall_limit is 000's 5: of seven matches the newest five
    for i in range(7):
        put(f"widget gadget {i}", key=f"w{i}")
    assert ptrclaw_enrich(mem, "widget") == block(
        *(f"- w{i}: widget gadget {i}" for i in (6, 5, 4, 3, 2)), message="widget")


def test_enrich_follows_links_one_hop_by_default(mem: Memory, put: Callable[..., None]) -> None:
    # default enrich_depth is 1: a's neighbour b is added, b's neighbour c is not
    put("alpha topic", key="a")
    put("bravo note", key="b")
    put("charlie note", key="c")
    mem.link("a", "b")
    mem.link("b", "c")
    assert ptrclaw_enrich(mem, "alpha") == block(
        "- a: alpha topic [links: b]", "- b: bravo note", message="alpha")


def test_enrich_depth_two_reaches_the_neighbours_neighbours(
    mem: Memory, put: Callable[..., None]
) -> None:
    # enrich_depth=2: the second hop asks the store for the links of the added neighbours
    put("alpha topic", key="a")
    put("bravo note", key="b")
    put("charlie note", key="c")
    put("delta note", key="d")
    mem.link("a", "b")
    mem.link("b", "c")
    mem.link("c", "d")
    assert ptrclaw_enrich(mem, "alpha", enrich_depth=2) == block(
        "- a: alpha topic [links: b]", "- b: bravo note", "- c: charlie note", message="alpha")


def test_enrich_recall_limit_one_lists_one_entry(mem: Memory, put: Callable[..., None]) -> None:
    # recall_limit=1 is a real limit (only <= 0 turns enrichment off)
    put("widget one")
    put("widget two", key="two")
    assert ptrclaw_enrich(mem, "widget", recall_limit=1, enrich_depth=0) == block(
        "- two: widget two", message="widget")


def test_enrich_over_fetches_exactly_twice_the_limit(
    mem: Memory, put: Callable[..., None]
) -> None:
    # recall(limit=2 x recall_limit): the note ranked third is out of reach when the first
    # two are core entries, in reach when recall_limit=2 fetches four
    put("widget note", key="note")
    put("widget widget widget core 1", key="core-1", kind="core")
    put("widget widget widget core 2", key="core-2", kind="core")
    assert ptrclaw_enrich(mem, "widget", recall_limit=1, enrich_depth=0) == "widget"
    assert ptrclaw_enrich(mem, "widget", recall_limit=2, enrich_depth=0) == block(
        "- note: widget note", message="widget")


def test_enrich_exclude_fetches_four_times_the_limit(
    mem: Memory, put: Callable[..., None]
) -> None:
    # with ``exclude``, recall(limit=4 x recall_limit): three excluded best matches still
    # leave the fourth; a fourth excluded one pushes it out of reach
    put("widget other", key="other", session_id="old")
    for i in range(3):
        put(f"widget widget widget now {i}", key=f"now-{i}", session_id="now")

    def this_session(r: MemoryRecord) -> bool:
        return r.session_id == "now"

    assert ptrclaw_enrich(mem, "widget", recall_limit=1, enrich_depth=0,
                          exclude=this_session) == block("- other: widget other",
                                                         message="widget")
    put("widget widget widget now 3", key="now-3", session_id="now")
    assert ptrclaw_enrich(mem, "widget", recall_limit=1, enrich_depth=0,
                          exclude=this_session) == "widget"


def test_enrich_links_are_comma_separated_and_absent_without_links(
    mem: Memory, put: Callable[..., None]
) -> None:
    # "[links: y, z]" strongest first; an entry without links has no "[links: ]" tail
    put("alpha plain", key="w")
    put("yankee", key="y")
    put("zulu", key="z")
    put("alpha linked", key="x")
    mem.link("x", "y", strength=2.0)
    mem.link("x", "z")
    assert ptrclaw_enrich(mem, "alpha", enrich_depth=0) == block(
        "- x: alpha linked [links: y, z]", "- w: alpha plain", message="alpha")


def test_enrich_skips_a_core_neighbour_and_goes_on(mem: Memory, put: Callable[..., None]) -> None:
    # a core neighbour (the soul block has it) is skipped, not the end of the neighbours
    put("Core value", key="soul:philosophy", kind="core")
    put("november note", key="n")
    put("alpha entry", key="x")
    mem.link("x", "soul:philosophy", strength=5.0)
    mem.link("x", "n")
    assert ptrclaw_enrich(mem, "alpha") == block(
        "- x: alpha entry [links: soul:philosophy, n]", "- n: november note", message="alpha")


def test_enrich_lists_a_shared_neighbour_once(mem: Memory, put: Callable[..., None]) -> None:
    # two recalled entries linked to the same memory: it is added once
    put("shared neighbour", key="n")
    put("alpha first", key="a")
    put("alpha second", key="b")
    mem.link("a", "n")
    mem.link("b", "n")
    assert ptrclaw_enrich(mem, "alpha", recall_limit=2) == block(
        "- b: alpha second [links: n]", "- a: alpha first [links: n]",
        "- n: shared neighbour", message="alpha")


def test_enrich_limit_zero_is_off_without_a_warning(
    mem: Memory, put: Callable[..., None], caplog: pytest.LogCaptureFixture
) -> None:
    # recall_limit=0 (the agent's enrich_limit=0) turns enrichment off quietly: no recall is
    # attempted, so no "enrichment skipped" warning on every turn
    put("widget note")
    with caplog.at_level(logging.WARNING, logger="clawmemory"):
        assert ptrclaw_enrich(mem, "widget", recall_limit=0) == "widget"
    assert caplog.records == []


def test_strip_leaves_an_unclosed_block_alone() -> None:
    # an opening never closed is text, kept as it is, after the blocks before it are removed
    assert strip_memory_context("hello [Memory context] dangling") == (
        "hello [Memory context] dangling")
    assert strip_memory_context(
        "x [Memory context] a [/Memory context]\n\ny [Memory context] z") == (
        "x y [Memory context] z")


# --- 000 soul block -----------------------------------------------------------------------------
def test_soul_traits_are_found_among_many_core_entries(
    mem: Memory, put: Callable[..., None]
) -> None:
    # a trait written first and refined last is the newest, even behind 50 newer core entries
    put("early trait", key="personality:early", kind="core")
    for i in range(50):
        put(f"core note {i}", key=f"note:{i}", kind="core")
    put("early trait, refined", key="personality:early", kind="core")
    assert soul_block(mem) == "## Learned traits\n- early trait, refined"


# --- 001 ## Relevant Memory ---------------------------------------------------------------------
def test_relevant_memory_block_defaults_ten_facts(mem: Memory, put: Callable[..., None]) -> None:
    # max_facts defaults to 10 (001 MaxFacts): of eleven matches the newest ten
    for i in range(11):
        put(f"tea fact {i}")
    assert relevant_memory_block(mem, "tea") == "## Relevant Memory\n\n" + "\n".join(
        f"- tea fact {i}" for i in range(10, 0, -1))


def test_relevant_memory_block_default_budget_is_2000(mem: Memory) -> None:
    # max_tokens defaults to 2000 (001 MaxTokens): a fact of 2000 tokens fits, 2001 does not
    mem.store("tea fact")
    assert relevant_memory_block(mem, "tea", estimator=lambda _: 2000) == (
        "## Relevant Memory\n\n- tea fact")
    assert relevant_memory_block(mem, "tea", estimator=lambda _: 2001) is None


def test_relevant_memory_block_kind_filter(mem: Memory, put: Callable[..., None]) -> None:
    # kind= narrows the recall: the newer matching event is left out
    put("tea fact", kind="fact")
    put("tea event", kind="event")
    assert relevant_memory_block(mem, "tea", kind="fact") == "## Relevant Memory\n\n- tea fact"


def test_relevant_memory_block_budget_is_a_running_total(
    mem: Memory, put: Callable[..., None]
) -> None:
    # 3 + 3 + 3 words in 8 tokens: two facts (6), the third would make 9
    put("tea a b")
    put("tea c d")
    put("tea e f")
    assert relevant_memory_block(mem, "tea", max_tokens=8, estimator=words) == (
        "## Relevant Memory\n\n- tea e f\n- tea c d")


# --- 002 LayerMemory ----------------------------------------------------------------------------
HEADER = "## Relevant Memories\n\n"


@pytest.fixture
def deploys(put: Callable[..., None]) -> list[str]:
    """Three events of 8 words (39 characters) per layer line, newest first."""
    for c in "abc":
        put(f"deploy note {c} with six words", kind="event")
    return [f"- [event] deploy note {c} with six words\n" for c in "cba"]


def test_devclaw_layer_exactly_at_the_budget_is_whole(mem: Memory, deploys: list[str]) -> None:
    # header 3 + 3 lines x 8 = 27 tokens: a budget of 27 holds all, untruncated
    assert devclaw_layer(mem, "deploy", 27, estimator=words) == HEADER + "".join(deploys)


def test_devclaw_layer_counts_the_header_against_the_budget(
    mem: Memory, deploys: list[str]
) -> None:
    # header 3 + marker 7 + one line 8 = 18: 17 holds no line, 18 holds one
    assert devclaw_layer(mem, "deploy", 17, estimator=words) == (
        HEADER + "...\n[truncated - 3 more memories available]\n")
    assert devclaw_layer(mem, "deploy", 18, estimator=words) == (
        HEADER + deploys[0] + "...\n[truncated - 2 more memories available]\n")


def test_devclaw_layer_keeps_whole_lines_back_to_back(mem: Memory, deploys: list[str]) -> None:
    # header 3 + marker 7 + two lines x 8 = 26: the two lines that fit, joined as they are
    assert devclaw_layer(mem, "deploy", 26, estimator=words) == (
        HEADER + deploys[0] + deploys[1] + "...\n[truncated - 1 more memories available]\n")


def test_devclaw_layer_reserves_the_marker_with_its_count(
    mem: Memory, deploys: list[str]
) -> None:
    # an estimator counting characters: header 22 + "...\n" 4 + the marker for 3 (40) + one
    # line 39 = 105 exactly
    assert devclaw_layer(mem, "deploy", 105, estimator=len) == (
        HEADER + deploys[0] + "...\n[truncated - 2 more memories available]\n")


def test_devclaw_layer_cache_keeps_the_callers_numbers(mem: Memory, deploys: list[str]) -> None:
    # through a cache, the layer is computed with the caller's limit, budget and estimator
    cache = LayerCache(clock=Clock(0.0))
    assert devclaw_layer(mem, "deploy", 10_000, estimator=words, limit=2, cache=cache,
                         session_id="a") == HEADER + "".join(deploys[:2])
    assert devclaw_layer(mem, "deploy", 18, estimator=words, cache=cache, session_id="b") == (
        HEADER + deploys[0] + "...\n[truncated - 2 more memories available]\n")


def test_devclaw_layer_cache_is_per_session(mem: Memory, put: Callable[..., None]) -> None:
    # each session has its own layer; the default session is the empty id
    cache = LayerCache(clock=Clock(0.0))
    put("deploy on friday", kind="event")
    first = HEADER + "- [event] deploy on friday\n"
    assert devclaw_layer(mem, "deploy", cache=cache, session_id="s1") == first
    assert devclaw_layer(mem, "deploy", cache=cache) == first
    put("deploy on monday", kind="event")
    assert devclaw_layer(mem, "deploy", cache=cache, session_id="s2") == (
        HEADER + "- [event] deploy on monday\n- [event] deploy on friday\n")
    assert devclaw_layer(mem, "deploy", cache=cache, session_id="s1") == first
    assert devclaw_layer(mem, "deploy", cache=cache, session_id="") == first


# --- LayerCache ----------------------------------------------------------------------------------
def test_layer_cache_is_stale_at_exactly_the_ttl() -> None:
    # fresh means younger than ttl_s: at 30.0 s the layer is stale and a refresh starts
    clock, jobs = Clock(0.0), list[Callable[[], None]]()
    cache = LayerCache(clock=clock, spawn=jobs.append)
    cache.get("s", lambda: "old")
    clock.advance(30.0)
    assert cache.get("s", lambda: "new") == "old" and len(jobs) == 1


def test_layer_cache_holds_1024_sessions_by_default() -> None:
    # the 1025th session evicts the least recently used one
    cache = LayerCache(clock=Clock(0.0))
    for i in range(1025):
        cache.get(i, lambda: "layer")
    assert len(cache) == 1024
    assert cache.get(0, lambda: "recomputed") == "recomputed"
    assert cache.get(1024, lambda: "recomputed") == "layer"


def test_layer_cache_invalidating_an_unknown_session_is_a_no_op() -> None:
    cache = LayerCache(clock=Clock(0.0))
    cache.get("a", lambda: "A")
    cache.invalidate("never-cached")
    assert len(cache) == 1 and cache.get("a", lambda: "A2") == "A"


# --- 004 sandbox --------------------------------------------------------------------------------
def test_sandbox_context_fact_limit(mem: Memory, put: Callable[..., None]) -> None:
    # an explicit limit, else Settings.context.sandbox_facts, bounds the facts listed
    put("Alice prefers tea", session_id="old")
    put("Alice has a cat", session_id="old")
    assert sandbox_context(mem, "Alice", "now", limit=1) == (
        "## Relevant memory\n- Alice has a cat")
    mem.settings.context.sandbox_facts = 1
    assert sandbox_context(mem, "Alice", "now") == "## Relevant memory\n- Alice has a cat"

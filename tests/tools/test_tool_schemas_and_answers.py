"""The tool layer pinned where mutation testing found it unguarded (issue 16, clawmemory.tools).

What a model sees of each dialect's tools (name, description, argument schema) is compared,
whole, with tests/pinned_tool_schemas.json; the answers tools give when there is nothing to
show, the totals ``memory_list`` counts under each filter, and the candidates
``detect_conflicts`` ranks are compared word for word. Everything runs keyword-only over a
real SQLite file, on the suite's clock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.model import Kind
from clawmemory.tools import (
    anthropic_tools,
    call_tool,
    dialect_names,
    openai_tools,
    registry,
    tools_for,
)
from conftest import Clock, memory_on

PINNED = Path(__file__).resolve().parents[1] / "pinned_tool_schemas.json"


@pytest.fixture(autouse=True)
def _tools_built_here() -> None:
    """Each dialect's tools are built once per process (``functools.cache``), by whichever
    test asks first. Clearing the cache makes every test here build them itself, so a change
    to how they are built shows here whatever ran before (and mutation testing, which maps a
    function to the tests that call it, maps the schema builders to these tests)."""
    registry._tools.cache_clear()
    registry._entries.cache_clear()


@pytest.fixture
def mem(tmp_path: Path, settings: Settings, clock: Clock) -> Iterator[Memory]:
    made = memory_on(SQLiteStore(tmp_path / "memory.db"), settings, clock, None)
    yield made
    made.close()


def call(mem: Memory, dialect: str, name: str, args: dict[str, Any]) -> tuple[str, Any]:
    result = call_tool(mem, name, args, dialect=dialect)
    assert not result.is_error, result.text
    return result.text, result.data


# --- what a model is offered --------------------------------------------------------------------
def _offered(dialect: str) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "operations": list(t.operations),
             "writes": t.writes, "input_schema": t.input_schema} for t in tools_for(dialect)]


def test_every_dialect_offers_exactly_the_pinned_tools() -> None:
    """Names, descriptions, operations, read-only flags and whole argument schemas (types,
    enums, defaults, required arguments, descriptions, nested fact objects), in order. After
    a deliberate change, regenerate the file from ``tools_for`` and read its diff."""
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    assert list(pinned) == dialect_names()
    for dialect, tools in pinned.items():
        offered = _offered(dialect)
        assert offered == tools, dialect
        for got, want in zip(offered, tools, strict=True):  # the order a model reads them in
            schema = got["input_schema"]
            assert list(schema) == list(want["input_schema"]), got["name"]
            assert list(schema["properties"]) == list(want["input_schema"]["properties"])


def test_the_exports_carry_the_pinned_tools() -> None:
    pinned = json.loads(PINNED.read_text(encoding="utf-8"))
    for dialect, tools in pinned.items():
        assert anthropic_tools(dialect) == [
            {"name": t["name"], "description": t["description"],
             "input_schema": t["input_schema"]} for t in tools]
        assert openai_tools(dialect) == [
            {"type": "function", "function": {"name": t["name"], "description": t["description"],
                                              "parameters": t["input_schema"]}} for t in tools]


def test_the_devclaw_action_is_described_with_its_choices() -> None:
    (memory,) = tools_for("002")
    assert memory.input_schema["properties"]["action"] == {
        "type": "string", "enum": ["save", "search", "list", "index"],
        "description": "What to do: save, search, list, index."}


# --- answers when there is nothing to show ------------------------------------------------------
NOTHING = [
    ("unified", "memory_recall", {"query": "zeppelin"}, "No memories found for 'zeppelin'."),
    ("unified", "memory_list", {}, "0 memories."),
    ("unified", "memory_list", {"offset": 5}, "1 memories."),
    ("ptrclaw", "memory_recall", {"query": "zeppelin"}, "No memories found."),
    ("devclaw", "memory", {"action": "search", "query": "zeppelin"}, "No memories found."),
    ("devclaw", "memory", {"action": "list", "category": "event"}, "No memories found."),
    ("devclaw", "memory", {"action": "list", "offset": 1}, "No memories found."),
    ("koshi", "memory_query", {"query": "zeppelin"}, "No memories found."),
    ("sandbox", "search_memory", {"query": "zeppelin"}, "No relevant memories."),
    ("consolidator", "get_episodes_for_consolidation", {"session_id": "s9"},
     "No episodes on page 0 of this session."),
    ("consolidator", "detect_conflicts", {"content": "zeppelin"}, "No conflicting facts."),
]


@pytest.mark.parametrize(("dialect", "tool", "args", "answer"), NOTHING)
def test_what_a_tool_answers_when_nothing_matches(
    mem: Memory, dialect: str, tool: str, args: dict[str, Any], answer: str
) -> None:
    if "offset" in args:  # one memory, on the page before the one asked for
        mem.store("Alice drinks oolong", kind="fact")
    text, _ = call(mem, dialect, tool, args)
    assert text == answer


# --- memory_list counts what it filters ---------------------------------------------------------
LISTED = [  # (filter, the memories it keeps, newest first)
    ({}, ["d", "c", "b", "a"]),
    ({"session_id": "s1"}, ["c", "a"]),
    ({"kind": "preference"}, ["d", "b"]),
    ({"tags": ["tea"]}, ["c", "b"]),
    ({"source": "import"}, ["d", "a"]),
    ({"created_since": 1_700_000_000 + 7200}, ["d", "c"]),
    ({"created_until": 1_700_000_000 + 7200}, ["b", "a"]),
    ({"since": "2023-11-15T00:13:20Z"}, ["d", "c"]),
    ({"until": "2023-11-15T00:13:20Z"}, ["b", "a"]),
    ({"as_of": 1_700_000_000 + 3600}, ["b", "a"]),
    ({"session_id": "s1", "kind": "fact", "source": "import"}, ["a"]),
]


@pytest.mark.parametrize(("filters", "kept"), LISTED)
def test_memory_list_counts_the_memories_its_filters_keep(
    mem: Memory, clock: Clock, filters: dict[str, Any], kept: list[str]
) -> None:
    rows: dict[str, tuple[Kind, list[str], str | None, str]] = {
        "a": ("fact", [], "s1", "import"), "b": ("preference", ["tea"], None, "agent"),
        "c": ("fact", ["tea"], "s1", "agent"), "d": ("preference", [], "s2", "import")}
    ids = {}
    for name, (kind, tags, session, source) in rows.items():  # an hour apart, from 22:13:20
        ids[name] = mem.store(f"memory {name}", kind=kind, tags=tags, session_id=session,
                              source=source)
        clock.advance(3600)
    text, data = call(mem, "unified", "memory_list", {**filters, "limit": 1})
    lines = [f"{len(kept)} memories; showing 1-1:"]
    first = kept[0]
    kind, tags = rows[first][0], rows[first][1]
    lines.append(f"- [id:{ids[first]}] [{kind}] memory {first}"
                 + (f" (tags: {', '.join(tags)})" if tags else ""))
    assert text.splitlines() == lines
    assert (data["total"], data["count"], data["offset"]) == (len(kept), 1, 0)
    assert [r["id"] for r in data["results"]] == [ids[first]]
    _, every = call(mem, "unified", "memory_list", {**filters, "limit": 10})
    assert [r["id"] for r in every["results"]] == [ids[k] for k in kept]


# --- detect_conflicts ranks as recall does ------------------------------------------------------
@pytest.fixture
def teas(tmp_path: Path, clock: Clock) -> tuple[Memory, list[str]]:
    """Eight facts about oolong, ranked 1 to 8 by how often they say it, among twelve that do
    not; with co-recall on, facts 1 and 7 were recalled together (a strong co-recall link)."""
    cfg = Settings(embedder={"provider": "none"},
                   recall={"co_recall": True, "co_recall_increment": 4.0})
    made = Memory(SQLiteStore(tmp_path / "teas.db"), cfg, clock=clock)
    made.store_many({"content": f"Bob likes coffee number {j}", "kind": "fact"}
                    for j in range(12))
    ids = []
    for i in range(1, 9):
        zebra = " zebra" if i in (1, 7) else ""
        ids.append(made.store("Alice drinks " + "oolong " * (9 - i) + f"at hour {i}{zebra}"))
        clock.advance()
    assert [h.memory.id for h in made.recall("zebra", limit=2)] == [ids[6], ids[0]]
    return made, ids


def test_detect_conflicts_ranks_with_one_more_than_its_limit(
    teas: tuple[Memory, list[str]],
) -> None:
    """The candidates are recall's for ``limit + 1`` (room for the fact itself): recall lifts
    co-recalled pairs among its best 2 × limit candidates, so fact 1 gains nothing from
    fact 7, ranked 7th, when 3 are asked for (best 6), as it would when 4 were (best 8)."""
    mem, ids = teas
    why = "matched oolong; keyword[rank={}]; reinforcement×1; recency×1; confidence×1; = {}"
    text, data = call(mem, "consolidator", "detect_conflicts",
                      {"content": "oolong", "limit": 2})
    assert text == (
        "Facts that may conflict:\n"
        f"- [id:{ids[0]}] Alice drinks {'oolong ' * 8}at hour 1 zebra (confidence 1.00)\n"
        f"- [id:{ids[1]}] Alice drinks {'oolong ' * 7}at hour 2 (confidence 1.00)")
    assert [(c["id"], c["why"], c["similarity"]) for c in data["candidates"]] == [
        (ids[0], why.format("1 bm25=0.6703", "0.6703"), 0.143),  # 1 word of 7
        (ids[1], why.format("2 bm25=0.6699", "0.6699"), 0.167),  # 1 of 6
    ]
    _, own = call(mem, "consolidator", "detect_conflicts", {"fact_id": ids[0], "limit": 2})
    assert [c["id"] for c in own["candidates"]] == [ids[6], ids[5]]  # zebra; itself left out
    assert own["fact"] == f"Alice drinks {'oolong ' * 8}at hour 1 zebra"




# --- refusals, word for word --------------------------------------------------------------------
UNIFIED_TOOLS = ("memory_store, memory_recall, memory_get, memory_list, memory_update, "
                 "memory_forget, memory_link, memory_reinforce, memory_demote, memory_confirm, "
                 "memory_correct, memory_history, memory_stats, memory_entity, memory_index")
REFUSED: list[tuple[str, str, Any, str]] = [
    ("klingon", "memory_store", {"content": "x"},
     "unknown tool dialect 'klingon' (known: unified, ptrclaw, devclaw, koshi, sandbox, "
     "consolidator)."),
    ("unified", "no_such_tool", {},
     f"Unknown tool 'no_such_tool' in the unified dialect (available: {UNIFIED_TOOLS})."),
    ("004", "memory_store", {},
     "Unknown tool 'memory_store' in the sandbox dialect (available: search_memory, "
     "remember_fact, correct_fact, confirm_fact, memory_stats, get_entity_info)."),
    ("unified", "memory_store", [1], "Arguments of memory_store must be a JSON object."),
    ("unified", "memory_store", "[1",
     "Arguments of memory_store must be a JSON object; this text is not JSON (Expecting ',' "
     "delimiter)."),
    ("unified", "memory_store", "[" * 100_000,
     "Arguments of memory_store must be a JSON object; this text is not JSON (nested too "
     "deeply)."),
    ("devclaw", "memory", {"content": "x"},
     "memory needs the argument 'action' (one of: save, search, list, index)."),
    ("devclaw", "memory", {"action": "delete"},
     "memory: 'action' must be one of save, search, list, index, not 'delete'."),
    ("devclaw", "memory", {"action": 5},
     "memory: 'action' must be one of save, search, list, index, not int."),
    ("devclaw", "memory", {"action": "save", "content": "x", "query": "y"},
     "memory: the argument 'query' is not used by this action."),
    ("ptrclaw", "memory_store", {"key": "k", "content": "x", "kind": "fact"},
     "memory_store got an unexpected argument 'kind' (expected: key, content, category, "
     "links)."),
    ("unified", "memory_stats", {"x": 1},
     "memory_stats got an unexpected argument 'x' (expected: none)."),
    ("ptrclaw", "memory_store", {"content": "x"}, "memory_store needs the argument 'key'."),
    ("ptrclaw", "memory_store", {"key": "k", "content": "x", "category": "preference"},
     "Invalid argument 'category' for memory_store: must be one of core, knowledge, "
     "conversation."),
    ("unified", "memory_store", {"confidence": 2},
     "memory_store needs the argument 'content' (and 1 more problems)."),
    ("unified", "memory_store", {"content": "x", "confidence": 2},
     "Invalid argument 'confidence' for memory_store: Input should be less than or equal to 1."),
    ("consolidator", "detect_conflicts", {},
     "Invalid arguments for detect_conflicts: give exactly one of fact_id or content."),
    ("consolidator", "save_facts_batch", {"facts": ["ok fact", {"content": ""}]},
     "Invalid argument 'facts.1.content' for save_facts_batch: String should have at least 1 "
     "character."),
    ("sandbox", "correct_fact", {"new_content": "x"}, "correct_fact needs the argument 'fact_id'."),
    ("unified", "memory_forget", {"id": "nope"},
     "memory_forget: no memory with id or key 'nope' in namespace 'default'."),
]


@pytest.mark.parametrize(("dialect", "tool", "args", "answer"), REFUSED,
                         ids=[f"{d}-{t}-{i}" for i, (d, t, _, _) in enumerate(REFUSED)])
def test_what_a_refused_call_answers(
    mem: Memory, dialect: str, tool: str, args: Any, answer: str
) -> None:
    result = call_tool(mem, tool, args, dialect=dialect)
    assert (result.text, dict(result.data), result.is_error) == (answer, {"error": answer}, True)
    assert mem.count() == 0


def test_answers_name_the_key_score_links_and_state(mem: Memory, clock: Clock) -> None:
    """What a model reads back after storing, upserting, linking, reinforcing and correcting:
    the 000 wording, the default one-line view with its key, score and invalidated state, the
    003 query lines and the statistics line."""
    assert call(mem, "unified", "memory_stats", {})[0] == (
        "0 memories (none); latest recorded never.")
    assert call(mem, "ptrclaw", "memory_store", {"key": "tea", "content": "Alice drinks oolong"}
                )[0] == "Stored memory 'tea'."
    clock.advance()
    upsert = {"key": "tea", "content": "Alice drinks oolong daily"}
    assert call(mem, "ptrclaw", "memory_store", upsert)[0] == "Updated memory 'tea'."
    linked = {"key": "cup", "content": "Alice owns a blue cup", "links": ["tea"]}
    assert call(mem, "ptrclaw", "memory_store", linked)[0] == (
        "Stored memory 'cup' (linked to tea).")
    old, cup = mem.get("tea").id, mem.get("cup").id
    assert call(mem, "unified", "memory_reinforce", {"id": "tea"})[0] == (
        f"Reinforced [id:{old}]; score is now 3.")
    text, data = call(mem, "unified", "memory_correct",
                      {"id": "tea", "new_content": "Alice drinks green tea"})
    new = data["memory"]["id"]
    assert text == (f"Corrected: [id:{new}] [fact] Alice drinks green tea (key: tea; score: 3) "
                    f"replaces [id:{old}].")
    text, data = call(mem, "unified", "memory_history", {"id": "tea"})
    assert text == (f"1. [id:{old}] [fact] Alice drinks oolong daily (score: 3; invalidated)\n"
                    f"2. [id:{new}] [fact] Alice drinks green tea (key: tea; score: 3)")
    assert list(data) == ["chain"]
    assert [(m["id"], m["key"], m["supersedes"]) for m in data["chain"]] == [
        (old, None, None), (new, "tea", old)]
    assert call(mem, "koshi", "memory_query", {"query": "Alice"})[0] == (
        f"[id:{new}] Alice drinks green tea (score: 3)\n"
        f"[id:{cup}] Alice owns a blue cup (score: 0)")
    assert call(mem, "unified", "memory_stats", {})[0] == (
        "2 memories (fact: 2); latest recorded 2023-11-14 22:13:21 UTC.")


def test_an_entity_answer_names_its_aliases(mem: Memory, clock: Clock) -> None:
    handle = mem.store("@caroline shared the slides")
    clock.advance()
    name = mem.store("Caroline moved to Boston")
    text, data = call(mem, "sandbox", "get_entity_info", {"name": "Caroline"})
    assert text == ("Caroline (mention, mentioned 2 times); also: @caroline\n"
                    f"- [id:{name}] [fact] Caroline moved to Boston\n"
                    f"- [id:{handle}] [fact] @caroline shared the slides")
    assert data["aliases"] == ["@caroline"]

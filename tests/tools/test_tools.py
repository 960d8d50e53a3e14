"""The tool registry and its dialects, called the way an agent calls them: through ``call_tool``
against a real SQLite-backed ``Memory``.

Every dialect tool has a valid example call (``EXAMPLES``) that must succeed and validate
against the tool's exported JSON schema; every refusal in ``REFUSALS`` must come back as an
``is_error`` result with nothing written.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt
import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.core.ingest import (
    is_session_consolidated,
    mark_session_consolidated,
    observe,
    pending_sessions,
    register_session,
)
from clawmemory.tools import (
    DIALECTS,
    OPERATIONS,
    ToolResult,
    anthropic_tools,
    call_tool,
    dialect_names,
    openai_tools,
    tools_for,
)
from clawmemory.tools.consolidator import EPISODES_PAGE_SIZE, jaccard
from clawmemory.tools.dialects import DIALECT_ALIASES, Dispatch, ToolMap
from clawmemory.tools.registry import _names
from conftest import EMBEDDINGS, Clock, keyword_only, memory_on


@pytest.fixture(params=EMBEDDINGS)
def embedding(request: pytest.FixtureRequest) -> str:
    """Every test here runs keyword-only and with the shipped default (conftest.EMBEDDINGS)."""
    return str(request.param)

# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def mem(tmp_path: Path, settings: Settings, clock: Clock, embedder: Any) -> Iterator[Memory]:
    made = memory_on(SQLiteStore(tmp_path / "memory.db"), settings, clock, embedder)
    yield made
    made.close()  # the background embedding worker first, then the store


@pytest.fixture
def seeded(mem: Memory, clock: Clock, embedding: str) -> Memory:
    """Three linked-up memories with keys, so examples can name them without ids."""
    mem.store("Project setup uses uv and Python", key="project-setup")
    clock.advance()
    mem.store("Project uses Python 3.12", key="python-version", tags=["python"])
    mem.link("python-version", "project-setup")
    clock.advance()
    mem.store("Payment API HMAC signature excludes an empty body", key="hmac-rule",
              tags=["payments", "hmac"], session_id="s1")
    clock.advance()
    mem.store("Alice works on Project Apollo", key="alice-apollo", session_id="s1")
    observe(mem, "user", "Remember that Alice prefers tea", "s1")
    observe(mem, "assistant", "Noted: Alice prefers tea", "s1")
    if embedding == "default":
        mem.backfill()  # the turns' vectors now, not whenever the background worker gets there
    return mem


def call(mem: Memory, dialect: str, name: str, args: Any = None) -> ToolResult:
    return call_tool(mem, name, args, dialect=dialect)


def ok(mem: Memory, dialect: str, name: str, args: Any = None) -> ToolResult:
    result = call(mem, dialect, name, args)
    assert not result.is_error, result.text
    return result


def footprint(mem: Memory) -> tuple[int, int, str]:
    """Everything a call could have written: records (valid or not), links, and the records'
    contents (so an in-place update shows up too)."""
    records = mem.list(include_invalid=True, limit=10_000, order="oldest")
    state = json.dumps([(r.id, r.key, r.kind, r.content, r.tags, r.score, r.confidence,
                         r.supersedes, r.valid_until) for r in records])
    return len(records), mem.stats()["links"], state


class HashEmbedder:
    """A deterministic bag-of-words embedder: enough to give the store real vectors."""

    name = "test-hash-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, hashlib.sha1(word.encode()).digest()[0] % self.dimension] += 1.0
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        unit: npt.NDArray[np.float32] = (rows / np.where(norms == 0, 1.0, norms)).astype(
            np.float32)
        return unit

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.embed([text])[0]
        return row


# --- the tables ---------------------------------------------------------------------------------
def _maps() -> Iterator[tuple[str, str, ToolMap]]:
    for dialect, entries in DIALECTS.items():
        for entry in entries:
            t = entry.target
            routes = t.routes.values() if isinstance(t, Dispatch) else [t]
            for route in routes:
                yield dialect, entry.name, route


def test_dialect_tables_have_no_duplicate_tool_names() -> None:
    for dialect, entries in DIALECTS.items():
        names = [e.name for e in entries]
        assert len(names) == len(set(names)), dialect


def test_every_dialect_tool_maps_to_a_registry_operation() -> None:
    for dialect, tool, route in _maps():
        where = f"{dialect}.{tool}"
        assert route.op in OPERATIONS, where
        fields = OPERATIONS[route.op].input_model.model_fields
        names = _names(route)
        assert set(names.values()) <= set(fields), where
        assert len(set(names.values())) == len(names), f"{where}: two names for one argument"
        assert set(route.fixed) <= set(fields) - set(names.values()), where
        for table in (route.defaults, route.choices, route.schema):
            assert set(table) <= set(names), where
        assert set(route.required) <= set(names), where
        for core, f in fields.items():  # every required argument can be given or is fixed
            if f.is_required():
                assert core in names.values() or core in route.fixed, f"{where}: {core}"


def test_every_operation_is_offered_by_some_dialect() -> None:
    used = {route.op for _, _, route in _maps()}
    assert used == set(OPERATIONS)
    assert {e.name for e in DIALECTS["unified"]} | {e.name for e in DIALECTS["consolidator"]} \
        == set(OPERATIONS)


def test_dialects_of_the_specifications() -> None:
    expected = {
        "ptrclaw": {"memory_store", "memory_recall", "memory_forget", "memory_link"},
        "devclaw": {"memory"},
        "koshi": {"memory_store", "memory_query", "memory_reinforce", "memory_demote",
                  "memory_update"},
        "sandbox": {"search_memory", "remember_fact", "correct_fact", "confirm_fact",
                    "memory_stats", "get_entity_info"},
        "consolidator": {"get_episodes_for_consolidation", "save_facts_batch",
                         "mark_session_consolidated", "is_session_consolidated",
                         "detect_conflicts", "resolve_conflict"},
    }
    for dialect, names in expected.items():
        assert {t.name for t in tools_for(dialect)} == names
    for alias, dialect in DIALECT_ALIASES.items():
        assert [t.name for t in tools_for(alias)] == [t.name for t in tools_for(dialect)]


def test_the_consolidator_set_is_separate_from_the_agent_tools() -> None:
    agent = {t.name for d in ("unified", "sandbox") for t in tools_for(d)}
    assert agent.isdisjoint(t.name for t in tools_for("consolidator"))


# --- schemas ------------------------------------------------------------------------------------
def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, value in node.items():
            if key == "properties":
                for prop in value.values():
                    yield from _walk(prop)
            else:
                yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


@pytest.mark.parametrize("dialect", dialect_names())
def test_openai_export_is_function_calling_json(dialect: str) -> None:
    tools = openai_tools(dialect)
    assert tools and len({t["function"]["name"] for t in tools}) == len(tools)
    for tool in tools:
        assert set(tool) == {"type", "function"} and tool["type"] == "function"
        fn = tool["function"]
        assert set(fn) == {"name", "description", "parameters"}
        assert fn["name"].isidentifier() and fn["description"]
        _check_parameters(fn["parameters"])
    json.dumps(tools)  # plain JSON all the way down


@pytest.mark.parametrize("dialect", dialect_names())
def test_anthropic_export_is_tool_json(dialect: str) -> None:
    tools = anthropic_tools(dialect)
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        _check_parameters(tool["input_schema"])
    assert [t["name"] for t in tools] == [t["function"]["name"] for t in openai_tools(dialect)]


def _check_parameters(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema.get("required", ())) <= set(schema["properties"])
    for node in _walk(schema):
        assert not {"$ref", "$defs", "title"} & set(node), node
        assert {"type": "null"} not in node.get("anyOf", []), node
    for prop in schema["properties"].values():
        assert prop.get("description"), prop


def test_exports_are_copies(mem: Memory) -> None:
    first = openai_tools("ptrclaw")
    first[0]["function"]["parameters"]["properties"].clear()
    assert openai_tools("ptrclaw")[0]["function"]["parameters"]["properties"]


def test_dialect_argument_names_and_enums_are_the_specifications() -> None:
    ptr = {t.name: t.input_schema for t in tools_for("ptrclaw")}
    assert set(ptr["memory_store"]["properties"]) == {"key", "content", "category", "links"}
    assert ptr["memory_store"]["properties"]["category"]["enum"] == [
        "core", "knowledge", "conversation"]
    assert set(ptr["memory_store"]["required"]) == {"key", "content"}
    assert set(ptr["memory_link"]["properties"]) == {"action", "from", "to"}
    dev = tools_for("devclaw")[0].input_schema
    assert dev["properties"]["action"]["enum"] == ["save", "search", "list", "index"]
    assert dev["required"] == ["action"]
    assert dev["properties"]["limit"]["maximum"] == 100
    assert dev["properties"]["limit"]["default"] == 20
    koshi = {t.name: t.input_schema for t in tools_for("koshi")}
    assert koshi["memory_store"]["properties"]["tags"]["type"] == "string"
    assert "kind" not in {p for t in tools_for("sandbox") if t.name == "remember_fact"
                          for p in t.input_schema["properties"]}


def test_every_tool_of_every_dialect_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "tools.md").read_text(encoding="utf-8")
    for dialect in dialect_names():
        start = doc.index(f"## Dialect `{dialect}`")
        end = doc.find("\n## ", start + 1)
        section = doc[start:end if end > 0 else None]
        for tool in tools_for(dialect):
            assert f"\n### {tool.name}\n" in section, f"{dialect}.{tool.name} has no docs"
            for arg in tool.input_schema["properties"]:
                assert f"| `{arg}` |" in section, f"{dialect}.{tool.name}({arg}) has no docs"


# --- every dialect tool, called -----------------------------------------------------------------
EXAMPLES: list[tuple[str, str, dict[str, Any]]] = [
    ("unified", "memory_store", {"content": "The CI runs on Fridays", "key": "ci",
                                 "tags": ["ci"], "links": ["project-setup"]}),
    ("unified", "memory_recall", {"query": "python", "depth": 1, "explain": True}),
    ("unified", "memory_get", {"id": "python-version"}),
    ("unified", "memory_list", {"kind": "fact", "limit": 2}),
    ("unified", "memory_update", {"id": "hmac-rule", "tags": ["api"]}),
    ("unified", "memory_forget", {"id": "project-setup"}),
    ("unified", "memory_link", {"from_id": "hmac-rule", "to_id": "python-version"}),
    ("unified", "memory_reinforce", {"id": "hmac-rule"}),
    ("unified", "memory_demote", {"id": "hmac-rule"}),
    ("unified", "memory_confirm", {"id": "hmac-rule"}),
    ("unified", "memory_correct", {"id": "hmac-rule", "new_content": "HMAC excludes no body"}),
    ("unified", "memory_history", {"id": "hmac-rule"}),
    ("unified", "memory_stats", {}),
    ("unified", "memory_entity", {"name": "Alice"}),
    ("unified", "memory_index", {}),
    ("ptrclaw", "memory_store", {"key": "editor", "content": "Uses Helix", "category": "core"}),
    ("ptrclaw", "memory_recall", {"query": "python", "limit": 3, "category": "knowledge",
                                  "depth": 1}),
    ("ptrclaw", "memory_forget", {"key": "hmac-rule"}),
    ("ptrclaw", "memory_link", {"action": "link", "from": "hmac-rule", "to": "project-setup"}),
    ("devclaw", "memory", {"action": "save", "content": "Deployed v2.1", "category": "event",
                           "keywords": ["deploy"], "metadata": {"env": "prod"}}),
    ("devclaw", "memory", {"action": "search", "query": "payment", "category": "fact"}),
    ("devclaw", "memory", {"action": "list", "limit": 2, "offset": 1}),
    ("devclaw", "memory", {"action": "index"}),
    ("koshi", "memory_store", {"content": "Standup is at 9:30", "tags": "meetings, team"}),
    ("koshi", "memory_query", {"query": "hmac payment api", "limit": 5}),
    ("koshi", "memory_reinforce", {"id": "hmac-rule"}),
    ("koshi", "memory_demote", {"id": "hmac-rule"}),
    ("koshi", "memory_update", {"id": "hmac-rule", "content": "HMAC fixed", "tags": "a, b"}),
    ("sandbox", "search_memory", {"query": "Alice Apollo", "kind": "fact"}),
    ("sandbox", "remember_fact", {"content": "Bob owns the billing service", "tags": ["bob"]}),
    ("sandbox", "correct_fact", {"fact_id": "alice-apollo", "new_content": "Alice leads Apollo",
                                 "reason": "promoted"}),
    ("sandbox", "confirm_fact", {"fact_id": "alice-apollo"}),
    ("sandbox", "memory_stats", {}),
    ("sandbox", "get_entity_info", {"name": "Alice", "limit": 5}),
    ("consolidator", "get_episodes_for_consolidation", {"session_id": "s1"}),
    ("consolidator", "save_facts_batch", {"session_id": "s1", "facts": [
        {"content": "Alice prefers tea", "tags": ["alice"]}, "Alice drinks no coffee"]}),
    ("consolidator", "mark_session_consolidated", {"session_id": "s1"}),
    ("consolidator", "is_session_consolidated", {"session_id": "s1"}),
    ("consolidator", "detect_conflicts", {"fact_id": "alice-apollo"}),
    ("consolidator", "resolve_conflict", {"old_fact_id": "alice-apollo",
                                          "new_fact_id": "hmac-rule"}),
]


def test_every_dialect_tool_has_an_example() -> None:
    covered = {(d, t) for d, t, _ in EXAMPLES}
    assert covered == {(d, t.name) for d in dialect_names() for t in tools_for(d)}


@pytest.mark.parametrize(("dialect", "tool", "args"), EXAMPLES,
                         ids=[f"{d}-{t}-{i}" for i, (d, t, _) in enumerate(EXAMPLES)])
def test_every_dialect_tool_works_and_matches_its_schema(
    seeded: Memory, dialect: str, tool: str, args: dict[str, Any]
) -> None:
    schema = next(t.input_schema for t in tools_for(dialect) if t.name == tool)
    jsonschema.validate(args, schema)
    result = ok(seeded, dialect, tool, args)
    assert result.text.strip()
    json.dumps(result.to_dict())  # data is plain JSON for MCP / REST


# --- 000 ptrclaw --------------------------------------------------------------------------------
def test_ptrclaw_store_upserts_by_key_and_links_after_storing(seeded: Memory) -> None:
    r = ok(seeded, "ptrclaw", "memory_store",
           {"key": "lint", "content": "Lint with ruff", "links": ["python-version"]})
    assert r.text == "Stored memory 'lint' (linked to python-version)."
    assert [n.key for n in seeded.neighbors("lint")] == ["python-version"]
    assert seeded.get("lint").kind == "fact"  # knowledge is the default category
    r = ok(seeded, "ptrclaw", "memory_store", {"key": "lint", "content": "Lint with ruff 0.5"})
    assert r.text == "Updated memory 'lint'."
    assert seeded.get("lint").content == "Lint with ruff 0.5"
    assert seeded.count(kind="fact") == 5


@pytest.mark.parametrize(("category", "kind"), [
    ("core", "core"), ("knowledge", "fact"), ("conversation", "conversation"),
    ("Knowledge", "fact")])
def test_ptrclaw_categories_map_to_kinds(mem: Memory, category: str, kind: str) -> None:
    ok(mem, "ptrclaw", "memory_store", {"key": "k", "content": "c", "category": category})
    assert mem.get("k").kind == kind


def test_ptrclaw_recall_lines_and_depth(seeded: Memory, embedding: str) -> None:
    version = "- python-version: Project uses Python 3.12 [links: project-setup]"
    setup = "- project-setup: Project setup uses uv and Python [links: python-version]"
    flat = ok(seeded, "ptrclaw", "memory_recall", {"query": "version"}).text.splitlines()
    deep = ok(seeded, "ptrclaw", "memory_recall", {"query": "version", "depth": 1})
    none = ok(seeded, "ptrclaw", "memory_recall", {"query": "kubernetes"}).text
    assert none == "No memories found."  # unrelated: below the relevance floor, both modes
    if embedding == "keyword":
        assert flat == [version]
        assert deep.text.splitlines() == [version, setup]
        return
    # The shipped default (hybrid) adds the memories close enough in meaning to pass the
    # relevance floor, after the match; depth=1 then adds the linked neighbour.
    def content(line: str) -> str:
        return line.split(": ", 1)[1].split(" [links: ", maxsplit=1)[0]

    assert flat[0] == version
    assert [content(line) for line in flat[1:]] == [
        "Alice works on Project Apollo", "Noted: Alice prefers tea"]
    assert setup in deep.text.splitlines() and deep.text.splitlines()[:len(flat)] == flat


def test_ptrclaw_recall_category_filter(seeded: Memory) -> None:
    ok(seeded, "ptrclaw", "memory_store", {"key": "soul:identity", "content": "Python fan",
                                           "category": "core"})
    r = ok(seeded, "ptrclaw", "memory_recall", {"query": "python", "category": "core"})
    assert r.text == "- soul:identity: Python fan"


def test_ptrclaw_forget_cleans_links(seeded: Memory) -> None:
    r = ok(seeded, "ptrclaw", "memory_forget", {"key": "project-setup"})
    assert r.text == "Forgot memory 'project-setup'."
    assert seeded.neighbors("python-version") == []
    assert call(seeded, "ptrclaw", "memory_forget", {"key": "project-setup"}).is_error


def test_ptrclaw_link_and_unlink(seeded: Memory) -> None:
    first = ok(seeded, "ptrclaw", "memory_link", {"action": "link", "from": "hmac-rule",
                                                  "to": "alice-apollo"})
    assert first.data["changed"] is True and first.text == "Linked hmac-rule <-> alice-apollo."
    assert [n.key for n in seeded.neighbors("hmac-rule")] == ["alice-apollo"]
    # Linking a linked pair again changes nothing: its strength stays (it added up, issue 22).
    twice = ok(seeded, "ptrclaw", "memory_link", {"action": "link", "from": "alice-apollo",
                                                  "to": "hmac-rule"})
    assert twice.data["changed"] is False
    assert twice.text == "alice-apollo and hmac-rule were already linked."
    assert [lk.strength for lk in seeded.links("hmac-rule")] == [1.0]
    r = ok(seeded, "ptrclaw", "memory_link", {"action": "unlink", "from": "alice-apollo",
                                              "to": "hmac-rule"})
    assert r.data["changed"] is True and seeded.neighbors("hmac-rule") == []
    again = ok(seeded, "ptrclaw", "memory_link", {"action": "unlink", "from": "alice-apollo",
                                                  "to": "hmac-rule"})
    assert again.data["changed"] is False and "were not linked" in again.text


# --- 002 devclaw --------------------------------------------------------------------------------
def test_devclaw_save_maps_category_and_keywords(mem: Memory) -> None:
    r = ok(mem, "devclaw", "memory", {"action": "save", "content": "User prefers dark theme",
                                      "category": "preference", "keywords": ["ui", "theme"],
                                      "metadata": {"source": "chat"}})
    record = mem.get(r.data["memory"]["id"])
    assert (record.kind, record.tags, dict(record.metadata)) == (
        "preference", ("ui", "theme"), {"source": "chat"})
    assert r.text == f"Saved [preference] memory (id {record.id})."
    default = ok(mem, "devclaw", "memory", {"action": "save", "content": "Port 5432"})
    assert default.data["memory"]["kind"] == "fact"


def test_devclaw_search_and_list_lines(mem: Memory, clock: Clock, embedding: str) -> None:
    for i, (kind, content) in enumerate([("fact", "The API uses JWT tokens"),
                                         ("preference", "User prefers dark theme"),
                                         ("event", "Deployed v2.1 on 2024-01-15")]):
        mem.store(content, kind=kind)
        clock.advance(i + 1)
    r = ok(mem, "devclaw", "memory", {"action": "search", "query": "JWT tokens"})
    lines = r.text.splitlines()
    assert lines[0] == "- [fact] The API uses JWT tokens"
    assert lines[1:] == []  # the others: below the relevance floor, with the model too
    page = ok(mem, "devclaw", "memory", {"action": "list", "limit": 2, "offset": 1})
    assert page.text.splitlines() == ["Memories 2-3 of 3:",
                                      "- [preference] User prefers dark theme",
                                      "- [fact] The API uses JWT tokens"]
    assert page.data["total"] == 3
    only = ok(mem, "devclaw", "memory", {"action": "list", "category": "event"})
    assert only.text.splitlines()[1:] == ["- [event] Deployed v2.1 on 2024-01-15"]


def test_devclaw_limit_defaults_to_20_and_is_capped_at_100(mem: Memory) -> None:
    mem.store_many({"content": f"note number {i} about widgets"} for i in range(25))
    assert len(ok(mem, "devclaw", "memory", {"action": "list"}).data["results"]) == 20
    assert len(ok(mem, "devclaw", "memory", {"action": "search", "query": "widgets"})
               .data["results"]) == 20
    assert len(ok(mem, "devclaw", "memory", {"action": "list", "limit": 100})
               .data["results"]) == 25
    refused = call(mem, "devclaw", "memory", {"action": "list", "limit": 101})
    assert refused.is_error
    assert refused.text == ("Invalid argument 'limit' for memory: Input should be less than "
                            "or equal to 100.")


@keyword_only
def test_devclaw_index_without_vectors_is_a_no_op(mem: Memory) -> None:
    r = ok(mem, "devclaw", "memory", {"action": "index"})
    assert r.data == {"embedded": 0, "vectors": False}
    assert "nothing to rebuild" in r.text


def test_devclaw_index_embeds_memories_without_vectors(tmp_path: Path, settings: Settings,
                                                       clock: Clock) -> None:
    store = SQLiteStore(tmp_path / "vec.db")
    try:
        plain = Memory(store, settings, clock=clock, embedder=None)
        plain.store("The API uses JWT tokens")
        plain.store("User prefers dark theme")
        with_vectors = Memory(store, settings, clock=clock, embedder=HashEmbedder())
        if with_vectors.components.vectors() is None:
            pytest.skip(with_vectors.components.vector_status())
        r = ok(with_vectors, "devclaw", "memory", {"action": "index"})
        assert r.data == {"embedded": 2, "vectors": True}
        again = ok(with_vectors, "devclaw", "memory", {"action": "index"})
        assert again.data["embedded"] == 0
    finally:
        store.close()


# --- 003 koshi ----------------------------------------------------------------------------------
def test_koshi_results_carry_ids_and_feedback_moves_scores(mem: Memory) -> None:
    stored = ok(mem, "koshi", "memory_store", {"content": "Payment API HMAC signature: no "
                                               "trailing empty string", "tags": "payments, hmac"})
    mid = stored.data["memory"]["id"]
    assert stored.text == f"Stored memory [id:{mid}]."
    assert mem.get(mid).tags == ("payments", "hmac") and mem.get(mid).source == "agent"
    q = ok(mem, "koshi", "memory_query", {"query": "payment hmac signature"})
    assert q.text == (f"[id:{mid}] Payment API HMAC signature: no trailing empty string "
                      "(tags: payments, hmac; score: 0)")
    assert ok(mem, "koshi", "memory_reinforce", {"id": mid}).text == \
        f"Reinforced [id:{mid}]; score is now 3."
    assert ok(mem, "koshi", "memory_demote", {"id": mid}).data["memory"]["score"] == 2
    upd = ok(mem, "koshi", "memory_update", {"id": mid, "content": "HMAC: no empty string",
                                             "tags": "hmac, fixed"})
    assert upd.text == f"Updated memory [id:{mid}]: HMAC: no empty string"
    record = mem.get(mid)
    assert (record.content, record.tags, record.score) == ("HMAC: no empty string",
                                                          ("hmac", "fixed"), 2)


def test_koshi_store_and_query_carry_narrative_and_task(mem: Memory) -> None:
    """003's memories table has narrative_id and task_id (integers): memory_store takes them,
    memory_query keeps to them; the unified tools name them the same."""
    first = ok(mem, "koshi", "memory_store", {"content": "The dragon sleeps under the mountain",
                                              "narrative_id": 4, "task_id": 11})
    mid = first.data["memory"]["id"]
    assert (first.data["memory"]["narrative_id"], first.data["memory"]["task_id"]) == ("4", "11")
    other = ok(mem, "koshi", "memory_store", {"content": "The dragon hoards copper",
                                              "narrative_id": "5"}).data["memory"]["id"]
    assert (mem.get(mid).narrative_id, mem.get(mid).task_id) == ("4", "11")
    everything = ok(mem, "koshi", "memory_query", {"query": "dragon"}).data["results"]
    assert {r["id"] for r in everything} == {mid, other}
    q = ok(mem, "koshi", "memory_query", {"query": "dragon", "narrative_id": 4})
    assert q.text == f"[id:{mid}] The dragon sleeps under the mountain (score: 0)"
    assert [r["id"] for r in ok(mem, "koshi", "memory_query", {
        "query": "dragon", "task_id": "11", "narrative_id": "5"}).data["results"]] == []
    listed = ok(mem, "unified", "memory_list", {"narrative_id": "5"})
    assert [r["id"] for r in listed.data["results"]] == [other] and listed.data["total"] == 1
    recalled = ok(mem, "unified", "memory_recall", {"query": "dragon", "task_id": 11})
    assert [r["id"] for r in recalled.data["results"]] == [mid]
    bad = call(mem, "koshi", "memory_store", {"content": "x", "narrative_id": [4]})
    assert bad.is_error and "narrative_id" in bad.text


def test_koshi_accepts_integer_ids(tmp_path: Path, settings: Settings, clock: Clock) -> None:
    """003 ids are integers; an imported 003 memory keeps its id as text ("7")."""
    store = SQLiteStore(tmp_path / "k.db")
    try:
        mem = Memory(store, settings, clock=clock)
        from clawmemory.model import MemoryRecord

        store.put(MemoryRecord(id="7", content="imported from koshi", created_at=clock(),
                               updated_at=clock()))
        assert ok(mem, "koshi", "memory_reinforce", {"id": 7}).data["memory"]["score"] == 3
    finally:
        store.close()


# --- 004 sandbox --------------------------------------------------------------------------------
def test_sandbox_remember_search_correct_confirm(mem: Memory) -> None:
    r = ok(mem, "sandbox", "remember_fact", {"content": "Alice works on Project Apollo"})
    fid = r.data["memory"]["id"]
    assert mem.get(fid).kind == "fact"
    s = ok(mem, "sandbox", "search_memory", {"query": "Apollo"})
    assert s.text == f"- [id:{fid}] Alice works on Project Apollo (confidence 1.00)"
    c = ok(mem, "sandbox", "correct_fact", {"fact_id": fid, "new_content": "Alice leads Apollo",
                                            "reason": "promotion"})
    new_id = c.data["memory"]["id"]
    assert not mem.get(fid).is_valid and mem.get(new_id).supersedes == fid
    ok(mem, "sandbox", "confirm_fact", {"fact_id": new_id})
    confirmed = mem.get(new_id)
    assert (confirmed.decay_rate, confirmed.confidence) == (0.0, 1.0)
    assert ok(mem, "sandbox", "search_memory", {"query": "Apollo"}).data["count"] == 1


def test_sandbox_stats_and_entities(seeded: Memory) -> None:
    stats = ok(seeded, "sandbox", "memory_stats", {})
    assert stats.text.startswith("6 memories (episode: 2, fact: 4); latest recorded 2023-11-14")
    info = ok(seeded, "sandbox", "get_entity_info", {"name": "alice"})
    assert info.text.splitlines()[0].startswith("Alice (")
    assert any(m["key"] == "alice-apollo" for m in info.data["memories"])
    unknown = call(seeded, "sandbox", "get_entity_info", {"name": "Zebulon"})
    assert unknown.is_error and unknown.text.startswith(
        "get_entity_info: no entity named 'Zebulon'")


# --- 004 consolidator and the hot path ----------------------------------------------------------
def test_observe_stores_episodes_and_registers_the_session(mem: Memory) -> None:
    eid = observe(mem, "user", "I moved to Lisbon", "s1")
    observe(mem, "assistant", "Noted, Lisbon it is", "s1")
    e = mem.get(eid)
    assert (e.kind, e.source_role, e.session_id, e.source) == (
        "episode", "user", "s1", "conversation")
    assert pending_sessions(mem) == ["s1"]
    observe(mem, "user", "hello again", "s2")
    assert pending_sessions(mem, exclude_session_id="s2") == ["s1"]
    assert register_session(mem, "s2") is False and register_session(mem, "s3") is True


@pytest.mark.parametrize(("role", "content", "session"), [
    ("", "text", "s1"), ("user", "", "s1"), ("user", "   ", "s1"), ("user", "text", ""),
    ("user", "nul\x00byte", "s1")])
def test_observe_refuses_bad_turns_and_writes_nothing(
    mem: Memory, role: str, content: str, session: str
) -> None:
    from clawmemory import InvalidInputError

    with pytest.raises(InvalidInputError):
        observe(mem, role, content, session)
    assert mem.count(include_invalid=True) == 0 and pending_sessions(mem) == []


def test_session_ledger_without_a_sessions_table(settings: Settings, clock: Clock) -> None:
    mem = Memory(MemoryStore(), settings, clock=clock)
    observe(mem, "user", "hi", "a")
    observe(mem, "user", "hi", "b")
    assert pending_sessions(mem) == ["a", "b"]
    assert mark_session_consolidated(mem, "a") is True
    assert mark_session_consolidated(mem, "a") is False
    assert is_session_consolidated(mem, "a") and not is_session_consolidated(mem, "b")
    assert pending_sessions(mem) == ["b"]
    other = Memory(MemoryStore(), settings, clock=clock)
    assert pending_sessions(other) == []


def test_session_ledger_is_per_namespace_and_persistent(tmp_path: Path, settings: Settings,
                                                        clock: Clock) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    mem = Memory(store, settings, clock=clock)
    observe(mem, "user", "hi", "s1")
    assert pending_sessions(mem.with_namespace("other")) == []
    mark_session_consolidated(mem, "s1")
    store.close()
    reopened = Memory(SQLiteStore(tmp_path / "s.db"), settings, clock=clock)
    assert is_session_consolidated(reopened, "s1") and pending_sessions(reopened) == []
    reopened.close()


def test_episodes_come_30_per_page_oldest_first(mem: Memory, clock: Clock) -> None:
    for i in range(EPISODES_PAGE_SIZE + 5):
        observe(mem, "user" if i % 2 == 0 else "assistant", f"turn {i}", "s1")
        clock.advance()
    observe(mem, "user", "another session", "s2")
    first = ok(mem, "consolidator", "get_episodes_for_consolidation", {"session_id": "s1"})
    assert [e["content"] for e in first.data["episodes"]] == [f"turn {i}" for i in range(30)]
    assert first.data["next_page"] == 1 and first.data["total"] == 35
    assert first.text.splitlines()[0].endswith("user: turn 0")
    assert first.text.splitlines()[-1] == "(more: call again with page=1)"
    second = ok(mem, "consolidator", "get_episodes_for_consolidation",
                {"session_id": "s1", "page": 1})
    assert len(second.data["episodes"]) == 5 and second.data["next_page"] is None


def test_consolidator_numbers_come_from_settings(mem: Memory, clock: Clock) -> None:
    mem.settings.consolidation.episodes_page_size = 4
    for i in range(6):
        observe(mem, "user", f"turn {i}", "s1")
        clock.advance()
    page = ok(mem, "consolidator", "get_episodes_for_consolidation", {"session_id": "s1"})
    assert len(page.data["episodes"]) == 4 and page.data["next_page"] == 1
    mem.settings.consolidation.dedup_jaccard = 0.4  # "Alice prefers tea" is now a duplicate
    mem.store("Alice prefers green tea in the morning")
    r = ok(mem, "consolidator", "save_facts_batch", {"session_id": "s9",
                                                     "facts": ["Alice prefers tea"]})
    assert r.data["saved"] == [] and r.data["skipped"][0]["reason"] == "already stored"
    mem.settings.consolidation.conflict_confidence = 0.1
    old, new = mem.store("Bob lives in Porto"), mem.store("Bob lives in Lisbon")
    ok(mem, "consolidator", "resolve_conflict", {"old_fact_id": old, "new_fact_id": new})
    assert mem.get(old).confidence == 0.1 and mem.get(new).supersedes == old


def test_save_facts_batch_deduplicates_on_two_levels(mem: Memory) -> None:
    stored = mem.store("Alice prefers green tea in the morning")
    r = ok(mem, "consolidator", "save_facts_batch", {"session_id": "s9", "facts": [
        {"content": "Bob moved to Lisbon", "source_ids": ["ep1"], "confidence": 0.8},
        "bob  MOVED to lisbon",                        # level 1: same fact, other case/spacing
        "Alice prefers green tea in the morning!",      # level 2: Jaccard 1.0 with a stored fact
        "Alice prefers tea",                            # Jaccard 0.5: a different fact
    ]})
    assert [s["content"] for s in r.data["saved"]] == ["Bob moved to Lisbon", "Alice prefers tea"]
    assert [(s["reason"], s.get("duplicate_of")) for s in r.data["skipped"]] == [
        ("repeated in batch", None), ("already stored", stored)]
    bob = mem.get(r.data["saved"][0]["id"])
    assert (bob.kind, bob.session_id, bob.source, bob.source_ids, bob.confidence) == (
        "fact", "s9", "consolidation", ("ep1",), 0.8)
    assert r.text.endswith("skipped 2 duplicates.")


def test_jaccard_threshold_is_inclusive() -> None:
    assert jaccard("a b c d", "a b c d e") == 0.8
    assert jaccard("a b c", "a b c d") == 0.75
    assert jaccard("", "a") == 0.0


def test_session_consolidation_tools(mem: Memory) -> None:
    observe(mem, "user", "hi", "s1")
    assert ok(mem, "consolidator", "is_session_consolidated", {"session_id": "s1"}).data[
        "consolidated"] is False
    r = ok(mem, "consolidator", "mark_session_consolidated", {"session_id": "s1"})
    assert r.text == "Session s1 marked as consolidated."
    again = ok(mem, "consolidator", "mark_session_consolidated", {"session_id": "s1"})
    assert again.text == "Session s1 was already consolidated."
    assert ok(mem, "consolidator", "is_session_consolidated", {"session_id": "s1"}).text == \
        "Session s1 is already consolidated."
    assert pending_sessions(mem) == []


def test_detect_and_resolve_conflicts(mem: Memory) -> None:
    old = mem.store("Alice lives in Berlin")
    new = mem.store("Alice lives in Lisbon now")
    mem.store("Alice lives in Berlin", kind="episode")  # not a fact: never a candidate
    found = ok(mem, "consolidator", "detect_conflicts", {"fact_id": new})
    assert [c["id"] for c in found.data["candidates"]] == [old]
    by_text = ok(mem, "consolidator", "detect_conflicts", {"content": "Where does Alice live"})
    assert {c["id"] for c in by_text.data["candidates"]} == {old, new}
    ok(mem, "consolidator", "resolve_conflict", {"old_fact_id": old, "new_fact_id": new})
    assert mem.get(old).confidence == 0.3 and mem.get(old).is_valid
    assert mem.get(new).supersedes == old


# --- refusals: is_error, one sentence, nothing written --------------------------------------------
REFUSALS: list[tuple[str, str, Any, str]] = [
    ("unified", "memory_store", {}, "memory_store needs the argument 'content'."),
    ("unified", "memory_store", {"content": ""}, "Invalid argument 'content' for memory_store"),
    ("unified", "memory_store", {"content": "x\x00y"}, "NUL"),
    ("unified", "memory_store", {"content": "x", "kind": "nope"}, "unknown kind 'nope'"),
    ("unified", "memory_store", {"content": "x", "colour": "red"},
     "memory_store got an unexpected argument 'colour'"),
    ("unified", "memory_store", {"content": "x", "tags": 5}, "Invalid argument 'tags'"),
    ("unified", "memory_store", {"content": "x", "links": ["missing"]},
     "memory_store: cannot link to 'missing': no memory has that key or id."),
    ("unified", "memory_store", {"content": "x", "key": "k", "links": ["k"]},
     "cannot link to itself"),
    ("unified", "memory_store", {"content": "x", "confidence": 2}, "Invalid argument 'confidence'"),
    ("unified", "memory_store", {"content": "x", "event_time": "yesterday"}, "event_time"),
    ("unified", "memory_store", "not an object", "must be a JSON object"),
    ("unified", "memory_recall", {"query": "x", "limit": 0}, "Invalid argument 'limit'"),
    ("unified", "memory_recall", {"query": "x", "depth": 9}, "Invalid argument 'depth'"),
    ("unified", "memory_update", {"id": "hmac-rule"}, "nothing to update"),
    ("unified", "memory_update", {"id": "nope", "content": "x"}, "no memory with id or key"),
    ("unified", "memory_forget", {"id": "nope"}, "memory_forget: no memory with id or key 'nope'"),
    ("unified", "memory_link", {"from_id": "hmac-rule", "to_id": "hmac-rule"}, "itself"),
    ("unified", "memory_link", {"from_id": "hmac-rule", "to_id": "nope"}, "'nope'"),
    ("unified", "memory_correct", {"id": "hmac-rule", "new_content": " "}, "content is empty"),
    ("unified", "memory_list", {"offset": -1}, "Invalid argument 'offset'"),
    ("unified", "memory_list", {"order": "random"}, "Invalid argument 'order'"),
    ("unified", "no_such_tool", {}, "Unknown tool 'no_such_tool' in the unified dialect"),
    ("klingon", "memory_store", {"content": "x"}, "unknown tool dialect 'klingon'"),
    ("ptrclaw", "memory_store", {"content": "x"}, "memory_store needs the argument 'key'."),
    ("ptrclaw", "memory_store", {"key": "k", "content": "x", "category": "preference"},
     "Invalid argument 'category' for memory_store: must be one of core, knowledge, "
     "conversation."),
    ("ptrclaw", "memory_store", {"key": "k", "content": "x", "kind": "fact"},
     "unexpected argument 'kind' (expected: key, content, category, links)"),
    ("ptrclaw", "memory_link", {"from": "hmac-rule", "to": "project-setup"},
     "memory_link needs the argument 'action'."),
    ("ptrclaw", "memory_link", {"action": "merge", "from": "a", "to": "b"},
     "Invalid argument 'action'"),
    ("ptrclaw", "memory_link", {"action": "link", "from": "hmac-rule", "to": "ghost"}, "ghost"),
    ("ptrclaw", "memory_recall", {"query": 5}, "Invalid argument 'query'"),
    ("devclaw", "memory", {"content": "x"}, "memory needs the argument 'action'"),
    ("devclaw", "memory", {"action": "delete"}, "'action' must be one of save, search, list"),
    ("devclaw", "memory", {"action": "save"}, "memory needs the argument 'content'."),
    ("devclaw", "memory", {"action": "save", "content": "x", "query": "y"},
     "the argument 'query' is not used by this action"),
    ("devclaw", "memory", {"action": "search", "query": "x", "limit": 101},
     "Invalid argument 'limit' for memory: Input should be less than or equal to 100."),
    ("devclaw", "memory", {"action": "save", "content": "x", "category": "core"},
     "must be one of fact, preference, event, summary"),
    ("koshi", "memory_update", {"id": "hmac-rule"}, "memory_update needs the argument 'content'"),
    ("koshi", "memory_reinforce", {"id": 404}, "no memory with id or key '404'"),
    ("koshi", "memory_reinforce", {"id": True}, "Invalid argument 'id'"),
    ("koshi", "memory_query", {"query": "x", "limit": "lots"}, "Invalid argument 'limit'"),
    ("sandbox", "remember_fact", {"content": "x", "kind": "core"}, "unexpected argument 'kind'"),
    ("sandbox", "correct_fact", {"fact_id": "nope", "new_content": "x"}, "no memory"),
    ("sandbox", "search_memory", {"query": "x", "kind": "core"}, "must be one of fact"),
    ("consolidator", "save_facts_batch", {"facts": []}, "Invalid argument 'facts'"),
    ("consolidator", "save_facts_batch", {"facts": ["ok fact", {"content": ""}]},
     "Invalid argument 'facts.1"),
    ("consolidator", "save_facts_batch", {"facts": ["ok fact", "x\x00"]}, "NUL"),
    ("consolidator", "save_facts_batch", {"facts": [f"fact {i}" for i in range(101)]},
     "Invalid argument 'facts'"),
    ("consolidator", "detect_conflicts", {}, "give exactly one of fact_id or content"),
    ("consolidator", "resolve_conflict", {"old_fact_id": "hmac-rule",
                                          "new_fact_id": "hmac-rule"}, "itself"),
    ("consolidator", "resolve_conflict", {"old_fact_id": "hmac-rule", "new_fact_id": "nope"},
     "'nope'"),
    ("consolidator", "get_episodes_for_consolidation", {"session_id": "s1", "page": -1},
     "Invalid argument 'page'"),
    ("consolidator", "mark_session_consolidated", {"session_id": ""},
     "Invalid argument 'session_id'"),
]


@pytest.mark.parametrize(("dialect", "tool", "args", "message"), REFUSALS,
                         ids=[f"{d}-{t}-{i}" for i, (d, t, _, _) in enumerate(REFUSALS)])
def test_refusals_are_error_results_and_write_nothing(
    seeded: Memory, dialect: str, tool: str, args: Any, message: str
) -> None:
    before = footprint(seeded)
    pending = pending_sessions(seeded)
    result = call(seeded, dialect, tool, args)
    assert result.is_error
    assert message in result.text
    assert result.text.endswith(".") and "\n" not in result.text
    assert result.data == {"error": result.text}
    assert footprint(seeded) == before
    assert pending_sessions(seeded) == pending


def test_vector_recall_needs_vectors(seeded: Memory, embedding: str) -> None:
    before = footprint(seeded)
    result = call(seeded, "unified", "memory_recall", {"query": "Python", "mode": "vector"})
    if embedding == "keyword":
        assert result.is_error and result.text == (
            "memory_recall: vector recall needs vectors: no embedder configured: keyword and "
            "entity recall only.")
        assert footprint(seeded) == before
    else:
        # the nearest three; the other three fall below vector mode's relevance floor
        assert not result.is_error and [h["key"] for h in result.data["results"]] == [
            "python-version", "project-setup", "alice-apollo"]
        assert all(h["why"].startswith("vector[rank=") for h in result.data["results"])


def test_null_arguments_mean_not_given(seeded: Memory) -> None:
    r = ok(seeded, "ptrclaw", "memory_recall", {"query": "python", "limit": None,
                                                "category": None, "depth": None})
    assert r.data["count"] >= 1
    assert ok(seeded, "unified", "memory_stats", None).data["total"] == 6


def test_unexpected_failures_become_error_results_and_are_logged(
    seeded: Memory, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(seeded, "recall", boom)
    with caplog.at_level(logging.ERROR, logger="clawmemory.tools"):
        r = call(seeded, "koshi", "memory_query", {"query": "hmac"})
    assert r.is_error
    assert r.text == ("memory_query failed unexpectedly (RuntimeError: disk on fire); see the "
                      "clawmemory log.")
    assert any("memory_query" in rec.getMessage() for rec in caplog.records)


def test_a_storage_error_is_an_error_result(seeded: Memory) -> None:
    seeded.store_backend.close()
    r = call(seeded, "unified", "memory_stats", {})
    assert r.is_error and r.text.startswith("memory_stats")

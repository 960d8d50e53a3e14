"""The MCP surface a client sees (ADR 0019), through a real MCP client talking to ``clawmem mcp``
in a subprocess over stdio: the small default tool set and ``--all-tools``, the four
annotations, user-facing kinds only, relevance shown as relevance, time filters, structured
output, resources and prompts; the seed dialects unchanged."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings
from clawmemory.interfaces.mcp.surface import CORE_TOOLS, USER_KINDS
from clawmemory.tools import tools_for

ENTRY = "import sys\nfrom clawmemory.interfaces.cli import main\nsys.exit(main())\n"


def stdio(db: Path, *options: str) -> StdioServerParameters:
    import os

    env = {**os.environ, "CLAWMEM_EMBEDDER__PROVIDER": "none", "CLAWMEM_LOG_LEVEL": "WARNING"}
    return StdioServerParameters(command=sys.executable,
                                 args=["-c", ENTRY, "mcp", "--db", str(db), *options], env=env)


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def call(client: Client, name: str, args: dict[str, Any]) -> types.CallToolResult:
    return await client.call_tool(name, args)


def quick(db: Path) -> Memory:
    return Memory.open(db, settings=Settings(embedder=EmbedderSettings(provider="none")))


def test_the_default_set_is_small_annotated_and_offers_user_kinds_only(tmp_path: Path) -> None:
    async def scenario() -> list[types.Tool]:
        async with Client(stdio(tmp_path / "a.db"), read_timeout_seconds=120) as client:
            tools = (await client.list_tools()).tools
            admin = await call(client, "memory_index", {})
            assert admin.is_error and "Unknown tool 'memory_index'" in text(admin)
            episode = await call(client, "memory_store", {"content": "x", "kind": "episode"})
            assert episode.is_error
            assert text(episode).startswith("Invalid argument 'kind' for memory_store: must be")
            return tools

    tools = anyio.run(scenario)
    assert [t.name for t in tools] == list(CORE_TOOLS)
    hints = {t.name: t.annotations for t in tools}
    for tool in tools:
        a = tool.annotations
        assert a is not None and a.open_world_hint is False
        assert None not in (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    assert (hints["memory_forget"].read_only_hint, hints["memory_forget"].destructive_hint,
            hints["memory_forget"].idempotent_hint) == (False, True, True)
    assert (hints["memory_recall"].read_only_hint, hints["memory_recall"].destructive_hint) \
        == (True, False)
    assert (hints["memory_store"].destructive_hint, hints["memory_store"].idempotent_hint) \
        == (False, False)
    assert hints["memory_correct"].destructive_hint is False  # the old version is kept
    store = next(t for t in tools if t.name == "memory_store")
    assert store.input_schema["properties"]["kind"]["enum"] == list(USER_KINDS)
    with quick(tmp_path / "a.db") as mem:
        assert mem.count(include_invalid=True) == 0  # the refused store wrote nothing


def test_all_tools_offers_the_whole_dialect_and_seed_dialects_keep_their_names(
        tmp_path: Path) -> None:
    async def listed(*options: str) -> list[str]:
        async with Client(stdio(tmp_path / "b.db", *options), read_timeout_seconds=120) as c:
            return [t.name for t in (await c.list_tools()).tools]

    assert anyio.run(listed, "--all-tools") == [t.name for t in tools_for("unified")]
    assert "memory_index" in anyio.run(listed, "--all-tools")
    assert anyio.run(listed, "--dialect", "koshi") == [t.name for t in tools_for("koshi")]


def test_recall_shows_relevance_filters_by_time_and_returns_structured_data(
        tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    with quick(db) as mem:
        old = mem.store("kayak trip to the fjords", event_time="2023-06-01T10:00:00Z")
        new = mem.store("kayak lessons on the lake", event_time="2024-06-01T10:00:00Z")
        mem.reinforce(old)

    async def scenario() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with Client(stdio(db), read_timeout_seconds=120) as client:
            every = await call(client, "memory_recall", {"query": "kayak"})
            recent = await call(client, "memory_recall",
                                {"query": "kayak", "since": "2024-01-01"})
            return every, recent

    every, recent = anyio.run(scenario)
    assert not every.is_error and "relevance: " in text(every) and "score:" not in text(every)
    data = every.structured_content
    assert isinstance(data, dict) and data["count"] == 2
    first = {r["id"]: r for r in data["results"]}
    assert first[old]["score"] == 3  # the memory's own field; its relevance is "relevance"
    assert all(isinstance(r["relevance"], float) for r in data["results"])
    assert [r["id"] for r in recent.structured_content["results"]] == [new]  # type: ignore[index]


def test_resources_and_prompts(tmp_path: Path) -> None:
    db = tmp_path / "d.db"
    with quick(db) as mem:
        mid = mem.store("Caroline prefers tea", key="caroline-tea", kind="preference")

    async def scenario() -> dict[str, Any]:
        async with Client(stdio(db), read_timeout_seconds=120) as client:
            out: dict[str, Any] = {}
            out["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = (await client.list_resource_templates()).resource_templates
            out["templates"] = [t.uri_template for t in templates]
            by_key = await client.read_resource("memory://caroline-tea")
            out["by_key"] = json.loads(by_key.contents[0].text)  # type: ignore[union-attr]
            recent = await client.read_resource("memory://recent")
            out["recent"] = recent.contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="no memory"):
                await client.read_resource("memory://absent")
            out["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
            got = await client.get_prompt("recall_about", {"topic": "Caroline"})
            out["prompt"] = got.messages[0].content.text  # type: ignore[union-attr]
            return out

    out = anyio.run(scenario)
    assert out["resources"] == ["memory://recent"]
    assert out["templates"] == ["memory://{id}"]
    assert (out["by_key"]["id"], out["by_key"]["kind"]) == (mid, "preference")
    assert out["recent"] == f"[id:{mid}] [preference] Caroline prefers tea (key: caroline-tea)"
    assert out["prompts"] == ["recall_about"]
    assert out["prompt"].startswith("What do you remember about Caroline? Search your memory"
                                    " with `memory_recall` first")

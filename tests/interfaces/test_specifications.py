"""Each specification's agent, configured its own way, gets its documented results.

For each seed an agent is set up as that specification describes (its profile, its own
environment variables, its file layout) and drives the real thing: ``clawmem ... mcp`` over
stdio through the MCP SDK's client, calling the tools of its own dialect, or the ``clawmem``
command. What comes back is checked against the specification's own numbers, formats and
names. The specification behind each check is named in its docstring.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from test_chat_cli import clawmem as chat_cli
from test_mcp import ok, run

from clawmemory import Memory
from clawmemory.llm.prompts import SYNTHESIS_SYSTEM
from llm_servers import ScriptedLLMServer, prompt_text, text

CLAWMEM = Path(sys.executable).parent / "clawmem"
ID = re.compile(r"\[id:([^\]\s]+)\]")
pytestmark = pytest.mark.usefixtures("no_spec_env")


@pytest.fixture(autouse=True)
def _quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWMEM_LOG_LEVEL", "WARNING")


def server(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
           ) -> StdioServerParameters:
    return StdioServerParameters(command=str(CLAWMEM), args=[*args, "mcp"],
                                 env={**os.environ, **(env or {})}, cwd=cwd)


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


def clawmem(*args: str | Path, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLAWMEM), *map(str, args)], capture_output=True, text=True,
                          timeout=120, check=False, env={**os.environ, **(env or {})}, cwd=cwd)


# --- 000 PtrClaw --------------------------------------------------------------------------------
def test_ptrclaw_agent_with_its_variables_and_layout(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """000: the four tools; `memory_store` upserts by key and links by key; `memory_recall`
    answers `- key: content [links: ...]` and follows links with depth=1, 5 results by
    default; the database is ~/.ptrclaw/memory.db."""
    monkeypatch.delenv("CLAWMEM_HOME")  # the user has no clawmemory home: 000's layout
    env = {"CLAWMEM_PROFILE": "ptrclaw"}

    async def scenario() -> None:
        async with Client(server(env=env), read_timeout_seconds=120) as client:
            assert await tool_names(client) == {
                "memory_store", "memory_recall", "memory_forget", "memory_link"}
            assert await ok(client, "memory_store", {
                "key": "project-setup", "content": "The project builds with CMake"}) == (
                "Stored memory 'project-setup'.")
            assert await ok(client, "memory_store", {
                "key": "python-version", "content": "Project uses Python 3.11",
                "category": "knowledge", "links": ["project-setup"]}) == (
                "Stored memory 'python-version' (linked to project-setup).")
            assert await ok(client, "memory_store", {
                "key": "python-version", "content": "Project uses Python 3.12"}) == (
                "Updated memory 'python-version'.")
            flat = await ok(client, "memory_recall", {"query": "Python version", "depth": 0})
            assert flat == "- python-version: Project uses Python 3.12 [links: project-setup]"
            deep = await ok(client, "memory_recall", {"query": "Python version", "depth": 1})
            assert deep.splitlines()[1].startswith("- project-setup: The project builds with CMake")
            for i in range(6):
                await ok(client, "memory_store", {"key": f"py-{i}", "content": f"Python note {i}"})
            many = await ok(client, "memory_recall", {"query": "Python", "depth": 0})
            assert len(many.splitlines()) == 5  # 000: limit default 5
            assert await ok(client, "memory_forget", {"key": "py-0"}) == "Forgot memory 'py-0'."

    run(scenario)
    db = tmp_path / "user" / ".ptrclaw" / "memory.db"
    assert db.is_file()
    with Memory.open(db, embedder=None) as mem:
        assert mem.get("python-version").content == "Project uses Python 3.12"
        assert mem.get("python-version").kind == "fact"  # 000's knowledge


# --- 003 Koshi ----------------------------------------------------------------------------------
def test_koshi_agent_reinforces_and_the_ranking_follows(tmp_path: Path) -> None:
    """003: five tools; results `[id:N] content (tags: ...; score: n)`; reinforce +3 and demote
    −1 move the ranking (`bm25 × exp(score × 0.2)`); stop words are query words (no list);
    memories recalled together are linked at strength 1.0 (v2)."""
    db = tmp_path / "koshi.db"

    async def scenario() -> None:
        async with Client(server("--db", str(db), "--profile", "koshi"),
                          read_timeout_seconds=120) as client:
            assert await tool_names(client) == {"memory_store", "memory_query",
                                                "memory_reinforce", "memory_demote",
                                                "memory_update"}
            first = ID.findall(await ok(client, "memory_store", {
                "content": "Payment API HMAC signature omits the trailing empty string",
                "tags": "payments, hmac, api"}))[0]
            second = ID.findall(await ok(client, "memory_store", {
                "content": "Payment API onboarding needs an HMAC key from the vault",
                "tags": "payments, onboarding"}))[0]
            before = ID.findall(await ok(client, "memory_query", {"query": "payment hmac"}))
            assert set(before) == {first, second}
            low = before[-1]
            await ok(client, "memory_reinforce", {"id": low})
            after = await ok(client, "memory_query", {"query": "payment hmac"})
            assert ID.findall(after)[0] == low and "score: 3" in after.splitlines()[0]
            await ok(client, "memory_demote", {"id": low})
            assert "score: 2" in (await ok(client, "memory_query", {"query": "hmac"}))
            # "the" is a query word in 003 (no stop-word list): it alone finds both.
            assert len(ID.findall(await ok(client, "memory_query", {"query": "the"}))) == 2

    run(scenario)
    with Memory.open(db, embedder=None) as mem:
        (link,) = mem.links(mem.list()[0].id)
        assert (link.origin, link.strength) == ("co-recall", 4.0)  # 4 queries found both


# --- 004 the sandbox assistant ----------------------------------------------------------------
def test_sandbox_agent_facts_corrections_and_stats(tmp_path: Path) -> None:
    """004: the orchestrator's tools; `search_memory` lines `- [id:X] content (confidence
    0.90)`; `correct_fact` retires the old fact; `confirm_fact` sets confidence 1; without an
    embedder recall is RRF over FTS5 and entities (004's fallback)."""
    db = tmp_path / "sandbox.db"
    env = {"CLAWMEM_EMBEDDER__PROVIDER": "none"}

    async def scenario() -> None:
        async with Client(server("--db", str(db), "--profile", "sandbox", env=env),
                          read_timeout_seconds=120) as client:
            assert {"search_memory", "remember_fact", "correct_fact", "confirm_fact",
                    "memory_stats", "get_entity_info"} <= await tool_names(client)
            stored = await ok(client, "remember_fact", {"content": "Alice lives in Berlin"})
            (fact,) = ID.findall(stored)
            found = await ok(client, "search_memory", {"query": "Where does Alice live?"})
            assert re.fullmatch(rf"- \[id:{fact}\] Alice lives in Berlin \(confidence \d\.\d\d\)",
                                found.splitlines()[0]), found
            await ok(client, "correct_fact", {"fact_id": fact,
                                              "new_content": "Alice lives in Munich"})
            found = await ok(client, "search_memory", {"query": "Alice"})
            assert "Munich" in found and "Berlin" not in found
            (new,) = ID.findall(found.splitlines()[0])
            await ok(client, "confirm_fact", {"fact_id": new})
            assert "(confidence 1.00)" in await ok(client, "search_memory", {"query": "Alice"})
            assert "Alice" in await ok(client, "get_entity_info", {"name": "Alice"})

    run(scenario)
    with Memory.open(db, embedder=None, profile="sandbox") as mem:
        (hit,) = mem.recall("Alice Munich", touch=False, limit=1)
        assert set(hit.explain.lists) <= {"keyword", "entity"}
        ranks = {n: v["rank"] for n, v in hit.explain.lists.items()}
        assert hit.score == pytest.approx(sum(1 / (60 + r) for r in ranks.values()))


def test_ptrclaw_auto_save_and_synthesis_interval_from_its_variables(
        openai_server: ScriptedLLMServer, tmp_path: Path) -> None:
    """000: `MEMORY_AUTO_SAVE=true` stores every user and assistant message as a Conversation
    entry (purged after `hygiene_max_age`); `MEMORY_SYNTHESIS_INTERVAL=2` synthesises every
    second user message, counted across one-shot `clawmem chat` processes."""
    openai_server.script([], then=text('{"notes": []}'))
    env = {"CLAWMEM_PROFILE": "ptrclaw", "MEMORY_AUTO_SAVE": "true",
           "MEMORY_SYNTHESIS_INTERVAL": "2"}

    def syntheses() -> int:
        return sum(SYNTHESIS_SYSTEM.format() in prompt_text(b) for b in openai_server.bodies)

    counted = []
    for n in range(1, 4):
        done = chat_cli(tmp_path, "chat", "-m", f"note {n} about the deploy", "--session", "s",
                        server=openai_server, **env)
        assert done.returncode == 0 and not done.stderr, done.stderr
        counted.append(syntheses())
    assert counted == [0, 1, 1]
    with Memory.open(tmp_path / "chat.db", embedder=None) as mem:
        saved = mem.list(kind="conversation", limit=100)
        assert sorted(r.source_role or "" for r in saved) == ["assistant"] * 3 + ["user"] * 3
        assert mem.count(kind="episode") == 0
    with Memory.open(tmp_path / "off.db", embedder=None, profile="ptrclaw") as mem:
        assert mem.settings.agent.observe is False  # 000: auto_save defaults to false


# --- 001 sclaw ---------------------------------------------------------------------------------
def test_sclaw_agents_get_their_own_databases_and_a_disabled_one_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """001: per-agent data at `{data_dir}/agents/{agent_name}/memory.db`, opened lazily; an
    agent with `memory: enabled: false` gets no database and memory degrades to nothing,
    without errors; facts are found by FTS5 BM25."""
    home = tmp_path / "data"
    config = tmp_path / "config.toml"
    config.write_text('profile = "sclaw"\n[agents.quiet.memory]\nenabled = false\n')
    monkeypatch.setenv("CLAWMEM_HOME", str(home))
    monkeypatch.setenv("CLAWMEM_CONFIG", str(config))
    assert clawmem("--agent", "assistant", "add", "The user prefers dark mode",
                   cwd=tmp_path).returncode == 0
    assert clawmem("--agent", "support", "add", "Ticket 42 is about billing",
                   cwd=tmp_path).returncode == 0
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("memory.db")) == [
        "agents/assistant/memory.db", "agents/support/memory.db"]
    found = clawmem("--json", "--agent", "support", "recall", "billing ticket", cwd=tmp_path)
    assert [h["memory"]["content"] for h in json.loads(found.stdout)["hits"]] == [
        "Ticket 42 is about billing"]
    assert json.loads(clawmem("--json", "--agent", "assistant", "recall", "billing ticket",
                              cwd=tmp_path).stdout)["hits"] == []
    quiet = clawmem("--json", "--agent", "quiet", "recall", "billing", cwd=tmp_path)
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["hits"] == []
    assert "Traceback" not in quiet.stderr
    assert not (home / "agents" / "quiet").exists()


# --- 002 DevClaw -------------------------------------------------------------------------------
def test_devclaw_agent_saves_to_its_markdown_tree_and_reads_edits_back(tmp_path: Path) -> None:
    """002: the `memory` dispatcher (save/search/list/index); memories in `data/memory.db` and
    as `data/memory/{category}/{date}-{slug}.md` with `category`, `created_at` and `keywords`
    in the front matter; search lines `- [category] content`. A note edited in an editor is
    recalled after one `clawmem sync`."""

    async def scenario() -> None:
        # No model: the hybrid formula is pinned with it in test_profiles.py
        async with Client(server("--profile", "devclaw", cwd=tmp_path,
                                 env={"CLAWMEM_EMBEDDER__PROVIDER": "none"}),
                          read_timeout_seconds=300) as client:
            assert await tool_names(client) == {"memory"}
            saved = await ok(client, "memory", {
                "action": "save", "content": "The API uses JWT tokens with 24h expiration",
                "category": "fact", "keywords": ["api", "jwt", "authentication"]})
            assert saved.startswith("Saved [fact] memory")
            await ok(client, "memory", {"action": "save", "category": "preference",
                                        "content": "User prefers dark theme"})
            found = await ok(client, "memory", {"action": "search",
                                                "query": "authentication token"})
            assert found.splitlines()[0] == "- [fact] The API uses JWT tokens with 24h expiration"
            listed = await ok(client, "memory", {"action": "list", "category": "preference"})
            assert "- [preference] User prefers dark theme" in listed

    run(scenario)
    data = tmp_path / "data"
    assert (data / "memory.db").is_file()
    notes = sorted(p.relative_to(data / "memory").as_posix()
                   for p in (data / "memory").rglob("*.md"))
    assert [re.sub(r"\d{4}-\d\d-\d\d", "DATE", n) for n in notes] == [
        "fact/DATE-the-api-uses-jwt-tokens-with-24h-expiration.md",
        "preference/DATE-user-prefers-dark-theme.md"]
    note = data / "memory" / notes[0]
    front = note.read_text().split("---")[1]
    assert "category: fact" in front and "created_at:" in front
    assert re.search(r"keywords: \[api, jwt, authentication\]|keywords:\n- api", front), front
    note.write_text(note.read_text().replace("24h expiration", "12h expiration"))
    env = {"CLAWMEM_EMBEDDER__PROVIDER": "none"}
    synced = clawmem("--profile", "devclaw", "--json", "sync", env=env, cwd=tmp_path)
    assert synced.returncode == 0, synced.stderr
    assert len(json.loads(synced.stdout)["updated"]) == 1
    found = clawmem("--profile", "devclaw", "--json", "recall", "expiration", env=env,
                    cwd=tmp_path)
    assert [h["memory"]["content"] for h in json.loads(found.stdout)["hits"]] == [
        "The API uses JWT tokens with 12h expiration"]

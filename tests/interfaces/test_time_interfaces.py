"""Recall's time filters (ADR 0017) through each edge a user takes: the ``clawmem`` command
line, the tool registry (unified and sandbox dialects) and the MCP server. The engine's
semantics are pinned in test_time.py; here each edge must pass the arguments through and
refuse what cannot be read as one clear error.

The subprocesses run on the real clock, so the store is seeded in-process on a clock set days
back ("10 days ago", "5 days ago", now).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from test_cli import clawmem, ok
from test_mcp import ok as mcp_ok
from test_mcp import refused, run, stdio

from clawmemory import Memory, Settings
from clawmemory.tools import call_tool

DAY = 86_400.0
QUICK = Settings(embedder={"provider": "none"})


@pytest.fixture
def trips(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """Rome stored 10 days ago and corrected to Lisbon 5 days ago; a packing list stored now
    about a thing that happened yesterday."""
    db, now = tmp_path / "trips.db", time.time()
    clock = [now - 10 * DAY]
    with Memory.open(db, settings=QUICK.model_copy(update={"db": db}),
                     clock=lambda: clock[0]) as mem:
        rome = mem.store("The trip goes to Rome", key="trip")
        clock[0] = now - 5 * DAY
        lisbon = mem.correct("trip", "The trip goes to Lisbon").id
        clock[0] = now
        packed = mem.store("Packed the trip bags", event_time=now - DAY)
    return db, {"rome": rome, "lisbon": lisbon, "packed": packed}


def _ids(hits: list[dict[str, Any]]) -> list[str]:
    return [h.get("memory", h)["id"] for h in hits]


def test_cli_recall_and_list_take_the_time_options(trips: tuple[Path, dict[str, str]],
                                                   tmp_path: Path) -> None:
    db, ids = trips
    recall = ok(clawmem("--db", db, "--json", "recall", "trip", "--mode", "keyword",
                        "--since", "2 days ago", cwd=tmp_path)).json()
    assert _ids(recall["hits"]) == [ids["packed"]]
    old = ok(clawmem("--db", db, "--json", "list", "--as-of", "7 days ago", cwd=tmp_path)).json()
    assert _ids(old["memories"]) == [ids["rome"]]
    stored = ok(clawmem("--db", db, "--json", "list", "--created-until", "3 days ago",
                        "--order", "oldest", cwd=tmp_path)).json()
    assert _ids(stored["memories"]) == [ids["lisbon"]]
    epoch = ok(clawmem("--db", db, "--json", "list", "--created-since",
                       str(int(time.time() - DAY)), cwd=tmp_path)).json()
    assert _ids(epoch["memories"]) == [ids["packed"]]


def test_cli_refuses_an_unreadable_time_in_one_line(trips: tuple[Path, dict[str, str]],
                                                    tmp_path: Path) -> None:
    db, _ = trips
    bad = clawmem("--db", db, "recall", "trip", "--until", "when pigs fly", cwd=tmp_path)
    assert bad.rc == 2
    assert bad.err.strip().splitlines() == [
        "error: until: cannot read 'when pigs fly' as a time; use ISO 8601 (2024-01-15,"
        " 2024-01-15T09:30:00Z), epoch seconds, or an expression such as 'yesterday',"
        " '2 weeks ago', 'last March'"]
    archived = clawmem("--db", db, "list", "--archive", "--since", "yesterday", cwd=tmp_path)
    assert archived.rc == 2 and "--archive takes only --limit and --offset" in archived.err


def test_tools_pass_the_time_filters(trips: tuple[Path, dict[str, str]]) -> None:
    db, ids = trips
    with Memory.open(db, settings=QUICK.model_copy(update={"db": db})) as mem:
        found = call_tool(mem, "memory_recall", {"query": "trip", "mode": "keyword",
                                                 "as_of": time.time() - 7 * DAY})
        assert not found.is_error and _ids(found.data["results"]) == [ids["rome"]]
        listed = call_tool(mem, "memory_list", {"since": "2 days ago"})
        assert listed.data["total"] == 1 and _ids(listed.data["results"]) == [ids["packed"]]
        searched = call_tool(mem, "search_memory", {"query": "trip", "until": "3 days ago"},
                             dialect="sandbox")
        assert not searched.is_error and ids["lisbon"] in searched.text
        assert ids["packed"] not in searched.text
        refused_call = call_tool(mem, "memory_list", {"as_of": "sometime maybe"})
        assert refused_call.is_error and "as_of: cannot read 'sometime maybe'" in (
            refused_call.text)


def test_mcp_recall_takes_since_and_as_of(trips: tuple[Path, dict[str, str]]) -> None:
    db, ids = trips

    async def scenario() -> None:
        async with Client(stdio(db), read_timeout_seconds=120) as client:
            recent = await mcp_ok(client, "memory_recall", {"query": "trip", "mode": "keyword",
                                                            "since": "2 days ago"})
            assert ids["packed"] in recent and ids["lisbon"] not in recent
            then = await mcp_ok(client, "memory_recall", {"query": "trip", "mode": "keyword",
                                                          "as_of": "7 days ago"})
            assert ids["rome"] in then and ids["lisbon"] not in then
            message = await refused(client, "memory_recall", {"query": "trip",
                                                              "since": "the other day-ish"})
            assert "since: cannot read" in message

    run(scenario)


def test_the_rest_api_and_the_remote_client_take_the_time_filters(
        trips: tuple[Path, dict[str, str]]) -> None:
    import httpx

    from rest_server import problem, serving

    db, ids = trips
    with Memory.open(db, settings=QUICK.model_copy(update={"db": db})) as mem, \
            serving(mem) as url, Memory.open(url) as remote:
        hits = remote.recall("trip", mode="keyword", since="2 days ago")
        assert [h.memory.id for h in hits] == [ids["packed"]]
        assert [r.id for r in remote.list(as_of="7 days ago")] == [ids["rome"]]
        assert [r.id for r in remote.list(created_until=time.time() - 3 * DAY)] == [
            ids["lisbon"]]
        assert remote.count(created_since=time.time() - DAY) == 1
        page = httpx.get(f"{url}/v1/memories", params={"since": "2 days ago"}).json()
        assert _ids(page["memories"]) == [ids["packed"]]
        bad = httpx.post(f"{url}/v1/recall", json={"query": "trip", "until": "when pigs fly"})
        status, error, detail = problem(bad)
        assert (status, error) == (422, "InvalidInputError") and "when pigs fly" in detail

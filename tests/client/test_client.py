"""One client for local and remote: the same API-level tests run against a local ``Memory``, a
``RemoteMemory`` talking to a real server, and ``AsyncMemory`` over each; the CLI works
unchanged with ``CLAWMEM_URL`` and loads no model in its own process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clawmemory import InvalidInputError, Memory, MemoryAPI, NotFoundError, Settings
from clawmemory.client import AsyncMemory, RemoteMemory
from clawmemory.client.aio import ASYNC_METHODS
from rest_server import serving

QUICK = Settings(embedder={"provider": "none"})


@pytest.fixture(params=["local", "remote"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryAPI]:
    with Memory.open(tmp_path / "c.db", settings=QUICK) as local:
        if request.param == "local":
            yield local
            return
        with serving(local) as url, Memory.open(url) as remote:
            assert isinstance(remote, RemoteMemory)
            yield remote


def test_store_recall_correct_forget(mem: MemoryAPI) -> None:
    id_ = mem.store("User prefers dark mode", kind="preference", tags=["ui"], key="theme",
                    metadata={"app": "vim"})
    other = mem.store_many([{"content": "Deploys happen on Tuesdays", "kind": "event"}])[0]
    record = mem.get("theme")
    assert (record.id, record.kind, record.tags, dict(record.metadata)) == (
        id_, "preference", ("ui",), {"app": "vim"})
    hits = mem.recall("dark mode", mode="keyword")
    assert [h.memory.id for h in hits] == [id_]
    assert hits[0].explain.matched_terms == ("dark", "mode")
    assert "keyword[rank=1" in str(hits[0].explain)
    assert mem.count() == 2 and mem.count(kind="event") == 1
    assert [r.id for r in mem.list(order="oldest")] == [id_, other]
    assert [r.id for r in mem.search_by_metadata("app", "vim")] == [id_]
    assert mem.reinforce("theme").score == 3
    new = mem.correct("theme", "User prefers dark mode, except in the terminal", reason="asked")
    assert [r.id for r in mem.history(new.id)] == [id_, new.id]
    assert mem.link(new.id, other) and [r.id for r in mem.neighbors(other)] == [new.id]
    assert [(lk.other_id, lk.origin) for lk in mem.links(other)] == [(new.id, "manual")]
    assert mem.update(other, tags=["ops"]).tags == ("ops",)
    assert mem.forget(new.id).id == new.id
    with pytest.raises(NotFoundError, match="no memory with id or key"):
        mem.get(new.id)
    with pytest.raises(InvalidInputError, match="content is empty"):
        mem.store("")
    assert mem.stats()["total"] == 1


def test_narrative_and_task_provenance(mem: MemoryAPI) -> None:
    """003's narrative_id/task_id travel the same way locally and over HTTP."""
    quest = mem.store("The dragon sleeps under the mountain", narrative_id=7, task_id="t-1")
    other = mem.store_many([{"content": "The dragon hoards copper", "narrative_id": "8",
                             "task_id": "t-1"}])[0]
    turn = mem.observe("user", "I fed the dragon", "s-1", narrative_id=7, task_id=2)
    assert (mem.get(quest).narrative_id, mem.get(quest).task_id) == ("7", "t-1")
    assert (mem.get(turn).narrative_id, mem.get(turn).task_id) == ("7", "2")
    assert [r.id for r in mem.list(narrative_id=7, order="oldest")] == [quest, turn]
    assert mem.count(task_id="t-1") == 2 and mem.count(narrative_id="8", task_id="t-1") == 1
    assert [h.memory.id for h in mem.recall("dragon", mode="keyword", narrative_id="8")] == [
        other]
    assert mem.correct(quest, "The dragon sleeps under the lake").narrative_id == "7"


def test_namespaces_portability_and_maintenance(mem: MemoryAPI) -> None:
    mem.store("Caroline moved to Lisbon", key="move")
    snapshot = mem.export_snapshot()
    copy = mem.with_namespace("copy")
    assert dict(copy.import_snapshot(snapshot)) == {"created": 1, "skipped": 0, "links": 0}
    assert copy.get("move").namespace == "copy"
    assert sorted(e["name"] for e in copy.entities_of("move")) == ["Caroline", "Lisbon"]
    assert [r.key for r in copy.entity_info("Caroline")["memories"]] == ["move"]
    runs = mem.maintain("consolidate")
    assert [(r.job, r.outcome) for r in runs] == [("consolidate", "skipped")]
    assert [r.id for r in mem.runs()] == [r.id for r in runs]
    assert [p["job"] for p in mem.preview_maintenance("decay")] == ["decay"]
    assert mem.archived() == []
    episode = mem.observe("user", "I adopted a dog", "s-1")
    assert mem.get(episode).kind == "episode"
    assert copy.forget_namespace() == 1
    assert copy.count() == 0 and mem.count() == 2


def test_async_memory_runs_the_same_calls(mem: MemoryAPI) -> None:
    async def scenario() -> None:
        amem = AsyncMemory(mem)
        ids = await asyncio.gather(*(amem.store(f"note {i} about tea") for i in range(5)))
        assert len(set(ids)) == 5
        hits = await amem.recall("tea", mode="keyword", limit=10)
        assert {h.memory.id for h in hits} == set(ids)
        assert await amem.count() == 5
        with pytest.raises(NotFoundError):
            await amem.get("missing")

    asyncio.run(scenario())


def test_remote_and_async_offer_every_public_method() -> None:
    # Mutation testing (bench/mutation.py) adds its mutants as attributes named "x…__mutmut_N".
    public = {n for n in dir(Memory) if not n.startswith("_") and "__mutmut_" not in n
              and callable(getattr(Memory, n))}
    own = {n for n in vars(RemoteMemory) if not n.startswith("_") and "__mutmut_" not in n}
    # Every method is the remote one, none falls through to the local engine's code.
    assert public - own == {"open"}
    assert public - set(ASYNC_METHODS) - {"close"} == {"open"}


def test_the_cli_talks_to_a_server_without_loading_a_model(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "local"})
    with Memory.open(tmp_path / "s.db", settings=settings) as mem, serving(mem) as url:
        env = {**os.environ, "CLAWMEM_URL": url, "CLAWMEM_DB": str(tmp_path / "never.db")}
        probe = ("import sys, json\nfrom clawmemory.interfaces.cli import main\n"
                 "code = main(sys.argv[1:])\n"
                 "heavy = sorted(m for m in ('onnxruntime', 'torch', 'tokenizers', 'apsw')"
                 " if m in sys.modules)\n"
                 "sys.stderr.write('HEAVY ' + json.dumps(heavy) + '\\n')\nsys.exit(code)\n")

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-c", probe, *args], env=env,
                                  capture_output=True, text=True, timeout=120, check=False)

        added = run("--json", "add", "User prefers dark mode", "--key", "theme")
        assert added.returncode == 0, added.stderr
        recalled = run("--json", "recall", "dark mode")
        hits = json.loads(recalled.stdout)["hits"]
        assert [h["memory"]["key"] for h in hits] == ["theme"]
        for result in (added, recalled):
            assert "HEAVY []" in result.stderr, result.stderr
        assert mem.get("theme").content == "User prefers dark mode"
        assert not (tmp_path / "never.db").exists()
        refused = run("daemon")
        assert refused.returncode == 2
        assert "`clawmem daemon` works where the database is" in refused.stderr
        missing = run("get", "nope")
        assert missing.returncode == 1
        assert "error: no memory with id or key 'nope'" in missing.stderr



def test_every_memory_command_works_through_a_server(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clawmemory.interfaces.cli.app import app, register_extensions

    register_extensions(app)
    with Memory.open(tmp_path / "s.db", settings=QUICK) as mem, serving(mem) as url:

        def cli(*args: str) -> Any:
            result = CliRunner().invoke(app, ["--url", url, "--json", *args],
                                        catch_exceptions=False)
            assert result.exit_code == 0, (args, result.output)
            return json.loads(result.stdout) if result.stdout.strip() else None

        first = cli("add", "Caroline moved to Lisbon", "--key", "move", "--tag", "family")["id"]
        second = cli("add", "Caroline adopted a dog")["id"]
        assert [m["id"] for m in cli("list")["memories"]] == [second, first]
        assert cli("get", "move")["tags"] == ["family"]
        cli("update", "move", "--tags", "home")
        corrected = cli("correct", "move", "Caroline moved to Porto", "--reason", "typo")
        assert [r["id"] for r in cli("history", corrected["id"])["chain"]] == [
            first, corrected["id"]]
        cli("reinforce", corrected["id"])
        cli("link", corrected["id"], second)
        assert [n["id"] for n in cli("neighbors", second)] == [corrected["id"]]
        assert cli("entity", "Caroline")["name"] == "Caroline"
        assert cli("stats")["total"] == 2
        snapshot = tmp_path / "snap.json"
        cli("export", "--out", str(snapshot))
        assert cli("-n", "copy", "import", str(snapshot))["created"] == 3
        assert [r["job"] for r in cli("maintain", "decay")["runs"]] == ["decay"]
        assert [r["job"] for r in cli("runs")["runs"]] == ["decay"]
        assert cli("maintain", "decay", "--dry-run")["dry_run"] is True
        assert cli("forget", second)["id"] == second
        assert mem.count() == 1 and mem.with_namespace("copy").count(include_invalid=True) == 3
        refused = CliRunner().invoke(app, ["--url", url, "export", "--format", "markdown",
                                           "--out", str(tmp_path / "md")])
        assert refused.exit_code == 2 and "works where the database is" in refused.stderr

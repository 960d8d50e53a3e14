"""The ``clawmem`` command line, run as the real installed console script in subprocesses.

Each database is seeded in-process through ``Memory`` (fast) and inspected the same way, so
every subprocess exercises exactly one command. Subprocesses cost ~0.5 s each: the refusal
cases run concurrently, each on its own database.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, NotFoundError

CLAWMEM = Path(sys.executable).parent / "clawmem"

SEED: tuple[dict[str, Any], ...] = (
    {"content": "User prefers dark mode in every editor", "kind": "preference",
     "tags": ["ui"], "key": "theme"},
    {"content": "Payment API: the HMAC signature excludes an empty body", "key": "hmac-rule",
     "tags": ["api", "security"], "metadata": {"team": "payments"}, "session_id": "s1"},
    {"content": "The staging database is reset every Monday", "tags": ["ops"],
     "key": "staging-reset"},
)
EVERY_SEED_TERM = "HMAC editor staging"  # matches all three seeded memories


def _hermetic(mp: pytest.MonkeyPatch, home: Path) -> None:
    """No user config or home leaks in, and no embedding model is loaded (that takes seconds
    per process). Subprocesses inherit this environment."""
    for name in list(os.environ):
        if name.startswith("CLAWMEM_"):
            mp.delenv(name)
    mp.setenv("CLAWMEM_HOME", str(home))
    mp.setenv("CLAWMEM_CONFIG", str(home / "absent.toml"))
    mp.setenv("CLAWMEM_EMBEDDER__PROVIDER", "none")
    mp.setenv("CLAWMEM_LOG_LEVEL", "ERROR")
    mp.setenv("COLUMNS", "200")  # rich tables: fewer wrapped cells to search through


@pytest.fixture(autouse=True)
def _hermetic_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
                  ) -> None:
    _hermetic(monkeypatch, tmp_path_factory.mktemp("home"))


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def clawmem(*args: str | Path, cwd: Path, stdin: str | bytes | None = None,
            env: Mapping[str, str] | None = None) -> Result:
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    proc = subprocess.run(
        [str(CLAWMEM), *map(str, args)], input=data, capture_output=True, cwd=cwd,
        env={**os.environ, **(env or {})}, timeout=120, check=False,
    )
    return Result(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8"))


def ok(result: Result) -> Result:
    assert result.rc == 0, result.err
    assert "Traceback" not in result.err
    return result


def seed(db: Path, namespace: str = "default") -> dict[str, str]:
    """Store SEED; return key -> id."""
    with Memory.open(db, namespace=namespace) as mem:
        return {item["key"]: mem.store(**item) for item in SEED}


def records(db: Path, namespace: str = "default") -> list[dict[str, Any]]:
    with Memory.open(db, namespace=namespace) as mem:
        return [r.to_dict() for r in mem.list(include_invalid=True, limit=10_000, order="oldest")]


def hit_ids(result: Result) -> list[str]:
    return [hit["memory"]["id"] for hit in ok(result).json()["hits"]]


# --- writing --------------------------------------------------------------------------------------
def test_add_stores_every_option_and_prints_the_id(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    added = ok(clawmem(
        "--db", db, "--json", "add", "Payment API: HMAC excludes the body", "--key", "hmac-rule",
        "--kind", "knowledge", "--tag", "api", "--tags", "security, billing",
        "--meta", "team=payments", "--meta", "ticket=PAY=1", "--session", "s1",
        "--source", "agent", "--event-time", "2024-03-02T10:00:00Z", cwd=tmp_path)).json()
    piped = ok(clawmem("--db", db, "add", "-", "--kind", "preference", cwd=tmp_path,
                       stdin="typed on stdin\n"))

    assert added["key"] == "hmac-rule"
    assert re.fullmatch(r"[0-9a-f]{16}", piped.out.strip())  # human output: just the id
    with Memory.open(db) as mem:
        first = mem.get("hmac-rule")
        second = mem.get(piped.out.strip())
    assert first.id == added["id"]
    assert first.kind == "fact"  # knowledge is an alias
    assert first.tags == ("api", "security", "billing")
    assert first.metadata == {"team": "payments", "ticket": "PAY=1"}
    assert (first.session_id, first.source) == ("s1", "agent")
    assert first.event_time == datetime(2024, 3, 2, 10, tzinfo=UTC).timestamp()
    assert (second.content, second.kind) == ("typed on stdin", "preference")


def test_narrative_and_task_options_store_and_filter(tmp_path: Path) -> None:
    """003's narrative_id/task_id: clawmem add --narrative/--task sets them; list and recall
    keep to them; get shows them."""
    db = tmp_path / "m.db"
    quest = ok(clawmem("--db", db, "--json", "add", "The dragon sleeps under the mountain",
                       "--narrative", "7", "--task", "t-1", cwd=tmp_path)).json()["id"]
    with Memory.open(db) as mem:
        other = mem.store("The dragon hoards copper", narrative_id=8, task_id="t-1")
        assert (mem.get(quest).narrative_id, mem.get(quest).task_id) == ("7", "t-1")
    listed = ok(clawmem("--db", db, "--json", "list", "--narrative", "7", cwd=tmp_path)).json()
    assert [m["id"] for m in listed["memories"]] == [quest]
    assert hit_ids(clawmem("--db", db, "--json", "recall", "dragon", "--mode", "keyword",
                           "--task", "t-1", "--narrative", "8", cwd=tmp_path)) == [other]
    shown = ok(clawmem("--db", db, "get", quest, cwd=tmp_path)).out
    assert "narrative_id" in shown and "t-1" in shown


def test_update_changes_content_tags_kind_and_key_in_place(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = seed(db)
    updated = ok(clawmem("--db", db, "--json", "update", "hmac-rule", "--content", "HMAC v2",
                         "--tags", "api,v2", "--kind", "event", "--key", "hmac-v2",
                         cwd=tmp_path)).json()
    assert updated["id"] == ids["hmac-rule"]
    with Memory.open(db) as mem:
        record = mem.get("hmac-v2")
    assert (record.id, record.content, record.kind, record.tags) == (
        ids["hmac-rule"], "HMAC v2", "event", ("api", "v2"))


def test_forget_one_then_the_whole_namespace(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = seed(db)
    seed(db, namespace="other")

    forgot = ok(clawmem("--db", db, "--json", "forget", "hmac-rule", cwd=tmp_path)).json()
    assert forgot == {"deleted": 1, "id": ids["hmac-rule"], "key": "hmac-rule", "versions": [],
                      "derived": [], "reopened_sessions": []}
    with Memory.open(db) as mem, pytest.raises(NotFoundError):
        mem.get(ids["hmac-rule"])

    declined = clawmem("--db", db, "forget", "--all", cwd=tmp_path, stdin="n\n")
    assert declined.rc == 1
    assert declined.err.splitlines()[-1] == "error: aborted; nothing was deleted"
    assert len(records(db)) == 2

    everything = ok(clawmem("--db", db, "--json", "forget", "--all", "--yes", cwd=tmp_path))
    assert everything.json() == {"deleted": 2, "namespace": "default"}
    assert records(db) == []
    assert len(records(db, namespace="other")) == 3  # another tenant is untouched


# --- reading --------------------------------------------------------------------------------------
def test_recall_passes_every_filter_and_explains(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = seed(db)
    filtered = clawmem("--db", db, "--json", "recall", EVERY_SEED_TERM, "--kind", "fact",
                       "--tag", "api", "--meta", "team=payments", "--session", "s1",
                       cwd=tmp_path)
    limited = clawmem("--db", db, "--json", "recall", EVERY_SEED_TERM, "--limit", "1",
                      "--kind", "preference", cwd=tmp_path)
    human = ok(clawmem("--db", db, "recall", EVERY_SEED_TERM, "--explain", cwd=tmp_path))

    assert hit_ids(filtered) == [ids["hmac-rule"]]
    assert hit_ids(limited) == [ids["theme"]]
    hit = filtered.json()["hits"][0]
    assert hit["score"] > 0
    assert "hmac" in hit["explain"]["matched_terms"]  # JSON always carries the explanation
    assert filtered.json()["query"] == EVERY_SEED_TERM
    for memory_id in ids.values():
        assert memory_id in human.out
    assert human.out.count("why: matched") == 3


def test_get_by_key_or_id(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = seed(db)
    as_json = ok(clawmem("--db", db, "--json", "get", "hmac-rule", cwd=tmp_path)).json()
    human = ok(clawmem("--db", db, "get", ids["hmac-rule"], cwd=tmp_path))
    assert as_json["id"] == ids["hmac-rule"]
    assert as_json["metadata"] == {"team": "payments"}
    assert "hmac-rule" in human.out
    assert '{"team": "payments"}' in human.out


def test_list_filters_orders_and_pages(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = seed(db)
    paged = ok(clawmem("--db", db, "--json", "list", "--order", "oldest", "--limit", "2",
                       "--offset", "1", cwd=tmp_path)).json()
    filtered = ok(clawmem("--db", db, "--json", "list", "--kind", "fact", "--tag", "ops",
                          cwd=tmp_path)).json()
    human = ok(clawmem("--db", db, "list", "--meta", "team=payments", cwd=tmp_path))

    assert [m["id"] for m in paged["memories"]] == [ids["hmac-rule"], ids["staging-reset"]]
    assert (paged["count"], paged["offset"]) == (2, 1)
    assert [m["id"] for m in filtered["memories"]] == [ids["staging-reset"]]
    assert ids["hmac-rule"] in human.out
    assert ids["theme"] not in human.out


def test_stats(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    seed(db)
    stats = ok(clawmem("--db", db, "--json", "stats", cwd=tmp_path)).json()
    human = ok(clawmem("--db", db, "stats", cwd=tmp_path))
    assert (stats["total"], stats["namespace"]) == (3, "default")
    assert stats["by_kind"] == {"fact": 2, "preference": 1}
    assert re.search(r"total\s+3", human.out)


# --- feedback and correction ----------------------------------------------------------------------
def test_reinforce_demote_confirm_correct_history(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    ids = seed(db)
    old = ids["hmac-rule"]

    def run(*args: str) -> Any:
        return ok(clawmem("--db", db, "--json", *args, cwd=tmp_path)).json()

    assert run("reinforce", "hmac-rule")["score"] == 3
    assert run("demote", old, "--weight", "2")["score"] == 1
    assert run("confirm", "hmac-rule")["decay_rate"] == 0.0
    new = run("correct", "hmac-rule", "HMAC covers the raw body", "--reason", "API v2")
    assert (new["supersedes"], new["key"]) == (old, "hmac-rule")
    assert new["metadata"]["correction_reason"] == "API v2"
    chain = run("history", "hmac-rule")["chain"]
    assert [r["id"] for r in chain] == [old, new["id"]]
    assert chain[0]["valid_until"] is not None
    recalled = run("recall", "HMAC", "--include-invalid")["hits"]
    assert {old, new["id"]} <= {h["memory"]["id"] for h in recalled}


# --- portability ----------------------------------------------------------------------------------
def test_export_import_round_trip(tmp_path: Path) -> None:
    src, dst, snap = tmp_path / "src.db", tmp_path / "dst.db", tmp_path / "snap.json"
    seed(src)
    to_stdout = ok(clawmem("--db", src, "export", cwd=tmp_path)).json()
    written = ok(clawmem("--db", src, "--json", "export", "--out", snap, "--format", "json",
                         cwd=tmp_path)).json()
    dry = ok(clawmem("--db", dst, "--json", "import", snap, "--dry-run", cwd=tmp_path)).json()
    assert records(dst) == []
    real = ok(clawmem("--db", dst, "--json", "import", snap, cwd=tmp_path)).json()
    again = ok(clawmem("--db", dst, "import", "-", cwd=tmp_path, stdin=snap.read_text()))

    assert len(to_stdout["entries"]) == 3
    assert written == {"path": str(snap), "format": "json", "entries": 3}
    assert json.loads(snap.read_text())["entries"] == to_stdout["entries"]
    assert (dry["created"], dry["dry_run"]) == (3, True)
    assert (real["created"], real["skipped"], real["dry_run"]) == (3, 0, False)
    assert "imported 0 memories (3 skipped" in again.out
    def but_arrival(db: Path) -> list[dict[str, Any]]:  # arrival in each store is its own
        return [{k: v for k, v in r.items() if k != "stored_at"} for r in records(db)]

    assert but_arrival(dst) == but_arrival(src)
    assert all(r["stored_at"] > r["updated_at"] for r in records(dst))  # arrived at import


# --- global options and environment ---------------------------------------------------------------
def test_global_options_and_environment(tmp_path: Path) -> None:
    db, jsondb = tmp_path / "m.db", tmp_path / "m.json"
    added = ok(clawmem("--db", db, "--namespace", "work", "--json", "add", "in work",
                       cwd=tmp_path)).json()
    listed = ok(clawmem("--json", "list", cwd=tmp_path,
                        env={"CLAWMEM_DB": str(db), "CLAWMEM_NAMESPACE": "work"})).json()
    assert [m["id"] for m in listed["memories"]] == [added["id"]]
    assert records(db) == []  # the default namespace saw nothing

    ok(clawmem("--db", jsondb, "add", "kept in a JSON file", cwd=tmp_path,
               env={"CLAWMEM_BACKEND": "json"}))
    stats = ok(clawmem("--db", jsondb, "--backend", "json", "--json", "stats",
                       cwd=tmp_path)).json()
    assert (stats["backend"], stats["total"]) == ("json", 1)
    assert "kept in a JSON file" in jsondb.read_text()

    light = subprocess.run(
        [sys.executable, "-c", "import sys, clawmemory; "
         "print(sorted(m for m in ('typer', 'rich', 'click') if m in sys.modules))"],
        capture_output=True, text=True, check=True)
    assert light.stdout.strip() == "[]"  # the CLI's dependencies load only with the CLI


def test_help_version_and_examples(tmp_path: Path) -> None:
    from typer.main import get_command

    from clawmemory.interfaces.cli.app import app, register_extensions

    top = ok(clawmem("--help", cwd=tmp_path)).out
    add_help = ok(clawmem("add", "--help", cwd=tmp_path)).out
    version = ok(clawmem("--version", cwd=tmp_path)).out
    register_extensions(app)  # what main() does: the cli_* modules add their commands
    commands = get_command(app).commands  # type: ignore[attr-defined]
    assert set(commands) >= {"add", "recall", "get", "list", "update", "forget", "stats",
                             "export", "import", "reinforce", "demote", "correct", "confirm",
                             "history", "demo"}
    for name, command in commands.items():
        assert re.search(rf"^\W+{name}\s", top, re.M), f"'clawmem --help' lacks {name}"
        assert "Example: clawmem" in (command.help or ""), name
    assert "Example: clawmem add" in add_help
    assert version.startswith("clawmem ")


def test_each_command_module_is_loaded_when_its_command_runs() -> None:
    """``app.COMMANDS`` names exactly the commands each module registers (the group imports a
    module by that table), and ``--version`` or one command loads no other command module."""
    import importlib

    import typer

    from clawmemory.interfaces.cli.app import COMMANDS

    for module, names in COMMANDS.items():
        target = typer.Typer()
        importlib.import_module(f"clawmemory.interfaces.cli.{module}").register(target)
        registered = [c.name for c in target.registered_commands]
        registered += [g.name for g in target.registered_groups]
        assert tuple(registered) == names, module
    probe = ("import sys\nfrom clawmemory.interfaces.cli import main\nmain(sys.argv[1:])\n"
             "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules"
             " if m.startswith('clawmemory.interfaces.cli.')))\n"
             "print('pydantic_settings' in sys.modules)\n")
    version = subprocess.run([sys.executable, "-c", probe, "--version"], capture_output=True,
                             text=True, check=True, timeout=120).stdout.splitlines()
    assert version[1:] == ["['app', 'argv', 'base']", "False"]
    listed = subprocess.run([sys.executable, "-c", probe, "--help"], capture_output=True,
                            text=True, check=True, timeout=120).stdout
    assert "'serving'" in listed  # --help lists every command, so it loads every module
    stats = subprocess.run([sys.executable, "-c", probe, "--backend", "memory", "stats"],
                           capture_output=True, text=True, check=True, timeout=120).stdout
    loaded = set(eval(stats.splitlines()[-2]))  # memories imports retrieval's catch-up
    assert "memories" in loaded and not loaded & (set(COMMANDS) - {"memories", "retrieval"})


def test_demo_runs_on_a_temporary_database(tmp_path: Path) -> None:
    mine = tmp_path / "mine.db"
    human = ok(clawmem("--db", mine, "demo", cwd=tmp_path))
    report = ok(clawmem("--json", "demo", cwd=tmp_path)).json()
    for step in ("1. store", "2. recall", "why: matched", "3. reinforce", "4. forget",
                 "no memory with id or key 'hmac-rule'"):
        assert step in human.out
    assert report["gone"] is True
    assert report["reinforced"]["score"] == 3
    assert report["remaining"] == len(report["stored"]) - 1
    assert report["recall"]["hits"][0]["explain"]["matched_terms"]
    assert not mine.exists()  # the demo never touches --db


# --- refusals: one line on stderr, an exit code, nothing changed ----------------------------------
@dataclass(frozen=True)
class Bad:
    args: tuple[str, ...]
    code: int
    message: str  # a regular expression the error line must contain
    stdin: str | bytes | None = None
    env: Mapping[str, str] = field(default_factory=dict)


BAD_INPUT: dict[str, Bad] = {
    "empty content": Bad(("add", ""), 2, "content is empty"),
    "oversized content": Bad(("add", "-"), 2, "the limit is 100,000", stdin="x" * 100_001),
    "NUL byte": Bad(("add", "-"), 2, "NUL byte", stdin="a\x00b"),
    "not UTF-8 on stdin": Bad(("add", "-"), 2, "not UTF-8", stdin=b"\xff\xfe"),
    "unknown kind": Bad(("add", "x", "--kind", "bogus"), 2, "unknown kind 'bogus'"),
    "bad --meta": Bad(("recall", "x", "--meta", "novalue"), 2, "KEY=VALUE"),
    "bad event time": Bad(("add", "x", "--event-time", "soonish"), 2, "ISO-8601"),
    "unknown key": Bad(("get", "nope"), 1,
                       "no memory with id or key 'nope' in namespace 'default'"),
    "unknown key, json": Bad(("--json", "get", "nope"), 1, "no memory with id or key 'nope'"),
    "forget unknown": Bad(("forget", "nope"), 1, "no memory with id or key 'nope'"),
    "reinforce unknown": Bad(("reinforce", "nope"), 1, "no memory"),
    "update nothing": Bad(("update", "theme"), 2, "nothing to update"),
    "update key clash": Bad(("update", "theme", "--key", "hmac-rule"), 2, "already used"),
    "correct empty": Bad(("correct", "theme", ""), 2, "content is empty"),
    "forget id and --all": Bad(("forget", "theme", "--all"), 2, "either"),
    "forget nothing": Bad(("forget",), 2, "either"),
    "bad order": Bad(("list", "--order", "sideways"), 2, "order must be one of"),
    "bad limit": Bad(("list", "--limit", "0"), 2, "limit must be a positive integer"),
    "empty namespace": Bad(("--namespace", " ", "list"), 2, "namespace"),
    "unknown option": Bad(("list", "--bogus"), 2, "No such option: --bogus"),
    "missing argument": Bad(("recall",), 2, "Missing argument 'QUERY'"),
    "unknown backend": Bad(("--backend", "bogus", "list"), 2, "--backend"),
    "unknown backend, env": Bad(("list",), 2, "CLAWMEM_BACKEND",
                                env={"CLAWMEM_BACKEND": "bogus"}),
    "unknown backend, config file": Bad(("list",), 2, "invalid setting backend .*: unknown"
                                        " backend 'sqlite3'; use one of: sqlite, memory,"
                                        " json, postgres, none",
                                        env={"CLAWMEM_CONFIG": "backend.toml"}),
    "unknown export format": Bad(("export", "--format", "xml"), 2, "--format"),
    "export to a bad path": Bad(("export", "--out", "no/such/dir/x.json"), 2, "cannot write"),
    "malformed config file": Bad(("list",), 2, "cannot read config file",
                                 env={"CLAWMEM_CONFIG": "bad.toml"}),
    "invalid config value": Bad(("list",), 2, "storage.max_content_chars",
                                env={"CLAWMEM_STORAGE__MAX_CONTENT_CHARS": "lots"}),
    "import missing file": Bad(("import", "missing.json"), 2, "missing.json: cannot read"),
    "import a directory": Bad(("import", "."), 2, ".: cannot read"),
    "import binary file": Bad(("import", "binary.json"), 2, r"binary\.json\b.*not UTF-8"),
    "import corrupt JSON": Bad(("import", "corrupt.json"), 2, "corrupt.json:2: not valid JSON"),
    "import not a snapshot": Bad(("import", "-"), 2, "not a snapshot", stdin='"hello"'),
    # the first entry is fine, the second is not: nothing at all is imported
    "import half-bad": Bad(("import", "half.json"), 2, "half.json: entry 1: content is empty"),
}


def _prepare(workdir: Path) -> None:
    (workdir / "bad.toml").write_text("this is = = not toml\n")
    (workdir / "backend.toml").write_text('backend = "sqlite3"\n')
    (workdir / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (workdir / "corrupt.json").write_text('{"entries": [\n')
    (workdir / "half.json").write_text(json.dumps(
        {"entries": [{"content": "a good entry", "key": "good"}, {"content": ""}]}))


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Result, bool]]:
    """Run every BAD_INPUT case on its own seeded database, four at a time; for each, the
    result and whether the database was left exactly as it was."""
    root = tmp_path_factory.mktemp("refusals")
    with pytest.MonkeyPatch.context() as mp:
        _hermetic(mp, root / "home")
        return _refuse_all(root)


def _refuse_all(root: Path) -> dict[str, tuple[Result, bool]]:
    _prepare(root)
    dbs = {name: root / f"case{n}.db" for n, name in enumerate(BAD_INPUT)}
    for db in dbs.values():
        seed(db)
    before = {name: records(db) for name, db in dbs.items()}

    def run(name: str) -> Result:
        case = BAD_INPUT[name]
        return clawmem("--db", dbs[name], *case.args, cwd=root, stdin=case.stdin, env=case.env)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = dict(zip(BAD_INPUT, pool.map(run, BAD_INPUT), strict=True))
    return {name: (results[name], records(dbs[name]) == before[name]) for name in BAD_INPUT}


@pytest.mark.parametrize("name", list(BAD_INPUT))
def test_bad_input_is_refused_with_one_line_and_changes_nothing(
        name: str, refusals: dict[str, tuple[Result, bool]]) -> None:
    case = BAD_INPUT[name]
    result, unchanged = refusals[name]
    lines = result.err.splitlines()
    assert result.rc == case.code, result.err
    assert len(lines) == 1, result.err
    assert lines[0].startswith("error: ")
    assert re.search(case.message, lines[0]), lines[0]
    assert "Traceback" not in result.err
    assert result.out == ""
    assert unchanged


# --- unexpected exceptions (in-process: a bug cannot be provoked from outside) --------------------
def test_internal_error_is_one_line_with_a_debug_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from clawmemory.interfaces import cli

    def broken(*args: object, **kwargs: object) -> Memory:
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(Memory, "open", broken)
    argv = ["--db", str(tmp_path / "m.db"), "list"]
    assert cli.main(argv) == cli.EXIT_INTERNAL
    err = capsys.readouterr().err.splitlines()
    assert err == ["error: internal error: ZeroDivisionError: simulated bug"
                   " (rerun with CLAWMEM_DEBUG=1 for the traceback)"]

    monkeypatch.setenv("CLAWMEM_DEBUG", "1")
    assert cli.main(argv) == cli.EXIT_INTERNAL
    debug = capsys.readouterr().err
    assert "Traceback" in debug
    assert debug.splitlines()[-1].startswith("error: internal error: ZeroDivisionError")

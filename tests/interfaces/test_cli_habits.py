"""The command line's habits: global options anywhere on the line, plain format names (older
names still accepted), help that speaks the user's words. Run through the installed
``clawmem`` in a subprocess, as a user runs it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory
from clawmemory.interfaces.cli.app import main

CLAWMEM = Path(sys.executable).parent / "clawmem"


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("CLAWMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CLAWMEM_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAWMEM_EMBEDDER__PROVIDER", "none")
    monkeypatch.setenv("COLUMNS", "200")


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(CLAWMEM), *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, check=False)


def ok_json(*args: str | Path, cwd: Path) -> Any:
    result = run(*args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# --- global options anywhere ---------------------------------------------------------------------
def test_global_options_after_the_command_act_as_before_it(tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    after = ok_json("add", "tea at noon", "--db", db, "--json", "-n", "work", cwd=tmp_path)
    before = ok_json("--db", db, "--json", "--namespace", "work", "add", "coffee at nine",
                     cwd=tmp_path)
    mixed = ok_json("--json", "recall", "tea", f"--db={db}", "--namespace", "work",
                    cwd=tmp_path)
    assert [h["memory"]["id"] for h in mixed["hits"]] == [after["id"]]
    assert mixed["namespace"] == "work"
    with Memory.open(db, namespace="work") as mem:
        assert sorted(r.id for r in mem.list()) == sorted([after["id"], before["id"]])
    with Memory.open(db) as mem:
        assert mem.count() == 0  # nothing leaked into the default namespace
    # the home database was never created: --db after the command was honoured every time
    assert not (tmp_path / "home" / "memory.db").exists()


def test_an_unknown_option_after_the_command_is_still_a_usage_error(tmp_path: Path) -> None:
    result = run("recall", "x", "--jsn", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("error: No such option: --jsn")


def test_a_commands_own_option_and_option_values_stay_with_the_command(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    # keys create has its own --namespace: it names the key's namespace, not the global one
    key = ok_json("keys", "create", "--namespace", "alice", "--db", db, "--json", cwd=tmp_path)
    assert key["namespaces"] == ["alice"]
    # "--json" right after --key is the key's value; the later --json is the global one
    added = ok_json("add", "odd key", "--key", "--json", "--db", db, "--json", cwd=tmp_path)
    assert added["key"] == "--json"
    # after "--" nothing is an option: the text is stored as given
    stored = ok_json("--db", db, "--json", "add", "--", "--db elsewhere", cwd=tmp_path)
    with Memory.open(db) as mem:
        assert mem.get(stored["id"]).content == "--db elsewhere"


def test_the_last_of_a_repeated_global_option_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    ok_json("--db", first, "add", "where am I", "--db", second, "--json", cwd=tmp_path)
    assert not first.exists()
    with Memory.open(second) as mem:
        assert [r.content for r in mem.list()] == ["where am I"]


# --- plain format names --------------------------------------------------------------------------
def _snapshot(tmp_path: Path) -> Path:
    db = tmp_path / "src.db"
    with Memory.open(db) as mem:
        mem.store("the snapshot's memory", key="snap")
    out = tmp_path / "backup.json"
    assert run("--db", db, "export", "--out", out, cwd=tmp_path).returncode == 0
    return out


@pytest.mark.parametrize("name", ["json", "ptrclaw", "ptrclaw-json", "PTRCLAW-JSON"])
def test_a_json_snapshot_imports_under_its_plain_and_old_names(tmp_path: Path, name: str) -> None:
    snapshot = _snapshot(tmp_path)
    report = ok_json("import", snapshot, "--from", name, "--db", tmp_path / "to.db", "--json",
                     cwd=tmp_path)
    # the report names the format as given (an old name reads exactly as it always did)
    assert (report["created"], report["format"]) == (1, name.lower())


def test_devclaw_reads_a_notes_folder_or_its_database_by_what_the_path_is(
        tmp_path: Path) -> None:
    notes = tmp_path / "data" / "memory" / "knowledge"
    notes.mkdir(parents=True)
    (notes / "tabs.md").write_text("---\nid: n1\ncategory: knowledge\n---\nTabs are 4 wide\n",
                                   encoding="utf-8")
    md = ok_json("import", tmp_path / "data" / "memory", "--from", "devclaw", "--dry-run",
                 "--json", "--db", tmp_path / "to.db", cwd=tmp_path)
    old = ok_json("import", tmp_path / "data" / "memory", "--from", "devclaw-md", "--dry-run",
                  "--json", "--db", tmp_path / "to.db", cwd=tmp_path)
    assert md["created"] == old["created"] == 1
    not_sqlite = tmp_path / "memory.db"
    not_sqlite.write_text("not a database", encoding="utf-8")
    refused = run("import", not_sqlite, "--from", "devclaw", "--db", tmp_path / "to.db",
                  cwd=tmp_path)
    assert refused.returncode == 2  # read as notes, which it is not either: one clear line
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1


def test_an_unknown_format_lists_the_plain_names(tmp_path: Path) -> None:
    result = run("import", "x.json", "--from", "nope", cwd=tmp_path)
    assert result.returncode == 2
    assert "json, ptrclaw, devclaw, openclaw, sclaw, sandbox, koshi, mem0, chatgpt, claude" \
        in result.stderr


# --- help in the user's words --------------------------------------------------------------------
def _commands() -> list[list[str]]:
    from typer.main import get_command

    from clawmemory.interfaces.cli.app import app, register_extensions

    register_extensions(app)
    root: Any = get_command(app)
    paths: list[list[str]] = [[]]
    for name, command in root.commands.items():
        subs = getattr(command, "commands", None)
        paths += [[name, sub] for sub in subs] if subs else [[name]]
    return paths


def _help(path: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """``clawmem PATH --help`` in-process (the same app and help text as the installed
    script, test_docs.py checks that; a process per command cost most of a minute)."""
    capsys.readouterr()
    assert main([*path, "--help"]) == 0
    return capsys.readouterr().out


def test_no_help_text_speaks_of_specification_numbers(
        capsys: pytest.CaptureFixture[str]) -> None:
    offenders = {}
    for path in _commands():
        text = _help(path, capsys)
        found = re.findall(r"\b00[0-4]\b|ptrclaw-json|sclaw-db\b|\bspec\b", text)
        # the import help names the older format names once, as aliases: allowed there only
        if path == ["import"]:
            text = text.split("Older names still accepted")[0]
            found = re.findall(r"\b00[0-4]\b|ptrclaw-json|sclaw-db\b|\bspec\b", text)
        if found:
            offenders[" ".join(path)] = found
    assert offenders == {}
    import_help = _help(["import"], capsys)
    assert "json, ptrclaw, devclaw, openclaw, sclaw, sandbox, koshi, mem0, chatgpt, claude" \
        in " ".join(import_help.split()).replace("│", "").replace("  ", " ")

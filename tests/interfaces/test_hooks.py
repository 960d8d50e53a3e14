"""``clawmem hooks``: Claude Code's hook payloads replayed through the real command.

The payloads and the transcript are built here in the shapes Claude Code's hooks reference and
its session files have (common fields ``session_id``, ``transcript_path``, ``cwd``,
``permission_mode``, ``hook_event_name``; per event ``source``, ``prompt``,
``stop_hook_active``, ``trigger``/``custom_instructions``, ``reason``; transcript lines of type
user/assistant with ``message.content`` a string or a list of text, thinking, tool_use and
tool_result blocks, plus system, summary and file-history entries). Each goes through
``clawmem hooks run EVENT`` in a subprocess, against a real local file and against a real
server (``rest_server.serving``, with ``--url``), and what was stored is read back through
``Memory``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer

from clawmemory import Memory
from clawmemory.errors import InvalidInputError
from clawmemory.hooks.claude_code import (
    MAX_ENTRY_CHARS,
    Recalled,
    context_block,
    merge_settings,
    read_turns,
)
from clawmemory.interfaces.cli import hookrun
from clawmemory.interfaces.cli.app import app
from clawmemory.text import CONTEXT_CLOSE, CONTEXT_OPEN
from rest_server import serving

CLAWMEM = Path(sys.executable).parent / "clawmem"
PROJECT = "payments-api"


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user config, home or settings file leaks in or out; no embedding model is loaded.
    Subprocesses inherit this environment."""
    for name in list(os.environ):
        if name.startswith("CLAWMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAWMEM_HOME", str(tmp_path / "clawmem-home"))
    monkeypatch.setenv("CLAWMEM_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.setenv("CLAWMEM_EMBEDDER__PROVIDER", "none")
    monkeypatch.setenv("CLAWMEM_LOG_LEVEL", "ERROR")


@dataclass(frozen=True)
class Result:
    rc: int
    out: str
    err: str


def clawmem(*args: str | Path, stdin: str = "", cwd: Path) -> Result:
    proc = subprocess.run([str(CLAWMEM), *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd, timeout=120, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


# --- recorded shapes ----------------------------------------------------------------------------
def payload(event: str, session: str, transcript: Path, cwd: Path, **extra: Any) -> str:
    return json.dumps({"session_id": session, "transcript_path": str(transcript),
                       "cwd": str(cwd), "permission_mode": "default",
                       "hook_event_name": event, **extra})


def _entry(kind: str, content: Any, session: str, n: int, **extra: Any) -> dict[str, Any]:
    return {"parentUuid": f"{session}-{n - 1}" if n else None, "isSidechain": False,
            "userType": "external", "cwd": f"/home/you/{PROJECT}", "sessionId": session,
            "version": "2.0.14", "gitBranch": "main", "type": kind,
            "message": {"role": kind, "content": content}, "uuid": f"{session}-{n}",
            "timestamp": f"2026-03-0{1 + n % 9}T10:00:00.000Z", **extra}


def user(text: Any, session: str, n: int, **extra: Any) -> dict[str, Any]:
    return _entry("user", text, session, n, **extra)


def assistant(blocks: list[dict[str, Any]], session: str, n: int) -> dict[str, Any]:
    entry = _entry("assistant", blocks, session, n, requestId=f"req_{n}")
    entry["message"].update(id=f"msg_{n}", model="claude-sonnet-4-5", type="message",
                            stop_reason="end_turn", usage={"input_tokens": 10,
                                                           "output_tokens": 5})
    return entry


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def first_session(s: str) -> list[dict[str, Any]]:
    """Session one, first half: a prompt carrying an injected block, a response split around
    a tool call, the tool's result, and entries that are not turns."""
    return [
        {"type": "summary", "summary": "Staging setup", "leafUuid": f"{s}-0"},
        user(f"{CONTEXT_OPEN}\n- [user] an older memory that must not be stored again\n"
             f"{CONTEXT_CLOSE}\n\nThe {PROJECT} staging database is Postgres 16 on port 5433.",
             s, 0),
        assistant([{"type": "thinking", "thinking": "secret reasoning", "signature": "x"},
                    text("Noted: staging Postgres listens on 5433.")], s, 1),
        assistant([{"type": "tool_use", "id": "toolu_01", "name": "Bash",
                    "input": {"command": "cat .env.staging"}}], s, 2),
        user([{"tool_use_id": "toolu_01", "type": "tool_result",
               "content": "DB_PASSWORD=hunter2"}], s, 3,
             toolUseResult={"stdout": "DB_PASSWORD=hunter2", "stderr": ""}),
        assistant([text("The .env.staging file agrees.")], s, 4),
        {"type": "system", "subtype": "stop_hook_summary", "hookCount": 1, "uuid": f"{s}-5",
         "content": "Stop hook ran"},
        {"type": "file-history-snapshot", "messageId": f"{s}-4", "snapshot": {}},
    ]


def second_half(s: str) -> list[dict[str, Any]]:
    return [
        user("Caveat: the messages below were generated by the user while running local"
             " commands.", s, 6, isMeta=True),
        user("<command-name>/clear</command-name>\n<command-message>clear</command-message>",
             s, 7),
        user([text("Deploys to staging need the VPN profile 'ops-eu'.")], s, 8),
        assistant([text("Understood: deploys go through the ops-eu VPN profile.")], s, 9),
        user("subagent prompt", s, 10, isSidechain=True),
        user(f"<user-prompt-submit-hook>{CONTEXT_OPEN}\n- [user] recalled\n{CONTEXT_CLOSE}"
             "</user-prompt-submit-hook>", s, 11, isMeta=False),
    ]


EXPECTED_FIRST = [
    ("user", f"The {PROJECT} staging database is Postgres 16 on port 5433."),
    ("assistant", "Noted: staging Postgres listens on 5433.\n\nThe .env.staging file agrees."),
    ("user", "Deploys to staging need the VPN profile 'ops-eu'."),
    ("assistant", "Understood: deploys go through the ops-eu VPN profile."),
]


def write_lines(path: Path, entries: Sequence[dict[str, Any]], *, append: bool = False) -> None:
    with path.open("a" if append else "w", encoding="utf-8") as f:
        f.writelines(json.dumps(e) + "\n" for e in entries)


def turns_of(mem: Memory, session: str) -> list[tuple[str | None, str]]:
    records = mem.list(session_id=session, kind="episode", limit=100, order="oldest")
    return [(r.source_role, r.content) for r in records]


# --- the whole story, local and through a server -----------------------------------------------
@pytest.fixture(params=["local", "server"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Memory, list[str]]]:
    """The memory the test reads back, and the global options the hooks get to reach it."""
    db = tmp_path / "memory.db"
    with Memory.open(db) as mem:
        if request.param == "local":
            yield mem, ["--db", str(db)]
        else:
            with serving(mem) as url:
                yield mem, ["--url", url]


def test_a_session_is_stored_once_and_recalled_in_a_later_session(
        target: tuple[Memory, list[str]], tmp_path: Path) -> None:
    mem, options = target
    project = tmp_path / PROJECT
    project.mkdir()
    one, two = "5f1c-session-one", "9a2e-session-two"
    log = tmp_path / f"{one}.jsonl"

    def hook(event: str, session: str, transcript: Path, **extra: Any) -> Result:
        args = ["--budget", "1000", "--limit", "8"] if event in ("SessionStart",
                                                                 "UserPromptSubmit") else []
        result = clawmem(*options, "hooks", "run", event, *args, cwd=project,
                         stdin=payload(event, session, transcript, project, **extra))
        assert (result.rc, result.err) == (0, ""), result
        return result

    # session one: Stop after each response, PreCompact, SessionEnd; each turn stored once
    write_lines(log, first_session(one))
    assert hook("SessionStart", one, log, source="startup").out == ""  # nothing known yet
    assert hook("Stop", one, log, stop_hook_active=False).out == ""
    mem.flush()
    assert turns_of(mem, one) == EXPECTED_FIRST[:2]
    write_lines(log, second_half(one), append=True)
    hook("Stop", one, log, stop_hook_active=False)
    hook("PreCompact", one, log, trigger="auto", custom_instructions="")
    hook("SessionEnd", one, log, reason="prompt_input_exit")
    mem.flush()
    stored = turns_of(mem, one)
    assert stored == EXPECTED_FIRST  # no block, no thinking, no tool payload, no duplicate
    assert not any(word in c for _, c in stored for word in ("hunter2", "secret reasoning",
                                                             CONTEXT_OPEN, "older memory"))

    # session two: the project and the prompt bring back session one's turns
    log2 = tmp_path / f"{two}.jsonl"
    write_lines(log2, [])
    start = json.loads(hook("SessionStart", two, log2, source="startup").out)
    assert start["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert PROJECT in start["hookSpecificOutput"]["additionalContext"]
    asked = hook("UserPromptSubmit", two, log2,
                 prompt="Which port does the staging database listen on?")
    context = json.loads(asked.out)["hookSpecificOutput"]
    assert context["hookEventName"] == "UserPromptSubmit"
    block = context["additionalContext"]
    assert block.startswith(CONTEXT_OPEN) and block.endswith(CONTEXT_CLOSE)
    assert "5433" in block and "[user]" in block

    # Claude Code may record the injected block in the prompt: it is stripped when stored
    write_lines(log2, [user(f"{block}\n\nWhich port does the staging database listen on?",
                            two, 0),
                       assistant([text("Port 5433, per your earlier note.")], two, 1)])
    hook("Stop", two, log2, stop_hook_active=False)
    hook("SessionEnd", two, log2, reason="clear")
    mem.flush()
    assert turns_of(mem, two) == [("user", "Which port does the staging database listen on?"),
                                  ("assistant", "Port 5433, per your earlier note.")]
    assert len(turns_of(mem, one)) == 4  # session one untouched by session two's hooks


# --- never blocking -----------------------------------------------------------------------------
@pytest.mark.parametrize(("event", "stdin", "options", "message"), [
    ("UserPromptSubmit", "{not json", [], "not JSON"),
    ("UserPromptSubmit", "[1, 2]", [], "not a JSON object"),
    ("UserPromptSubmit", '{"prompt": "hi"}', [], "no session_id"),
    ("Stop", '{"session_id": "s", "hook_event_name": "UserPromptSubmit"}', [],
     "is for 'UserPromptSubmit', not 'Stop'"),
    ("Notification", '{"session_id": "s"}', [], "unknown hook event"),
    ("Stop", '{"session_id": "s", "transcript_path": "/nonexistent/x.jsonl"}', [],
     "does not exist"),
    ("Stop", '{"session_id": "s"}', [], "no transcript_path"),
    ("UserPromptSubmit", '{"session_id": "s", "prompt": "staging port?"}',
     ["--url", "http://127.0.0.1:9"], "cannot reach the clawmemory server"),
    ("UserPromptSubmit", '{"session_id": "s", "prompt": "x"}', ["--url", "ftp://host"],
     "--url must be an http:// or https:// address"),
    ("UserPromptSubmit", '{"session_id": "s", "prompt": "x"}', ["--budget", "lots"],
     "positive integer"),
    ("UserPromptSubmit", '{"session_id": "s", "prompt": "staging port?"}',
     ["--db", "{tmp}"], ""),  # a folder, not a database file
])
def test_failures_exit_0_with_one_line_on_stderr_and_nothing_on_stdout(
        event: str, stdin: str, options: list[str], message: str, tmp_path: Path) -> None:
    options = [o.replace("{tmp}", str(tmp_path)) for o in options]
    result = clawmem("hooks", "run", event, *options, stdin=stdin, cwd=tmp_path)
    assert result.rc == 0
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: clawmem hooks run"), result.err
    assert message in lines[0]
    assert "Traceback" not in result.err


def test_a_locked_database_does_not_block_the_prompt(tmp_path: Path) -> None:
    """Another process holds the write lock: the Stop hook gives up with one line, exit 0,
    and stores the turns on a later hook once the lock is gone."""
    db, log = tmp_path / "m.db", tmp_path / "t.jsonl"
    write_lines(log, first_session("s")[:3])
    with Memory.open(db) as mem:
        mem.store("seed")
    import sqlite3

    holder = sqlite3.connect(db, timeout=0)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        env_timeout = {**os.environ, "CLAWMEM_STORAGE__BUSY_TIMEOUT_MS": "200"}
        proc = subprocess.run([str(CLAWMEM), "--db", str(db), "hooks", "run", "Stop",
                               "--deadline", "3"],
                              input=payload("Stop", "s", log, tmp_path), capture_output=True,
                              text=True, cwd=tmp_path, timeout=120, check=False,
                              env=env_timeout)
    finally:
        holder.rollback()
        holder.close()
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr.startswith("error: clawmem hooks run Stop: gave up after 3 s"), proc
    assert clawmem("--db", db, "hooks", "run", "Stop", cwd=tmp_path,
                   stdin=payload("Stop", "s", log, tmp_path)).rc == 0
    with Memory.open(db) as mem:
        assert turns_of(mem, "s") == [
            EXPECTED_FIRST[0], ("assistant", "Noted: staging Postgres listens on 5433.")]


def test_the_hook_path_loads_neither_typer_nor_the_settings(tmp_path: Path) -> None:
    probe = ("import sys\nfrom clawmemory.interfaces.cli import main\nmain(sys.argv[1:])\n"
             "print(sorted(m for m in ('typer', 'pydantic', 'httpx', 'clawmemory.config') "
             "if m in sys.modules))\n")
    done = subprocess.run(
        [sys.executable, "-c", probe, "--url", "http://127.0.0.1:9", "hooks", "run",
         "UserPromptSubmit", "--budget", "10", "--limit", "2"], input='{"session_id": "s"}',
        capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path)
    assert done.stdout.strip() == "[]", done


def test_the_fast_path_knows_every_global_option_of_the_app() -> None:
    """``hooks.fast_run`` parses the global options itself: its tables must name each one the
    app defines (else a new option would make hook lines fall back to typer, or be misread)."""
    command = typer.main.get_command(app)
    options = [p for p in command.params if p.param_type_name == "option"]
    valued = {o for p in options if not getattr(p, "is_flag", False) for o in p.opts}
    flags = {o for p in options if getattr(p, "is_flag", False) for o in p.opts}
    flags -= {"--version", "--help", "-h"}
    assert valued == set(hookrun.GLOBAL_VALUED)
    assert flags == set(hookrun.GLOBAL_FLAGS)
    assert hookrun.fast_run(["hooks", "run", "--help"]) is None  # typer shows the help
    assert hookrun.fast_run(["recall", "run"]) is None


def test_hooks_run_help_still_comes_from_typer(tmp_path: Path) -> None:
    result = clawmem("hooks", "run", "--help", cwd=tmp_path)
    assert result.rc == 0 and "UserPromptSubmit" in result.out


# --- install ------------------------------------------------------------------------------------
def _commands(settings: dict[str, Any], event: str) -> list[str]:
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_install_print_shows_the_hooks_with_the_global_options(tmp_path: Path) -> None:
    result = clawmem("--db", "rel/memory.db", "-n", "work", "--api-key", "sk-secret",
                     "hooks", "install", "claude-code", "--print", cwd=tmp_path)
    assert result.rc == 0, result.err
    assert "CLAWMEM_API_KEY" in result.err  # the key is not written, and it says so
    shown = json.loads(result.out)
    assert list(shown["hooks"]) == ["SessionStart", "UserPromptSubmit", "Stop", "PreCompact",
                                    "SessionEnd"]
    db = str((tmp_path / "rel" / "memory.db").resolve())
    for event, groups in shown["hooks"].items():
        [group] = groups
        assert "matcher" not in group
        [entry] = group["hooks"]
        assert entry["type"] == "command"
        assert entry["timeout"] == (15 if event in ("SessionStart", "UserPromptSubmit") else 60)
        command = entry["command"]
        assert command.startswith(str(CLAWMEM.resolve()))
        assert f"--db {db} --namespace work hooks run {event}" in command
        assert "sk-secret" not in command
    assert _commands(shown, "UserPromptSubmit")[0].endswith("--budget 1000 --limit 8")
    assert not (tmp_path / ".claude").exists()
    assert not (tmp_path / "home" / ".claude").exists()


def test_install_merges_into_existing_settings_and_is_idempotent(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs: dict[str, Any] = {
        "permissions": {"allow": ["Bash(npm run test:*)"]},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "~/bin/check-bash.sh", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        },
    }
    settings.write_text(json.dumps(theirs))
    settings.chmod(0o600)
    first = clawmem("hooks", "install", "claude-code", "--scope", "project", cwd=tmp_path)
    assert first.rc == 0, first.err
    assert settings.stat().st_mode & 0o777 == 0o600
    once = json.loads(settings.read_text())
    assert once["permissions"] == theirs["permissions"]
    assert once["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert _commands(once, "Stop")[0] == "notify-send done"
    assert [c.split(" hooks run ")[1] for c in _commands(once, "Stop")[1:]] == ["Stop"]
    assert clawmem("hooks", "install", "claude-code", "--scope", "project",
                   cwd=tmp_path).rc == 0
    assert json.loads(settings.read_text()) == once  # installing twice changes nothing
    # a new --url replaces our entries instead of adding a second set
    assert clawmem("--url", "http://127.0.0.1:8765", "hooks", "install", "claude-code",
                   "--scope", "project", cwd=tmp_path).rc == 0
    moved = json.loads(settings.read_text())
    for event in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"):
        ours = [c for c in _commands(moved, event) if " hooks run " in c]
        assert len(ours) == 1 and "--url http://127.0.0.1:8765 " in ours[0], event
    assert _commands(moved, "Stop")[0] == "notify-send done"


def test_install_scopes_and_a_broken_settings_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert clawmem("hooks", "install", "claude-code", cwd=tmp_path).rc == 0  # user: default
    assert "UserPromptSubmit" in json.loads((home / ".claude" / "settings.json").read_text())[
        "hooks"]
    assert clawmem("hooks", "install", "claude-code", "--scope", "local", cwd=tmp_path).rc == 0
    assert (tmp_path / ".claude" / "settings.local.json").exists()
    broken = tmp_path / ".claude" / "settings.json"
    broken.write_text("{ not json")
    result = clawmem("hooks", "install", "claude-code", "--scope", "project", cwd=tmp_path)
    assert result.rc == 2 and "not valid JSON" in result.err
    assert broken.read_text() == "{ not json"  # left as it was


def test_the_installed_command_runs_as_written(tmp_path: Path) -> None:
    """The command string install writes, run by a shell as Claude Code runs it."""
    db = tmp_path / "m.db"
    with Memory.open(db) as mem:
        mem.observe("user", f"The {PROJECT} CI caches the uv folder", "earlier")
    shown = json.loads(clawmem("--db", db, "hooks", "install", "claude-code", "--print",
                               cwd=tmp_path).out)
    [command] = _commands(shown, "UserPromptSubmit")
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path,
                          input=json.dumps({"session_id": "now", "hook_event_name":
                                            "UserPromptSubmit", "prompt": "what does CI cache?"}),
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "uv folder" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_a_resumed_or_compacted_session_starts_with_memories_about_its_last_prompt(
        tmp_path: Path) -> None:
    """SessionStart asks with the transcript's last prompt when there is one; a new session,
    whose folder name matches nothing, gets no block."""
    db = tmp_path / "m.db"
    with Memory.open(db) as mem:
        mem.observe("user", "Deploys to staging need the VPN profile 'ops-eu'.", "earlier")
    folder = tmp_path / "scratch"
    folder.mkdir()
    log = tmp_path / "now.jsonl"
    write_lines(log, [])

    def start(source: str) -> str:
        result = clawmem("--db", db, "hooks", "run", "SessionStart", cwd=folder,
                         stdin=payload("SessionStart", "now", log, folder, source=source))
        assert (result.rc, result.err) == (0, ""), result
        return result.out

    assert start("startup") == ""
    write_lines(log, [user("Which VPN profile do staging deploys need?", "now", 0),
                      assistant([text("Let me check.")], "now", 1)])
    context = json.loads(start("compact"))["hookSpecificOutput"]["additionalContext"]
    assert "ops-eu" in context


def test_a_cursor_goes_once_its_transcript_is_gone(tmp_path: Path) -> None:
    """Store events drop, once a day, the cursors of transcripts Claude Code has deleted; a
    live session's cursor stays, so its turns are never stored twice."""
    db = tmp_path / "m.db"
    cursors = tmp_path / "clawmem-home" / "hooks" / "claude-code"
    logs = {s: tmp_path / f"{s}.jsonl" for s in ("old", "live")}
    for s, log in logs.items():
        write_lines(log, [user(f"a note from the {s} session", s, 0)])
        done = clawmem("--db", db, "hooks", "run", "Stop", cwd=tmp_path,
                       stdin=payload("Stop", s, log, tmp_path))
        assert (done.rc, done.err) == (0, "")
    assert len(list(cursors.glob("*.json"))) == 2
    logs["old"].unlink()  # Claude Code's cleanup
    day_ago = (cursors / "last-sweep").stat().st_mtime - 86_401
    os.utime(cursors / "last-sweep", (day_ago, day_ago))
    write_lines(logs["live"], [user("one more note", "live", 1)], append=True)
    clawmem("--db", db, "hooks", "run", "Stop", cwd=tmp_path,
            stdin=payload("Stop", "live", logs["live"], tmp_path))
    [kept] = list(cursors.glob("*.json"))
    assert json.loads(kept.read_text())["transcript"] == str(logs["live"].resolve())
    assert len(list(cursors.glob("*.lock"))) == 1
    with Memory.open(db) as mem:
        assert [c for _, c in turns_of(mem, "live")] == ["a note from the live session",
                                                        "one more note"]


# --- the pieces ---------------------------------------------------------------------------------
def test_a_line_still_being_written_waits_and_a_replaced_transcript_is_read_again(
        tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    whole = json.dumps(user("first words", "s", 0)) + "\n"
    log.write_text(whole + json.dumps(user("half", "s", 1))[:20])
    turns, end = read_turns(log, 0)
    assert [t.text for t in turns] == ["first words"] and end == len(whole.encode())
    assert read_turns(log, end)[0] == []  # the half line is left for the next hook
    log.write_text(whole[:10] + "\n")  # shorter than the cursor: a new file
    assert read_turns(log, end) == ([], 11)


def test_the_context_block_keeps_rank_order_within_the_budget() -> None:
    found = [Recalled("alpha " * 10, "user"), Recalled("beta " * 400, "assistant"),
             Recalled("gamma", "fact"), Recalled("alpha " * 10, "user")]
    block = context_block(found, budget_tokens=60)
    assert block.splitlines()[2] == "- [user] " + ("alpha " * 10).strip()
    assert "beta" not in block and "gamma" not in block  # no jumping the queue
    wide = context_block(found, budget_tokens=10_000)
    assert wide.count("alpha") == 10  # the duplicate is shown once
    assert len(wide.splitlines()[3]) <= len("- [assistant] ") + MAX_ENTRY_CHARS + 1
    assert context_block(found, budget_tokens=5) == ""


def test_merge_refuses_settings_whose_hooks_are_not_an_object() -> None:
    with pytest.raises(InvalidInputError):
        merge_settings({"hooks": []}, {"hooks": {}})


def test_typer_s_path_answers_as_the_fast_path_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """The same hook line parsed by typer (``app.main``: the package's ``main`` has the fast
    path) stores and answers the same, and still exits 0 on a failure."""
    import io

    from clawmemory.interfaces.cli.app import main

    db, log = tmp_path / "m.db", tmp_path / "t.jsonl"
    write_lines(log, first_session("s"))

    def run(event: str, stdin: str, *extra: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
        code = main(["--db", str(db), "hooks", "run", event, *extra])
        out, err = capsys.readouterr()
        return code, out, err

    assert run("Stop", payload("Stop", "s", log, tmp_path)) == (0, "", "")
    code, out, err = run("UserPromptSubmit", payload("UserPromptSubmit", "later", log,
                                                     tmp_path, prompt="staging port?"),
                         "--budget", "200", "--limit", "3")
    assert (code, err) == (0, "") and "5433" in json.loads(out)["hookSpecificOutput"][
        "additionalContext"]
    code, out, err = run("Stop", "{broken")
    assert (code, out) == (0, "") and err.startswith("error: clawmem hooks run Stop:")
    with Memory.open(db) as mem:
        assert turns_of(mem, "s") == EXPECTED_FIRST[:2]


def test_a_server_with_keys_takes_the_key_from_the_environment(tmp_path: Path) -> None:
    """Install never writes the key; the hooks read CLAWMEM_API_KEY, and a wrong one is one
    line on stderr, not a blocked prompt."""
    from clawmemory.auth import Keys, key_store_for

    db, ask = tmp_path / "k.db", payload("UserPromptSubmit", "now", tmp_path / "none.jsonl",
                                         tmp_path, prompt="which port for staging?")
    with Memory.open(db) as mem:
        mem.observe("user", "Staging listens on port 5433", "earlier")
        _, secret = Keys(key_store_for(mem.store_backend)).create(["default"], "write")
        with serving(mem, loopback=False) as url:
            def hook(key: str) -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [str(CLAWMEM), "--url", url, "hooks", "run", "UserPromptSubmit"], input=ask,
                    capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                    env={**os.environ, "CLAWMEM_API_KEY": key})

            good, bad = hook(secret), hook("cm_wrong")
    assert (good.returncode, good.stderr) == (0, "")
    assert "5433" in json.loads(good.stdout)["hookSpecificOutput"]["additionalContext"]
    assert (bad.returncode, bad.stdout) == (0, "")
    assert bad.stderr.startswith("error: clawmem hooks run UserPromptSubmit: the clawmemory"
                                 " server answered 401"), bad.stderr

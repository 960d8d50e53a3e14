"""Claude Code hooks: memory that happens without the model deciding to call a tool
(``clawmem hooks``, docs/hooks.md).

Claude Code runs a command at points of a session and passes it a JSON object on stdin
(``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name`` and the event's own fields:
``prompt``, ``source``, ``trigger``, ``reason``). Two kinds of event matter here:

- **recall** (``SessionStart``, ``UserPromptSubmit``): memories of *earlier* sessions relevant
  to the project or the prompt go back as ``hookSpecificOutput.additionalContext``, inside the
  ``[Memory context]`` block of context injection (``text.CONTEXT_OPEN``), within a token
  budget;
- **store** (``Stop``, ``PreCompact``, ``SessionEnd``): the user and assistant text turns of the
  session transcript (JSONL) that no earlier hook stored are observed into the session named
  after ``session_id``, with any ``[Memory context]`` block stripped. A cursor per session (the
  byte offset of the transcript already read, in a small state file under the clawmemory home)
  keeps a turn from being stored twice when Stop fires after each response and SessionEnd at
  the end.

Import cost matters: every prompt of the agent waits for ``clawmem hooks run``. This module
imports the standard library, ``errors`` and ``text`` only: no settings (pydantic-settings,
~0.25 s), no httpx (~0.15 s). Against a server (``--url``) it speaks the two REST calls it
needs (``POST /v1/recall``, ``POST /v1/observe``) over ``http.client`` (``HttpMemory``); a
local store is the ``Memory`` façade behind ``FacadeMemory``. Hook logic lives here; the CLI
(``interfaces/cli/hooks.py``) only reads stdin, opens the memory and writes the answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from clawmemory.errors import InvalidInputError, StorageError
from clawmemory.private import atomic_write
from clawmemory.text import CONTEXT_CLOSE, CONTEXT_OPEN, estimate_tokens, strip_memory_context

if TYPE_CHECKING:
    from http.client import HTTPConnection

    from clawmemory.api import MemoryAPI

__all__ = [
    "EVENTS", "RECALL_DEADLINE_S", "RECALL_EVENTS", "STORE_DEADLINE_S", "STORE_EVENTS",
    "FacadeMemory", "HookInput", "HookMemory", "HttpMemory", "Recalled", "Turn",
    "context_block", "hook_config", "hook_output", "last_prompt", "merge_settings",
    "parse_input", "prune_cursors", "read_turns", "recall_context", "settings_path",
    "state_dir", "store_turns",
]

RECALL_EVENTS = ("SessionStart", "UserPromptSubmit")
STORE_EVENTS = ("Stop", "PreCompact", "SessionEnd")
EVENTS = (*RECALL_EVENTS, *STORE_EVENTS)

# Claude Code's `timeout` is in seconds. A recall runs on every prompt and answers in a fraction
# of a second with a server; a local store may load the store's settings and index (~1 s). A
# store event may write many turns at once (the whole session when only SessionEnd is left).
RECALL_TIMEOUT_S = 15
STORE_TIMEOUT_S = 60
# Our own limits, under those: a hook that gives up says why on one line; a killed one cannot.
RECALL_DEADLINE_S = 10.0
STORE_DEADLINE_S = 50.0
HTTP_TIMEOUT_S = 10.0
MAX_QUERY_CHARS = 2_000  # a pasted log is not a better query than its first lines
MAX_ENTRY_CHARS = 600  # one recalled memory in the block: a long turn must not eat the budget
MAX_TURN_CHARS = 20_000  # one stored turn; a 100 kB paste is clipped, not refused
TAIL_BYTES = 256 * 1024  # where a session's start looks for its last prompt
SWEEP_EVERY_S = 86_400.0  # how often a store event looks for cursors to drop
HEADER = "Memories from earlier sessions (clawmemory); use them only where they help:"

# The scaffolding Claude Code writes as user messages around slash commands: not the user's words.
_COMMAND_NOISE = ("<command-name>", "<command-message>", "<command-args>", "<local-command-")
_EMPTY_TAGS = re.compile(r"<([A-Za-z][\w-]*)>\s*</\1>")


# --- the hook's input -------------------------------------------------------------------------
@dataclass(frozen=True)
class HookInput:
    """What Claude Code passes on stdin (the fields this module reads)."""

    event: str
    session_id: str
    transcript_path: str | None = None
    cwd: str | None = None
    prompt: str | None = None  # UserPromptSubmit
    source: str | None = None  # SessionStart: startup, resume, clear, compact


def parse_input(raw: bytes, event: str) -> HookInput:
    """The hook payload for ``event``; raises ``InvalidInputError`` on anything else."""
    if event not in EVENTS:
        raise InvalidInputError(f"unknown hook event {event!r}; known: {', '.join(EVENTS)}")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"the hook input on stdin is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidInputError("the hook input on stdin is not a JSON object")
    named = data.get("hook_event_name")
    if named is not None and named != event:  # a settings entry wired to the wrong event
        raise InvalidInputError(f"the hook input is for {named!r}, not {event!r}")
    session = data.get("session_id")
    if not isinstance(session, str) or not session.strip():
        raise InvalidInputError("the hook input has no session_id")
    return HookInput(event, session, _text(data, "transcript_path"), _text(data, "cwd"),
                     _text(data, "prompt"), _text(data, "source"))


def _text(data: Mapping[str, Any], name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) else None


# --- the memory the hooks talk to -------------------------------------------------------------
@dataclass(frozen=True)
class Recalled:
    """One recalled memory, as the context block shows it."""

    content: str
    label: str  # the role of a stored turn ("user", "assistant"), else the memory's kind


class HookMemory(Protocol):
    """The two operations the hooks need; a local ``Memory`` (``FacadeMemory``) or a server
    (``HttpMemory``)."""

    def recall(self, query: str, *, limit: int, exclude_session_id: str) -> list[Recalled]: ...

    def observe(self, role: str, content: str, session_id: str) -> str: ...


class FacadeMemory:
    """``HookMemory`` over the ``Memory`` façade (or anything with its API). ``mode``: the
    recall mode; None is the store's default."""

    def __init__(self, mem: MemoryAPI, mode: str | None = None) -> None:
        self.mem = mem
        self.mode = mode

    def recall(self, query: str, *, limit: int, exclude_session_id: str) -> list[Recalled]:
        hits = self.mem.recall(query, limit=limit, exclude_session_id=exclude_session_id,
                               mode=self.mode)
        return [Recalled(h.memory.content, _label(h.memory.kind, h.memory.source_role))
                for h in hits]

    def observe(self, role: str, content: str, session_id: str) -> str:
        return self.mem.observe(role, content, session_id)


def _label(kind: str, role: str | None) -> str:
    return role if kind == "episode" and role else kind


class HttpMemory:
    """``HookMemory`` over a clawmemory server's REST API, on ``http.client``: the remote
    client (``RemoteMemory``) costs ~0.4 s of imports (httpx and the settings), more than the
    hook's whole budget. One keep-alive connection serves every call; ``close`` ends it."""

    def __init__(self, url: str, *, api_key: str | None = None, namespace: str | None = None,
                 mode: str | None = None, timeout: float = HTTP_TIMEOUT_S) -> None:
        from urllib.parse import urlencode, urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInputError(f"not an http:// or https:// address: {url!r}")
        self.url = url.rstrip("/")
        self._parts = parts
        self._query = f"?{urlencode({'namespace': namespace})}" if namespace else ""
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self.mode = mode
        self.timeout = timeout
        self._conn: HTTPConnection | None = None

    def recall(self, query: str, *, limit: int, exclude_session_id: str) -> list[Recalled]:
        body = {"query": query, "limit": limit, "exclude_session_id": exclude_session_id,
                "mode": self.mode}
        hits = self._post("/v1/recall", body).get("hits", [])
        return [Recalled(str(h["memory"]["content"]),
                         _label(str(h["memory"].get("kind")), h["memory"].get("source_role")))
                for h in hits]

    def observe(self, role: str, content: str, session_id: str) -> str:
        body = {"role": role, "content": content, "session_id": session_id}
        return str(self._post("/v1/observe", body)["id"])

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> HttpMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _connection(self) -> HTTPConnection:
        if self._conn is None:
            import http.client

            kind = (http.client.HTTPSConnection if self._parts.scheme == "https"
                    else http.client.HTTPConnection)
            self._conn = kind(self._parts.hostname or "", self._parts.port,
                              timeout=self.timeout)
        return self._conn

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        target = f"{self._parts.path.rstrip('/')}{path}{self._query}"
        try:
            conn = self._connection()
            conn.request("POST", target, body=json.dumps(body).encode("utf-8"),
                         headers=self._headers)
            response = conn.getresponse()
            data = response.read()
        except OSError as exc:  # refused, reset, timed out, name not found
            self.close()
            raise StorageError(f"cannot reach the clawmemory server at {self.url}: {exc}"
                               ) from exc
        if response.status >= 400:
            raise StorageError(f"the clawmemory server answered {response.status}:"
                               f" {_detail(data)}")
        try:
            answer = json.loads(data)
        except ValueError as exc:
            raise StorageError(f"the clawmemory server's answer is not JSON: {exc}") from exc
        if not isinstance(answer, dict):
            raise StorageError("the clawmemory server's answer is not a JSON object")
        return answer


def _detail(data: bytes) -> str:
    """The problem-details ``detail`` of an error answer, else its first 200 characters."""
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(data).get("detail"))
    return data[:200].decode("utf-8", "replace")


# --- recall events: the context block ----------------------------------------------------------
def recall_context(
    mem: Callable[[], HookMemory], hook: HookInput, *, budget_tokens: int, limit: int
) -> str:
    """The ``[Memory context]`` block for a recall event, "" when nothing relevant is found.
    UserPromptSubmit asks with the prompt. SessionStart asks with the session's last prompt
    when its transcript has one (a resumed or compacted session: what the user was working
    on), else with the project's name (the last part of ``cwd``), the one thing known before
    the first prompt. The current session's own memories are left out: they are in the
    transcript already. ``mem`` is called only when there is a question to ask."""
    if hook.event == "UserPromptSubmit":
        query = strip_memory_context(hook.prompt or "").strip()
    else:
        query = last_prompt(hook.transcript_path) or (Path(hook.cwd).name if hook.cwd else "")
    if not query:
        return ""
    found = mem().recall(query[:MAX_QUERY_CHARS], limit=limit,
                         exclude_session_id=hook.session_id)
    return context_block(found, budget_tokens)


def context_block(memories: Sequence[Recalled], budget_tokens: int) -> str:
    """The memories in rank order, one line each (``- [label] content``, clipped to
    ``MAX_ENTRY_CHARS``), while the whole block stays within ``budget_tokens`` (words × 1.3);
    "" when none fits. A lower-ranked short memory never jumps the queue."""
    lines: list[str] = []
    used = estimate_tokens(f"{CONTEXT_OPEN} {HEADER} {CONTEXT_CLOSE}")
    seen: set[str] = set()
    for m in memories:
        text = " ".join(strip_memory_context(m.content).split())
        if not text or text in seen:
            continue
        seen.add(text)
        if len(text) > MAX_ENTRY_CHARS:
            text = text[:MAX_ENTRY_CHARS].rstrip() + "…"
        line = f"- [{m.label}] {text}"
        cost = estimate_tokens(line)
        if used + cost > budget_tokens:
            break
        used += cost
        lines.append(line)
    if not lines:
        return ""
    return "\n".join([CONTEXT_OPEN, HEADER, *lines, CONTEXT_CLOSE])


def hook_output(event: str, context: str) -> str:
    """What the hook prints: for a recall event with context, the documented JSON
    (``hookSpecificOutput.additionalContext``); otherwise nothing, since Stop, PreCompact and
    SessionEnd accept no context and any stray stdout would be misread."""
    if event not in RECALL_EVENTS or not context:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event,
                                              "additionalContext": context}})


# --- store events: transcript, turns, cursor ---------------------------------------------------
@dataclass(frozen=True)
class Turn:
    """One user or assistant text turn of the transcript."""

    role: str  # "user" or "assistant"
    text: str
    end: int  # the byte offset just past its last line: where a retry resumes


def read_turns(path: Path, offset: int) -> tuple[list[Turn], int]:
    """The text turns of the transcript after byte ``offset``, and the offset after the last
    complete line read. A line still being written (no newline yet) waits for the next hook.
    Consecutive assistant text (one response split over several entries around its tool
    calls) is one turn. A transcript shorter than ``offset`` was replaced: read from 0."""
    with path.open("rb") as f:
        if f.seek(0, os.SEEK_END) < offset:
            offset = 0
        f.seek(offset)
        data = f.read()
    complete = data[: data.rfind(b"\n") + 1]
    turns: list[Turn] = []
    said: list[str] = []  # the assistant's text not yet made a turn
    pos = said_end = offset
    for line in complete.splitlines(keepends=True):
        pos += len(line)
        role, text = _turn_text(line)
        if role == "assistant":
            said.append(text)
            said_end = pos
        elif role == "user":
            if said:
                turns.append(Turn("assistant", "\n\n".join(said), said_end))
                said = []
            turns.append(Turn("user", text, pos))
    if said:
        turns.append(Turn("assistant", "\n\n".join(said), said_end))
    return turns, offset + len(complete)


def _turn_text(line: bytes) -> tuple[str | None, str]:
    """(role, text) of a transcript line that is a user's or the assistant's words; (None, "")
    for anything else: tool calls and results, thinking, system and summary entries, a
    subagent's side chain, slash-command scaffolding, lines that are not JSON."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None, ""
    if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
        return None, ""
    if entry.get("isSidechain") or entry.get("isMeta") or entry.get("isCompactSummary"):
        return None, ""
    message = entry.get("message")
    if not isinstance(message, dict):
        return None, ""
    content = message.get("content")
    if isinstance(content, list):  # text blocks only: tool_use, tool_result, thinking, images out
        content = "\n\n".join(b["text"] for b in content if isinstance(b, dict)
                              and b.get("type") == "text" and isinstance(b.get("text"), str))
    if not isinstance(content, str) or content.lstrip().startswith(_COMMAND_NOISE):
        return None, ""
    # Hook output Claude Code recorded in a wrapper (``<user-prompt-submit-hook>...``) leaves
    # the empty wrapper behind once the block is stripped: not words either.
    text = _EMPTY_TAGS.sub("", strip_memory_context(content)).strip()
    return (str(entry["type"]), text) if text else (None, "")


def last_prompt(transcript: str | None) -> str:
    """The last user turn in the transcript's final ``TAIL_BYTES`` ("" when there is none, or
    no readable transcript): a session's start must not read a long session whole. The
    partial first line of the tail is not JSON and is skipped like any other non-turn."""
    if not transcript:
        return ""
    path = Path(transcript).expanduser()
    try:
        size = path.stat().st_size
        turns, _ = read_turns(path, max(0, size - TAIL_BYTES))
    except OSError:
        return ""
    return next((t.text for t in reversed(turns) if t.role == "user"), "")


def state_dir(home: Path | None = None) -> Path:
    """Where the cursors live: ``{home}/hooks/claude-code``; ``home`` defaults to
    $CLAWMEM_HOME or ~/.clawmemory (the settings' own default, read without the settings)."""
    base = home or Path(os.environ.get("CLAWMEM_HOME") or Path.home() / ".clawmemory")
    return base / "hooks" / "claude-code"


@contextlib.contextmanager
def _cursor(directory: Path, key: str) -> Iterator[dict[str, Any]]:
    """The cursor state of ``key``, locked against a concurrent hook of the same session (Stop
    and SessionEnd can overlap) and written back when the block ends, failed or not: what was
    stored before a failure stays stored."""
    directory.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    path, lock = directory / f"{name}.json", directory / f"{name}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            state = {}
        try:
            yield state
        finally:
            # No fsync: the next hook of the session rewrites it, and every prompt waits.
            atomic_write(path, json.dumps(state).encode("utf-8"), fsync=False)
    finally:
        os.close(fd)  # closing releases the lock


def _lock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # Windows: no flock; hooks of one session rarely overlap
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def store_turns(mem: Callable[[], HookMemory], hook: HookInput, *, directory: Path,
                target: str) -> int:
    """Observe the transcript's turns that no earlier hook of this session stored; returns
    how many were stored. ``target`` names the store (its --url or --db) so that a cursor
    never skips turns another store has not seen. ``mem`` is called only when there is
    something to store. A failing write keeps the cursor after the last stored turn."""
    if not hook.transcript_path:
        raise InvalidInputError("the hook input has no transcript_path")
    path = Path(hook.transcript_path).expanduser()
    if not path.is_file():
        raise InvalidInputError(f"the transcript {str(path)!r} does not exist")
    key = "\n".join((target, hook.session_id, str(path.resolve())))
    with _cursor(directory, key) as state:
        state["transcript"] = str(path.resolve())  # what prune_cursors checks
        offset = state.get("offset", 0)
        turns, end = read_turns(path, offset if isinstance(offset, int) else 0)
        if turns:
            memory = mem()
            for turn in turns:
                memory.observe(turn.role, turn.text[:MAX_TURN_CHARS], hook.session_id)
                state["offset"] = turn.end
        state["offset"] = end  # the lines after the last turn hold no words
    with contextlib.suppress(OSError):  # tidying must never fail the hook
        prune_cursors(directory)
    return len(turns)


def prune_cursors(directory: Path, *, now: float | None = None) -> int:
    """Drop the cursors whose transcript is gone (Claude Code deletes transcripts after its
    ``cleanupPeriodDays``, 30 by default): no hook can come for them, and one file per session
    would otherwise pile up for good. Looks at most once every ``SWEEP_EVERY_S`` (a stamp
    file's time); returns how many cursors went. A cursor written before cursors named their
    transcript stays until its session's next store event names it."""
    now = time.time() if now is None else now
    stamp = directory / "last-sweep"
    with contextlib.suppress(FileNotFoundError):
        if 0 <= now - stamp.stat().st_mtime < SWEEP_EVERY_S:
            return 0
    stamp.touch()
    os.utime(stamp, (now, now))
    removed = 0
    for path in directory.glob("*.json"):
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        transcript = state.get("transcript") if isinstance(state, dict) else None
        if isinstance(transcript, str) and not Path(transcript).exists():
            path.unlink(missing_ok=True)
            path.with_suffix(".lock").unlink(missing_ok=True)
            removed += 1
    return removed


# --- install: the settings Claude Code reads ---------------------------------------------------
SCOPES = {"user": ".claude/settings.json", "project": ".claude/settings.json",
          "local": ".claude/settings.local.json"}
_OURS = re.compile(r"(clawmem|clawmemory)\S*(\s.*)?\shooks\s+run\s+(" + "|".join(EVENTS) + r")\b")


def settings_path(scope: str, *, cwd: Path, home: Path) -> Path:
    """The settings file of ``scope``: ``user`` ~/.claude/settings.json, ``project``
    ./.claude/settings.json, ``local`` ./.claude/settings.local.json (not committed)."""
    if scope not in SCOPES:
        raise InvalidInputError(f"unknown scope {scope!r}; use one of: {', '.join(SCOPES)}")
    return (home if scope == "user" else cwd) / SCOPES[scope]


def hook_config(prefix: Sequence[str], *, recall_args: Sequence[str] = ()) -> dict[str, Any]:
    """The ``hooks`` object for settings.json: each event runs ``prefix hooks run EVENT``
    (``prefix``: the clawmem executable and the global options), recall events with
    ``recall_args`` (the budget) too. No matcher: every source/trigger/reason counts."""
    config: dict[str, Any] = {}
    for event in EVENTS:
        args = [*prefix, "hooks", "run", event, *(recall_args if event in RECALL_EVENTS else ())]
        timeout = RECALL_TIMEOUT_S if event in RECALL_EVENTS else STORE_TIMEOUT_S
        config[event] = [{"hooks": [{"type": "command", "command": shlex.join(args),
                                     "timeout": timeout}]}]
    return {"hooks": config}


def merge_settings(existing: Mapping[str, Any], ours: Mapping[str, Any]) -> dict[str, Any]:
    """``existing`` settings with our hook entries in place of any earlier ones of ours
    (installing twice changes nothing; a changed --url replaces the old command), every
    other setting and hook kept as it was."""
    merged: dict[str, Any] = json.loads(json.dumps(existing))  # a deep copy
    hooks = merged.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InvalidInputError("the settings' \"hooks\" is not a JSON object")
    for event, groups in list(hooks.items()):
        if isinstance(groups, list):
            hooks[event] = [g for g in (_without_ours(g) for g in groups) if g is not None]
    for event, groups in ours["hooks"].items():
        current = hooks.get(event)
        hooks[event] = [*(current if isinstance(current, list) else []), *groups]
    return merged


def _without_ours(group: Any) -> Any:
    """The matcher group without our entries; None when only ours were in it."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    kept = [h for h in group["hooks"] if not (isinstance(h, dict) and isinstance(
        h.get("command"), str) and _OURS.search(h["command"]))]
    if not kept and group["hooks"]:
        return None
    return {**group, "hooks": kept}

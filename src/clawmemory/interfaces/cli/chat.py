"""``clawmem chat``: the reference agent (``clawmemory.agent``) on the command line.

One-shot for scripts (``clawmem chat -m TEXT --session ID`` prints the answer and exits) or an
interactive loop reading stdin (``/hatch``, ``/session ID``, ``/help``, ``/exit``). The model
is the configured one (``[llm]``; any OpenAI-compatible server by URL); without one the command
exits with code 2 and the setting to make, and a provider failure is one ``error:`` line and
exit code 3 (in the loop: the line, and the loop goes on). Steps that fail after an answer
(synthesis, a consolidation on session switch) print a ``warning:`` line each, once (the agent's
own log warnings are off here); consolidations are recorded as ``consolidate`` runs (``clawmem
runs``). A model that cannot be reached is met once per turn: the sessions still queued for
consolidation are not tried then (they stay pending), and one line says so.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from clawmemory.errors import ClawMemoryError, NotFoundError
from clawmemory.interfaces.cli.common import (
    EXIT_USAGE,
    fail,
    globals_of,
    guarded,
    open_memory,
    print_json,
    say_error,
    settings_of,
    text_arg,
)
from clawmemory.llm.base import LLM
from clawmemory.llm.factory import close_llm, make_llm

if TYPE_CHECKING:
    from clawmemory.agent import AgentReply, AgentSessions

__all__ = ["NO_LLM", "register"]

NO_LLM = ("clawmem chat needs a language model: set [llm] provider and model in the config file"
          " (or CLAWMEM_LLM__PROVIDER=openai CLAWMEM_LLM__BASE_URL=http://localhost:11434/v1"
          " CLAWMEM_LLM__MODEL=llama3.2 for a local Ollama); see docs/agent.md")
HELP = """\
/start         first interaction: create the agent's identity unless it has one
/hatch         create the agent's identity in a short conversation (hatching)
/session [ID]  show the session, or end it and switch to session ID (the old one is
               summarised and consolidated into facts)
/help          this list
/exit, /quit   leave (Ctrl-D too)"""
CHANNEL = "cli"  # persistence keys of the command line's conversations: cli:<session>:


def _warn(text: str) -> None:
    sys.stderr.write("warning: " + " ".join(text.splitlines()) + "\n")
    sys.stderr.flush()


def _chat_llm(ctx: typer.Context) -> LLM:
    g = globals_of(ctx)
    settings = settings_of(g)
    llm = make_llm(settings.llm)
    if llm is None:
        fail(NO_LLM, EXIT_USAGE)
    return llm


def _report(sessions: AgentSessions, reply: AgentReply | None, shown: int) -> int:
    """Warnings for what failed around the answer, each once; returns how many runs were
    reported. Sessions left untried for an unreachable model join the line of the failure
    that stopped them."""
    lines = list(reply.problems if reply is not None else ())
    while sessions.problems:
        lines.append(sessions.problems.pop(0))
    runs = sessions.runs
    lines += [f"{run.message} (recorded: clawmem runs --job consolidate)"
              for run in runs[shown:] if run.outcome == "failed"]
    untried = sessions.take_untried()
    if untried:
        note = (f"consolidation of {', '.join(untried)} not tried: the model is unavailable"
                " (still pending: a later session switch or `clawmem maintain consolidate`"
                " takes them)")
        lines[-1:] = [f"{lines[-1]}; {note}"] if lines else [note]
    for line in lines:
        _warn(line)
    return len(runs)


def chat_cmd(
    ctx: typer.Context,
    *,
    message: Annotated[str | None, typer.Option(
        "--message", "-m", help="Send this one message, print the answer and exit"
        " ('-' reads it from stdin). Without it: an interactive loop.")] = None,
    session: Annotated[str, typer.Option(
        "--session", "-s", help="The conversation: its history, and the session whose"
        " episodes are consolidated when another session starts.")] = "default",
    hatch: Annotated[bool, typer.Option(
        "--hatch", help="Hatching: this message (or the loop, until the soul is"
                        " written) builds the agent's identity.")] = False,
) -> None:
    """Chat with the reference agent: memory enrichment, memory tools, synthesis, compaction.

    Needs a language model ([llm] in the config file, or CLAWMEM_LLM__* variables; any
    OpenAI-compatible server by URL). --json prints each answer as JSON with its tool calls,
    token usage and what was stored.

    Example: clawmem chat -m "I moved to Lisbon last week" --session s-42
    """
    llm = _chat_llm(ctx)
    # Function-local: the agent (and the LLM steps it loads) is ~0.1 s of every other
    # command's start (tests/test_architecture.py DEFERRED).
    from clawmemory.agent import AgentSessions

    try:
        with open_memory(ctx, local=True) as mem, AgentSessions(
                mem, llm, channel=CHANNEL, background=False, log_failures=False) as sessions:
            if message is not None:
                _one_shot(ctx, sessions, session, text_arg(message), hatch)
            else:
                _loop(ctx, sessions, session, hatch)
    finally:
        close_llm(llm)


def _one_shot(
    ctx: typer.Context, sessions: AgentSessions, session: str, text: str, hatch: bool
) -> None:
    if hatch:
        sessions.agent(session).start_hatching()
    reply = sessions.process(session, text)  # an unreachable model holds the consolidations
    sessions.wait()  # a session this one completed is consolidated after the answer
    if globals_of(ctx).json:
        print_json({**reply.to_dict(), "consolidations": [r.to_dict() for r in sessions.runs]})
    else:
        sys.stdout.write(reply.text + "\n")
        sys.stdout.flush()
    _report(sessions, reply, 0)


def _loop(ctx: typer.Context, sessions: AgentSessions, session: str, hatch: bool) -> None:
    tty = sys.stdin.isatty()
    current, shown = session, 0
    if tty:
        sys.stderr.write(f"clawmem chat: session {current}; /help for commands, Ctrl-D to leave\n")
        if not hatch and not _has_soul(sessions):
            sys.stderr.write("the agent has no identity yet: /start creates one\n")
    if hatch:
        sessions.agent(current).start_hatching()
    while True:
        sessions.evict_idle()
        try:
            line = input("> " if tty else "")
        except (EOFError, KeyboardInterrupt):
            break
        if not line.strip():
            continue
        if line.startswith("/"):
            command, _, arg = line.strip().partition(" ")
            if command in ("/exit", "/quit"):
                break
            current = _command(sessions, current, command, arg.strip())
            sessions.wait()
            shown = _report(sessions, None, shown)
            continue
        try:
            reply = sessions.process(current, line.strip())
        except ClawMemoryError as exc:  # the loop goes on; the line says what failed
            say_error(str(exc))
            continue
        _answer(ctx, reply)
        sessions.wait()
        shown = _report(sessions, reply, shown)


def _answer(ctx: typer.Context, reply: AgentReply) -> None:
    if globals_of(ctx).json:
        sys.stdout.write(json.dumps(reply.to_dict(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(reply.text + "\n")
    sys.stdout.flush()


def _command(sessions: AgentSessions, current: str, command: str, arg: str) -> str:
    """Run a loop command; returns the session from now on."""
    if command == "/start" and _has_soul(sessions):
        sys.stderr.write("the agent already has an identity (/hatch creates it again)\n")
    elif command in ("/start", "/hatch"):
        sessions.agent(current).start_hatching()
        sys.stderr.write("hatching: tell the agent who it should be\n")
    elif command == "/session" and arg and arg != current:
        sessions.end(current)
        sessions.agent(arg)
        sys.stderr.write(f"session {arg}\n")
        return arg
    elif command == "/session":
        sys.stderr.write(f"session {current}\n")
    elif command == "/help":
        sys.stderr.write(HELP + "\n")
    else:
        say_error(f"unknown command {command} (/help lists them)")
    return current


def _has_soul(sessions: AgentSessions) -> bool:
    """Whether hatching already stored the agent's identity (000 ``soul:identity``)."""
    try:
        sessions.mem.get("soul:identity")
    except NotFoundError:
        return False
    return True


def register(app: typer.Typer) -> None:
    """Add ``chat`` to ``app`` behind the CLI's error boundary (replacing an earlier one)."""
    app.registered_commands = [c for c in app.registered_commands if c.name != "chat"]
    app.command("chat")(guarded(chat_cmd))

"""``clawmem hooks``: automatic memory for Claude Code (docs/hooks.md).

``clawmem hooks install claude-code`` writes the hook commands into Claude Code's settings;
``clawmem hooks run EVENT`` is what those commands run: it reads the hook's JSON on stdin and
answers as Claude Code expects. The logic (payload, transcript, cursor, context block, the
settings merge) is ``hooks.claude_code``; this module reads stdin, opens the memory and
writes the answer.

``hooks run`` never blocks the agent: whatever goes wrong (bad JSON, server down, database
locked, transcript missing) it exits 0 with one line on stderr and nothing on stdout. It is
on the path of every prompt, so it imports neither ``common`` (the settings and the façade)
nor the remote client, and a plain hook line bypasses typer's parsing (``fast_run``, below):
against a server a hook pays for importing typer and ``http.client`` only, and a local store
is opened (``common.open_local``) only when there is something to ask or store.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from clawmemory.choices import Backend
from clawmemory.errors import ClawMemoryError, InvalidInputError
from clawmemory.hooks.claude_code import (
    EVENTS,
    RECALL_DEADLINE_S,
    RECALL_EVENTS,
    STORE_DEADLINE_S,
    FacadeMemory,
    HookMemory,
    HttpMemory,
    hook_config,
    hook_output,
    merge_settings,
    parse_input,
    recall_context,
    settings_path,
    state_dir,
    store_turns,
)
from clawmemory.interfaces.cli.base import GlobalOptions, internal_error, say_error

__all__ = ["fast_run", "register", "run_hook"]

hooks_app = typer.Typer(
    name="hooks",
    help="Automatic memory for coding agents (Claude Code): recall before each prompt, store"
    " the session's turns after each response and before compaction (docs/hooks.md).\n\n"
    "Example: clawmem --url http://127.0.0.1:8765 hooks install claude-code",
    no_args_is_help=True,
)


class Agent(StrEnum):
    CLAUDE_CODE = "claude-code"


class Scope(StrEnum):
    USER = "user"
    PROJECT = "project"
    LOCAL = "local"


# The recall options of both commands: install writes them into the recall hooks' commands.
BudgetOpt = Annotated[int | None, typer.Option(
    "--budget", min=1, metavar="TOKENS",
    help="Token budget of the recalled context. Default: context.hooks_budget_tokens.")]
LimitOpt = Annotated[int | None, typer.Option(
    "--limit", min=1, metavar="N",
    help="Memories recalled per prompt. Default: context.hooks_recall_limit.")]


def register(app: typer.Typer) -> None:
    """Add the ``hooks`` group to ``app``, replacing an earlier one (registering twice is
    harmless)."""
    app.registered_groups = [g for g in app.registered_groups if g.name != "hooks"]
    app.add_typer(hooks_app, name="hooks")


# --- install ------------------------------------------------------------------------------------
@hooks_app.command("install")
def install(
    ctx: typer.Context,
    agent: Annotated[Agent, typer.Argument(help="The agent whose hooks to write.")],
    scope: Annotated[Scope, typer.Option(
        "--scope", case_sensitive=False,
        help="user: ~/.claude/settings.json (every project; the default), project:"
        " ./.claude/settings.json (shared with the repository), local:"
        " ./.claude/settings.local.json (this project, not committed).")] = Scope.USER,
    show: Annotated[bool, typer.Option(
        "--print", help="Print the hooks JSON instead of writing the settings file.")] = False,
    budget: BudgetOpt = None,
    limit: LimitOpt = None,
) -> None:
    """Write the hooks that run `clawmem hooks run EVENT` into the agent's settings, merged
    with what is there (other hooks are kept; installing again replaces ours). The global
    options given here (--url, --db, --namespace, ...) are written into each command."""
    from clawmemory.interfaces.cli.common import guarded

    guarded(_install)(ctx, scope, show, budget, limit)


def _install(ctx: typer.Context, scope: Scope, show: bool, budget: int | None,
             limit: int | None) -> None:
    from clawmemory.interfaces.cli.common import globals_of, print_json, settings_of

    g = globals_of(ctx)
    context = settings_of(g).context
    recall_args = ["--budget", str(budget or context.hooks_budget_tokens),
                   "--limit", str(limit or context.hooks_recall_limit)]
    ours = hook_config(_command_prefix(g), recall_args=recall_args)
    if g.api_key:
        sys.stderr.write("note: the API key is not written into the settings; give it to the"
                         " hooks as CLAWMEM_API_KEY in the environment Claude Code runs in\n")
    if show:
        print_json(ours)
        return
    path = settings_path(scope.value, cwd=Path.cwd(), home=Path.home())
    merged = merge_settings(_read_settings(path), ours)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".clawmem-tmp")
    tmp.write_text(json.dumps(merged, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if path.exists():  # a settings file kept private stays private
        tmp.chmod(path.stat().st_mode & 0o777)
    tmp.replace(path)
    if g.json:
        print_json({"path": str(path), "events": list(EVENTS), "hooks": ours["hooks"]})
    else:
        typer.echo(f"Claude Code hooks ({', '.join(EVENTS)}) written to {path}")


def _command_prefix(g: GlobalOptions) -> list[str]:
    """The executable running now (a venv's own clawmem, else this Python with -m), and the
    global options given, a relative --db made absolute: hooks run in the project's
    directory. Never the API key: settings files are read by others, committed even."""
    script = Path(sys.argv[0])
    if script.name == "clawmem" and script.is_file():
        prefix = [str(script.resolve())]
    else:
        prefix = [sys.executable, "-m", "clawmemory.interfaces.cli"]
    db = g.db
    if db is not None and "://" not in db:
        db = str(Path(db).expanduser().resolve())
    given = {"--url": g.url, "--db": db, "--namespace": g.namespace,
             "--backend": g.backend.value if g.backend else None, "--profile": g.profile,
             "--agent": g.agent}
    for option, value in given.items():
        if value is not None:
            prefix += [option, value]
    return prefix


def _read_settings(path: Path) -> dict[str, object]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidInputError(f"{path} is not valid JSON ({exc}); fix it or move it away,"
                                " then install again") from exc
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path} does not hold a JSON object")
    return data


# --- run ----------------------------------------------------------------------------------------
@hooks_app.command("run")
def run(
    ctx: typer.Context,
    event: Annotated[str, typer.Argument(
        metavar="EVENT", help=f"The hook event: {', '.join(EVENTS)}.")],
    budget: BudgetOpt = None,
    limit: LimitOpt = None,
    mode: Annotated[str | None, typer.Option(
        "--mode", metavar="MODE",
        help="Recall mode: keyword, vector, hybrid or auto. Default: the server's with --url,"
        " keyword on a local store (no embedding model to load on every prompt).")] = None,
    deadline: Annotated[float | None, typer.Option(
        "--deadline", min=0.1, metavar="SECONDS",
        help=f"Give up after this long (one line on stderr), before Claude Code's own timeout"
        f" kills the hook. Default: {RECALL_DEADLINE_S:g} s for SessionStart and"
        f" UserPromptSubmit, {STORE_DEADLINE_S:g} s for the others.")] = None,
) -> None:
    """Answer one Claude Code hook: the hook's JSON on stdin; for SessionStart and
    UserPromptSubmit the recalled context on stdout. Always exits 0: on failure one line on
    stderr and nothing on stdout, so the agent is never blocked."""
    run_hook(ctx.ensure_object(GlobalOptions), event, RunOptions(budget, limit, mode, deadline))


@dataclass(frozen=True)
class RunOptions:
    """``hooks run``'s own options (None: the default)."""

    budget: int | None = None
    limit: int | None = None
    mode: str | None = None
    deadline: float | None = None


def run_hook(g: GlobalOptions, event: str, opts: RunOptions) -> None:
    """``hooks run``'s body, reached through typer or ``fast_run``."""
    seconds = opts.deadline or (RECALL_DEADLINE_S if event in RECALL_EVENTS
                                else STORE_DEADLINE_S)
    try:
        with _deadline(seconds):
            answer = _answer(g, event, sys.stdin.buffer.read(), opts)
    except (ClawMemoryError, OSError) as exc:  # TimeoutError included
        say_error(f"clawmem hooks run {event}: {exc} (nothing was blocked)")
        return
    except Exception as exc:  # a bug must not block the agent either
        say_error(f"clawmem hooks run {event}: {internal_error(exc)}")
        return
    if answer:
        sys.stdout.write(answer + "\n")
        sys.stdout.flush()


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise ``TimeoutError`` in this (the main) thread after ``seconds``: a locked database
    makes the store retry for a minute, longer than Claude Code waits. Where there is no
    SIGALRM (Windows), Claude Code's own timeout is the only one."""
    import signal

    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"gave up after {seconds:g} s (--deadline)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _answer(g: GlobalOptions, event: str, raw: bytes, opts: RunOptions) -> str:
    hook = parse_input(raw, event)
    budget, limit = opts.budget, opts.limit
    with _lazy_memory(g, opts.mode) as memory:
        if event in RECALL_EVENTS:
            if budget is None or limit is None:  # installed hooks always pass both
                from clawmemory.interfaces.cli.common import settings_of

                context = settings_of(g).context
                budget = budget or context.hooks_budget_tokens
                limit = limit or context.hooks_recall_limit
            found = recall_context(memory, hook, budget_tokens=budget, limit=limit)
            return hook_output(event, found)
        store_turns(memory, hook, directory=state_dir(), target=g.url or g.db or "")
        return ""


@contextmanager
def _lazy_memory(g: GlobalOptions, mode: str | None) -> Iterator[Callable[[], HookMemory]]:
    """A function opening the memory on its first call (closed when the block ends): a
    prompt with nothing to ask, or a Stop with nothing new, opens nothing."""
    with ExitStack() as stack:
        opened: list[HookMemory] = []

        def memory() -> HookMemory:
            if not opened:
                opened.append(stack.enter_context(_open(g, mode)))
            return opened[0]

        yield memory


@contextmanager
def _open(g: GlobalOptions, mode: str | None) -> Iterator[HookMemory]:
    if g.url:
        with HttpMemory(g.url, api_key=g.api_key, namespace=g.namespace, mode=mode) as remote:
            yield remote
        return
    from clawmemory.interfaces.cli.common import open_local

    # Vectors are queued, not computed: storing a turn must not load the embedding model
    # (a server, `clawmem maintain` or `backfill` fill them); keyword recall sees it at once.
    with open_local(g.db, g.namespace, g.backend.value if g.backend else None,
                    vector_writes="queue", agent=g.agent, profile=g.profile) as mem:
        yield FacadeMemory(mem, mode or "keyword")


# --- the fast path ------------------------------------------------------------------------------
# typer coerces every parameter through pydantic (~0.1 s of imports, a third of the budget of a
# hook on every prompt), so `app.main` hands a plain `hooks run` line to `fast_run`, which parses
# the few options such a line has itself. Anything else (--help, an unknown option, a bad value)
# goes to typer as before, which reports it. tests/interfaces/test_hooks.py checks these tables
# against the app's global options.
GLOBAL_VALUED = {"--db": "db", "--namespace": "namespace", "-n": "namespace",
                 "--backend": "backend", "--url": "url", "--api-key": "api_key",
                 "--profile": "profile", "--agent": "agent"}
GLOBAL_FLAGS = {"--json": "json"}
_RUN_OPTIONS = ("--budget", "--limit", "--mode", "--deadline")
_ENVIRONMENT = {"db": "CLAWMEM_DB", "namespace": "CLAWMEM_NAMESPACE", "backend": "CLAWMEM_BACKEND",
                "url": "CLAWMEM_URL", "api_key": "CLAWMEM_API_KEY", "profile": "CLAWMEM_PROFILE",
                "agent": "CLAWMEM_AGENT"}


def fast_run(args: Sequence[str]) -> int | None:
    """Run ``args`` (the command line after ``clawmem``) without typer when it is a plain
    ``[global options] hooks run EVENT [--budget N] [--limit N] [--mode M]``; None otherwise."""
    parsed = _parse(args)
    if parsed is None:
        return None
    given, words, run_opts = parsed
    if words[:2] != ["hooks", "run"] or len(words) != 3:
        return None
    # From here on the line is a hook's: a bad value is reported, never a usage error (exit 2
    # would block the agent).
    values = {name: given.get(name) or os.environ.get(var) or None
              for name, var in _ENVIRONMENT.items()}
    budget, limit = _positive(run_opts.get("--budget")), _positive(run_opts.get("--limit"))
    deadline = _seconds(run_opts.get("--deadline"))
    url, backend = values["url"], values["backend"]
    problem = ("--budget and --limit take a positive integer" if 0 in (budget, limit)
               else "--deadline takes a number of seconds" if deadline == 0
               else f"--url must be an http:// or https:// address, not {url!r}"
               if url and not url.startswith(("http://", "https://")) else None)
    try:
        chosen = Backend(backend.lower()) if backend else None
    except ValueError:
        problem = f"unknown backend {backend!r}"
    if problem:
        say_error(f"clawmem hooks run {words[2]}: {problem} (nothing was blocked)")
        return 0
    g = GlobalOptions(db=values["db"], namespace=values["namespace"], backend=chosen,
                      json="json" in given, url=url, api_key=values["api_key"],
                      profile=values["profile"], agent=values["agent"])
    run_hook(g, words[2], RunOptions(budget, limit, run_opts.get("--mode"), deadline))
    return 0


def _parse(args: Sequence[str]) -> tuple[dict[str, str], list[str], dict[str, str]] | None:
    """(global options, positional words, run options), or None for anything else."""
    given: dict[str, str] = {}
    words: list[str] = []
    run_opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        name, eq, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        if name in GLOBAL_FLAGS and not eq:
            given[GLOBAL_FLAGS[name]] = "1"
        elif name in GLOBAL_VALUED or name in _RUN_OPTIONS:
            if not eq and i + 1 >= len(args):
                return None
            value = inline if eq else args[i + 1]
            i += 0 if eq else 1
            if name in _RUN_OPTIONS:
                run_opts[name] = value
            else:
                given[GLOBAL_VALUED[name]] = value
        elif token.startswith("-"):
            return None  # --help, --version, an option unknown here: typer's to answer
        else:
            words.append(token)
        i += 1
    return given, words, run_opts


def _positive(value: str | None) -> int | None:
    """The integer in ``value``; None when not given; 0 when not a positive integer."""
    if value is None:
        return None
    return int(value) if value.isdigit() and int(value) > 0 else 0


def _seconds(value: str | None) -> float | None:
    """The positive number in ``value``; None when not given; 0 when not one."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return 0
    return seconds if 0 < seconds < float("inf") else 0

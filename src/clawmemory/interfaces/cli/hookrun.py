"""``clawmem hooks run``'s body, without typer: the answer to one Claude Code hook.

Every prompt of a coding agent waits for this process, so the package's ``main`` hands it a
plain ``[global options] hooks run EVENT [options]`` line before typer is even imported
(``fast_run``): typer costs ~50 ms to import and coerces every parameter through pydantic
(~0.1 s more). Nothing here imports typer, ``common`` (the settings and the façade) or the
remote client; a local store is opened (``common.open_local``) only when there is something
to ask or store. ``hooks.run`` (the typer command) calls ``run_hook`` too, for lines the
fast path leaves to typer (``--help``, an option unknown here).

Whatever goes wrong, ``run_hook`` returns normally (exit 0) with one line on stderr and
nothing on stdout: exit 2 would block the agent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from clawmemory.choices import Backend
from clawmemory.errors import ClawMemoryError
from clawmemory.hooks.claude_code import (
    RECALL_DEADLINE_S,
    RECALL_EVENTS,
    STORE_DEADLINE_S,
    FacadeMemory,
    HookMemory,
    HttpMemory,
    hook_output,
    parse_input,
    recall_context,
    state_dir,
    store_turns,
)
from clawmemory.interfaces.cli.base import GlobalOptions, internal_error, say_error

__all__ = ["GLOBAL_FLAGS", "GLOBAL_VALUED", "RunOptions", "fast_run", "run_hook"]


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
# The few options a hook line has, parsed here instead of by typer. Anything else (--help, an
# option unknown here) goes to typer as before. tests/interfaces/test_hooks.py checks these
# tables against the app's global options.
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

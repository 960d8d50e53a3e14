"""``clawmem hooks``: automatic memory for Claude Code (docs/hooks.md).

``clawmem hooks install claude-code`` writes the hook commands into Claude Code's settings;
``clawmem hooks run EVENT`` is what those commands run: it reads the hook's JSON on stdin and
answers as Claude Code expects. The logic (payload, transcript, cursor, context block, the
settings merge) is ``hooks.claude_code``; ``run``'s body is ``hookrun``, which the package's
``main`` reaches without typer for a plain hook line (every prompt waits for it). This module
is the typer side: ``install``, and ``run`` for the lines typer parses (``--help``, ...).
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from clawmemory.errors import InvalidInputError
from clawmemory.hooks.claude_code import (
    EVENTS,
    RECALL_DEADLINE_S,
    STORE_DEADLINE_S,
    hook_config,
    merge_settings,
    settings_path,
)
from clawmemory.interfaces.cli.base import GlobalOptions
from clawmemory.interfaces.cli.hookrun import RunOptions, run_hook

__all__ = ["register"]

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

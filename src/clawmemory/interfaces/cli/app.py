"""``clawmem``: the command-line adapter over ``Memory``: the typer app, its global options and
``main()``, the console script.

The commands live in the modules of this package, each with a ``register(app)`` hook. A module
is imported when its command runs, not before: ``clawmem recall`` loads the memory commands
only, ``clawmem --version`` and ``clawmem --help``'s parse none (the group below looks a
command up in ``COMMANDS`` and registers its module then; ``--help`` and a misspelt command
load them all). Each command module costs its imports (the settings and the façade, the MCP
and REST stack, the importers, the agent), so a process pays only for the one it runs.
``register_extensions`` registers them all at once. Imports go one way: this module -> the
command modules -> ``common`` -> ``base``; exit codes: see ``base``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clawmemory import __version__
from clawmemory.choices import Backend
from clawmemory.interfaces.cli.argv import GlobalOptionsGroup
from clawmemory.interfaces.cli.base import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    GlobalOptions,
    fail,
    internal_error,
    say_error,
)

if TYPE_CHECKING:  # imported by name when a command runs (COMMANDS); named here for the layers
    from clawmemory.interfaces.cli import (  # noqa: F401
        chat,
        config_cmd,
        demo,
        hooks,
        keys,
        lifecycle,
        memories,
        portability,
        retrieval,
        serving,
    )

__all__ = ["COMMANDS", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE",
           "app", "main", "register_extensions"]

# Each command module of this package and the commands its register(app) adds, in the order
# `clawmem --help` lists them (typer lists plain commands before groups: keys, hooks, config last).
# tests/interfaces/test_cli.py checks this table against the modules.
COMMANDS: dict[str, tuple[str, ...]] = {
    "memories": ("add", "update", "forget", "reinforce", "demote", "correct", "confirm",
                 "history", "recall", "get", "list", "stats"),
    "chat": ("chat",),
    "demo": ("demo",),
    "lifecycle": ("maintain", "daemon", "runs", "restore"),
    "serving": ("mcp", "serve"),
    "portability": ("export", "import", "copy", "sync"),
    "retrieval": ("reindex", "backfill", "link", "unlink", "neighbors", "entity"),
    "keys": ("keys",),
    "hooks": ("hooks",),
    "config_cmd": ("config",),
}
_MODULE_OF = {name: module for module, names in COMMANDS.items() for name in names}
_ORDER = {name: i for i, name in enumerate(_MODULE_OF)}


def _module(name: str) -> Any:
    return importlib.import_module(f"{__package__}.{name}")


class LazyCommandsGroup(GlobalOptionsGroup):
    """The ``clawmem`` group: global options anywhere (``GlobalOptionsGroup``), and each
    command module imported and registered when one of its commands is looked up."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:  # click's own Context
        if cmd_name not in self.commands and cmd_name in _MODULE_OF:
            self._load(_MODULE_OF[cmd_name])
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and args[0] not in self.commands and args[0] not in _MODULE_OF:
            self.list_commands(ctx)  # a misspelt command: "did you mean" needs every name
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: Any) -> list[str]:
        for module in COMMANDS:  # help and "did you mean": every command
            self._load(module)
        return sorted(self.commands, key=lambda n: _ORDER.get(n, len(_ORDER)))

    def _load(self, module: str) -> None:
        if all(name in self.commands for name in COMMANDS[module]):
            return  # registered already (register_extensions, or looked up before)
        extra = typer.Typer(rich_markup_mode=app.rich_markup_mode,
                            pretty_exceptions_short=app.pretty_exceptions_short)
        _module(module).register(extra)
        for name, command in typer.main.get_group(extra).commands.items():
            self.commands.setdefault(name, command)


app = typer.Typer(
    name="clawmem",
    help="clawmemory: local-first long-term memory for LLM agents.\n\n"
    "Global options (--db, --namespace, --backend, --profile, --agent, --json, --url,"
    " --api-key) go before or after the command. Environment: CLAWMEM_DB, CLAWMEM_NAMESPACE,"
    " CLAWMEM_BACKEND, CLAWMEM_PROFILE, CLAWMEM_AGENT, CLAWMEM_URL, CLAWMEM_API_KEY,"
    " CLAWMEM_CONFIG, CLAWMEM_HOME, CLAWMEM_DEBUG.\n\n"
    "Example: clawmem recall \"dark theme\" --db agent.db --json",
    cls=LazyCommandsGroup,
    add_completion=False,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


# --- global options ------------------------------------------------------------------------------
def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"clawmem {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    *,
    db: Annotated[str | None, typer.Option(
        "--db", envvar="CLAWMEM_DB", metavar="PATH|URL",
        help="Database file, or a postgresql:// address (docs/postgres.md). Default:"
        " ~/.clawmemory/memory.db (or $CLAWMEM_HOME).")] = None,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", "-n", envvar="CLAWMEM_NAMESPACE", metavar="NS",
        help="Namespace (tenant) to work in. Default: default.")] = None,
    backend: Annotated[Backend | None, typer.Option(
        "--backend", envvar="CLAWMEM_BACKEND", case_sensitive=False,
        help="Storage backend. Default: sqlite.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Machine output: one JSON document on stdout.")] = False,
    url: Annotated[str | None, typer.Option(
        "--url", envvar="CLAWMEM_URL", metavar="URL",
        help="Talk to a clawmemory server (clawmem serve) instead of a local database,"
        " e.g. http://127.0.0.1:8765.")] = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", envvar="CLAWMEM_API_KEY", metavar="KEY",
        help="The server's API key (clawmem keys create), with --url.")] = None,
    profile: Annotated[str | None, typer.Option(
        "--profile", envvar="CLAWMEM_PROFILE", metavar="NAME",
        help="A specification's defaults: clawmemory (default), ptrclaw, sclaw, devclaw,"
        " koshi, sandbox (docs/profiles.md; `clawmem config show` prints the result).")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", envvar="CLAWMEM_AGENT", metavar="NAME",
        help="The agent (agent.agent_name). With storage.layout = \"per-agent\": that"
        " agent's own database (agents.NAME; docs/configuration.md).")] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=_show_version, is_eager=True,
        help="Print the version and exit.")] = False,
) -> None:
    if url is not None and not url.startswith(("http://", "https://")):
        fail(f"--url must be an http:// or https:// address, not {url!r}", EXIT_USAGE)
    ctx.obj = GlobalOptions(db=db, namespace=namespace, backend=backend, json=as_json, url=url,
                            api_key=api_key, profile=profile, agent=agent)
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


# --- entry point ---------------------------------------------------------------------------------
def register_extensions(target: typer.Typer) -> None:
    """Add the commands of every command module (its ``register(app)`` hook) to ``target`` at
    once (tests, docs); ``main()`` does not: its group registers a module when its command runs. A
    hook replaces commands of its names, so calling it twice is harmless."""
    for module in COMMANDS:
        _module(module).register(target)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``clawmem`` console script. Returns the exit code."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=None if argv is None else list(argv), prog_name="clawmem",
                              standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors: bad option, missing argument
        usage_ctx = getattr(exc, "ctx", None)
        hint = f" (see '{usage_ctx.command_path} --help')" if usage_ctx is not None else ""
        say_error(exc.format_message() + hint)
        return exc.exit_code
    except typer.Abort:
        say_error("aborted")
        return EXIT_NOT_FOUND
    except Exception as exc:  # outside any command, e.g. while parsing: still one line
        say_error(internal_error(exc))
        return EXIT_INTERNAL
    return result if isinstance(result, int) else EXIT_OK

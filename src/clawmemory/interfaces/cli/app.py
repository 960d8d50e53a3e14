"""``clawmem``: the command-line adapter over ``Memory``: the typer app, its global options and
``main()``, the console script.

The commands live in the modules of this package, each with a ``register(app)`` hook: the
memory commands in ``memories`` (registered when this module is imported), the others
(``chat``, ``demo``, ``keys``, ``lifecycle``, ``serving``, ``portability``, ``retrieval``) by
``register_extensions``, which ``main()`` calls. They build on ``common`` (global options,
output modes, the error boundary), so every command behaves alike. Imports go one way:
this module -> the command modules -> ``common``; exit codes: see ``common``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated

import typer

from clawmemory import __version__
from clawmemory.config import Backend
from clawmemory.interfaces.cli import (
    chat,
    config_cmd,
    demo,
    keys,
    lifecycle,
    memories,
    portability,
    retrieval,
    serving,
)
from clawmemory.interfaces.cli.argv import GlobalOptionsGroup
from clawmemory.interfaces.cli.common import (
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

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "app",
           "main", "register_extensions"]

# The command modules main() adds, in the order their commands were always registered.
EXTENSIONS: tuple[Callable[[typer.Typer], None], ...] = (
    chat.register, demo.register, keys.register, lifecycle.register, serving.register,
    portability.register, retrieval.register, config_cmd.register,
)

app = typer.Typer(
    name="clawmem",
    help="clawmemory: local-first long-term memory for LLM agents.\n\n"
    "Global options (--db, --namespace, --backend, --profile, --agent, --json, --url,"
    " --api-key) go before or after the command. Environment: CLAWMEM_DB, CLAWMEM_NAMESPACE,"
    " CLAWMEM_BACKEND, CLAWMEM_PROFILE, CLAWMEM_AGENT, CLAWMEM_URL, CLAWMEM_API_KEY,"
    " CLAWMEM_CONFIG, CLAWMEM_HOME, CLAWMEM_DEBUG.\n\n"
    "Example: clawmem recall \"dark theme\" --db agent.db --json",
    cls=GlobalOptionsGroup,
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


memories.register(app)


# --- entry point ---------------------------------------------------------------------------------
def register_extensions(target: typer.Typer) -> None:
    """Add the commands of every other command module (its ``register(app)`` hook) to
    ``target``. main() calls it; a hook replaces commands of its names, so calling it twice is
    harmless."""
    for hook in EXTENSIONS:
        hook(target)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``clawmem`` console script. Returns the exit code."""
    register_extensions(app)
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

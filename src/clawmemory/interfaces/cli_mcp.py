"""``clawmem mcp`` (stdio) and ``clawmem serve`` (streamable HTTP): memory as an MCP server.

``register(app)`` adds both to the ``clawmem`` app. They honour the global options (``--db``,
``--namespace``, ``--backend``, ``--json``) and the error boundary of ``cli.py`` like every
other command, open the memory once and serve until the client leaves (stdio) or the process
is stopped (SIGINT/SIGTERM; HTTP)::

    clawmem --db ~/agent.db mcp --dialect koshi
    clawmem serve --port 8765        # http://127.0.0.1:8765/mcp

``serve`` listens on loopback only: MCP over HTTP has no authentication yet, so an address
other clients can reach would hand them every memory. A reverse proxy that authenticates can
sit in front of it (``--allow-host`` names the host it forwards).

The MCP SDK is an optional dependency (``clawmemory[mcp]``): it is imported when one of these
commands runs, never when the CLI starts.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Annotated, Any

import typer

from clawmemory.config import ServerSettings
from clawmemory.errors import ConfigError, InvalidInputError
from clawmemory.interfaces.cli import _emit, _guarded, _open
from clawmemory.tools.dialects import DEFAULT_DIALECT, DIALECT_ALIASES, DIALECTS, resolve_dialect

__all__ = ["COMMANDS", "DEFAULT_HOST", "DEFAULT_PORT", "register"]

log = logging.getLogger("clawmemory.mcp")

COMMANDS = ("mcp", "serve")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
_DIALECT_HELP = (f"Tool dialect: {', '.join(DIALECTS)}, or a spec number "
                 f"({', '.join(DIALECT_ALIASES)}). See docs/tools.md.")

DialectOpt = Annotated[str, typer.Option("--dialect", "-d", metavar="NAME", help=_DIALECT_HELP)]


def register(app: typer.Typer) -> None:
    """Add ``mcp`` and ``serve`` to ``app``, replacing earlier commands of those names (so
    registering twice is harmless)."""
    app.registered_commands = [c for c in app.registered_commands if c.name not in COMMANDS]
    app.command("mcp")(_guarded(mcp_cmd))
    app.command("serve")(_guarded(serve_cmd))


# --- commands ------------------------------------------------------------------------------------
def mcp_cmd(ctx: typer.Context, dialect: DialectOpt = DEFAULT_DIALECT) -> None:
    """Serve memory to one MCP client over stdio (Claude Desktop, Claude Code, Cursor).

    The client starts this command; stdout carries the protocol and logs go to stderr.
    The server stops when the client closes stdin. See docs/mcp.md.

    Example: clawmem --db ~/agent.db mcp --dialect koshi
    """
    key = _dialect(dialect)
    _require_sdk()
    from clawmemory.interfaces.mcp import build_server, serve_stdio

    with _open(ctx) as mem, _stop_on_sigterm():
        server = build_server(mem, key)
        log.info("serving MCP on stdio: dialect %s, namespace %s, database %s; %s", key,
                 mem.namespace, mem.settings.db_label(), mem.components.warm_note)
        serve_stdio(server)


def serve_cmd(
    ctx: typer.Context,
    *,
    host: Annotated[str, typer.Option(
        help="Loopback address to listen on: 127.0.0.1, another 127.x.y.z, localhost or ::1. "
        "Other addresses are refused (there is no authentication).")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(
        min=0, max=65535, help="TCP port (0: any free port; the URL printed says which).")
    ] = DEFAULT_PORT,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", metavar="NAME",
        help="Also accept requests addressed to this host name (Host header), e.g. the name "
        "a reverse proxy forwards; repeatable. Adds to [server] allowed_hosts.")] = None,
    dialect: DialectOpt = DEFAULT_DIALECT,
) -> None:
    """Serve memory to MCP clients over streamable HTTP at http://HOST:PORT/mcp.

    Prints the URL, then serves until Ctrl-C or SIGTERM. Requests whose Host or Origin
    header names another site are refused (DNS-rebinding protection). See docs/mcp.md.

    Example: clawmem --db ~/agent.db serve --port 8765
    """
    key = _dialect(dialect)
    _require_sdk()
    from clawmemory.interfaces.mcp import (
        HTTP_PATH,
        build_server,
        is_loopback,
        listen,
        serve_http,
        url_host,
    )

    if not is_loopback(host):
        raise ConfigError(
            f"refusing to listen on {host}: MCP over HTTP has no authentication, so anyone "
            "who could reach that address could read and change every memory. Listen on "
            "loopback (--host 127.0.0.1 or ::1) and, to serve other machines, put a reverse "
            "proxy that authenticates in front of it (--allow-host NAME for the name it "
            "forwards)")
    extra = _checked_hosts(allow_host)  # before anything is opened
    with _open(ctx) as mem, _stop_on_sigterm():
        cfg = mem.settings.server
        cfg = cfg.model_copy(update={"allowed_hosts": [*cfg.allowed_hosts, *extra]})
        server = build_server(mem, key)
        sock = listen(host, port)
        try:
            bound = int(sock.getsockname()[1])
            url = f"http://{url_host(host.strip())}:{bound}{HTTP_PATH}"
            data: dict[str, Any] = {"url": url, "dialect": key, "namespace": mem.namespace,
                                    "db": str(mem.settings.db_label()),
                                    "warm_up": mem.components.warm_note}
            line = (f"clawmemory MCP server at {url} (dialect {key}, namespace "
                    f"{mem.namespace}, database {data['db']}; {data['warm_up']})")
            # one unwrapped line (rich would wrap it at 80 columns): scripts read the URL
            _emit(ctx, data, lambda _console: typer.echo(line))
            sys.stdout.flush()  # a supervisor reading our stdout through a pipe sees it now
            serve_http(server, sock, host, cfg)
        finally:
            sock.close()


# --- helpers -------------------------------------------------------------------------------------
def _dialect(name: str) -> str:
    """The canonical dialect name, checked before anything is opened."""
    try:
        return resolve_dialect(name)
    except KeyError:
        raise InvalidInputError(f"unknown --dialect {name!r}; known: {', '.join(DIALECTS)} "
                                f"(or {', '.join(DIALECT_ALIASES)})") from None


def _require_sdk() -> None:
    try:
        import mcp.server.lowlevel  # noqa: F401
    except ImportError as exc:
        raise ConfigError("the MCP server needs the MCP SDK: pip install 'clawmemory[mcp]'"
                          ) from exc


def _checked_hosts(names: list[str] | None) -> list[str]:
    """The ``--allow-host`` names, checked like ``[server] allowed_hosts``."""
    from pydantic import ValidationError

    try:
        return ServerSettings(allowed_hosts=names or []).allowed_hosts
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise InvalidInputError(f"--allow-host: {message}") from None


@contextmanager
def _stop_on_sigterm() -> Iterator[None]:
    """Stop on SIGTERM (what service managers and process supervisors send) as on Ctrl-C:
    the server shuts down, then the caller's ``with`` closes the database cleanly.

    uvicorn installs its own handlers while it serves and, after its graceful shutdown,
    re-raises the signal it caught; it then lands here instead of killing the process."""

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():  # only it may set handlers
        yield
        return
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except KeyboardInterrupt:
        log.info("stopped")
    finally:
        signal.signal(signal.SIGTERM, previous)

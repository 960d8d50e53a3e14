"""``clawmem mcp`` (stdio) and ``clawmem serve`` (HTTP): memory as a server.

``register(app)`` adds both to the ``clawmem`` app. They honour the global options (``--db``,
``--namespace``, ``--backend``, ``--json``) and the error boundary of ``common`` like every
other command, open the memory once and serve until the client leaves (stdio) or the process
is stopped (SIGINT/SIGTERM; HTTP)::

    clawmem --db ~/agent.db mcp --dialect koshi
    clawmem serve --port 8765        # MCP at /mcp, REST at /v1, the inspector at /

``serve`` (ADR 0016) serves the REST API, the web inspector and MCP over streamable HTTP on one
port, behind one gate (``interfaces/rest/gate.py``): Host/Origin checks, body limits, API keys.
With no API key in the database it listens on loopback only, since an address other clients
can reach would hand them every memory; once keys exist (``clawmem keys create``), every
request needs one and any address may be used.

The MCP SDK and FastAPI are core dependencies (ADR 0021), imported when one of these commands
runs, never when the CLI starts.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clawmemory.auth import keys_for
from clawmemory.backends.registry import no_keys_before_opening
from clawmemory.config import ServerSettings, Settings, load_settings
from clawmemory.errors import ConfigError, InvalidInputError
from clawmemory.interfaces.cli.common import (
    emit,
    globals_of,
    guarded,
    open_memory,
)
from clawmemory.profiles import DEFAULT_PROFILE
from clawmemory.tools.dialects import DEFAULT_DIALECT, DIALECTS, resolve_dialect

if TYPE_CHECKING:
    from clawmemory.memory import Memory

__all__ = ["COMMANDS", "DEFAULT_HOST", "DEFAULT_PORT", "register"]

log = logging.getLogger("clawmemory.mcp")

COMMANDS = ("mcp", "serve")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
_DIALECT_HELP = (f"Tool dialect: {', '.join(DIALECTS)}: unified (the default) is clawmemory's"
                 " own tool set, the others keep another agent's tool names. See"
                 " docs/tools.md.")

DialectOpt = Annotated[str | None, typer.Option(
    "--dialect", "-d", metavar="NAME", help=_DIALECT_HELP + " Default: unified, or the tool"
    " dialect of the --profile chosen (ptrclaw, sclaw, devclaw, koshi, sandbox).")]
AllToolsOpt = Annotated[bool, typer.Option(
    "--all-tools", help="unified only: offer every tool (feedback, links, entities, stats, the"
    " admin tool memory_index), not just recall, store, update, correct, forget and list.")]


def register(app: typer.Typer) -> None:
    """Add ``mcp`` and ``serve`` to ``app``, replacing earlier commands of those names (so
    registering twice is harmless)."""
    app.registered_commands = [c for c in app.registered_commands if c.name not in COMMANDS]
    app.command("mcp")(guarded(mcp_cmd))
    app.command("serve")(guarded(serve_cmd))


# --- commands ------------------------------------------------------------------------------------
def mcp_cmd(ctx: typer.Context, dialect: DialectOpt = None,
            all_tools: AllToolsOpt = False) -> None:
    """Serve memory to one MCP client over stdio (Claude Desktop, Claude Code, Cursor).

    The client starts this command; stdout carries the protocol and logs go to stderr.
    The server stops when the client closes stdin. See docs/mcp.md.

    Example: clawmem --db ~/agent.db mcp --dialect koshi
    """
    key = _dialect(dialect)
    # Lazy for cold start: the MCP SDK costs ~0.7 s to import, and only these commands use it.
    from clawmemory.interfaces.mcp import build_server, serve_stdio

    with open_memory(ctx, local=True) as mem, _stop_on_sigterm(), _notes_watcher(mem):
        key = key or _profile_dialect(mem.settings)
        server = build_server(mem, key, all_tools=all_tools)
        log.info("serving MCP on stdio: dialect %s, namespace %s, database %s; %s", key,
                 mem.namespace, mem.settings.db_label(), mem.parts.vectors.warm_note)
        serve_stdio(server)


def serve_cmd(
    ctx: typer.Context,
    *,
    host: Annotated[str, typer.Option(
        help="Address to listen on. Without API keys only loopback (127.0.0.1, another"
        " 127.x.y.z, localhost or ::1) is accepted; with keys (clawmem keys create) any"
        " address.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(
        min=0, max=65535, help="TCP port (0: any free port; the URL printed says which).")
    ] = DEFAULT_PORT,
    allow_host: Annotated[list[str] | None, typer.Option(
        "--allow-host", metavar="NAME",
        help="Also accept requests addressed to this host name (Host header), e.g. the name "
        "a reverse proxy forwards or the machine's name; repeatable. Adds to [server]"
        " allowed_hosts.")] = None,
    dialect: DialectOpt = None,
    all_tools: AllToolsOpt = False,
) -> None:
    """Serve memory over HTTP: MCP at /mcp, the REST API at /v1, the web inspector at /.

    Prints the URL, then serves until Ctrl-C or SIGTERM. Requests whose Host or Origin
    header names another site are refused (DNS-rebinding protection). Once any API key
    exists, every request needs one (Authorization: Bearer KEY). See docs/rest.md,
    docs/inspector.md and docs/mcp.md.

    Example: clawmem --db ~/agent.db serve --port 8765
    """
    key = _dialect(dialect)
    _fewer_malloc_arenas()  # before the first worker thread
    # Lazy for cold start: the MCP SDK, FastAPI and uvicorn load only when a server starts.
    from clawmemory.interfaces.mcp import build_server, is_loopback, listen, url_host
    from clawmemory.interfaces.rest import Service, build_app, serve

    loopback = is_loopback(host)
    extra = _checked_hosts(allow_host)  # before anything is opened
    if not loopback:
        _refuse_unless_keys(ctx, host, None)
    with open_memory(ctx, local=True) as mem, _stop_on_sigterm(), _notes_watcher(mem):
        keys = keys_for(mem.store_backend)
        if not loopback:
            _refuse_unless_keys(ctx, host, keys)
        cfg = mem.settings.server
        cfg = cfg.model_copy(update={"allowed_hosts": [*cfg.allowed_hosts, *extra]})
        key = key or _profile_dialect(mem.settings)
        server = build_server(mem, key, all_tools=all_tools)
        sock = listen(host, port)
        try:
            bound = int(sock.getsockname()[1])
            base = f"http://{url_host(host.strip())}:{bound}"
            app = build_app(Service(mem, keys, cfg, loopback), host=host, port=bound,
                            mcp_server=server)
            _announce(ctx, mem, base, key, keys is not None and keys.required())
            serve(app, sock)
        finally:
            sock.close()


def _fewer_malloc_arenas(arenas: int = 2) -> None:
    """glibc gives threads that allocate at once arenas of their own (up to 8 per core), and
    each keeps what its thread freed: a server's request threads hold the same work in far
    more resident memory. Two arenas is the usual setting for Python servers (gunicorn's docs
    advise MALLOC_ARENA_MAX=2); set here for this server process only, never by the library."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-8, arenas)  # M_ARENA_MAX (malloc.h); a no-op on a libc without it
        # M_MMAP_THRESHOLD, fixed: by default glibc raises it after each large free, and a
        # recall's temporaries (megabytes: the rescored rows, the centre's pass) then come from
        # the heap and stay resident after they are freed.
        libc.mallopt(-3, 1 << 20)
    except (OSError, AttributeError):  # not glibc (musl): nothing to tune
        return


def _announce(ctx: typer.Context, mem: Any, base: str, dialect: str, keyed: bool) -> None:
    data: dict[str, Any] = {"url": f"{base}/mcp", "rest": f"{base}/v1",
                            "inspector": f"{base}/", "dialect": dialect,
                            "namespace": mem.namespace, "db": str(mem.settings.db_label()),
                            "api_keys": keyed, "warm_up": mem.parts.vectors.warm_note}
    auth = "API keys required" if keyed else "no API keys: loopback only"
    line = (f"clawmemory MCP server at {data['url']} (REST API at {data['rest']}, inspector at"
            f" {data['inspector']}; {auth}; dialect {dialect}, namespace {mem.namespace},"
            f" database {data['db']}; {data['warm_up']})")
    # one unwrapped line (rich would wrap it at 80 columns): scripts read the URL
    emit(ctx, data, lambda _console: typer.echo(line))
    sys.stdout.flush()  # a supervisor reading our stdout through a pipe sees it now


def _refuse_unless_keys(ctx: typer.Context, host: str, keys: Any) -> None:
    """Beyond loopback, only with API keys. Called first before anything is opened (a store
    that does not exist yet holds no key), then with the opened store's keys."""
    why = "no API key exists"
    if keys is None:
        g = globals_of(ctx)
        settings = load_settings(db=g.db, backend=g.backend.value if g.backend else None,
                                 profile=g.profile)
        reason = no_keys_before_opening(settings)
        if reason is None:
            return  # open the store and look
        why = reason
    elif keys.required():
        return
    raise ConfigError(
        f"refusing to listen on {host}: {why}, so anyone who could reach that address could"
        " read and change every memory. Create a key first (clawmem keys create --namespace"
        " NS --role write; clients send it as 'Authorization: Bearer KEY'), or listen on"
        " loopback (--host 127.0.0.1 or ::1)")


# --- helpers -------------------------------------------------------------------------------------
def _dialect(name: str | None) -> str | None:
    """The canonical dialect name, checked before anything is opened (None: not given)."""
    if name is None:
        return None
    try:
        return resolve_dialect(name)
    except KeyError:
        raise InvalidInputError(f"unknown --dialect {name!r}; known: {', '.join(DIALECTS)}"
                                ) from None


def _profile_dialect(settings: Settings) -> str:
    """The dialect served when none is named: a specification's profile serves that
    specification's tools, clawmemory's own profile the unified set."""
    if settings.profile == DEFAULT_PROFILE:
        return DEFAULT_DIALECT
    return resolve_dialect(settings.agent.tools_dialect)


def _checked_hosts(names: list[str] | None) -> list[str]:
    """The ``--allow-host`` names, checked like ``[server] allowed_hosts``."""
    from pydantic import ValidationError

    try:
        return ServerSettings(allowed_hosts=names or []).allowed_hosts
    except ValidationError as exc:
        message = str(exc.errors()[0]["msg"]).removeprefix("Value error, ")
        raise InvalidInputError(f"--allow-host: {message}") from None


@contextmanager
def _notes_watcher(mem: Memory) -> Iterator[None]:
    """With ``storage.mirror_dir`` set, a thread that syncs edited notes back while the server
    runs (``storage.mirror_poll_s``; ADR 0023), stopped before the memory closes."""
    cfg = mem.settings.storage
    if cfg.mirror_dir is None or cfg.mirror_poll_s <= 0:
        yield
        return
    # Lazy for cold start: the portability package loads only when a notes folder is set.
    from clawmemory.portability.notes import NotesWatcher

    watcher = NotesWatcher(mem, interval=cfg.mirror_poll_s)
    log.info("watching the notes in %s (every %g s)", watcher.root, cfg.mirror_poll_s)
    with watcher.running():
        yield


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

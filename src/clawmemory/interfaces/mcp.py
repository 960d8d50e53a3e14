"""The MCP server: one tool dialect of the registry, served over stdio or streamable HTTP.

The tools an MCP client lists are exactly ``tools_for(dialect)``: same names, descriptions and
JSON schemas; a call goes to ``call_tool(mem, name, arguments, dialect=...)``. An ``is_error``
result becomes an MCP tool error result (``isError: true``) carrying its one sentence, so the
model reads what to fix; nothing escapes to the client as a protocol error or a traceback.

Built on the SDK's low-level ``Server`` rather than ``MCPServer``: ``MCPServer`` derives each
tool's schema from a Python signature and validates arguments against it, whereas the
registry's schemas and argument checks are the contract here (and are shared with the
OpenAI/Anthropic tool exports), so they must reach the client unchanged.

One ``Memory`` serves the whole process. Engine calls block (SQLite, the embedding model), so
each runs in a worker thread and the event loop keeps serving other requests meanwhile.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from clawmemory.errors import ConfigError
from clawmemory.tools import DEFAULT_DIALECT, DialectTool, ToolResult, call_tool, tools_for

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from clawmemory.engine import Memory

__all__ = [
    "HTTP_PATH",
    "SERVER_NAME",
    "build_server",
    "instructions",
    "is_loopback",
    "listen",
    "serve_http",
    "serve_stdio",
]

log = logging.getLogger("clawmemory.mcp")

SERVER_NAME = "clawmemory"
HTTP_PATH = "/mcp"


# --- what the client sees ------------------------------------------------------------------------
def instructions(tools: Sequence[DialectTool]) -> str:
    """How an agent should use its memory, naming this dialect's own tools."""
    recall = _tool_for(tools, "memory_recall")
    store = _tool_for(tools, "memory_store")
    lines = ["clawmemory is your long-term memory: it lasts across conversations and sessions."]
    if recall:
        lines.append(f"Before answering anything that may depend on earlier conversations (the "
                     f"user's preferences, projects, decisions, people, facts they told you), "
                     f"search memory with {recall} using a few specific keywords.")
    if store:
        lines.append(f"When you learn something worth keeping (a preference, a decision, a fact "
                     f"about the user or their work), save it with {store}: one self-contained "
                     f"fact per memory, in plain words. Do not save secrets or passing chatter.")
    lines.append("When a memory turns out wrong or outdated, update or correct it instead of "
                 "saving a contradicting one; forget what the user asks you to forget. Results "
                 "show ids as [id:...]; pass them back to refer to a memory.")
    return " ".join(lines)


def _tool_for(tools: Sequence[DialectTool], operation: str) -> str | None:
    for tool in tools:
        if operation in tool.operations:
            return f"`{tool.name}`"
    return None


def _listing(tool: DialectTool) -> types.Tool:
    # Hints only: a client may auto-approve read-only tools and ask before writing ones.
    hints = types.ToolAnnotations(read_only_hint=not tool.writes)
    return types.Tool(name=tool.name, description=tool.description,
                      input_schema=dict(tool.input_schema), annotations=hints)


def _as_mcp(result: ToolResult) -> types.CallToolResult:
    # Text only: each dialect's wording ("[id:N] ...") is the contract the model was written
    # against; structured content would let a client show the model raw JSON instead.
    return types.CallToolResult(content=[types.TextContent(type="text", text=result.text)],
                                is_error=result.is_error)


# --- the server ----------------------------------------------------------------------------------
def build_server(mem: Memory, dialect: str = DEFAULT_DIALECT) -> Server[Any]:
    """An MCP server exposing ``dialect``'s tools over ``mem``; InvalidInputError when the
    dialect is unknown. The caller owns ``mem`` and closes it after the server stops."""
    tools = tools_for(dialect)
    # Load the embedding model before serving, not inside the first client's tool call; the
    # note goes into the server's start-up line.
    mem.warm_up()
    listing = [_listing(t) for t in tools]
    schemas = {t.name: dict(t.input_schema) for t in tools}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.model_copy(deep=True) for t in listing])

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        run = functools.partial(_call, mem, params.name, params.arguments, dialect)
        # Not abandoned on cancel: a write the client gave up on still finishes cleanly.
        return _as_mcp(await anyio.to_thread.run_sync(run))

    from clawmemory import __version__

    # get_tool_input_schema: the HTTP transport checks Mcp-Param headers against a tool's
    # schema; a dict lookup spares it an internal tools/list on every call.
    return Server(SERVER_NAME, version=__version__, instructions=instructions(tools),
                  get_tool_input_schema=schemas.get, on_list_tools=list_tools,
                  on_call_tool=call)


def _call(mem: Memory, name: str, arguments: Any, dialect: str) -> ToolResult:
    try:
        return call_tool(mem, name, arguments, dialect=dialect)
    except Exception as exc:  # call_tool never raises; if a bug makes it, the agent still
        log.exception("tool %s failed", name)  # gets a result it can read, not a dead call
        return ToolResult(f"{name} failed unexpectedly ({type(exc).__name__}); see the "
                          "clawmemory log.", {"error": str(exc)}, is_error=True)


# --- transports ----------------------------------------------------------------------------------
def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin/stdout until it closes stdin.

    While serving, the SDK points file descriptor 1 at stderr, so stray output from any
    library cannot corrupt the protocol stream."""

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; ConfigError when that address is unusable.

    Bound here rather than by uvicorn so that a busy port is one clear error line, not a log
    message and an exit from inside the server, and so the server accepts as soon as this
    returns."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}"
                          " (is another server using it? pick another --port)") from exc
    return sock


def serve_http(server: Server[Any], sock: socket.socket, host: str) -> None:
    """Serve MCP over streamable HTTP at ``HTTP_PATH`` on ``sock`` until SIGINT or SIGTERM."""
    import uvicorn

    # host: the SDK turns on DNS-rebinding protection (Host/Origin checks) for loopback.
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    level = logging.getLogger().getEffectiveLevel()
    config = uvicorn.Config(app, log_level=level, access_log=level <= logging.DEBUG,
                            timeout_graceful_shutdown=5, lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])

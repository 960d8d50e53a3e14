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
each runs in a worker thread and the event loop keeps serving other requests meanwhile; every
request's work is bounded (query and content limits, linear query parsing), so no request can
hold the interpreter long enough to starve the others.

Both transports answer what the SDK alone would not: a stdio line that is not a JSON-RPC
message gets a JSON-RPC error (-32700 or -32600) instead of silence (``stdio``), and a
``tools/call`` whose ``arguments`` is not an object gets a tool error result (``isError``)
like any bad argument.
Over HTTP (``clawmem serve``, ``interfaces/rest/``) the Host and Origin headers are checked on
every bind address (DNS-rebinding protection), request bodies are limited (``[server]``
settings), and once API keys exist each call works in the namespace and with the role of the
request's key.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import logging
import socket
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

from clawmemory import __version__
from clawmemory.auth import Role
from clawmemory.errors import ClawMemoryError, ConfigError, InvalidInputError
from clawmemory.interfaces.mcp import surface
from clawmemory.tools import DEFAULT_DIALECT, DialectTool, ToolResult, call_tool, tools_for
from clawmemory.tools.dialects import resolve_dialect

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

    from clawmemory.config import ServerSettings
    from clawmemory.memory import Memory

__all__ = [
    "HTTP_PATH",
    "LOOPBACK_NAMES",
    "SERVER_NAME",
    "allowed_headers",
    "build_server",
    "instructions",
    "is_loopback",
    "listen",
    "url_host",
]

log = logging.getLogger("clawmemory.mcp")

SERVER_NAME = "clawmemory"
HTTP_PATH = "/mcp"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")  # Host names a local client may use

# The raw ``arguments`` of a tools/call that is not a JSON object, set by _ObjectArguments
# for the handler it wraps (the SDK would refuse such a call as a protocol error).
_RAW_ARGUMENTS: ContextVar[tuple[Any] | None] = ContextVar("clawmem_raw_arguments", default=None)


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


def _listing(tool: DialectTool, dialect: str) -> types.Tool:
    # Hints only: a client may auto-approve read-only tools and ask before destructive ones.
    return types.Tool(name=tool.name, description=tool.description,
                      input_schema=surface.user_schema(tool, dialect),
                      annotations=surface.tool_annotations(tool))


def _as_mcp(result: ToolResult, structured: bool = False) -> types.CallToolResult:
    # The seed dialects answer in text only: their wording ("[id:N] ...") is the contract their
    # models were written against. The default dialect adds the data as structured content.
    data = dict(result.data) if structured and not result.is_error else None
    return types.CallToolResult(content=[types.TextContent(type="text", text=result.text)],
                                structured_content=data, is_error=result.is_error)


# --- the server ----------------------------------------------------------------------------------
def build_server(mem: Memory, dialect: str = DEFAULT_DIALECT, *,
                 all_tools: bool = False) -> Server[Any]:
    """An MCP server exposing ``dialect``'s tools over ``mem`` (for the default dialect its
    core set, every tool with ``all_tools``), its resources and prompts; InvalidInputError when
    the dialect is unknown. The caller owns ``mem`` and closes it after the server stops."""
    dialect = resolve_dialect_name(dialect)
    tools = surface.offered(tools_for(dialect), dialect, all_tools)
    # Load the embedding model before serving, not inside the first client's tool call; the
    # note goes into the server's start-up line.
    mem.warm_up()
    listing = [_listing(t, dialect) for t in tools]
    schemas = {t.name: surface.user_schema(t, dialect) for t in tools}
    by_name = {t.name: t for t in tools}
    structured = dialect == DEFAULT_DIALECT

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[t.model_copy(deep=True) for t in listing])

    async def call(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        raw = _RAW_ARGUMENTS.get()
        arguments = raw[0] if raw is not None else params.arguments
        tool = by_name.get(params.name)
        if tool is None:  # not offered (e.g. an admin tool without --all-tools): not callable
            known = ", ".join(by_name)
            return _as_mcp(_refused(f"Unknown tool {params.name!r} (available: {known})."))
        target, refusal = _scoped(mem, ctx, tool.writes)
        refusal = refusal or surface.kind_refusal(tool, dialect, arguments)
        if refusal is not None:
            return _as_mcp(_refused(refusal))
        run = functools.partial(_call, target, params.name, arguments, dialect)
        # Not abandoned on cancel: a write the client gave up on still finishes cleanly.
        return _as_mcp(await anyio.to_thread.run_sync(run), structured)

    # get_tool_input_schema: the HTTP transport checks Mcp-Param headers against a tool's
    # schema; a dict lookup spares it an internal tools/list on every call.
    server = Server(SERVER_NAME, version=__version__, instructions=instructions(tools),
                    get_tool_input_schema=schemas.get, on_list_tools=list_tools,
                    on_call_tool=call, **_readers(mem, tools))
    server.middleware.append(_ObjectArguments())
    return server


def _refused(text: str) -> ToolResult:
    return ToolResult(text, {"error": text}, is_error=True)


def _readers(mem: Memory, tools: Sequence[DialectTool]) -> dict[str, Any]:
    """The resource and prompt handlers: memories by URI, the newest ones, and the prompts."""
    from mcp.shared.exceptions import MCPError

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=surface.resources())

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=surface.resource_templates())

    async def read(ctx: Any, params: types.ReadResourceRequestParams
                   ) -> types.ReadResourceResult:
        target, _ = _scoped(mem, ctx, False)
        try:
            return await anyio.to_thread.run_sync(surface.read_resource, target, params.uri)
        except ClawMemoryError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=surface.prompts())

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams
                         ) -> types.GetPromptResult:
        found = surface.prompt(params.name, params.arguments, _tool_for(tools, "memory_recall"))
        if found is None:
            raise MCPError(types.INVALID_PARAMS, f"no prompt named {params.name!r}")
        return found

    return {"on_list_resources": list_resources, "on_list_resource_templates": list_templates,
            "on_read_resource": read, "on_list_prompts": list_prompts,
            "on_get_prompt": get_prompt}


class _ObjectArguments:
    """docs/mcp.md promises a tool error result for every bad argument, and arguments that are
    not an object are one: the SDK would refuse the whole request (-32602) before our handler
    runs, so the raw value is set aside and the call goes on with ``{}`` in its place."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
                       ) -> HandlerResult:
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, Mapping):
            return await call_next(ctx)
        arguments = params.get("arguments")
        if arguments is None or isinstance(arguments, dict):
            return await call_next(ctx)
        token = _RAW_ARGUMENTS.set((arguments,))
        try:
            return await call_next(dataclasses.replace(ctx, params={**params, "arguments": {}}))
        finally:
            _RAW_ARGUMENTS.reset(token)


def resolve_dialect_name(name: str) -> str:
    try:
        return resolve_dialect(name)
    except KeyError:
        raise InvalidInputError(f"unknown tool dialect {name!r}") from None


def _scoped(mem: Memory, ctx: Any, writes: bool) -> tuple[Memory, str | None]:
    """The memory a tool call works on: over HTTP, the namespace and role the server's gate
    resolved from the request's API key (``rest.Gate``); otherwise ``mem`` itself. A key with
    the read role may call only the tools that change nothing."""
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    access = scope.get("clawmem.access") if isinstance(scope, Mapping) else None
    if access is None:
        return mem, None
    if writes and not access.allows(Role.WRITE):
        return mem, "This API key may only read: this tool changes memories."
    namespace = scope["clawmem.namespace"] if isinstance(scope, Mapping) else mem.namespace
    return (mem if namespace == mem.namespace else mem.with_namespace(namespace)), None


def _call(mem: Memory, name: str, arguments: Any, dialect: str) -> ToolResult:
    try:
        return call_tool(mem, name, arguments, dialect=dialect)
    except Exception as exc:  # call_tool never raises; if a bug makes it, the agent still
        log.exception("tool %s failed", name)  # gets a result it can read, not a dead call
        return ToolResult(f"{name} failed unexpectedly ({type(exc).__name__}); see the "
                          "clawmemory log.", {"error": str(exc)}, is_error=True)


# --- HTTP ---------------------------------------------------------------------------------------
def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (127.0.0.0/8, ::1); names
    are resolved, so "localhost" and "127.1" count and "0.0.0.0" does not."""
    bare = host.strip().removeprefix("[").removesuffix("]")
    if not bare:
        return False
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(bare, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def allowed_headers(host: str, port: int, cfg: ServerSettings) -> tuple[list[str], list[str]]:
    """The Host and Origin header values a server bound to ``host:port`` accepts: the loopback
    names, the bind address as given, and ``[server] allowed_hosts`` / ``allowed_origins``.
    An allowed host name also allows its http and https origins."""
    bound = url_host(host.strip())
    names = list(dict.fromkeys([*LOOPBACK_NAMES, bound]))
    hosts = [f"{n}:{port}" for n in names]
    origins = [f"http://{n}:{port}" for n in names]
    for name in cfg.allowed_hosts:
        hosts.append(name)
        origins += [f"{scheme}://{name}" for scheme in ("http", "https")]
    return hosts, [*origins, *cfg.allowed_origins]


def url_host(host: str) -> str:
    """``host`` as it appears in a URL or Host header: IPv6 addresses in brackets."""
    bare = host.removeprefix("[").removesuffix("]")
    return f"[{bare}]" if ":" in bare else bare


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; ConfigError when that address is unusable.

    Bound here rather than by uvicorn so that a busy port is one clear error line, not a log
    message and an exit from inside the server, and so the server accepts as soon as this
    returns. IPv6 addresses may be given with or without brackets ("::1", "[::1]")."""
    bare = host.strip().removeprefix("[").removesuffix("]")
    try:
        infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
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

"""The HTTP service of ``clawmem serve``: the REST API (``/v1``), the web inspector (``/``) and
the MCP endpoint (``/mcp``) on one port, behind one gate (ADR 0016).

Every request passes the gate first, in this order:

1. Host and Origin are checked whatever the bind address (DNS-rebinding protection, as the MCP
   endpoint always did): 421 / 403.
2. Bodies over ``[server] max_request_bytes`` are refused (413) before they are read in full.
3. The API key: ``Authorization: Bearer KEY`` (the inspector also takes the key from the cookie
   its login page sets). Once any key exists in the database, every request needs one (401);
   a server bound beyond loopback needs one even when none exists. With no keys, a loopback
   server serves its own user, every namespace.
4. The namespace: ``?namespace=NS`` or ``X-Clawmem-Namespace: NS``; by default the key's first
   namespace (no keys: the server's ``--namespace``). One the key is not bound to is refused
   (403), in the same words whether or not it exists.

The engine's errors become RFC 9457 problem details (``application/problem+json``) whose
``error`` member names the error type (``NotFoundError``...), so the remote client raises the
same exception the local engine would.
"""

from __future__ import annotations

import inspect
import logging
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from clawmemory.auth import Access, Keys, Role
from clawmemory.errors import (
    AccessDeniedError,
    AuthenticationError,
    ClawMemoryError,
    ConfigError,
    EmbeddingError,
    ImportFormatError,
    InvalidInputError,
    LLMError,
    LLMNotConfiguredError,
    NotFoundError,
    SchemaError,
    StorageError,
)

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.responses import Response

    from clawmemory.config import ServerSettings
    from clawmemory.engine import Memory

__all__ = ["COOKIE", "NAMESPACE_HEADER", "Service", "build_app", "error_response", "is_web",
           "problem", "serve"]

log = logging.getLogger("clawmemory.rest")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "clawmem_key"  # the inspector's login cookie: HttpOnly, SameSite=Strict
NAMESPACE_HEADER = "x-clawmem-namespace"
ACCESS = "clawmem.access"  # scope keys the gate sets for the routes and the MCP handler
NAMESPACE = "clawmem.namespace"
_OPEN_PATHS = ("/login", "/v1/health", "/openapi.json")  # and /static/...: no data there

# First match wins; anything else of the tree is a 500.
_STATUS: tuple[tuple[type[ClawMemoryError], int, str], ...] = (
    (NotFoundError, 404, "Not found"),
    (InvalidInputError, 422, "Invalid input"),
    (ImportFormatError, 422, "Malformed import"),
    (AuthenticationError, 401, "API key required"),
    (AccessDeniedError, 403, "Not allowed"),
    (LLMNotConfiguredError, 409, "No LLM configured"),
    (ConfigError, 409, "Not available on this server"),
    (SchemaError, 500, "Database schema problem"),
    (StorageError, 503, "Storage failed"),
    (EmbeddingError, 503, "Embedder failed"),
    (LLMError, 502, "LLM provider failed"),
)


def _slug(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name.removesuffix("Error")).lower() or "error"


def problem(status: int, title: str, detail: str, error: str, instance: str | None = None,
            headers: dict[str, str] | None = None) -> Response:
    """An RFC 9457 problem details response."""
    from starlette.responses import JSONResponse

    body = {"type": f"urn:clawmemory:problem:{_slug(error)}", "title": title, "status": status,
            "detail": detail, "error": error, "instance": instance}
    return JSONResponse(body, status_code=status, headers=headers,
                        media_type="application/problem+json")


def error_response(exc: ClawMemoryError, instance: str | None = None) -> Response:
    status, title = next(((s, t) for kind, s, t in _STATUS if isinstance(exc, kind)),
                         (500, "Internal error"))
    headers = {"WWW-Authenticate": 'Bearer realm="clawmemory"'} if status == 401 else None
    return problem(status, title, str(exc), type(exc).__name__, instance, headers)


@dataclass
class Service:
    """What the routes share: the memory (the server's namespace view), its keys (None: the
    backend keeps none), the settings of the server and whether it listens on loopback only."""

    memory: Memory
    keys: Keys | None
    settings: ServerSettings
    loopback: bool

    def access(self, token: str | None) -> Access:
        """The access a request with this key (or none) has; AuthenticationError when it has
        none. Runs in a worker thread (it reads the database)."""
        if token:
            key = self.keys.verify(token) if self.keys is not None else None
            if key is None:
                raise AuthenticationError("the API key is unknown, malformed or revoked")
            return Access.of(key)
        if not self.loopback or (self.keys is not None and self.keys.required()):
            raise AuthenticationError(
                "this server needs an API key: send it as 'Authorization: Bearer KEY'"
                " (`clawmem keys create` on the server makes one)")
        return Access(Role.ADMIN, None, self.memory.namespace)

    def view(self, access: Access, requested: str | None) -> Memory:
        """The memory of the namespace this request works in."""
        namespace = access.namespace(requested)
        mem = self.memory
        return mem if namespace == mem.namespace else mem.with_namespace(namespace)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            return "\x00"  # present but not a bearer key: refused like a wrong key
    return None


def _cookie(scope: Scope) -> str | None:
    from starlette.requests import HTTPConnection

    found = HTTPConnection(scope).cookies.get(COOKIE)
    return str(found) if found is not None else None


def is_web(path: str) -> bool:
    """Whether ``path`` is an inspector page (not the REST API, not MCP)."""
    return not (path.startswith(("/v1/", "/mcp")) or path in ("/v1", "/openapi.json"))


class Gate:
    """The checks every request passes (module docstring), as plain ASGI middleware."""

    def __init__(self, app: ASGIApp, service: Service, security: Any) -> None:
        self.app = app
        self.service = service
        self.security = security  # mcp's TransportSecurityMiddleware: Host and Origin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from starlette.requests import Request

        path = scope["path"]
        refused = await self.security.validate_request(Request(scope), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        try:
            # The key before the body: a client without one never gets a body read.
            if path not in _OPEN_PATHS and not path.startswith("/static/"):
                await self._admit(scope, path)
            receive = await self._bounded(scope, receive, path)
        except ClawMemoryError as exc:
            await self._refuse(exc, scope, receive, send, path)
            return
        await self.app(scope, receive, send)

    async def _admit(self, scope: Scope, path: str) -> None:
        token = _bearer(scope) or (_cookie(scope) if is_web(path) else None)
        access = await anyio.to_thread.run_sync(self.service.access, token)
        scope[ACCESS] = access
        if path.startswith("/mcp"):
            from starlette.requests import HTTPConnection

            conn = HTTPConnection(scope)
            requested = conn.query_params.get("namespace") or conn.headers.get(NAMESPACE_HEADER)
            scope[NAMESPACE] = access.namespace(requested)

    async def _refuse(self, exc: ClawMemoryError, scope: Scope, receive: Receive, send: Send,
                      path: str) -> None:
        if isinstance(exc, AuthenticationError) and is_web(path):
            from urllib.parse import quote

            from starlette.responses import RedirectResponse

            response: Response = RedirectResponse(f"/login?next={quote(path)}", 303)
        elif isinstance(exc, _BodyTooLargeError):
            response = problem(413, "Request body too large", str(exc), "InvalidInputError",
                               path)
        else:
            response = error_response(exc, path)
        await response(scope, receive, send)

    async def _bounded(self, scope: Scope, receive: Receive, path: str) -> Receive:
        """Refuse a body over the limit before reading it in full (the MCP endpoint does its
        own check, with its own response)."""
        limit = self.service.settings.max_request_bytes
        if path.startswith("/mcp"):
            return receive
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                raise _BodyTooLargeError(limit)
        body, messages = 0, []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += len(message.get("body", b""))
            if body > limit:
                raise _BodyTooLargeError(limit)
            if not message.get("more_body", False):
                break

        async def replay() -> MutableMapping[str, Any]:
            return messages.pop(0) if messages else await receive()

        return replay


class _BodyTooLargeError(InvalidInputError):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is over {limit:,} bytes ([server]"
                         " max_request_bytes)")


def build_app(service: Service, *, host: str, port: int, mcp_server: Any = None) -> ASGIApp:
    """The whole service as one ASGI app: REST, inspector and (given ``mcp_server``, an MCP
    low-level server) MCP at ``/mcp``, behind the gate."""
    from fastapi import FastAPI
    from mcp.server.transport_security import (
        TransportSecurityMiddleware,
        TransportSecuritySettings,
    )

    from clawmemory import __version__
    from clawmemory.interfaces import inspector, rest_routes
    from clawmemory.interfaces.mcp import HTTP_PATH, allowed_headers

    hosts, origins = allowed_headers(host, port, service.settings)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=hosts, allowed_origins=origins)
    mcp_app = None if mcp_server is None else mcp_server.streamable_http_app(
        streamable_http_path=HTTP_PATH, transport_security=security,
        max_request_body_size=service.settings.max_request_bytes)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if mcp_app is not None:
                await stack.enter_async_context(mcp_app.router.lifespan_context(mcp_app))
            yield

    # No telemetry, ever: FastAPI's OpenTelemetry hooks (in its newer releases) would export
    # spans, metrics and logs, request bodies and exception messages included, to whatever an
    # environment variable names; every kind is switched off, whatever the environment says.
    options: dict[str, Any] = {}
    if "telemetry" in inspect.signature(FastAPI.__init__).parameters:
        options["telemetry"] = {"tracing": False, "metrics": False, "logs": False,
                                "operation_spans": False, "auto_configure": False}
    app = FastAPI(title="clawmemory", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None,  # their pages load scripts from a CDN
                  description="Long-term memory for LLM agents. See docs/rest.md.", **options)
    app.state.service = service
    rest_routes.install(app)
    inspector.install(app)
    if mcp_app is not None:
        app.router.routes.extend(mcp_app.routes)
    return Gate(app, service, TransportSecurityMiddleware(security))


def serve(app: ASGIApp, sock: socket.socket) -> None:
    """Serve ``app`` on the listening ``sock`` until SIGINT or SIGTERM."""
    import uvicorn

    level = logging.getLogger().getEffectiveLevel()
    config = uvicorn.Config(app, log_level=level, access_log=level <= logging.DEBUG,
                            timeout_graceful_shutdown=5, lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])

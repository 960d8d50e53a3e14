"""The gate of ``clawmem serve``: the checks every request passes before the REST API, the
inspector or the MCP endpoint sees it (ADR 0016), in this order:

1. Host and Origin are checked whatever the bind address (DNS-rebinding protection, as the MCP
   endpoint always did): 421 / 403.
2. Bodies over ``[server] max_request_bytes`` are refused (413) before they are read in full.
3. The API key: ``Authorization: Bearer KEY`` (the inspector also takes the key from the cookie
   its login page sets; the mem0-compatible routes, ``/mem0``, also ``Authorization: Token
   KEY``, as mem0's client sends it). Once any key exists in the database, every request needs
   one (401); a server bound beyond loopback needs one even when none exists. With no keys, a
   loopback server serves its own user, every namespace (and ``/mem0`` takes any token then).
4. The namespace: ``?namespace=NS`` or ``X-Clawmem-Namespace: NS``; by default the key's first
   namespace (no keys: the server's ``--namespace``). One the key is not bound to is refused
   (403), in the same words whether or not it exists.
"""

from __future__ import annotations

import functools
from collections.abc import MutableMapping
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response

from clawmemory.errors import AuthenticationError, ClawMemoryError, InvalidInputError
from clawmemory.interfaces.rest.common import (
    ACCESS,
    COOKIE,
    NAMESPACE,
    NAMESPACE_HEADER,
    ASGIApp,
    Receive,
    Scope,
    Send,
    Service,
    error_response,
    is_web,
    problem,
)
from clawmemory.interfaces.rest.mem0 import error as mem0_error
from clawmemory.interfaces.rest.mem0 import is_mem0

__all__ = ["Gate"]

_OPEN_PATHS = ("/login", "/v1/health", "/openapi.json")  # and /static/...: no data there


def _bearer(scope: Scope, path: str) -> str | None:
    schemes = ("bearer", "token") if is_mem0(path) else ("bearer",)
    for name, value in scope.get("headers", ()):
        if name == b"authorization":
            scheme, _, token = bytes(value).decode("latin-1").partition(" ")
            if scheme.lower() in schemes and token.strip():
                return token.strip()
            return "\x00"  # present but not a bearer key: refused like a wrong key
    return None


def _cookie(scope: Scope) -> str | None:
    found = HTTPConnection(scope).cookies.get(COOKIE)
    return str(found) if found is not None else None


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
        token = _bearer(scope, path) or (_cookie(scope) if is_web(path) else None)
        access = await anyio.to_thread.run_sync(functools.partial(
            self.service.access, token, placeholder=is_mem0(path)))
        scope[ACCESS] = access
        if path.startswith("/mcp"):
            conn = HTTPConnection(scope)
            requested = conn.query_params.get("namespace") or conn.headers.get(NAMESPACE_HEADER)
            scope[NAMESPACE] = access.namespace(requested)

    async def _refuse(self, exc: ClawMemoryError, scope: Scope, receive: Receive, send: Send,
                      path: str) -> None:
        if isinstance(exc, AuthenticationError) and is_web(path):
            response: Response = RedirectResponse(f"/login?next={quote(path)}", 303)
        elif isinstance(exc, _BodyTooLargeError):
            response = problem(413, "Request body too large", str(exc), "InvalidInputError",
                               path)
        elif is_mem0(path):
            response = mem0_error(exc)
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

"""What the HTTP service's parts share: the ``Service`` (memory, keys, settings), the scope keys
the gate sets for the routes, RFC 9457 problem details for the engine's errors, and the opaque
paging cursors of the REST API and the inspector.

The engine's errors become problem details (``application/problem+json``) whose ``error``
member names the error type (``NotFoundError``...), so the remote client raises the same
exception the local engine would. Nothing here imports another module of this package.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

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
    from starlette.responses import Response

    from clawmemory.config import ServerSettings
    from clawmemory.memory import Memory

__all__ = ["ACCESS", "COOKIE", "NAMESPACE", "NAMESPACE_HEADER", "ASGIApp", "Receive", "Scope",
           "Send", "Service", "error_response", "is_web", "problem", "read_cursor",
           "status_of", "write_cursor"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

COOKIE = "clawmem_key"  # the inspector's login cookie: HttpOnly, SameSite=Strict
NAMESPACE_HEADER = "x-clawmem-namespace"
ACCESS = "clawmem.access"  # scope keys the gate sets for the routes and the MCP handler
NAMESPACE = "clawmem.namespace"

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
    body = {"type": f"urn:clawmemory:problem:{_slug(error)}", "title": title, "status": status,
            "detail": detail, "error": error, "instance": instance}
    return JSONResponse(body, status_code=status, headers=headers,
                        media_type="application/problem+json")


def status_of(exc: ClawMemoryError) -> tuple[int, str]:
    """The HTTP status and title an engine error is answered with (``/v1`` and ``/mem0``)."""
    return next(((s, t) for kind, s, t in _STATUS if isinstance(exc, kind)),
                (500, "Internal error"))


def error_response(exc: ClawMemoryError, instance: str | None = None) -> Response:
    status, title = status_of(exc)
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

    def access(self, token: str | None, *, placeholder: bool = False) -> Access:
        """The access a request with this key (or none) has; AuthenticationError when it has
        none. ``placeholder``: a token is taken as no key where the server needs none (mem0's
        client refuses to start without an api_key, so its users pass any text to an open
        server). Runs in a worker thread (it reads the database)."""
        if token and not (placeholder and self._open()):
            key = self.keys.verify(token) if self.keys is not None else None
            if key is None:
                raise AuthenticationError("the API key is unknown, malformed or revoked")
            return Access.of(key)
        if not self._open():
            raise AuthenticationError(
                "this server needs an API key: send it as 'Authorization: Bearer KEY'"
                " (`clawmem keys create` on the server makes one)")
        return Access(Role.ADMIN, None, self.memory.namespace)

    def _open(self) -> bool:
        """Whether a request without a key is served: loopback only, and no key exists."""
        return self.loopback and not (self.keys is not None and self.keys.required())

    def view(self, access: Access, requested: str | None) -> Memory:
        """The memory of the namespace this request works in."""
        namespace = access.namespace(requested)
        mem = self.memory
        return mem if namespace == mem.namespace else mem.with_namespace(namespace)


def is_web(path: str) -> bool:
    """Whether ``path`` is an inspector page (not the REST API, its mem0 face, not MCP)."""
    return not (path.startswith(("/v1/", "/mcp", "/mem0/")) or path in ("/v1", "/openapi.json"))


# --- cursors -------------------------------------------------------------------------------------
def _fingerprint(query: dict[str, Any]) -> str:
    text = json.dumps(query, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def write_cursor(offset: int, query: dict[str, Any]) -> str:
    """An opaque cursor: the next offset, tied to the query it pages through."""
    raw = json.dumps({"o": offset, "q": _fingerprint(query)}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str | None, query: dict[str, Any]) -> int:
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset, fingerprint = int(data["o"]), data["q"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError("cursor is not one this server gave out") from exc
    if fingerprint != _fingerprint(query) or offset < 0:
        raise InvalidInputError("cursor belongs to another query: page with the same filters")
    return offset

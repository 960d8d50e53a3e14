"""The HTTP service of ``clawmem serve`` (ADR 0016): the REST API (``routes``, its bodies in
``models``), the web inspector (``inspector``; templates and static files in
``interfaces/web/``) and the MCP endpoint on one port (``app``), behind one gate (``gate``).
``common`` holds what they share; imports go one way: ``app`` -> ``gate``, ``routes``,
``inspector`` -> ``common``.

The names below are the package's public face (``clawmemory.interfaces.rest`` was one module).
"""

from clawmemory.interfaces.rest.app import build_app, serve
from clawmemory.interfaces.rest.common import (
    COOKIE,
    NAMESPACE_HEADER,
    Service,
    error_response,
    is_web,
    problem,
)
from clawmemory.interfaces.rest.gate import Gate

__all__ = ["COOKIE", "NAMESPACE_HEADER", "Gate", "Service", "build_app", "error_response",
           "is_web", "problem", "serve"]

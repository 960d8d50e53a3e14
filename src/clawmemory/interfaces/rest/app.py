"""The HTTP service of ``clawmem serve``: the REST API (``/v1``), the web inspector (``/``) and
the MCP endpoint (``/mcp``) on one port, behind one gate (``gate.py``; ADR 0016).
"""

from __future__ import annotations

import inspect
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings

from clawmemory import __version__
from clawmemory.interfaces.mcp import HTTP_PATH, allowed_headers
from clawmemory.interfaces.rest import inspector, mem0, routes
from clawmemory.interfaces.rest.common import ASGIApp, Service
from clawmemory.interfaces.rest.gate import Gate

__all__ = ["build_app", "serve"]

log = logging.getLogger("clawmemory.rest")


def build_app(service: Service, *, host: str, port: int, mcp_server: Any = None) -> ASGIApp:
    """The whole service as one ASGI app: REST, inspector and (given ``mcp_server``, an MCP
    low-level server) MCP at ``/mcp``, behind the gate."""
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
    routes.install(app)
    mem0.install(app)
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

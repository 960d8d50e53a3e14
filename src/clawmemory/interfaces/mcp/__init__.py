"""The MCP server of ``clawmem mcp`` (stdio) and ``clawmem serve`` (``/mcp``): ``server`` builds
it and checks HTTP's hosts, ``stdio`` serves it to one client over stdin/stdout, ``surface``
says what a client sees besides the registry's tools (ADR 0019).

The names below are the package's public face (``clawmemory.interfaces.mcp`` was one module).
"""

from clawmemory.interfaces.mcp.server import (
    HTTP_PATH,
    LOOPBACK_NAMES,
    SERVER_NAME,
    allowed_headers,
    build_server,
    instructions,
    is_loopback,
    listen,
    url_host,
)
from clawmemory.interfaces.mcp.stdio import serve_stdio

__all__ = ["HTTP_PATH", "LOOPBACK_NAMES", "SERVER_NAME", "allowed_headers", "build_server",
           "instructions", "is_loopback", "listen", "serve_stdio", "url_host"]

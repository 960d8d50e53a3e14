"""A real ``clawmem serve`` app (REST, inspector, MCP) on a loopback port, in a thread of the
test process: real HTTP through uvicorn, over a real store the test opened."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import uvicorn

from clawmemory import Memory
from clawmemory.auth import Keys, keys_for
from clawmemory.config import ServerSettings
from clawmemory.interfaces.mcp import build_server, listen
from clawmemory.interfaces.rest import Service, build_app


@contextmanager
def serving(mem: Memory, *, loopback: bool = True, settings: ServerSettings | None = None,
            dialect: str = "unified") -> Iterator[str]:
    """Serve ``mem`` on 127.0.0.1 (any free port) until the block ends; yields the base URL.
    ``loopback=False`` makes the server behave as if bound beyond loopback (keys required)."""
    keys: Keys | None = keys_for(mem.store_backend)
    sock = listen("127.0.0.1", 0)
    port = int(sock.getsockname()[1])
    app = build_app(Service(mem, keys, settings or mem.settings.server, loopback),
                    host="127.0.0.1", port=port,
                    mcp_server=build_server(mem, dialect, all_tools=True))  # every tool probed
    config = uvicorn.Config(app, log_level="warning", lifespan="on",
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    failed: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(server.serve, [sock])
        except BaseException as exc:  # pragma: no cover - reported below
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline and not failed:
        time.sleep(0.02)
    try:
        assert server.started and not failed, failed
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


def problem(response: Any) -> tuple[int, str, str]:
    """(status, error type, detail) of a problem-details response."""
    assert response.headers["content-type"] == "application/problem+json", response.text
    body = response.json()
    assert body["status"] == response.status_code
    assert body["type"].startswith("urn:clawmemory:problem:")
    return response.status_code, body["error"], body["detail"]

"""The stdio transport of ``clawmem mcp``: one client on this process's stdin and stdout.

The SDK's ``stdio_server`` does the framing and keeps stdout for the protocol; three things
are added here:

- **SIGTERM and Ctrl-C stop the server at once, cleanly.** The SDK reads stdin in an anyio
  worker thread whose read cannot be cancelled, so a stop requested while the client keeps
  stdin open waited for the client's next line, for ever if none came. And a
  ``KeyboardInterrupt`` raised by a Python signal handler lands wherever the event loop happens
  to be, inside anyio's own bookkeeping included: CI saw it break a cancel scope (exit 70,
  "unhandled errors in a TaskGroup") and, in a loop of 60 stops here, hang one server. Here
  the event loop receives the signal (``anyio.open_signal_receiver``) and cancels the server
  like any task, and stdin is read by a daemon thread that a stop simply leaves behind.
- **Nothing else reads the client's bytes.** While serving, file descriptor 0 points at the
  null device (as the SDK does for the stdin it reads itself); the reader has a private copy.
- **An unreadable line gets an answer** (``_Answering``): a JSON-RPC error instead of the SDK's
  log line, so a client waiting for its reply is not left waiting.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage

__all__ = ["serve_stdio"]

log = logging.getLogger("clawmemory.mcp")

#: Lines read ahead of the server: enough to keep a pipelining client's requests flowing, few
#: enough that a flood waits in the pipe rather than in memory.
READ_AHEAD = 16


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin/stdout until it closes stdin, or until
    SIGTERM or SIGINT (Ctrl-C) stops the server; either way this returns normally, so the
    caller closes the database as usual.

    While serving, the SDK points file descriptor 1 at stderr, so stray output from any
    library cannot corrupt the protocol stream."""
    fd, restore = _claim_stdin()
    try:
        anyio.run(_serve, server, fd)
    finally:
        restore()


async def _serve(server: Server[Any], fd: int) -> None:
    send, receive = anyio.create_memory_object_stream[str](READ_AHEAD)
    reader = threading.Thread(target=_read_lines, name="clawmemory-stdin", daemon=True,
                              args=(fd, send, anyio.lowlevel.current_token()))
    async with anyio.create_task_group() as group:
        if threading.current_thread() is threading.main_thread():  # only it gets signals
            group.start_soon(_cancel_on_signal, group.cancel_scope)
        reader.start()
        # The SDK iterates its stdin with ``async for``; the receiving end of the stream
        # iterates the same way and, unlike a worker thread's read, can be cancelled.
        lines = cast("anyio.AsyncFile[str]", receive)
        async with receive, stdio_server(stdin=lines) as (read, write):
            await server.run(_Answering(read, write), write,
                             server.create_initialization_options())
        group.cancel_scope.cancel()  # the client left: stop waiting for signals


async def _cancel_on_signal(scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` at the first SIGTERM or SIGINT. A tool call in flight finishes first:
    the engine's calls run in worker threads that a cancellation waits for."""
    if sys.platform == "win32":  # the event loop cannot receive signals there
        return
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("stopped (%s)", signal.Signals(signum).name)
            scope.cancel()
            return


def _read_lines(fd: int, send: MemoryObjectSendStream[str],
                token: anyio.lowlevel.EventLoopToken) -> None:
    """Hand each line of ``fd`` to the event loop, then end the stream at end of file (or when
    stdin cannot be read: the server then stops as if the client had left). Runs in a daemon
    thread: a stop while it waits for the client's next line leaves it blocked, and the
    process still exits."""
    try:
        # closefd=False: after a stop this thread may still block on ``fd``; it must never be
        # closed and reused under it.
        with os.fdopen(fd, "rb", closefd=False) as stream:
            for raw in stream:
                anyio.from_thread.run(send.send, raw.decode("utf-8", errors="replace"),
                                      token=token)
        os.close(fd)  # end of file: nothing reads it any more
    except (anyio.RunFinishedError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return  # the server stopped first; nobody is listening
    except OSError as exc:
        log.warning("stdin could not be read (%s): stopping", exc)
    with contextlib.suppress(anyio.RunFinishedError):
        anyio.from_thread.run_sync(send.close, token=token)


def _claim_stdin() -> tuple[int, Callable[[], None]]:
    """A private descriptor for the client's stream, and fd 0 pointed at the null device
    until ``restore`` is called, so no library or child process reads the protocol's bytes."""
    private = os.dup(0)  # the reader's: it closes it at end of file, or never (a stop)
    saved = os.dup(0)  # restore's own, so restoring never depends on the reader
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)

    def restore() -> None:
        os.dup2(saved, 0)
        os.close(saved)

    return private, restore


class _Answering:
    """The stdio transport's read stream, minus the lines it could not read: the SDK only logs
    those, and a client waiting for the answer to its request would wait forever. Each gets
    a JSON-RPC error instead (-32700 for text that is not JSON, -32600 for JSON that is not a
    message), and reading goes on. Blank lines are skipped."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:  # the SDK restores each sender's contextvars from this
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            reply = _unreadable_reply(item)
            if reply is not None:
                await self._write.send(reply)

    def __aiter__(self) -> _Answering:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Answering:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _unreadable_reply(error: Exception) -> SessionMessage | None:
    from mcp.shared.message import SessionMessage
    from pydantic import ValidationError

    first: Mapping[str, Any] = error.errors()[0] if isinstance(error, ValidationError) else {}
    given = first.get("input")
    if isinstance(given, str) and not given.strip():
        return None
    request_id = given.get("id") if isinstance(given, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    if first.get("type") == "json_invalid":
        data = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not "
                               "JSON (one JSON-RPC message per line)")
    else:
        data = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid request: not a "
                               "JSON-RPC 2.0 message")
    log.warning("stdio: %s", data.message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=data))

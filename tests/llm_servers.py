"""Scripted LLM servers: the one scripted part of the test suite.

A ``ScriptedLLMServer`` is a real HTTP server (threaded, on 127.0.0.1, real sockets) that speaks
the OpenAI chat-completions wire format (``kind="openai"``, ``POST /v1/chat/completions``) or the
Anthropic messages one (``kind="anthropic"``, ``POST /v1/messages``). It answers each request
with the next ``Reply`` of its script and records every request, so a test can assert on the
exact payload a provider sent.

Fixtures (imported by conftest.py, so every test module can ask for them):

- ``openai_server``, ``anthropic_server``: one fresh server of that kind per test;
- ``llm_server``: parametrised over both kinds, for behaviour every provider must share.

Usage::

    def test_something(openai_server):
        openai_server.script([text('[{"text": "Ada", "type": "person"}]'),
                              tool_call("memory_store", {"content": "x"}),
                              http_error(500), slow(2.0, text("late"))])
        llm = openai_server.llm()                   # make_llm(openai_server.settings())
        mem = Memory(store, Settings(llm=openai_server.settings()))
        ...
        assert openai_server.requests[0].body["messages"][0]["role"] == "system"
        assert openai_server.requests[0].headers.get("authorization") is None

Script entries (the same entry renders in either wire format): ``text(answer)``,
``tool_call(name, arguments)`` / ``tool_calls(...)``, ``http_error(status, message,
retry_after=...)``, ``raw(body)`` (a body sent as is: malformed JSON, an unexpected shape),
``slow(seconds, reply)`` (answers after a delay: longer than the client's timeout is a
timeout). ``script(..., then=reply)`` repeats ``then`` forever once the list is used up (a model
that never stops calling tools); without it an exhausted script answers HTTP 418 with
"the script is exhausted", which no provider retries, so a test that makes too many calls fails
loudly.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

from clawmemory.config import LLMSettings
from clawmemory.llm import LLM, make_llm

__all__ = [
    "Recorded",
    "Reply",
    "ScriptedLLMServer",
    "anthropic_server",
    "http_error",
    "llm_server",
    "openai_server",
    "prompt_text",
    "raw",
    "slow",
    "text",
    "tool_call",
    "tool_calls",
]

Kind = Literal["openai", "anthropic"]
MODEL = "scripted-model"
USAGE = (11, 7)  # prompt and completion tokens every scripted answer reports unless told


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build it with the functions below rather than by hand."""

    text: str = ""
    calls: tuple[tuple[str, Any, str], ...] = ()  # (name, arguments, id); str arguments go raw
    usage: tuple[int, int] = USAGE
    status: int = 200
    error: str | None = None  # an error body in the provider's shape
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes | None = None  # sent as is
    delay_s: float = 0.0


def text(answer: str, *, usage: tuple[int, int] = USAGE) -> Reply:
    """The model answers ``answer``."""
    return Reply(text=answer, usage=usage)


def tool_call(name: str, arguments: Any = None, *, id: str | None = None,
              text: str = "", usage: tuple[int, int] = USAGE) -> Reply:
    """The model calls one tool. ``arguments`` as a str is sent as the raw arguments string
    (OpenAI) so a test can send broken JSON."""
    return tool_calls((name, arguments, id), text=text, usage=usage)


def tool_calls(*calls: tuple[str, Any] | tuple[str, Any, str | None], text: str = "",
               usage: tuple[int, int] = USAGE) -> Reply:
    """The model calls several tools at once: ``(name, arguments[, id])`` each."""
    counter = itertools.count(1)
    out = []
    for call in calls:
        name, arguments = call[0], call[1]
        call_id = (call[2] if len(call) > 2 else None) or f"call_{name}_{next(counter)}"
        out.append((name, {} if arguments is None else arguments, call_id))
    return Reply(text=text, calls=tuple(out), usage=usage)


def http_error(status: int, message: str = "scripted failure", *,
               retry_after: str | None = None, headers: Mapping[str, str] | None = None) -> Reply:
    """An HTTP error with the provider's error body (and ``Retry-After`` when given)."""
    extra = dict(headers or {})
    if retry_after is not None:
        extra["Retry-After"] = retry_after
    return Reply(status=status, error=message, headers=extra)


def raw(body: bytes | str, *, status: int = 200,
        content_type: str = "application/json") -> Reply:
    """A body sent exactly as given (malformed JSON, a wrong shape)."""
    data = body.encode("utf-8") if isinstance(body, str) else body
    return Reply(status=status, body=data, headers={"Content-Type": content_type})


def slow(seconds: float, reply: Reply | None = None) -> Reply:
    """``reply`` (default: a text answer) after ``seconds``."""
    return replace(reply or text("too late"), delay_s=seconds)


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: Mapping[str, str]  # names in lower case
    body: Any  # the decoded JSON (None when the body was not JSON)


class ScriptedLLMServer:
    """A scripted OpenAI-compatible or Anthropic server on 127.0.0.1. Thread-safe."""

    def __init__(self, kind: Kind = "openai") -> None:
        self.kind: Kind = kind
        self.requests: list[Recorded] = []
        self._script: list[Reply] = []
        self._then: Reply | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    # --- what tests use -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """The ``base_url`` to configure: ``http://127.0.0.1:PORT/v1`` for OpenAI (clients
        append ``/chat/completions``), ``http://127.0.0.1:PORT`` for Anthropic."""
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if self.kind == "openai" else root

    def script(self, replies: Iterable[Reply], *, then: Reply | None = None) -> ScriptedLLMServer:
        """Queue ``replies`` (after any still queued); ``then`` answers forever afterwards."""
        with self._lock:
            self._script.extend(replies)
            self._then = then
        return self

    @property
    def bodies(self) -> list[Any]:
        with self._lock:
            return [r.body for r in self.requests]

    def settings(self, **overrides: Any) -> LLMSettings:
        """``LLMSettings`` pointing at this server, with fast retries for tests."""
        values: dict[str, Any] = {"provider": self.kind, "base_url": self.url, "model": MODEL,
                                  "timeout_s": 5.0, "max_retries": 2, "backoff_s": 0.001}
        return LLMSettings(**{**values, **overrides})

    def env(self, **overrides: str) -> dict[str, str]:
        """``CLAWMEM_LLM__*`` variables pointing at this server (for CLI subprocesses)."""
        values = {"CLAWMEM_LLM__PROVIDER": self.kind, "CLAWMEM_LLM__BASE_URL": self.url,
                  "CLAWMEM_LLM__MODEL": MODEL, "CLAWMEM_LLM__BACKOFF_S": "0.001",
                  "CLAWMEM_LLM__TIMEOUT_S": "5"}
        return {**values, **overrides}

    def llm(self, **overrides: Any) -> LLM:
        built = make_llm(self.settings(**overrides))
        assert built is not None
        return built

    def close(self) -> None:
        self._stopped.set()  # wakes slow replies
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedLLMServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- serving --------------------------------------------------------------------------------
    def _next(self, request: Recorded) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.path != _PATHS[self.kind]:  # a client with a wrong base_url
                return http_error(404, f"no route {request.path}")
            if self._script:
                return self._script.pop(0)
            if self._then is not None:
                return self._then
            count = len(self.requests)
        return http_error(418, f"scripted server: the script is exhausted ({count} requests)")

    def _answer(self, reply: Reply, request: Recorded) -> tuple[int, dict[str, str], bytes]:
        headers = {"Content-Type": "application/json", **reply.headers}
        if reply.body is not None:
            return reply.status, headers, reply.body
        if reply.error is not None:
            payload = _error_body(self.kind, reply.error, reply.status)
        else:
            model = request.body.get("model", MODEL) if isinstance(request.body, dict) else MODEL
            render = _openai_answer if self.kind == "openai" else _anthropic_answer
            payload = render(reply, model, next(self._ids))
        return reply.status, headers, json.dumps(payload).encode()

    def _sleep(self, seconds: float) -> None:
        self._stopped.wait(seconds)


_PATHS: dict[Kind, str] = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def _handler(server: ScriptedLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as real servers: the client pools

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            data = self.rfile.read(length)
            try:
                body = json.loads(data) if data else None
            except ValueError:
                body = None
            request = Recorded("POST", self.path,
                               {k.lower(): v for k, v in self.headers.items()}, body)
            reply = server._next(request)
            if reply.delay_s:
                server._sleep(reply.delay_s)
            status, headers, payload = server._answer(reply, request)
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            except OSError:  # the client gave up (a timeout test): nothing to answer
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass  # quiet: pytest shows failures, not access logs

    return Handler


def _error_body(kind: Kind, message: str, status: int) -> dict[str, Any]:
    if kind == "openai":
        return {"error": {"message": message, "type": "scripted_error", "code": status}}
    return {"type": "error", "error": {"type": "scripted_error", "message": message}}


def _openai_answer(reply: Reply, model: str, n: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {
                "name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
            for name, args, call_id in reply.calls]
    prompt, completion = reply.usage
    return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if reply.calls else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion}}


def _anthropic_answer(reply: Reply, model: str, n: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [{"type": "tool_use", "id": call_id, "name": name,
                 "input": args}
                for name, args, call_id in reply.calls]
    prompt, completion = reply.usage
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": "tool_use" if reply.calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion}}


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture
def openai_server() -> Iterator[ScriptedLLMServer]:
    """A scripted OpenAI-compatible server for this test."""
    with ScriptedLLMServer("openai") as server:
        yield server


@pytest.fixture
def anthropic_server() -> Iterator[ScriptedLLMServer]:
    """A scripted Anthropic messages server for this test."""
    with ScriptedLLMServer("anthropic") as server:
        yield server


@pytest.fixture(params=["openai", "anthropic"])
def llm_server(request: pytest.FixtureRequest) -> Iterator[ScriptedLLMServer]:
    """Each kind in turn: for behaviour every provider shares."""
    with ScriptedLLMServer(request.param) as server:
        yield server


def prompt_text(body: Any) -> str:
    """Every text a request sent (system prompt, message contents, tool results), in either
    wire format, one per line: what a test searches for a prompt's words."""
    parts: list[str] = []
    if isinstance(body, dict):
        if isinstance(body.get("system"), str):
            parts.append(body["system"])
        for m in body.get("messages") or []:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts += [str(b.get("text") or b.get("content") or "") for b in content
                          if isinstance(b, dict)]
    return "\n".join(parts)

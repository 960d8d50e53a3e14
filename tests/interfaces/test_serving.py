"""Safe serving, against real ``clawmem`` processes over real HTTP and real pipes.

* DNS-rebinding protection (Host and Origin checks) holds on every loopback bind address, IPv6
  included; other addresses are refused while no API key exists; ``--allow-host`` and the
  ``[server]`` settings admit the names a reverse proxy forwards.
* Request bodies are limited; one client sending the largest query the server accepts does
  not stall another client.
* The stdio server answers every line, even one it cannot read, and keeps serving; SIGTERM
  and Ctrl-C stop it at once, even while its client keeps stdin open.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pytest
from mcp.client import Client
from typer.testing import CliRunner

from clawmemory import Memory, Settings

MAIN = "import sys\nfrom clawmemory.interfaces.cli import main\nsys.exit(main())\n"
QUICK = {"CLAWMEM_EMBEDDER__PROVIDER": "none", "CLAWMEM_LOG_LEVEL": "WARNING"}
START_TIMEOUT = 90.0  # two busy cores: a cold server start (the SDK import) takes a while
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}
MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind(("::1", 0))
        return True
    except OSError:
        return False


@contextmanager
def served(where: Path, *hosts: str, options: tuple[str, ...] = (),
           env: dict[str, str] | None = None, db: str | None = None) -> Iterator[list[str]]:
    """One ``clawmem serve --host H --port 0`` per host, started together, on ``db`` (default:
    a file in ``where``); yields the URLs they print. Each must stop cleanly on SIGTERM."""
    procs: list[tuple[subprocess.Popen[bytes], Path, Path]] = []
    try:
        for i, host in enumerate(hosts):
            out, err = where / f"serve-{i}.out", where / f"serve-{i}.err"
            with out.open("wb") as o, err.open("wb") as e:
                procs.append((subprocess.Popen(
                    [sys.executable, "-c", MAIN, "--db", db or str(where / "served.db"), "serve",
                     "--host", host, "--port", "0", *options],
                    stdout=o, stderr=e, env={**os.environ, **QUICK, **(env or {})}), out, err))
        yield [_url(proc, out, err) for proc, out, err in procs]
    finally:
        for proc, _, _ in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = [proc.wait(timeout=30) for proc, _, _ in procs]
    assert codes == [0] * len(procs), [err.read_text() for _, _, err in procs]


def _url(proc: subprocess.Popen[bytes], out: Path, err: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        words = out.read_text().split()
        if "at" in words:
            return words[words.index("at") + 1]
        if proc.poll() is not None:
            pytest.fail(f"server exited {proc.returncode}: {err.read_text()}")
        time.sleep(0.2)
    pytest.fail(f"no URL within {START_TIMEOUT}s: {err.read_text()}")


def _post(url: str, body: Any, **headers: str) -> httpx.Response:
    return httpx.post(url, content=json.dumps(body), headers={**MCP_HEADERS, **headers},
                      timeout=30)


# --- DNS rebinding -----------------------------------------------------------------------------
def test_host_and_origin_are_checked_on_every_loopback_address(tmp_path: Path) -> None:
    hosts = ["127.0.0.2", "127.1", "localhost"] + (["::1", "[::1]"] if _ipv6_loopback() else [])
    with served(tmp_path, *hosts) as urls:
        for host, url in zip(hosts, urls, strict=True):
            port = httpx.URL(url).port
            bare = host.strip("[]")
            shown = f"[{bare}]" if ":" in bare else bare
            assert url == f"http://{shown}:{port}/mcp"
            assert _post(url, INIT).status_code == 200, host
            evil = _post(url, INIT, Host="evil.example")
            assert (evil.status_code, evil.text) == (421, "Invalid Host header"), host
            rebound = _post(url, INIT, Host=f"evil.example:{port}")
            assert rebound.status_code == 421, host
            page = _post(url, INIT, Origin="http://evil.example")
            assert (page.status_code, page.text) == (403, "Invalid Origin header"), host
            # Loopback names stay usable whichever of them the server was started with.
            assert _post(url, INIT, Host=f"localhost:{port}").status_code == 200, host
            assert _post(url, INIT, Origin=f"http://127.0.0.1:{port}").status_code == 200


def test_allowed_hosts_admit_a_reverse_proxys_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[server]\nallowed_origins = ["https://app.example"]\n')
    with served(tmp_path, "127.0.0.1", options=("--allow-host", "memory.example.com"),
                env={"CLAWMEM_HOME": str(home)}) as (url,):
        assert _post(url, INIT, Host="memory.example.com").status_code == 200
        assert _post(url, INIT, Host="memory.example.com",
                     Origin="https://memory.example.com").status_code == 200
        assert _post(url, INIT, Origin="https://app.example").status_code == 200
        assert _post(url, INIT, Host="other.example").status_code == 421
        assert _post(url, INIT, Origin="https://other.example").status_code == 403


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    from clawmemory.interfaces.cli.app import app, register_extensions

    register_extensions(app)
    for name, value in QUICK.items():
        monkeypatch.setenv(name, value)

    def invoke(*args: str | Path) -> Any:
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "no-such-host.invalid", ""])
def test_binding_beyond_loopback_is_refused(cli: Any, tmp_path: Path, host: str) -> None:
    result = cli("--db", tmp_path / "x.db", "serve", "--host", host, "--port", "0")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"error: refusing to listen on {host}: no API key exists (there is no database yet), "
        "so anyone who could reach that address could read and change every memory. Create a "
        "key first (clawmem keys create --namespace NS --role write; clients send it as "
        "'Authorization: Bearer KEY'), or listen on loopback (--host 127.0.0.1 or ::1)\n")
    assert not (tmp_path / "x.db").exists()


def test_a_malformed_allowed_host_is_refused(cli: Any, tmp_path: Path) -> None:
    result = cli("--db", tmp_path / "x.db", "serve", "--allow-host", "a b", "--port", "0")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --allow-host: 'a b' is not a host name")
    assert not (tmp_path / "x.db").exists()


# --- bounded requests --------------------------------------------------------------------------
def test_http_refuses_oversized_and_malformed_requests_and_keeps_serving(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[server]\nmax_request_bytes = 200000\n")
    big = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "memory_store", "arguments": {"content": "x" * 300_000}}}
    with served(tmp_path, "127.0.0.1", env={"CLAWMEM_HOME": str(home)}) as (url,):
        refused = _post(url, big)
        assert (refused.status_code, refused.text) == (413, "Request body too large")
        session = {"Mcp-Session-Id": _post(url, INIT).headers["mcp-session-id"],
                   "MCP-Protocol-Version": "2025-06-18"}
        _post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, **session)
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "memory_store", "arguments": [1, 2]}}
        assert _sse_result(_post(url, call, **session)) == {
            "content": [{"type": "text", "text": "Arguments of memory_store must be a JSON "
                         "object."}], "isError": True}
        store = {**call, "params": {"name": "memory_store", "arguments": {"content": "kept"}}}
        assert _sse_result(_post(url, store, **session))["isError"] is False
    with served(tmp_path, "127.0.0.1") as (url,):  # the default: 1 MiB
        assert _post(url, {**big, "params": {"name": "x", "arguments": {
            "content": "x" * 1_100_000}}}).status_code == 413


def test_a_maximal_query_does_not_stall_other_clients(tmp_path: Path) -> None:
    """Client A sends the largest queries the server accepts (10,000 characters, shaped to
    hurt backtracking patterns) and one far over the limit (900 kB, inside the body limit);
    meanwhile client B's calls must keep being answered promptly. Before the URL pattern was
    made linear, the 900 kB query alone held the interpreter for minutes."""
    with Memory.open(tmp_path / "served.db", settings=Settings(
            embedder={"provider": "none"})) as mem:
        mem.store_many({"content": f"Caroline met Mel in New York on May {i % 28 + 1}, note {i}"}
                       for i in range(300))
    heavy = [shape * (10_000 // len(shape)) for shape in ("a", "a+", "Ab: ", "Xyz. ", "w.")]
    heavy = [q[:10_000] for q in heavy] * 3
    latencies: list[float] = []
    answers: list[tuple[int, bool, str]] = []

    async def client_a(url: str, done: anyio.Event) -> None:
        async with Client(url, read_timeout_seconds=120) as client:
            while len(latencies) < 30:  # rounds until B has had time to notice any stall
                for query in [*heavy, "a" * 900_000]:
                    result = await client.call_tool("memory_recall", {"query": query})
                    answers.append((len(query), bool(result.is_error), _text(result)))
        done.set()

    async def client_b(url: str, done: anyio.Event) -> None:
        async with Client(url, read_timeout_seconds=120) as client:
            await client.call_tool("memory_stats", {})
            while not done.is_set():
                start = time.perf_counter()
                result = await client.call_tool("memory_stats", {})
                latencies.append(time.perf_counter() - start)
                assert not result.is_error
                await anyio.sleep(0.02)

    async def scenario(url: str) -> None:
        done = anyio.Event()
        with anyio.fail_after(240):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client_b, url, done)
                tg.start_soon(client_a, url, done)

    with served(tmp_path, "127.0.0.1", options=("--all-tools",)) as (url,):  # memory_stats
        anyio.run(scenario, url)
    rounds = len(answers) // (len(heavy) + 1)
    assert rounds >= 1
    assert [a[:2] for a in answers] == ([(10_000, False)] * len(heavy) + [(900_000, True)]
                                        ) * rounds
    assert answers[-1][2] == ("memory_recall: query is 900,000 characters; the limit is 10,000 "
                              "(recall.max_query_chars). Search with a few specific words.")
    assert len(latencies) >= 30
    # Generous: the machine is shared and busy; a stalled server took minutes.
    assert max(latencies) < 5.0, latencies
    assert statistics.median(latencies) < 1.0, latencies


def _sse_result(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a streamable-HTTP response (one SSE ``data:`` event)."""
    assert response.status_code == 200, response.text
    (data,) = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    result: dict[str, Any] = json.loads(data)["result"]
    return result


def _text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


# --- stdio ---------------------------------------------------------------------------------------
def test_stdio_answers_every_line_and_keeps_serving(tmp_path: Path) -> None:
    lines = [
        "{not json",
        "",  # a blank line is not a message: skipped, no answer
        "[1, 2]",
        json.dumps({"jsonrpc": "2.0", "id": 7}),
        json.dumps(INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "memory_store", "arguments": [1, 2]}}),
        json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "memory_store", "arguments": "User likes tea"}}),
        json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                    "params": {"name": "memory_list", "arguments": {"offset": 10**30}}}),
        "\x00\x01 binary junk",
        json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "memory_store", "arguments": {"content": "User likes tea"}}}),
    ]
    replies = _stdio_exchange(tmp_path / "s.db", lines, expect=9)
    parse = {"code": -32700, "message": "Parse error: the line is not JSON (one JSON-RPC "
             "message per line)"}
    invalid = {"code": -32600, "message": "Invalid request: not a JSON-RPC 2.0 message"}
    assert replies[:3] == [{"jsonrpc": "2.0", "id": None, "error": parse},
                           {"jsonrpc": "2.0", "id": None, "error": invalid},
                           {"jsonrpc": "2.0", "id": 7, "error": invalid}]
    assert replies[3]["id"] == 1 and "result" in replies[3]
    by_id = {r["id"]: r for r in replies[4:] if r["id"] is not None}
    object_error = {"content": [{"type": "text", "text": "Arguments of memory_store must be a "
                                 "JSON object."}], "isError": True}
    assert by_id[2]["result"] == object_error
    # a string is read as the JSON text of the arguments (what OpenAI sends); this one is not
    assert by_id[3]["result"] == {"content": [{"type": "text", "text": (
        "Arguments of memory_store must be a JSON object; this text is not JSON (Expecting"
        " value).")}], "isError": True}
    assert by_id[4]["result"]["isError"] is True
    assert by_id[4]["result"]["content"][0]["text"] == (
        "Invalid argument 'offset' for memory_list: Input should be less than or equal to "
        "1000000000.")
    assert by_id[5]["result"].get("isError", False) is False
    assert [r["error"] for r in replies if r["id"] is None] == [parse, invalid, parse]
    assert len(replies) == 9  # every line but the blank one and the notification answered
    with Memory.open(tmp_path / "s.db", settings=Settings(embedder={"provider": "none"})) as mem:
        assert [r.content for r in mem.list()] == ["User likes tea"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stdio_stops_at_once_on_a_signal_while_the_client_keeps_stdin_open(
        tmp_path: Path, signum: signal.Signals) -> None:
    """A supervisor's SIGTERM (or Ctrl-C) stops ``clawmem mcp`` cleanly even though the client
    has not closed stdin: the SDK's stdin read cannot be cancelled, so the server used to wait
    for the client's next line for ever, and a KeyboardInterrupt raised inside the event loop
    could break anyio's cancel scopes (exit 70). What was stored before the stop is kept."""
    db = tmp_path / "sig.db"
    proc = subprocess.Popen([sys.executable, "-c", MAIN, "--db", str(db), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **QUICK})
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        store = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "memory_store", "arguments": {"content": "User keeps bees"}}}
        notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        proc.stdin.write("\n".join(json.dumps(m) for m in (INIT, notified, store)) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT)
        assert ready, "no answer to initialize"
        assert json.loads(proc.stdout.readline())["id"] == 1
        assert json.loads(proc.stdout.readline())["id"] == 2
        proc.send_signal(signum)
        code = proc.wait(timeout=30)  # the old server never returned here
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, err
    assert "error" not in err.lower(), err
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        assert [r.content for r in mem.list()] == ["User keeps bees"]


def test_stdio_stops_cleanly_when_stdin_cannot_be_read(tmp_path: Path) -> None:
    """A stdin that fails to read (here a TCP connection its peer reset: ECONNRESET) stops the
    server as a closed one would, with one line saying why, not an internal error."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        peer, _ = listener.accept()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    peer.close()  # linger 0: the close sends a reset, and the server's read fails
    try:
        result = subprocess.run([sys.executable, "-c", MAIN, "--db", str(tmp_path / "d.db"),
                                 "mcp"], stdin=client, capture_output=True, text=True,
                                timeout=120, env={**os.environ, **QUICK}, check=False)
    finally:
        client.close()
    assert result.returncode == 0, result.stderr
    assert "stdin could not be read" in result.stderr
    assert "internal error" not in result.stderr and result.stdout == ""


def _stdio_exchange(db: Path, lines: list[str], expect: int) -> list[dict[str, Any]]:
    """Write ``lines`` to ``clawmem mcp`` and read ``expect`` replies (a client that waits
    forever for an answer fails here, after 120 s); then close its stdin: it must exit 0 and
    say nothing more."""
    proc = subprocess.Popen([sys.executable, "-c", MAIN, "--db", str(db), "mcp"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **QUICK})
    assert proc.stdin is not None and proc.stdout is not None
    replies: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        while len(replies) < expect and (line := proc.stdout.readline()):
            replies.append(json.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    try:
        reader.start()
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        reader.join(timeout=120)
        assert len(replies) == expect, replies
        proc.stdin.close()
        proc.wait(timeout=60)
        rest, err = proc.stdout.read(), (proc.stderr.read() if proc.stderr else "")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert rest == "", rest
    return replies

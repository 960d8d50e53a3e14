"""The MCP server end to end, through the official SDK's own client.

Servers run as real ``clawmem`` processes: over stdio (the client spawns them) and over
streamable HTTP on 127.0.0.1. Databases are inspected afterwards through a separate ``Memory``.
A server process costs seconds (the SDK's import alone is slow), so each process serves a whole
scenario, and processes that can start together do. Only one test loads the real embedding
model; every other server runs with ``CLAWMEM_EMBEDDER__PROVIDER=none``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
import typer
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from typer.testing import CliRunner

from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings
from clawmemory.interfaces.mcp import build_server
from clawmemory.interfaces.mcp.surface import offered, user_schema
from clawmemory.tools import dialect_names, tools_for

T = TypeVar("T")

# ``clawmem``'s main() registers every cli_* module; this entry point also registers ours
# itself, so the tests hold whether or not cli.py does (the installed script: test_docs.py).
ENTRY = (
    "import sys\n"
    "from clawmemory.interfaces.cli import main\n"
    "from clawmemory.interfaces.cli.app import app\n"
    "from clawmemory.interfaces.cli.serving import register\n"
    "if 'mcp' not in {c.name for c in app.registered_commands}:\n"
    "    register(app)\n"
    "sys.exit(main())\n"
)
QUICK = {"CLAWMEM_EMBEDDER__PROVIDER": "none"}  # no model: loading one costs many seconds
START_TIMEOUT = 90.0  # two shared, busy cores: a cold server start can take a while
ID = re.compile(r"\[id:([^\]\s]+)\]")


# --- helpers -------------------------------------------------------------------------------------
def _env(*, model: bool = False) -> dict[str, str]:
    # os.environ is already hermetic here (conftest: no CLAWMEM_*, a private CLAWMEM_HOME).
    return {**os.environ, **({} if model else QUICK), "CLAWMEM_LOG_LEVEL": "WARNING"}


def stdio(db: Path, *options: str, model: bool = False) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable,
                                 args=["-c", ENTRY, "--db", str(db), "mcp", *options],
                                 env=_env(model=model))


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(scenario)


def text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def ok(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert not result.is_error, f"{name}({args}) failed: {text(result)}"
    return text(result)


async def refused(client: Client, name: str, args: dict[str, Any]) -> str:
    result = await client.call_tool(name, args)
    assert result.is_error, f"{name}({args}) should be refused: {text(result)}"
    message = text(result)
    assert "Traceback" not in message and message.endswith("."), message
    return message


def open_quick(db: Path) -> Memory:
    return Memory.open(db, settings=Settings(embedder=EmbedderSettings(provider="none")))


def count(db: Path) -> int:
    with open_quick(db) as mem:
        return mem.count(include_invalid=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited {proc.returncode}: {log.read_text()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    pytest.fail(f"server did not listen on {port} within {START_TIMEOUT}s: {log.read_text()}")


@contextmanager
def http_servers(where: Path, count: int, *options: str) -> Iterator[list[str]]:
    """``count`` ``clawmem serve`` processes started together; yields their MCP URLs.

    On the way out each gets SIGTERM and must stop cleanly (exit 0) within seconds."""
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    ports = [free_port() for _ in range(count)]
    try:
        for i, port in enumerate(ports):
            log = where / f"serve-{i}.log"
            with log.open("wb") as err:
                proc = subprocess.Popen(
                    [sys.executable, "-c", ENTRY, *options, "serve", "--port", str(port)],
                    stdout=subprocess.DEVNULL, stderr=err, env=_env())
            procs.append((proc, log))
        for (proc, log), port in zip(procs, ports, strict=True):
            _wait_listening(proc, port, log)
        yield [f"http://127.0.0.1:{port}/mcp" for port in ports]
    finally:
        for proc, _ in procs:  # all at once: they shut down in parallel
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = [_reap(proc) for proc, _ in procs]
    assert codes == [0] * count, [log.read_text() for _, log in procs]


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None


def assert_lists_registry(listed: Sequence[types.Tool], dialect: str,
                          all_tools: bool = False) -> None:
    # the default dialect offers its core set unless --all-tools (ADR 0019, test_mcp_surface)
    expected = offered(tools_for(dialect), dialect, all_tools)
    assert [t.name for t in listed] == [t.name for t in expected]
    for got, want in zip(listed, expected, strict=True):
        assert got.input_schema == user_schema(want, dialect), got.name
        assert got.description == want.description, got.name
        assert got.annotations is not None
        assert got.annotations.read_only_hint is (not want.writes), got.name


# --- in-process: every dialect, fast -------------------------------------------------------------
@pytest.mark.parametrize("dialect", dialect_names())
def test_every_dialect_lists_exactly_the_registry_tools(tmp_path: Path, dialect: str) -> None:
    with open_quick(tmp_path / "m.db") as mem:
        server = build_server(mem, dialect)

        async def scenario() -> types.ListToolsResult:
            async with Client(server) as client:
                assert client.server_info is not None
                assert client.server_info.name == "clawmemory"
                assert "long-term memory" in (client.instructions or "")
                return await client.list_tools()

        assert_lists_registry(run(scenario).tools, dialect)


def test_a_blocked_write_does_not_block_the_server(tmp_path: Path) -> None:
    """Engine calls run in worker threads: while a store waits for the SQLite write lock
    (held here by another connection), the server still answers; then the store completes."""
    import apsw

    db = tmp_path / "busy.db"
    with open_quick(db) as mem:
        server = build_server(mem)
        other = apsw.Connection(str(db))
        other.execute("BEGIN IMMEDIATE")  # another process's write lock, in effect
        order: list[str] = []

        async def store(client: Client) -> None:
            await ok(client, "memory_store", {"content": "written once the lock is free"})
            order.append("stored")

        async def scenario() -> None:
            async with Client(server) as client, anyio.create_task_group() as tg:
                tg.start_soon(store, client)
                await anyio.sleep(0.3)  # the store is now waiting on the lock
                await client.list_tools()
                order.append("listed")
                other.execute("COMMIT")

        run(scenario)
        other.close()
        assert order == ["listed", "stored"]
        assert mem.count() == 1


def test_instructions_name_the_dialects_own_tools(tmp_path: Path) -> None:
    with open_quick(tmp_path / "m.db") as mem:
        koshi = build_server(mem, "koshi").instructions or ""
        devclaw = build_server(mem, "002").instructions or ""
    assert "`memory_query`" in koshi and "`memory_store`" in koshi
    assert "`memory`" in devclaw


# --- stdio: the client spawns the server ---------------------------------------------------------
async def _round_trip(client: Client, db: Path) -> None:
    stored = await ok(client, "memory_store", {
        "content": "User prefers dark mode in every editor", "key": "theme", "tags": ["ui"]})
    (theme_id,) = ID.findall(stored)
    await ok(client, "memory_store", {"content": "Deploys happen on Friday", "key": "deploys"})
    recalled = await ok(client, "memory_recall", {"query": "dark mode editor"})
    assert "User prefers dark mode in every editor" in recalled and theme_id in recalled
    assert "Linked" in await ok(client, "memory_link", {"from_id": "theme", "to_id": "deploys"})
    with open_quick(db) as mem:
        assert [n.key for n in mem.neighbors(theme_id)] == ["deploys"]
    await ok(client, "memory_forget", {"id": "theme"})
    assert theme_id not in await ok(client, "memory_recall", {"query": "dark mode"})
    assert "theme" in await refused(client, "memory_get", {"id": "theme"})


async def _bad_arguments(client: Client) -> None:
    assert "needs the argument 'content'" in await refused(client, "memory_store", {})
    wrong = await refused(client, "memory_store", {"content": 42})
    assert "'content'" in wrong and "string" in wrong
    assert "'bogus'" in await refused(client, "memory_store", {"content": "x", "bogus": 1})
    assert "'limit'" in await refused(client, "memory_recall", {"query": "x", "limit": 1000})
    assert "no-such-key" in await refused(client, "memory_store",
                                    {"content": "linked to nothing", "links": ["no-such-key"]})
    unknown = await refused(client, "memory_teleport", {"to": "mars"})
    assert "Unknown tool 'memory_teleport'" in unknown and "memory_store" in unknown


def test_stdio_serves_the_unified_tools_and_refuses_bad_calls(tmp_path: Path) -> None:
    db = tmp_path / "stdio.db"

    async def scenario() -> None:
        async with Client(stdio(db, "--all-tools"), read_timeout_seconds=120) as client:
            assert client.server_info is not None
            assert client.server_info.name == "clawmemory"
            assert_lists_registry((await client.list_tools()).tools, "unified", all_tools=True)
            await _round_trip(client, db)
            before = count(db)  # a second process reads the file the server writes
            await _bad_arguments(client)
            assert count(db) == before == 1

    run(scenario)
    assert count(db) == 1  # "deploys" is left


def test_stdio_koshi_dialect_to_a_handshake_era_client(tmp_path: Path) -> None:
    """Desktop clients still speak the initialize-handshake protocol era: served as well."""

    async def scenario() -> None:
        async with Client(stdio(tmp_path / "k.db", "--dialect", "koshi"), mode="legacy",
                          read_timeout_seconds=120) as client:
            assert client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS
            assert_lists_registry((await client.list_tools()).tools, "koshi")
            stored = await ok(client, "memory_store",
                              {"content": "HMAC covers the raw request body", "tags": "api,auth"})
            assert stored.startswith("Stored memory [id:")
            found = await ok(client, "memory_query", {"query": "HMAC body"})
            assert found.startswith("[id:") and "HMAC covers the raw request body" in found
            (memory_id,) = ID.findall(found)
            await ok(client, "memory_reinforce", {"id": memory_id})
            assert "score: 3" in await ok(client, "memory_query", {"query": "HMAC"})
            assert "Unknown tool 'memory_recall'" in await refused(
                client, "memory_recall", {"query": "HMAC"})

    run(scenario)


@pytest.mark.slow
def test_default_local_embedder_end_to_end(tmp_path: Path) -> None:
    """The real default: the packaged all-MiniLM-L6-v2 model, no provider setting at all."""

    async def scenario() -> str:
        async with Client(stdio(tmp_path / "e.db", model=True), read_timeout_seconds=300) as c:
            await ok(c, "memory_store", {"content": "User prefers dark mode in every editor"})
            await ok(c, "memory_store", {"content": "The staging database resets on Monday"})
            # no word in common with either memory: only the vectors can find it
            return await ok(c, "memory_recall",
                            {"query": "night theme", "limit": 1, "explain": True})

    found = run(scenario)
    assert "dark mode" in found and "staging" not in found
    assert "vector" in found.lower()


# --- streamable HTTP -----------------------------------------------------------------------------
def test_http_serve_at_the_default_location(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No --db: the server creates $CLAWMEM_HOME/memory.db (~/.clawmemory/memory.db for users)."""
    home = tmp_path / "fresh-home"  # does not exist yet
    monkeypatch.setenv("CLAWMEM_HOME", str(home))

    async def scenario(url: str) -> None:
        async with Client(url, read_timeout_seconds=120) as client:
            assert_lists_registry((await client.list_tools()).tools, "unified")
            stored = await ok(client, "memory_store", {"content": "The VPN needs MFA since May"})
            (memory_id,) = ID.findall(stored)
            assert "VPN needs MFA" in await ok(client, "memory_recall", {"query": "VPN MFA"})
            assert "needs the argument 'query'" in await refused(client, "memory_recall", {})
            await ok(client, "memory_store", {"content": "kept", "key": "kept"})
            await ok(client, "memory_forget", {"id": memory_id})

    with http_servers(tmp_path, 1) as (url,):
        run(lambda: scenario(url))
    assert count(home / "memory.db") == 1


def test_three_servers_on_one_database_lose_no_write(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    clients, stores = 3, 50  # per server: 3 clients x 50 concurrent stores = 150
    results: list[tuple[str, types.CallToolResult]] = []

    async def client_run(url: str, tag: str, mode: str) -> None:
        limit = anyio.CapacityLimiter(10)
        async with Client(url, mode=mode, read_timeout_seconds=120) as client:

            async def store(i: int) -> None:
                async with limit:
                    content = f"note {tag}-{i}: written concurrently"
                    results.append((content, await client.call_tool(
                        "memory_store", {"content": content})))

            async with anyio.create_task_group() as tg:
                for i in range(stores):
                    tg.start_soon(store, i)

    async def scenario(urls: list[str]) -> None:
        async with anyio.create_task_group() as tg:
            for s, url in enumerate(urls):
                for c in range(clients):  # both protocol eras: sessions and stateless
                    tg.start_soon(client_run, url, f"{s}.{c}", "legacy" if c == 0 else "auto")

    with http_servers(tmp_path, 3, "--db", str(db)) as urls:
        run(lambda: scenario(urls))
    errors = [text(r) for _, r in results if r.is_error]
    assert not [e for e in errors if "locked" in e.lower()], errors[:3]
    assert not errors, errors[:3]
    assert len(results) == 3 * clients * stores
    with open_quick(db) as mem:
        assert mem.count() == len(results)
        for content, result in results:
            (memory_id,) = ID.findall(text(result))
            assert mem.get(memory_id).content == content


# --- the commands' refusals, in-process ----------------------------------------------------------
@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., Any]:
    """``clawmem`` in-process on a copy of the app with these commands registered."""
    from clawmemory.interfaces.cli import app as cli_module
    from clawmemory.interfaces.cli.serving import register

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.registered_callback = cli_module.app.registered_callback
    app.registered_commands = list(cli_module.app.registered_commands)
    app.info = cli_module.app.info
    register(app)
    register(app)  # twice is harmless

    for name, value in QUICK.items():
        monkeypatch.setenv(name, value)

    def invoke(*args: str | Path) -> Any:
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


def test_unknown_dialect_is_a_usage_error_and_creates_nothing(
        cli: Callable[..., Any], tmp_path: Path) -> None:
    for command in ("mcp", "serve"):
        result = cli("--db", tmp_path / "x.db", command, "--dialect", "klingon")
        assert result.exit_code == 2
        assert result.stderr.startswith("error: unknown --dialect 'klingon'; known: unified")
    assert not (tmp_path / "x.db").exists()


def test_serve_on_a_busy_port_is_one_clear_line(cli: Callable[..., Any], tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = cli("--db", tmp_path / "b.db", "serve", "--port", port)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}")
    assert len(result.stderr.splitlines()) == 1

"""API keys: created, listed and revoked with ``clawmem keys``; stored as digests; required by
every REST, inspector and MCP request once one exists; roles and namespaces enforced; a
server beyond loopback only with keys."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from clawmemory import Memory, Settings
from clawmemory.auth import Keys, key_store_for
from clawmemory.errors import ConfigError
from rest_server import problem, serving

QUICK = {"CLAWMEM_EMBEDDER__PROVIDER": "none", "CLAWMEM_LOG_LEVEL": "WARNING"}
MAIN = "import sys\nfrom clawmemory.interfaces.cli import main\nsys.exit(main())\n"
MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "1"}}}


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    from clawmemory.interfaces.cli.app import app, register_extensions

    register_extensions(app)
    for name, value in QUICK.items():
        monkeypatch.setenv(name, value)

    def invoke(*args: str | Path) -> Any:
        return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke


def _create(cli: Any, db: Path, *options: str) -> str:
    result = cli("--db", db, "keys", "create", *options)
    assert result.exit_code == 0, result.output
    key: str = result.stdout.strip().splitlines()[-1]
    return key


def test_keys_are_created_listed_revoked_and_stored_as_digests(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    key = _create(cli, db, "--namespace", "alice", "--namespace", "shared", "--role", "read",
                  "--label", "alice's agent")
    assert key.startswith("cmk_") and len(key) > 50
    listed = json.loads(cli("--db", db, "--json", "keys", "list").stdout)["keys"]
    assert [(k["role"], k["namespaces"], k["label"], k["revoked_at"]) for k in listed] == [
        ("read", ["alice", "shared"], "alice's agent", None)]
    assert key.split("_")[1] == listed[0]["id"]
    table = cli("--db", db, "keys", "list").stdout
    assert listed[0]["id"] in table and key not in table
    secret = key.split("_", 2)[2].encode()
    assert all(secret not in p.read_bytes() for p in tmp_path.iterdir())  # only a digest
    revoked = cli("--db", db, "keys", "revoke", listed[0]["id"])
    assert revoked.stdout == f"revoked key {listed[0]['id']}\n"
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        keys = Keys(key_store_for(mem.store_backend))
        assert keys.verify(key) is None and not keys.required()
    missing = cli("--db", db, "keys", "revoke", "0123456789ab")
    assert (missing.exit_code, missing.stderr) == (
        1, "error: no API key with id '0123456789ab' (clawmem keys list shows them)\n")
    bad = cli("--db", db, "keys", "create", "--namespace", "x", "--role", "owner")
    assert bad.exit_code == 2


@pytest.mark.parametrize("backend", ["memory", "json"])
def test_backends_that_cannot_keep_keys_refuse_clearly(cli: Any, tmp_path: Path,
                                                        backend: str) -> None:
    result = cli("--db", tmp_path / "k.json", "--backend", backend, "keys", "create",
                 "--namespace", "a")
    assert result.exit_code == 2
    assert result.stderr == (f"error: the {backend} backend cannot keep API keys; use the"
                             " sqlite or postgres backend for a server that other machines"
                             " reach (without keys a server listens on loopback only)\n")
    with Memory.open(tmp_path / "m.json", backend=backend) as mem, pytest.raises(ConfigError):
        key_store_for(mem.store_backend)


def test_every_request_needs_a_valid_key_once_one_exists(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "k.db", settings=Settings(embedder={"provider": "none"})) as mem:
        mem.with_namespace("alice").store("Alice likes tea", key="drink")
        with serving(mem) as url:
            # No key yet: a loopback server serves its own user.
            assert httpx.get(f"{url}/v1/stats").status_code == 200
            keys = Keys(key_store_for(mem.store_backend))
            _, writer = keys.create(["alice"], "write")
            reader_record, reader = keys.create(["alice"], "read")
            for path in ("/v1/stats", "/v1/memories/drink"):
                assert problem(httpx.get(url + path))[:2] == (401, "AuthenticationError")
            no_key = httpx.get(f"{url}/v1/stats")
            assert no_key.headers["www-authenticate"] == 'Bearer realm="clawmemory"'
            page = httpx.get(f"{url}/browse")
            assert (page.status_code, page.headers["location"]) == (303, "/login?next=/browse")
            mcp = httpx.post(f"{url}/mcp", json=INIT, headers=MCP_HEADERS)
            assert problem(mcp)[:2] == (401, "AuthenticationError")
            for wrong in ("cmk_000000000000_x", writer[:-1] + "x", "Basic abc", "nonsense"):
                header = wrong if wrong.startswith("Basic") else f"Bearer {wrong}"
                assert httpx.get(f"{url}/v1/stats",
                                 headers={"Authorization": header}).status_code == 401
            auth = {"Authorization": f"Bearer {writer}"}
            got = httpx.get(f"{url}/v1/memories/drink", headers=auth).json()
            assert got["content"] == "Alice likes tea"  # the key's namespace by default
            read = {"Authorization": f"Bearer {reader}"}
            assert httpx.get(f"{url}/v1/memories/drink", headers=read).status_code == 200
            refused = httpx.post(f"{url}/v1/memories", headers=read, json={"content": "x"})
            assert problem(refused) == (403, "AccessDeniedError", "changing memories needs a key"
                                        " with the write role; this key has read")
            admin_only = httpx.delete(f"{url}/v1/namespace", headers=auth,
                                      params={"confirm": "alice"})
            assert problem(admin_only)[:2] == (403, "AccessDeniedError")
            mcp = httpx.post(f"{url}/mcp", json=INIT, headers={**MCP_HEADERS, **auth})
            assert mcp.status_code == 200
            keys.revoke(reader_record.id)  # takes effect on the next request
            assert httpx.get(f"{url}/v1/stats", headers=read).status_code == 401


@contextmanager
def _serve(db: Path, host: str, *options: str) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    out, err = db.parent / "serve.out", db.parent / "serve.err"
    with out.open("wb") as o, err.open("wb") as e:
        proc = subprocess.Popen([sys.executable, "-c", MAIN, "--db", str(db), "serve", "--host",
                                 host, "--port", "0", *options], stdout=o, stderr=e,
                                env={**os.environ, **QUICK})
    try:
        deadline = time.monotonic() + 90
        while "at" not in out.read_text().split() and proc.poll() is None:
            assert time.monotonic() < deadline, err.read_text()
            time.sleep(0.2)
        words = out.read_text().split()
        yield proc, words[words.index("at") + 1] if "at" in words else ""
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_beyond_loopback_only_with_keys(cli: Any, tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    cli("--db", db, "add", "kept")  # a database, but no key yet
    refused = cli("--db", db, "serve", "--host", "0.0.0.0", "--port", "0")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: refusing to listen on 0.0.0.0: no API key exists,")
    assert "clawmem keys create --namespace NS --role write" in refused.stderr
    key = _create(cli, db, "--namespace", "default", "--role", "admin")
    with _serve(db, "0.0.0.0") as (proc, url):
        assert proc.poll() is None and url.endswith("/mcp")
        port = httpx.URL(url).port
        base = f"http://127.0.0.1:{port}"
        assert httpx.get(f"{base}/v1/stats").status_code == 401
        auth = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"{base}/v1/stats", headers=auth).json()["total"] == 1
        assert httpx.post(f"{base}/mcp", json=INIT, headers={**MCP_HEADERS, **auth}
                          ).status_code == 200
        # Host and Origin are still checked.
        evil = httpx.get(f"{base}/v1/stats", headers={**auth, "Host": "evil.example"})
        assert evil.status_code == 421
        page = httpx.get(f"{base}/v1/stats", headers={**auth, "Origin": "http://evil.example"})
        assert page.status_code == 403
    # Revoking the last key while a server beyond loopback runs does not open it up.
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        keys = Keys(key_store_for(mem.store_backend))
        with serving(mem, loopback=False) as url:
            keys.revoke(keys.list()[0].id)
            assert httpx.get(f"{url}/v1/stats").status_code == 401


def _run(db: Path, *args: str, url: str | None = None) -> subprocess.CompletedProcess[str]:
    """``clawmem`` as a real process (the exit code and stderr a user sees)."""
    where = ["--url", url] if url else ["--db", str(db)]
    return subprocess.run([sys.executable, "-c", MAIN, *where, *args], capture_output=True,
                          text=True, timeout=120, check=False, env={**os.environ, **QUICK})


def test_the_first_key_says_what_it_locks_and_how_to_get_back_in(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    first = _run(db, "keys", "create", "--namespace", "alice")
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip().splitlines()[-1].startswith("cmk_")  # stdout: still the key
    assert first.stderr.startswith("note: this is the first active API key of this database.")
    assert "a key reaches only its own namespaces (this one: alice)" in first.stderr
    assert "'default' and every other namespace no key is bound to are now out of reach" in (
        first.stderr)
    hint = "clawmem keys create --namespace default --role write"
    assert hint in first.stderr and "clawmem keys list" in first.stderr
    docs = (Path(__file__).resolve().parents[2] / "docs" / "rest.md").read_text(encoding="utf-8")
    assert f"```text\n{first.stderr}```" in docs  # the note as rest.md shows it
    # A second key changes nothing that was open: it says nothing.
    assert _run(db, "keys", "create", "--namespace", "bob").stderr == ""
    # The way back in that the note gives works: its key reaches 'default' through a server.
    back = _run(db, *hint.split()[1:])
    assert back.returncode == 0 and back.stderr == ""
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        mem.store("kept in default")
        with serving(mem) as url:
            assert httpx.get(f"{url}/v1/stats").status_code == 401  # what the note says
            auth = {"Authorization": f"Bearer {back.stdout.strip().splitlines()[-1]}"}
            assert httpx.get(f"{url}/v1/stats", headers=auth).json()["total"] == 1
        keys = Keys(key_store_for(mem.store_backend))
        for k in keys.list():
            keys.revoke(k.id)
    # With every key revoked the next one is the first again; one bound to 'default' needs no
    # way back into it.
    again = _run(db, "keys", "create", "--namespace", "default", "--namespace", "ops")
    assert "this one: default, ops" in again.stderr and hint not in again.stderr


def test_the_remote_cli_exits_2_on_401_and_403(tmp_path: Path) -> None:
    # docs/cli.md: a server's 401/403 is a usage error (exit 2), not a failure (3).
    with Memory.open(tmp_path / "k.db", settings=Settings(embedder={"provider": "none"})) as mem:
        mem.store("kept", key="k")
        keys = Keys(key_store_for(mem.store_backend))
        _, reader = keys.create(["default"], "read")
        with serving(mem) as url:
            for args, words in ((("get", "k"), "this server needs an API key"),
                                (("--api-key", "cmk_000000000000_x", "get", "k"),
                                 "the API key is unknown, malformed or revoked"),
                                (("--api-key", reader, "add", "x"), "needs a key with the write"
                                                                    " role; this key has read")):
                refused = _run(tmp_path, *args, url=url)
                assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
                assert refused.stderr.startswith("error: ") and words in refused.stderr
                assert "Traceback" not in refused.stderr
            assert _run(tmp_path, "--api-key", reader, "get", "k", url=url).returncode == 0

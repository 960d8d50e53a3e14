"""Tenant isolation: with alice's key (the admin role, the most it can have), every REST route
and every MCP tool of every dialect is tried with bob's ids, keys, entity names, words and
namespace. A leak is any answer that shows bob's data, differs from the answer for a
reference that exists nowhere (so it would tell that bob's exists), or any change to bob's
memories. The count must be zero, and every route must have been tried."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from clawmemory import Memory, Settings
from clawmemory.auth import Keys, key_store_for
from clawmemory.tls import tls_context
from clawmemory.tools.dialects import DIALECTS
from rest_server import serving

SECRET = "Zorblax"  # in every one of bob's memories; a word alice never uses
MCP_HEADERS = {"Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}


def _bob(mem: Memory) -> dict[str, list[str]]:
    bob = mem.with_namespace("bob")
    a = bob.store(f"{SECRET} Quentarius lives in Reykjavik", key="bob-home", tags=["private"],
                  session_id="bob-session")
    b = bob.store(f"{SECRET} Quentarius owns a violin", key="bob-violin")
    bob.link(a, b)
    c = bob.correct("bob-violin", f"{SECRET} Quentarius owns two violins").id
    old = bob.store(f"{SECRET} old note", key="bob-old")
    bob.store_backend.archive("bob", [old], at=bob.clock())
    episode = bob.observe("user", f"{SECRET} I am Quentarius", "bob-session")
    bob.maintain("consolidate")
    return {"ref": [a, b, c, episode, "bob-home", "bob-violin"], "archived": [old],
            "entity": ["Quentarius", "Reykjavik"], "word": [SECRET]}


def _fake(value: str) -> str:
    """A reference of the same shape that exists nowhere (distinct for distinct values)."""
    if re.fullmatch(r"[0-9a-f]+", value):
        return "".join("0123456789abcdef"[(int(c, 16) + 7) % 16] for c in value)
    return value.translate(str.maketrans(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
        "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZABCDEFGHIJKLM"))


def _normal(text: str, value: str) -> str:
    text = text.replace(value, "<REF>")
    text = re.sub(r"\b[0-9a-f]{16}\b", "<ID>", text)
    return re.sub(r"\d+\.\d+(e-?\d+)?", "<NUM>", text)


class Audit:
    def __init__(self, bob: dict[str, list[str]]) -> None:
        self.secrets = [SECRET, *bob["ref"], *bob["archived"], *bob["entity"], "bob-session"]
        self.leaks: list[str] = []
        self.tried = 0

    def check(self, what: str, real: tuple[int, str], fake: tuple[int, str], value: str,
              *, exact: bool = True) -> None:
        """``exact``: the answers must match word for word (reads); otherwise in outcome only
        (writes whose answer quotes what the caller wrote, which text analysis may treat
        differently for the two values)."""
        self.tried += 1
        secrets = self.secrets if exact else [SECRET, "Reykjavik", "violin", "old note"]
        shown = [s for s in secrets if s not in value and s in real[1]]  # not an echo
        if shown:
            self.leaks.append(f"{what}: shows {shown}")
        if not exact:
            if real[0] != fake[0]:
                self.leaks.append(f"{what}: outcome {real} differs from {fake}")
            return
        if (real[0], _normal(real[1], value)) != (fake[0], _normal(fake[1], _fake(value))):
            self.leaks.append(f"{what}: {real} differs from {fake}")


def _rest_probes(doc: dict[str, Any], bob: dict[str, list[str]], alice_id: str
                 ) -> list[tuple[str, str, str, dict[str, Any], Any]]:
    """(what, method, path, params, body) with "{V}" wherever bob's value goes."""
    bodies: dict[tuple[str, str], Any] = {
        ("post", "/v1/memories"): {"content": "alice note", "key": "{V}"},
        ("post", "/v1/memories/batch"): {"items": [{"content": "x", "key": "{V}"}]},
        ("patch", "/v1/memories/{ref}"): {"tags": ["t"]},
        ("post", "/v1/memories/{ref}/correct"): {"content": "changed"},
        ("post", "/v1/recall"): {"query": "{V}", "mode": "keyword"},
        ("post", "/v1/links"): {"a": alice_id, "b": "{V}"},
        ("post", "/v1/import"): {"snapshot": {"memories": [
            {"id": "{V}", "key": "{V}", "content": "imported"}]}, "dry_run": True},
        ("post", "/v1/observe"): {"role": "user", "content": "{V}", "session_id": "{V}"},
    }
    probes = []
    for path, methods in doc["paths"].items():
        for method in methods:
            concrete = (path.replace("{ref}", "{V}").replace("{name}", "{V}")
                        .replace("{id_}", "{V}").replace("{a}", alice_id).replace("{b}", "{V}")
                        .replace("{job}", "decay"))
            params: dict[str, Any] = {}
            if path == "/v1/namespace":
                params = {"confirm": "{V}"}
            if path == "/v1/memories" and method == "get":
                params = {"session_id": "{V}", "tag": "{V}"}
            if path == "/v1/maintenance/{job}":
                params = {"dry_run": True}
            probes.append((f"{method.upper()} {path}", method, concrete, params,
                           bodies.get((method, path))))
    return probes


def _fill(value: Any, v: str) -> Any:
    return json.loads(json.dumps(value).replace("{V}", v)) if value is not None else None


def _rest(client: httpx.Client, method: str, path: str, params: dict[str, Any], body: Any,
          v: str, namespace: str | None = None) -> tuple[int, str]:
    query = _fill(params, v) or {}
    if namespace:
        query["namespace"] = namespace
    response = client.request(method, path.replace("{V}", v), params=query, json=_fill(body, v))
    return response.status_code, response.text


def test_no_request_of_alice_reaches_bob(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "t.db", settings=Settings(embedder={"provider": "none"})) as mem:
        bob = _bob(mem)
        alice = mem.with_namespace("alice")
        alice_id = alice.store("Alice likes green tea", key="tea")
        keys = Keys(key_store_for(mem.store_backend))
        _, key = keys.create(["alice", *(f"alice-{d}" for d in DIALECTS)], "admin")
        before = mem.with_namespace("bob").export_snapshot()
        audit = Audit(bob)
        auth = {"Authorization": f"Bearer {key}"}
        with serving(mem, loopback=False) as url, httpx.Client(base_url=url, headers=auth,
                                                                timeout=30) as client:
            doc = client.get("/openapi.json").json()
            probes = _rest_probes(doc, bob, alice_id)
            routes = {(m, p) for p, ms in doc["paths"].items() for m in ms}
            assert len(probes) == len(routes) >= 30
            values = [v for kind in ("ref", "archived", "entity", "word") for v in bob[kind]]
            for what, method, path, params, body in probes:
                for v in values:
                    real = _rest(client, method, path, params, body, v)
                    fake = _rest(client, method, path, params, body, _fake(v))
                    audit.check(f"{what} with {v}", real, fake, v)
                # bob's namespace itself: refused exactly as one that does not exist
                v = _fake(values[0])  # no reference of bob's in these requests
                real = _rest(client, method, path, params, body, v, namespace="bob")
                fake = _rest(client, method, path, params, body, v, namespace=_fake("bob"))
                audit.check(f"{what} in namespace bob", real, fake, "bob")
                assert real[0] == (200 if path == "/v1/health" else 403), (what, real)
        for dialect in DIALECTS:
            with serving(mem, loopback=False, dialect=dialect) as url:
                _mcp_probes(url, auth, values, audit, dialect)
        after = mem.with_namespace("bob").export_snapshot()
        assert json.loads(after)["entries"] == json.loads(before)["entries"], "bob changed"
    assert audit.leaks == [], "\n".join(audit.leaks[:20])
    assert audit.tried > 500


# Each MCP request is a client of its own (no cookie or connection shared between probes), all
# with the product's one TLS context: a context per client loads the CA bundle (~40 ms), and
# 765 of them were over half of this test's time.
def _mcp_session(url: str, auth: dict[str, str], namespace: str | None = None
                 ) -> tuple[int, dict[str, str], str]:
    target = f"{url}/mcp" + (f"?namespace={namespace}" if namespace else "")
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}}
    response = httpx.post(target, json=init, headers={**MCP_HEADERS, **auth}, timeout=30,
                          verify=tls_context())
    if response.status_code != 200:
        return response.status_code, {}, target
    session = {**auth, "Mcp-Session-Id": response.headers["mcp-session-id"],
               "MCP-Protocol-Version": "2025-06-18"}
    httpx.post(target, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
               headers={**MCP_HEADERS, **session}, timeout=30, verify=tls_context())
    return 200, session, target


def _mcp(target: str, session: dict[str, str], method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": 2, "method": method, "params": params}
    response = httpx.post(target, json=body, headers={**MCP_HEADERS, **session},
                          verify=tls_context(), timeout=60)
    (data,) = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return json.loads(data)["result"]


def _arguments(schema: dict[str, Any], v: str) -> dict[str, Any]:
    args: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        kind = prop.get("type")
        if kind == "string" or (isinstance(kind, list) and "string" in kind) or "anyOf" in prop:
            args[name] = v
        elif kind == "array":
            args[name] = [v]
    return args


def _mcp_probes(url: str, auth: dict[str, str], values: list[str], audit: Audit,
                dialect: str) -> None:
    status, _, _ = _mcp_session(url, auth, namespace="bob")
    assert status == 403
    from clawmemory.tools import tools_for

    # A namespace of alice's own that no earlier probe wrote to; tools that change nothing
    # are tried first, so what the writing ones store cannot colour their answers.
    status, session, target = _mcp_session(url, auth, namespace=f"alice-{dialect}")
    assert status == 200
    listed = _mcp(target, session, "tools/list", {})["tools"]
    assert {t["name"] for t in listed} == {t.name for t in tools_for(dialect)}
    listed.sort(key=lambda t: not t.get("annotations", {}).get("readOnlyHint", False))
    for tool in listed:
        exact = bool(tool.get("annotations", {}).get("readOnlyHint", False))
        for v in values:
            real = _mcp(target, session, "tools/call",
                        {"name": tool["name"], "arguments": _arguments(tool["inputSchema"], v)})
            fake = _mcp(target, session, "tools/call", {
                "name": tool["name"], "arguments": _arguments(tool["inputSchema"], _fake(v))})
            audit.check(f"MCP {dialect} {tool['name']} with {v}", (int(real["isError"]),
                        json.dumps(real["content"])), (int(fake["isError"]),
                        json.dumps(fake["content"])), v, exact=exact)

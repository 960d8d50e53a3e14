"""The mem0-compatible routes (``/mem0``) driven by mem0ai's own ``MemoryClient`` and
``AsyncMemoryClient`` (2.2.1) over real HTTP, against a real server over a real store; what
they stored is checked through our own ``Memory`` API. The only scripted part is the LLM
server of the ``infer=True`` test."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx
import pytest

from clawmemory import Memory, Settings
from clawmemory.auth import Keys, key_store_for
from clawmemory.interfaces.rest.mem0 import NO_LLM
from llm_servers import ScriptedLLMServer, prompt_text, text
from rest_server import serving

QUICK = Settings(embedder={"provider": "none"})


@pytest.fixture(scope="module")
def mem0(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """mem0ai, imported with its telemetry off (posthog, read once at import:
    mem0/memory/telemetry.py) and its config folder (~/.mem0, which its import writes:
    mem0/memory/setup.py) in a temporary directory, so the suite neither phones home nor writes
    to the home folder."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MEM0_TELEMETRY", "False")
        env.setenv("MEM0_DIR", str(tmp_path_factory.mktemp("mem0-dir")))
        module = importlib.import_module("mem0")
        telemetry = importlib.import_module("mem0.memory.telemetry")
        assert telemetry.MEM0_TELEMETRY is False
        assert telemetry.client_telemetry.posthog is None  # no PostHog client exists to send
        yield module


@pytest.fixture
def errors(mem0: ModuleType) -> ModuleType:
    return importlib.import_module("mem0.exceptions")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Memory, str]]:
    with Memory.open(tmp_path / "mem0.db", settings=QUICK) as mem, serving(mem) as url:
        yield mem, url


@pytest.fixture
def client(mem0: ModuleType, served: tuple[Memory, str]) -> Iterator[Any]:
    # An open loopback server needs no key, but mem0's client will not start without one.
    made = mem0.MemoryClient(api_key="any-text", host=served[1] + "/mem0")
    yield made
    made.client.close()


def _mem(served: tuple[Memory, str], user: str) -> Memory:
    return served[0].with_namespace(user)


def _add(client: Any, content: str, user: str, **ids: Any) -> str:
    out = client.add([{"role": "user", "content": content}], user_id=user, infer=False, **ids)
    (result,) = out["results"]
    assert (result["memory"], result["event"], result["user_id"]) == (content, "ADD", user)
    return str(result["id"])


# --- ping, add ---------------------------------------------------------------------------------
def test_the_client_starts_against_the_server(client: Any, served: tuple[Memory, str]) -> None:
    assert (client.org_id, client.project_id, client.user_email) == (
        "clawmemory", "default", None)
    ping = httpx.get(served[1] + "/mem0/v1/ping/", headers={"Authorization": "Token x"})
    assert ping.json()["status"] == "ok"
    assert ping.json()["namespace"] == "default"


def test_add_without_infer_stores_each_message_as_given(
    client: Any, served: tuple[Memory, str]
) -> None:
    out = client.add([{"role": "system", "content": "You are helpful"},
                      {"role": "user", "content": "I drink green tea every morning"},
                      {"role": "assistant", "content": "Noted: green tea in the morning"}],
                     user_id="alice", agent_id="helper", run_id="run-1",
                     metadata={"topic": "drinks"}, infer=False)
    assert out["infer"] is False and "message" not in out
    assert [(r["memory"], r["agent_id"], r["run_id"], r["metadata"]) for r in out["results"]] == [
        ("I drink green tea every morning", "helper", "run-1", {"topic": "drinks"}),
        ("Noted: green tea in the morning", "helper", "run-1", {"topic": "drinks"})]
    stored = _mem(served, "alice").list(order="oldest")
    assert [(r.content, r.source_role, r.session_id, dict(r.metadata)) for r in stored] == [
        ("I drink green tea every morning", "user", "run-1",
         {"topic": "drinks", "agent_id": "helper"}),
        ("Noted: green tea in the morning", "assistant", "run-1",
         {"topic": "drinks", "agent_id": "helper"})]
    assert served[0].list() == []  # the default namespace is another user's


def test_add_with_infer_and_no_llm_stores_the_messages_and_says_so(
    client: Any, served: tuple[Memory, str]
) -> None:
    out = client.add("I moved to Lisbon last month", user_id="bob")  # infer: mem0's default
    assert (out["message"], out["infer"]) == (NO_LLM, False)
    assert [r["memory"] for r in out["results"]] == ["I moved to Lisbon last month"]
    assert [r.content for r in _mem(served, "bob").list()] == ["I moved to Lisbon last month"]


def test_add_with_infer_stores_what_the_llm_extracts(
    mem0: ModuleType, openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    openai_server.script([text("- Alice drinks green tea\n- Alice lives in Lisbon")])
    settings = Settings(embedder={"provider": "none"}, llm=openai_server.settings())
    with Memory.open(tmp_path / "llm.db", settings=settings) as mem, serving(mem) as url:
        client = mem0.MemoryClient(api_key="k", host=url + "/mem0")
        out = client.add([{"role": "user", "content": "I'm Alice, tea person, Lisbon based"},
                          {"role": "assistant", "content": "Nice to meet you"}],
                         user_id="alice", run_id="r9")
        stored = mem.with_namespace("alice").list(order="oldest")
    assert out["infer"] is True and "message" not in out
    assert [r["memory"] for r in out["results"]] == ["Alice drinks green tea",
                                                     "Alice lives in Lisbon"]
    assert [(r.content, r.source, r.session_id) for r in stored] == [
        ("Alice drinks green tea", "extraction", "r9"),
        ("Alice lives in Lisbon", "extraction", "r9")]
    sent = prompt_text(openai_server.requests[0].body)
    assert "I'm Alice, tea person, Lisbon based" in sent and "Nice to meet you" in sent


# --- search, get_all ---------------------------------------------------------------------------
@pytest.fixture
def seeded(client: Any) -> dict[str, str]:
    return {
        "tea": _add(client, "Alice drinks green tea", "alice", agent_id="helper", run_id="r1"),
        "coffee": _add(client, "Alice drinks coffee at work", "alice", agent_id="coder",
                       run_id="r2", metadata={"place": "work"}),
        "juice": _add(client, "Alice drinks orange juice", "alice", run_id="r1"),
        "bob": _add(client, "Bob drinks green tea too", "bob"),
    }


def test_search_with_filters_top_k_and_threshold(client: Any, seeded: dict[str, str]) -> None:
    def ids(**options: Any) -> list[str]:
        return [r["id"] for r in client.search("drinks tea", **options)["results"]]

    everything = client.search("drinks", filters={"user_id": "alice"})["results"]
    assert {r["id"] for r in everything} == {seeded["tea"], seeded["coffee"], seeded["juice"]}
    assert all(isinstance(r["score"], float) for r in everything)
    assert ids(filters={"user_id": "alice"})[0] == seeded["tea"]
    assert ids(filters={"AND": [{"user_id": "alice"}, {"agent_id": "helper"}]}) == [
        seeded["tea"]]
    assert ids(filters={"user_id": "alice", "run_id": "r1"}, top_k=1) == [seeded["tea"]]
    assert ids(filters={"user_id": "alice", "metadata": {"place": "work"}}) == [
        seeded["coffee"]]
    assert ids(filters={"user_id": "alice", "agent_id": "*"}, keyword_search=True)
    assert ids(filters={"user_id": "alice"}, threshold=1e9) == []
    assert ids(filters={"user_id": "bob"}) == [seeded["bob"]]


def test_filters_we_cannot_honour_are_refused(client: Any, errors: ModuleType) -> None:
    with pytest.raises(errors.ValidationError, match="OR filters are not supported"):
        client.search("tea", filters={"OR": [{"user_id": "a"}, {"user_id": "b"}]})
    with pytest.raises(errors.ValidationError, match="filter 'keywords' is not supported"):
        client.get_all(filters={"keywords": {"icontains": "tea"}})
    with pytest.raises(errors.ValidationError, match="user_id is given twice"):
        client.get_all(filters={"AND": [{"user_id": "a"}, {"user_id": "b"}]})


def test_get_all_filters_and_pages(client: Any, seeded: dict[str, str]) -> None:
    first = client.get_all(filters={"user_id": "alice"}, page=1, page_size=2)
    assert first["count"] == 3 and first["previous"] is None
    assert "page=2" in first["next"]
    second = client.get_all(filters={"user_id": "alice"}, page=2, page_size=2)
    assert second["next"] is None and "page=1" in second["previous"]
    paged = [r["id"] for r in first["results"] + second["results"]]
    assert paged == [seeded["juice"], seeded["coffee"], seeded["tea"]]  # newest first
    run = client.get_all(filters={"user_id": "alice", "run_id": "r1"})
    assert {r["id"] for r in run["results"]} == {seeded["tea"], seeded["juice"]}
    assert run["count"] == 2
    later = client.get_all(filters={"user_id": "alice", "created_at": {"gte": "2999-01-01"}})
    assert later["results"] == []
    assert [r["id"] for r in client.get_all(filters={"user_id": "bob"})["results"]] == [
        seeded["bob"]]


# --- one memory: get, update, history, delete ---------------------------------------------------
def test_get_update_and_history(client: Any, served: tuple[Memory, str],
                                seeded: dict[str, str]) -> None:
    got = client.get(seeded["coffee"])  # no user_id: found in the namespaces the caller sees
    assert (got["memory"], got["user_id"], got["agent_id"], got["metadata"]) == (
        "Alice drinks coffee at work", "alice", "coder", {"place": "work"})
    updated = client.update(seeded["coffee"], text="Alice drinks decaf at work",
                            metadata={"place": "office"})
    assert (updated["id"], updated["memory"], updated["metadata"]) == (
        seeded["coffee"], "Alice drinks decaf at work", {"place": "office"})
    record = _mem(served, "alice").get(seeded["coffee"])
    assert (record.content, dict(record.metadata)) == (
        "Alice drinks decaf at work", {"place": "office", "agent_id": "coder"})
    events = client.history(seeded["coffee"])
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "Alice drinks decaf at work"),
        ("UPDATE", None, "Alice drinks decaf at work")]


def test_history_follows_corrections(client: Any, served: tuple[Memory, str],
                                     seeded: dict[str, str]) -> None:
    new = _mem(served, "alice").correct(seeded["juice"], "Alice drinks apple juice")
    events = client.history(new.id)
    assert [(e["event"], e["old_memory"], e["new_memory"]) for e in events] == [
        ("ADD", None, "Alice drinks orange juice"),
        ("UPDATE", "Alice drinks orange juice", "Alice drinks apple juice")]


def test_delete_delete_all_and_unknown_ids(client: Any, served: tuple[Memory, str],
                                           seeded: dict[str, str], errors: ModuleType) -> None:
    assert client.delete(seeded["tea"])["message"] == "Memory deleted successfully!"
    with pytest.raises(errors.MemoryNotFoundError, match="no memory with id"):
        client.get(seeded["tea"])
    for call in (client.get, client.delete, client.history):
        with pytest.raises(errors.MemoryNotFoundError):
            call("0123456789abcdef")
    with pytest.raises(errors.MemoryNotFoundError):
        client.update("0123456789abcdef", text="x")
    with pytest.raises(errors.ValidationError, match="at least one of user_id"):
        client.delete_all()
    assert client.delete_all(user_id="alice", agent_id="coder")["deleted"] == 1
    assert [r.id for r in _mem(served, "alice").list()] == [seeded["juice"]]
    assert client.delete_all(user_id="alice")["deleted"] == 1
    assert _mem(served, "alice").list() == []
    assert [r.id for r in _mem(served, "bob").list()] == [seeded["bob"]]


def test_batch_update_and_delete(client: Any, served: tuple[Memory, str],
                                 seeded: dict[str, str], errors: ModuleType) -> None:
    out = client.batch_update([{"memory_id": seeded["tea"], "text": "Alice drinks black tea"},
                               {"memory_id": seeded["bob"], "metadata": {"checked": True}}])
    assert out["message"] == "Successfully updated 2 memories"
    assert _mem(served, "alice").get(seeded["tea"]).content == "Alice drinks black tea"
    assert dict(_mem(served, "bob").get(seeded["bob"]).metadata) == {"checked": True}
    with pytest.raises(errors.MemoryNotFoundError):  # one unknown id: nothing changes
        client.batch_update([{"memory_id": seeded["juice"], "text": "changed"},
                             {"memory_id": "0123456789abcdef", "text": "x"}])
    assert _mem(served, "alice").get(seeded["juice"]).content == "Alice drinks orange juice"
    out = client.batch_delete([{"memory_id": seeded["tea"]}, {"memory_id": seeded["bob"]}])
    assert out["message"] == "Successfully deleted 2 memories"
    assert _mem(served, "bob").list() == []
    assert {r.id for r in _mem(served, "alice").list()} == {seeded["coffee"], seeded["juice"]}


# --- keys and tenants --------------------------------------------------------------------------
def test_a_key_reaches_only_its_own_users(mem0: ModuleType, errors: ModuleType,
                                          tmp_path: Path) -> None:
    with Memory.open(tmp_path / "keys.db", settings=QUICK) as mem:
        bob_id = mem.with_namespace("bob").store("Bob's secret: Zorblax")
        keys = Keys(key_store_for(mem.store_backend))
        _, alice_key = keys.create(["alice"], "write")
        _, reader_key = keys.create(["alice"], "read")
        with serving(mem, loopback=False) as url:
            host = url + "/mem0"
            with pytest.raises(ValueError, match="API key is unknown"):
                mem0.MemoryClient(api_key="not-a-key", host=host)
            keyless = httpx.get(host + "/v1/memories/" + bob_id + "/")  # JSON, no login page
            assert (keyless.status_code, keyless.json()["error"]) == (401, "AuthenticationError")
            alice = mem0.MemoryClient(api_key=alice_key, host=host)
            with pytest.raises(errors.AuthenticationError, match="no access to namespace 'bob'"):
                alice.add("I am Bob now", user_id="bob", infer=False)
            with pytest.raises(errors.AuthenticationError, match="no access to namespace 'bob'"):
                alice.search("secret", filters={"user_id": "bob"})
            with pytest.raises(errors.AuthenticationError):
                alice.delete_all(user_id="bob")
            for call in (alice.get, alice.delete, alice.history):
                with pytest.raises(errors.MemoryNotFoundError, match="no memory with id"):
                    call(bob_id)
            with pytest.raises(errors.MemoryNotFoundError):
                alice.batch_delete([{"memory_id": bob_id}])
            mine = alice.add("I like tea", infer=False)["results"][0]  # no user_id: the key's
            assert mine["user_id"] == "alice"
            reader = mem0.MemoryClient(api_key=reader_key, host=host)
            assert [r["id"] for r in reader.get_all()["results"]] == [mine["id"]]
            with pytest.raises(errors.AuthenticationError, match="write role"):
                reader.update(mine["id"], text="changed")
        assert [r.content for r in mem.with_namespace("bob").list()] == ["Bob's secret: Zorblax"]
        assert [r.content for r in mem.with_namespace("alice").list()] == ["I like tea"]


# --- the async client, the wire --------------------------------------------------------------
def test_the_async_client(mem0: ModuleType, served: tuple[Memory, str]) -> None:
    async def main() -> tuple[Any, Any, Any]:
        async with mem0.AsyncMemoryClient(api_key="k", host=served[1] + "/mem0") as client:
            added = await client.add("Carol plays the cello", user_id="carol", infer=False)
            found = await client.search("cello", filters={"user_id": "carol"})
            listed = await client.get_all(filters={"user_id": "carol"})
            return added, found, listed

    added, found, listed = anyio.run(main)
    (memory_id,) = [r["id"] for r in added["results"]]
    assert [r["id"] for r in found["results"]] == [memory_id]
    assert [r["id"] for r in listed["results"]] == [memory_id]
    assert [r.id for r in _mem(served, "carol").list()] == [memory_id]


def test_errors_are_json_with_a_detail_and_the_openapi_document_is_v1_only(
    served: tuple[Memory, str]
) -> None:
    with httpx.Client(base_url=served[1], headers={"Authorization": "Token x"}) as http:
        bad = http.post("/mem0/v3/memories/add/", json={"messages": "not a list"})
        assert bad.status_code == 400
        assert bad.headers["content-type"] == "application/json"
        assert bad.json()["detail"].startswith("messages:")
        missing = http.get("/mem0/v1/memories/nope/")
        assert (missing.status_code, missing.json()["error"]) == (404, "NotFoundError")
        paths = http.get("/openapi.json").json()["paths"]
    assert paths and not [p for p in paths if not p.startswith("/v1/")]

"""The framework adapters against the real frameworks (installed by the ``dev`` extra; a missing
one fails this module loudly, it is never skipped): the OpenAI Agents SDK running an agent
against a scripted model server, a compiled LangGraph graph using the store, and LlamaIndex's
own chat memory flushing into the block. Memories land in real SQLite files."""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.memory import Session, SessionSettings
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory as ChatMemory
from openai import AsyncOpenAI

from clawmemory import ConfigError, Memory, Settings
from clawmemory.adapters.langgraph import ClawMemoryStore
from clawmemory.adapters.llamaindex import ClawMemoryBlock
from clawmemory.adapters.openai_agents import ClawMemorySession, memory_tools
from clawmemory.history import history_store
from llm_servers import ScriptedLLMServer, text, tool_call


@pytest.fixture
def db_mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory.open(tmp_path / "agent.db", settings=Settings(embedder={"provider": "none"})
                     ) as mem:
        yield mem


# --- OpenAI Agents SDK ---------------------------------------------------------------------------
def _agent(mem: Memory, server: ScriptedLLMServer) -> Agent[Any]:
    set_tracing_disabled(True)  # the SDK would send traces to OpenAI: none leave this machine
    model = OpenAIChatCompletionsModel(
        model="scripted-model", openai_client=AsyncOpenAI(base_url=server.url, api_key="test"))
    return Agent(name="Assistant", instructions="Use your memory.", model=model,
                 tools=memory_tools(mem))


def test_an_agent_stores_through_the_tools_and_remembers_through_the_session(
        db_mem: Memory, openai_server: ScriptedLLMServer) -> None:
    session = ClawMemorySession(db_mem, "user-42")
    assert isinstance(session, Session)  # the SDK's own protocol check
    openai_server.script([tool_call("memory_store", {"content": "User takes tea without sugar"},
                                    id="call_1"),
                          text("Noted."), text("Without sugar.")])

    async def two_turns() -> tuple[Any, Any, list[Any]]:
        agent = _agent(db_mem, openai_server)  # one client, on this event loop
        first = await Runner.run(agent, "Remember: no sugar in my tea", session=session)
        items = await session.get_items()
        second = await Runner.run(agent, "How do I take my tea?", session=session)
        return first, second, items

    first, second, items = asyncio.run(two_turns())
    assert (first.final_output, second.final_output) == ("Noted.", "Without sugar.")
    assert [r.content for r in db_mem.list()] == ["User takes tea without sugar"]
    assert items[0] == {"content": "Remember: no sugar in my tea", "role": "user"}
    assert [i.get("type") for i in items[1:]] == ["function_call", "function_call_output",
                                                  "message"]
    assert items[2]["call_id"] == "call_1" and "Stored" in str(items[2]["output"])
    # the second turn was sent the first one, from the session
    sent = openai_server.bodies[-1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "assistant",
                                         "user"]
    assert sent[1]["content"] == "Remember: no sugar in my tea"
    # the same history, read back the way every clawmemory interface reads it
    log = history_store(db_mem).all(session.key)
    assert [m.role for m in log] == ["user", "assistant", "tool", "assistant", "user",
                                     "assistant"]
    assert log[2].tool_call_id == "call_1"


def test_a_refused_tool_call_goes_back_to_the_model(
        db_mem: Memory, openai_server: ScriptedLLMServer) -> None:
    openai_server.script([tool_call("memory_store", '{"content": "x", "kind": "rumour"}'),
                          text("I could not store that.")])

    async def turn() -> Any:
        return await Runner.run(_agent(db_mem, openai_server), "Remember x")

    result = asyncio.run(turn())
    assert result.final_output == "I could not store that."
    [tool_message] = [m for m in openai_server.bodies[-1]["messages"] if m["role"] == "tool"]
    assert "rumour" in tool_message["content"]
    assert db_mem.count() == 0


def test_the_session_protocol_survives_a_restart(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"})
    items: list[Any] = [{"role": "user", "content": "hi"},
                        {"type": "message", "role": "assistant", "id": "m1",
                         "status": "completed",
                         "content": [{"type": "output_text", "text": "hello",
                                      "annotations": []}]},
                        {"role": "user", "content": "bye"}]
    with Memory.open(tmp_path / "s.db", settings=settings) as mem:
        session = ClawMemorySession(mem, "s1", session_settings=SessionSettings(limit=2))
        asyncio.run(session.add_items(items))
        assert asyncio.run(session.get_items()) == items[1:]  # the settings' limit
        assert asyncio.run(session.get_items(limit=1)) == items[2:]
    with Memory.open(tmp_path / "s.db", settings=settings) as mem:
        session = ClawMemorySession(mem, "s1")
        assert asyncio.run(session.get_items()) == items
        assert asyncio.run(session.pop_item()) == items[2]
        assert asyncio.run(session.get_items()) == items[:2]
        assert asyncio.run(ClawMemorySession(mem, "other").get_items()) == []
        asyncio.run(session.clear_session())
        assert asyncio.run(session.get_items()) == []
        assert asyncio.run(session.pop_item()) is None


def test_the_session_on_every_backend(mem: Memory) -> None:
    session = ClawMemorySession(mem, "s1")
    items: list[Any] = [{"role": "user", "content": "hi"},
                        {"type": "function_call", "call_id": "c1", "name": "memory_recall",
                         "arguments": '{"query": "hi"}'},
                        {"type": "function_call_output", "call_id": "c1", "output": "none"}]

    async def scenario() -> list[Any]:
        await session.add_items(items)
        popped = await session.pop_item()
        left = await session.get_items()
        await session.clear_session()
        return [popped, left, await session.get_items()]

    assert asyncio.run(scenario()) == [items[2], items[:2], []]


# --- LangGraph -----------------------------------------------------------------------------------
def test_langgraph_store_operations(db_mem: Memory) -> None:
    store = ClawMemoryStore(db_mem)
    alice, bob = ("users", "alice", "memories"), ("users", "bob", "memories")
    store.put(alice, "tea", {"content": "Takes tea without sugar", "topic": "food", "n": 3})
    store.put(alice, "city", {"content": "Lives in Lisbon", "topic": "home", "n": 7})
    store.put(bob, "tea", {"content": "Takes tea with honey", "topic": "food", "n": 1})
    got = store.get(alice, "tea")
    assert got is not None
    assert (got.key, got.namespace, got.value) == (
        "tea", alice, {"content": "Takes tea without sugar", "topic": "food", "n": 3})
    assert db_mem.with_namespace("users.alice.memories").count() == 2  # a clawmemory namespace
    store.put(alice, "tea", {"content": "Takes green tea without sugar", "topic": "food",
                             "n": 4})  # update in place
    assert store.get(alice, "tea").value["n"] == 4  # type: ignore[union-attr]
    assert db_mem.with_namespace("users.alice.memories").count() == 2

    hits = store.search(alice, query="green tea")
    assert [h.key for h in hits] == ["tea"] and hits[0].score is not None
    assert {(h.namespace, h.key) for h in store.search(("users",), query="tea")} == {
        (alice, "tea"), (bob, "tea")}
    # without a query: the most recently updated first
    assert [h.key for h in store.search(("users",), filter={"n": {"$gte": 4}})] == [
        "tea", "city"]
    assert [h.key for h in store.search(("users",), filter={"topic": "food",
                                                            "n": {"$lt": 2}})] == ["tea"]
    assert store.list_namespaces(prefix=("users",)) == sorted([alice, bob])
    assert store.list_namespaces(suffix=("memories",), max_depth=2) == [
        ("users", "alice"), ("users", "bob")]
    store.delete(alice, "tea")
    assert store.get(alice, "tea") is None
    assert db_mem.with_namespace("users.alice.memories").count() == 1


def test_langgraph_reads_memories_stored_any_other_way(db_mem: Memory) -> None:
    rid = db_mem.store("User prefers dark mode", kind="preference", tags=["ui"])
    store = ClawMemoryStore(db_mem)
    assert ("default",) in store.list_namespaces()
    item = store.get(("default",), rid)
    assert item is not None and item.value == {
        "content": "User prefers dark mode", "kind": "preference", "tags": ["ui"],
        "metadata": {}}


class _State(TypedDict):
    user: str
    question: str
    answer: str


def test_a_compiled_graph_uses_the_store(db_mem: Memory) -> None:
    def remember(state: _State, *, store: BaseStore) -> dict[str, Any]:
        store.put(("users", state["user"]), "drink", {"content": "Drinks oolong tea"})
        return {}

    def answer(state: _State, *, store: BaseStore) -> dict[str, Any]:
        hits = store.search(("users", state["user"]), query=state["question"], limit=1)
        return {"answer": hits[0].value["content"] if hits else "nothing"}

    graph = StateGraph(_State)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    graph.add_edge("answer", END)
    app = graph.compile(store=ClawMemoryStore(db_mem))
    out = app.invoke({"user": "u7", "question": "what tea?", "answer": ""})
    assert out["answer"] == "Drinks oolong tea"
    out = asyncio.run(app.ainvoke({"user": "u7", "question": "oolong", "answer": ""}))
    assert out["answer"] == "Drinks oolong tea"
    assert db_mem.with_namespace("users.u7").count() == 1


# --- LlamaIndex ----------------------------------------------------------------------------------
def test_llamaindex_block_recalls_into_the_prompt_and_keeps_flushed_turns(
        db_mem: Memory) -> None:
    db_mem.store("The user's cat is called Miso", kind="fact")
    block = ClawMemoryBlock(memory=db_mem, session_id="chat-1")
    chat = ChatMemory.from_defaults(session_id="chat-1", memory_blocks=[block],
                                    token_limit=40, chat_history_token_ratio=0.5,
                                    token_flush_size=10, tokenizer_fn=str.split)
    turns = [ChatMessage(role="user", content="I adopted a cat last spring"),
             ChatMessage(role="assistant", content="Congratulations on the new cat"),
             ChatMessage(role="user", content="She loves sleeping on my keyboard all day"),
             ChatMessage(role="assistant", content="Cats love warm keyboards indeed")]
    for turn in turns:
        asyncio.run(chat.aput(turn))
    asyncio.run(chat.aput(ChatMessage(role="user", content="What is my cat called?")))
    prompt = asyncio.run(chat.aget())
    system = [m for m in prompt if str(m.role.value) == "system"]
    assert system and "- The user's cat is called Miso" in system[0].content  # type: ignore[operator]
    assert "<clawmemory>" in system[0].content  # type: ignore[operator]
    # the turns LlamaIndex flushed out of its window are episodes of the session now
    kept = db_mem.list(kind="episode", session_id="chat-1", order="oldest")
    assert [e.content for e in kept][:2] == ["I adopted a cat last spring",
                                             "Congratulations on the new cat"]
    assert [e.source_role for e in kept][:2] == ["user", "assistant"]


def test_llamaindex_block_on_its_own(db_mem: Memory) -> None:
    db_mem.store("Standup is at 09:30", kind="event")
    block = ClawMemoryBlock(memory=db_mem, limit=1, store_messages=False)
    got = asyncio.run(block.aget([ChatMessage(role="user", content="when is standup?")]))
    assert got == "- Standup is at 09:30"
    assert asyncio.run(block.aget([])) == ""
    asyncio.run(block.aput([ChatMessage(role="user", content="hello")]))
    assert db_mem.count(kind="episode") == 0  # read-only when told so
    with pytest.raises(ValueError):
        ClawMemoryBlock(memory="not a memory")  # type: ignore[arg-type]


# --- without the framework -----------------------------------------------------------------------
@pytest.mark.parametrize(("module", "framework", "extra"), [
    ("openai_agents", "agents", "openai-agents"),
    ("langgraph", "langgraph", "langgraph"),
    ("llamaindex", "llama_index", "llamaindex"),
])
def test_a_missing_framework_says_which_extra_to_install(
        monkeypatch: pytest.MonkeyPatch, module: str, framework: str, extra: str) -> None:
    for name in list(sys.modules):
        if name == framework or name.startswith(framework + "."):
            monkeypatch.setitem(sys.modules, name, None)  # as if not installed
    monkeypatch.setitem(sys.modules, framework, None)
    monkeypatch.delitem(sys.modules, f"clawmemory.adapters.{module}", raising=False)
    with pytest.raises(ConfigError, match=rf"pip install 'clawmemory\[{extra}\]'"):
        importlib.import_module(f"clawmemory.adapters.{module}")
    monkeypatch.delitem(sys.modules, f"clawmemory.adapters.{module}", raising=False)

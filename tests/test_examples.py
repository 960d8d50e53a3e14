"""The tool-calling loop examples (examples/), run as a user runs them: a subprocess with the
official OpenAI or Anthropic SDK, talking to a scripted model server over real HTTP, with a real
memory file. What the model is sent back is asserted from the server's recorded requests.
The SDKs come with the ``dev`` extra; the scripts import them, so a missing one fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from llm_servers import ScriptedLLMServer, text, tool_call

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _run(script: str, question: str, server: ScriptedLLMServer, db: Path, *more: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(CLAWMEM_DB=str(db), CLAWMEM_EMBEDDER__PROVIDER="none",
               OPENAI_BASE_URL=server.url, OPENAI_API_KEY="test-key",
               ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="test-key")
    proc = subprocess.run([sys.executable, str(EXAMPLES / script), question, *more], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _memories(db: Path) -> list[str]:
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        return [r.content for r in mem.list(order="oldest")]


def _tool_messages(body: Any) -> list[dict[str, Any]]:
    """The tool results a request carried back to the model, in either wire format."""
    out = []
    for m in body["messages"]:
        if m.get("role") == "tool":
            out.append({"id": m["tool_call_id"], "text": m["content"], "error": None})
        elif isinstance(m.get("content"), list):
            out += [{"id": b["tool_use_id"], "text": b["content"], "error": b.get("is_error")}
                    for b in m["content"] if b.get("type") == "tool_result"]
    return out


@pytest.mark.parametrize("script", ["openai_tool_loop.py", "anthropic_tool_loop.py"])
def test_the_loop_stores_then_recalls_through_the_model(tmp_path: Path, script: str) -> None:
    kind = "openai" if script.startswith("openai") else "anthropic"
    db = tmp_path / "agent.db"
    with ScriptedLLMServer(kind) as server:
        server.script([tool_call("memory_store", {"content": "User takes tea without sugar"},
                                 id="call_1"),
                       text("Noted: no sugar.")])
        assert _run(script, "Remember: no sugar in my tea", server, db) == "Noted: no sugar."
        assert _memories(db) == ["User takes tea without sugar"]
        first, second = server.bodies
        assert {t["name"] if "name" in t else t["function"]["name"]
                for t in first["tools"]} >= {"memory_store", "memory_recall"}
        [stored] = _tool_messages(second)
        assert stored["id"] == "call_1" and stored["error"] in (None, False)

        server.script([tool_call("memory_recall", {"query": "tea sugar"}, id="call_2"),
                       text("Without sugar.")])
        assert _run(script, "How do I take my tea?", server, db) == "Without sugar."
        [recalled] = _tool_messages(server.bodies[-1])
        assert "User takes tea without sugar" in recalled["text"]


@pytest.mark.parametrize("script", ["openai_tool_loop.py", "anthropic_tool_loop.py"])
def test_a_refused_call_goes_back_to_the_model_as_an_error(tmp_path: Path, script: str) -> None:
    kind = "openai" if script.startswith("openai") else "anthropic"
    db = tmp_path / "agent.db"
    with ScriptedLLMServer(kind) as server:
        server.script([tool_call("memory_store", {"content": "x", "kind": "rumour"},
                                 id="call_1"),
                       text("Sorry, I could not store that.")])
        assert _run(script, "Remember x", server, db) == "Sorry, I could not store that."
        [refused] = _tool_messages(server.bodies[-1])
        assert "rumour" in refused["text"]
        assert refused["error"] is (True if kind == "anthropic" else None)
    assert not db.exists() or _memories(db) == []


# --- the adapters' examples (docs/adapters.md points at them) ------------------------------------
def test_openai_agents_example(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    with ScriptedLLMServer("openai") as server:
        server.script([tool_call("memory_store", {"content": "User takes tea without sugar"}),
                       text("Noted."), text("Without sugar.")])
        assert _run("openai_agents_memory.py", "Remember: no sugar", server, db) == "Noted."
        assert _run("openai_agents_memory.py", "How do I take tea?", server, db) == (
            "Without sugar.")
        sent = server.bodies[-1]["messages"]  # the session brought the first turn back
        assert sent[1] == {"role": "user", "content": "Remember: no sugar"}
    assert _memories(db) == ["User takes tea without sugar"]


def test_langgraph_example(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    with ScriptedLLMServer("openai") as server:  # not called: the graph needs no model
        assert _run("langgraph_store.py", "alice", server, db, "Drinks oolong tea",
                    "what tea?") == "Drinks oolong tea"
        assert _run("langgraph_store.py", "bob", server, db, "", "what tea?") == (
            "I don't know yet.")
        assert server.requests == []


def test_llamaindex_example(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        mem.store("The user's cat is called Miso")
    with ScriptedLLMServer("openai") as server:
        out = _run("llamaindex_memory.py", "What is my cat called?", server, db)
    assert out.splitlines() == ["[system] <memory>", "<clawmemory>",
                                "- The user's cat is called Miso", "</clawmemory>",
                                "</memory>", "[user] What is my cat called?"]

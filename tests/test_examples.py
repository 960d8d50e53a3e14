"""The tool-calling loop examples (examples/), run as a user runs them: a subprocess with the
official OpenAI or Anthropic SDK, talking to a scripted model server over real HTTP, with a real
memory file. What the model is sent back is asserted from the server's recorded requests.
The SDKs come with the ``dev`` extra; the scripts import them, so a missing one fails here."""

from __future__ import annotations

import os
import shutil
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


# --- each script's own instructions, run as written -----------------------------------------------
def _instructions(script: str) -> list[str]:
    """The command lines of a script's docstring (its indented lines), less installing and
    exporting a real API key (the test points the SDKs at a scripted server instead)."""
    doc = (EXAMPLES / script).read_text(encoding="utf-8").split('"""')[1]
    lines = [line.strip() for line in doc.splitlines() if line.startswith("    ")]
    return [line for line in lines if not line.startswith(("pip install", "export "))]


# script -> (what the model answers, what the last instruction must print)
INSTRUCTED: dict[str, tuple[list[Any], str]] = {
    "llamaindex_memory.py": ([], "- The user's cat is called Miso"),
    "langgraph_store.py": ([], "Drinks oolong tea"),
    "openai_agents_memory.py": ([tool_call("memory_store", {"content": "No sugar in tea"}),
                                 text("Noted."), text("Without sugar.")], "Without sugar."),
    "openai_tool_loop.py": ([tool_call("memory_store", {"content": "No sugar in tea"}),
                             text("Noted."), text("Without sugar.")], "Without sugar."),
    "anthropic_tool_loop.py": ([tool_call("memory_store", {"content": "No sugar in tea"}),
                                text("Noted."), text("Without sugar.")], "Without sugar."),
}


def test_every_example_script_is_run_by_this_file() -> None:
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert sorted(INSTRUCTED) == scripts
    here = Path(__file__).read_text(encoding="utf-8")
    assert all(here.count(f'"{name}"') >= 2 for name in scripts)  # and a behaviour test each


@pytest.mark.parametrize("script", sorted(INSTRUCTED))
def test_the_instructions_at_the_top_of_each_example_work_as_written(tmp_path: Path,
                                                                     script: str) -> None:
    """In a fresh directory with its own HOME, the docstring's commands in order: what one
    writes, the next reads (a ``clawmem add`` into another file than the script reads fails)."""
    replies, expected = INSTRUCTED[script]
    work, home = tmp_path / "work", tmp_path / "home"
    shutil.copytree(EXAMPLES, work / "examples")
    home.mkdir()
    kind = "anthropic" if script.startswith("anthropic") else "openai"
    with ScriptedLLMServer(kind) as server:
        server.script(replies)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CLAWMEM_", "OPENAI_", "ANTHROPIC_"))}
        env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}"
                   f"{env.get('PATH', '')}", CLAWMEM_EMBEDDER__PROVIDER="none",
                   OPENAI_BASE_URL=server.url, OPENAI_API_KEY="test-key",
                   ANTHROPIC_BASE_URL=server.url, ANTHROPIC_API_KEY="test-key",
                   XDG_CACHE_HOME=os.environ.get("XDG_CACHE_HOME")
                   or str(Path.home() / ".cache"))
        lines = _instructions(script)
        assert lines, f"{script} gives no instructions"
        for line in lines:
            proc = subprocess.run(["bash", "-c", line], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=180, check=False)
            assert proc.returncode == 0, f"{line}\n{proc.stderr}"
    assert expected in proc.stdout, f"{lines[-1]}\n{proc.stdout}"

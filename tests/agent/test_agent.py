"""The reference agent (000 ``Agent::process``) and its sessions against scripted OpenAI-compatible
and Anthropic servers: enrichment, soul block, memory tools in a bounded tool loop, response
cache, synthesis every N messages, compaction with forced synthesis and an LLM summary,
hatching, idle eviction with session summaries, and 004 consolidation on session switch as
recorded runs. Provider failures (500, timeouts, malformed bodies, a model that never stops
calling tools) are errors the caller sees; nothing already stored is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clawmemory import LLMError, Memory
from clawmemory.agent import Agent, AgentSessions
from clawmemory.core.ingest import pending_sessions
from clawmemory.history import EPISODE_ID, SessionEvent, SessionEvicted
from clawmemory.llm import CachedLLM, make_llm
from clawmemory.llm.prompts import AGENT_SYSTEM, FLUSH_SYSTEM, HATCH_SYSTEM, SYNTHESIS_SYSTEM
from conftest import DAY, Clock
from llm_servers import (
    ScriptedLLMServer,
    http_error,
    prompt_text,
    raw,
    slow,
    text,
    tool_call,
)

MakeMem = Callable[..., Memory]
PTRCLAW_TOOLS = ["memory_store", "memory_recall", "memory_forget", "memory_link"]


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in body["tools"]]


def last_user(body: dict[str, Any]) -> str:
    user = [m for m in body["messages"] if m["role"] == "user"][-1]
    content = user["content"]
    return content if isinstance(content, str) else content[0].get("text", "")


@pytest.fixture
def agents() -> Iterator[list[Agent]]:
    made: list[Agent] = []
    yield made
    for a in made:
        a.close()


def agent_for(mem: Memory, server: ScriptedLLMServer, made: list[Agent], **kw: Any) -> Agent:
    """An agent on the model ``mem``'s settings name (the scripted server)."""
    llm = make_llm(mem.settings.llm)
    assert llm is not None
    a = Agent(mem, llm, session_id=kw.pop("session_id", "s1"), **kw)
    made.append(a)
    return a


# --- one turn ------------------------------------------------------------------------------------
def test_a_turn_enriches_injects_the_soul_runs_tools_and_answers(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(llm_server)
    mem.store("Ada prefers dark roast coffee", key="coffee")
    mem.store("I am Rex, a cheerful assistant", key="soul:identity", kind="core")
    llm_server.script([tool_call("memory_store", {"key": "city", "content": "Ada lives in Lisbon"},
                                 id="call_1"), text("Noted! Try a dark roast in Lisbon.")])
    agent = agent_for(mem, llm_server, agents)

    reply = agent.process("I moved to Lisbon, any coffee tips?")

    assert reply.text == "Noted! Try a dark roast in Lisbon."
    assert [(u.name, u.is_error) for u in reply.tool_uses] == [("memory_store", False)]
    assert mem.get("city").content == "Ada lives in Lisbon"
    assert reply.usage.prompt_tokens == 22 and not reply.cached
    first, second = (r.body for r in llm_server.requests)
    assert tool_names(first) == PTRCLAW_TOOLS
    system = prompt_text({"system": first.get("system"), "messages": [
        m for m in first["messages"] if m["role"] == "system"]})
    assert AGENT_SYSTEM in system and "## Your Identity\nI am Rex, a cheerful assistant" in system
    assert last_user(first) == ("[Memory context]\n- coffee: Ada prefers dark roast coffee\n"
                                "[/Memory context]\n\nI moved to Lisbon, any coffee tips?")
    assert "Stored memory 'city'." in prompt_text(second)  # the tool result went back
    window = agent.conversation.messages
    assert [m.role for m in window] == ["user", "assistant", "tool", "assistant"]
    assert window[0].content == "I moved to Lisbon, any coffee tips?"  # no context block kept
    user_ep = mem.get(window[0].metadata[EPISODE_ID])
    assert (user_ep.kind, user_ep.session_id, user_ep.source_role) == ("episode", "s1", "user")
    assert mem.get(window[-1].metadata[EPISODE_ID]).content == reply.text


def test_observe_kind_conversation_stores_turns_that_hygiene_retires_after_seven_days(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent], clock: Clock,
    tmp_path: Path,
) -> None:
    """000 ``auto_save``: each user and assistant message as a ``conversation`` entry, which
    the hygiene purge takes out of the live set once unused for 7 days (the default), in the
    decay job and through ``clawmem maintain``; the default stays 004's episodes."""
    saved = make_mem(openai_server, agent={"observe_kind": "conversation"},
                     cognition={"synthesis": False})
    episodes = make_mem(openai_server, cognition={"synthesis": False})
    openai_server.script([text("Lisbon, lovely!"), text("Still lovely."), text("Porto, lovely!"),
                          text("Braga, lovely!")])
    agent = agent_for(saved, openai_server, agents)
    agent.process("I moved to Lisbon")
    turns = saved.list(kind="conversation", order="oldest")
    assert [(r.content, r.source_role, r.session_id, r.source) for r in turns] == [
        ("I moved to Lisbon", "user", "s1", "conversation"),
        ("Lisbon, lovely!", "assistant", "s1", "conversation")]
    assert [m.metadata[EPISODE_ID] for m in agent.conversation.messages] == [
        r.id for r in turns]
    assert saved.count(kind="episode") == 0 and pending_sessions(saved) == []  # no episodes
    agent.process("Lisbon again")  # its own turns are not enrichment: the history has them
    assert last_user(openai_server.requests[1].body) == "Lisbon again"
    agent_for(episodes, openai_server, agents).process("I moved to Porto")
    assert episodes.count(kind="episode") == 2 and episodes.count(kind="conversation") == 0

    clock.advance(7 * DAY)  # unused for exactly 7 days: not older than hygiene_max_age_s yet
    (kept,) = saved.maintain("decay")
    assert kept.counts["hygiene_archived"] == 0 and saved.count(kind="conversation") == 4
    clock.advance(1)
    (run,) = saved.maintain("decay")
    assert (run.outcome, run.counts["hygiene_archived"]) == ("ok", 4)
    assert saved.count(kind="conversation") == 0
    assert {e.record.content for e in saved.archived()} >= {"I moved to Lisbon",
                                                             "Lisbon, lovely!"}
    (run,) = episodes.maintain("decay")
    assert run.counts["hygiene_archived"] == 0 and episodes.count(kind="episode") == 2

    # `clawmem maintain` on a file whose entries were saved 7 days ago and more (the test
    # clock's time is in 2023): the CLI's hygiene retires them too.
    cli = make_mem(openai_server, agent={"observe_kind": "conversation"},
                   cognition={"synthesis": False})
    agent_for(cli, openai_server, agents).process("I moved to Braga")
    db = cli.store_backend.stats(cli.namespace).path
    assert db is not None and cli.count(kind="conversation") == 2
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env |= {"CLAWMEM_HOME": str(tmp_path / "home"), "CLAWMEM_CONFIG": str(tmp_path / "no.toml"),
            "CLAWMEM_EMBEDDER__PROVIDER": "none"}
    done = subprocess.run([str(Path(sys.executable).parent / "clawmem"), "--db", db, "--json",
                           "maintain", "decay"], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (cli_run,) = json.loads(done.stdout)["runs"]
    assert cli_run["counts"]["hygiene_archived"] == 2
    assert cli.count(kind="conversation") == 0


def test_enrichment_leaves_out_the_sessions_own_turns_but_not_its_notes(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(openai_server)
    openai_server.script([text("ok"), text("ok again")])
    agent = agent_for(mem, openai_server, agents)
    agent.process("Tell me about marmalade")
    assert last_user(openai_server.requests[0].body) == "Tell me about marmalade"
    mem.store("Ada makes orange marmalade", key="ada-marmalade", session_id="s1",
              source="synthesis")
    agent.process("More about marmalade please")
    assert last_user(openai_server.requests[1].body) == (
        "[Memory context]\n- ada-marmalade: Ada makes orange marmalade\n[/Memory context]\n\n"
        "More about marmalade please")


def test_a_model_that_never_stops_calling_tools_gets_a_clear_error(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(llm_server, agent={"max_tool_rounds": 3})
    llm_server.script([], then=tool_call("memory_recall", {"query": "anything"}))
    agent = agent_for(mem, llm_server, agents)

    with pytest.raises(LLMError, match=r"still calling tools after 3 rounds \(agent\."
                                       r"max_tool_rounds\) and gave no answer"):
        agent.process("loop forever")

    assert len(llm_server.requests) == 4
    assert [m.role for m in agent.conversation.messages] == ["user"] + ["assistant", "tool"] * 3
    llm_server.script([text("Finally.")])
    assert agent.process("please answer").text == "Finally."  # the conversation goes on


def test_provider_failures_raise_and_the_message_stays(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(llm_server, llm={"timeout_s": 0.5})
    agent = agent_for(mem, llm_server, agents)
    llm_server.script([http_error(500), http_error(500), http_error(500)])
    with pytest.raises(LLMError, match="HTTP 500 after 3 attempts"):
        agent.process("first")
    llm_server.script([slow(3.0, text("too late"))])
    with pytest.raises(LLMError, match=r"timed out after 0\.5 s"):
        agent.process("second")
    llm_server.script([raw('{"choices": [')])
    with pytest.raises(LLMError):
        agent.process("third")
    llm_server.script([text("")])
    with pytest.raises(LLMError, match="no text and no tool call"):
        agent.process("fourth")
    assert [m.content for m in agent.conversation.messages] == [
        "first", "second", "third", "fourth"]
    assert [r.content for r in mem.list(kind="episode", order="oldest")] == [
        "first", "second", "third", "fourth"]


def test_the_response_cache_answers_repeats_until_something_is_forgotten(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent], tmp_path: Path
) -> None:
    cache = tmp_path / "cache.json"
    mem = make_mem(openai_server, llm={"response_cache": True, "cache_path": cache},
                   agent={"observe": False}, cognition={"synthesis": False})
    keep = mem.store("The sky is blue")
    openai_server.script([text("Hello there!"), text("Hello again, fresh.")])
    llm = make_llm(mem.settings.llm)  # behind the response cache, as configured
    assert isinstance(llm, CachedLLM)
    agent = Agent(mem, llm, session_id="s1")
    agents.append(agent)

    first, second = agent.process("hello"), agent.process("hello")
    assert (first.text, first.cached, second.text, second.cached) == (
        "Hello there!", False, "Hello there!", True)
    assert len(openai_server.requests) == 1 and b"Hello there!" in cache.read_bytes()
    mem.forget(keep)  # its answer might have quoted it: the cache goes
    assert not cache.exists()
    third = agent.process("hello")
    assert (third.text, third.cached) == ("Hello again, fresh.", False)


# --- after the answer ----------------------------------------------------------------------------
def test_synthesis_runs_every_n_user_messages_and_its_failure_is_reported(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(llm_server, cognition={"synthesis_interval": 2})
    llm_server.script([
        text("Hi Ada."), text("Lisbon is lovely."),
        text('{"notes": [{"key": "user-city", "content": "Ada lives in Lisbon",'
             ' "sources": ["m3"]}]}'),
        text("Sure."), text("Indeed."), text("no json here"), text("still none"),
    ])
    agent = agent_for(mem, llm_server, agents)
    assert agent.process("I'm Ada").synthesized == ()
    second = agent.process("I live in Lisbon")
    (note_id,) = second.synthesized
    note = mem.get(note_id)
    assert (note.key, note.source, note.session_id) == ("user-city", "synthesis", "s1")
    assert note.source_ids == (agent.conversation.messages[2].metadata[EPISODE_ID],)
    assert SYNTHESIS_SYSTEM.format() in prompt_text(llm_server.requests[2].body)
    agent.process("ok")
    fourth = agent.process("ok then")
    assert fourth.text == "Indeed."  # the answer is not lost
    assert fourth.problems == ("synthesis failed: the synthesis answer is not usable JSON"
                               " after 2 tries: the synthesis answer holds no JSON object or"
                               " array: 'still none'",)


def test_extraction_per_exchange_when_enabled(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(openai_server, cognition={"extraction": True, "synthesis": False})
    openai_server.script([text("Nice!"), text("- Ada plays the cello")])
    agent = agent_for(mem, openai_server, agents)
    reply = agent.process("I play the cello")
    (fact_id,) = reply.extracted
    fact = mem.get(fact_id)
    assert (fact.content, fact.source) == ("Ada plays the cello", "extraction")
    assert len(fact.source_ids) == 2  # the user's and the assistant's episode


def test_compaction_flushes_then_synthesises_then_stores_the_models_summary(
    anthropic_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    """Before a compaction discards messages: 002's memory-flush turn (the model saves what is
    durable with the memory tools), then 000's forced synthesis; then the LLM summary."""
    mem = make_mem(anthropic_server, history={"max_history_messages": 6, "min_messages": 4,
                                              "keep_recent": 2},
                   cognition={"synthesis_interval": 100})
    anthropic_server.script([
        text("one"), text("two"), text("three"),
        tool_call("memory_store", {"key": "counting-habit",
                                   "content": "The user likes to count aloud"}),
        text("DONE"),
        text('{"notes": [{"key": "counting", "content": "The user counts", "sources": ["m1"]}]}'),
        text("The user counted to three."),
    ])
    agent = agent_for(mem, anthropic_server, agents)
    assert agent.process("1").compaction is None
    assert agent.process("2").compaction is None
    reply = agent.process("3")
    done = reply.compaction

    assert done is not None and done.summarized_by == "summarizer" and reply.problems == ()
    flush, flushed, synthesis, summary = (r.body for r in anthropic_server.requests[3:])
    assert FLUSH_SYSTEM in prompt_text(flush) and "user: 1" in prompt_text(flush)
    assert tool_names(flush) == PTRCLAW_TOOLS
    assert "Stored" in prompt_text(flushed) or "counting-habit" in prompt_text(flushed)
    assert SYNTHESIS_SYSTEM.format() in prompt_text(synthesis)
    assert "[m1] user: 1" in prompt_text(synthesis)
    assert "assistant: two" in prompt_text(summary)
    assert mem.get("counting-habit").content == "The user likes to count aloud"
    assert [m.content for m in agent.conversation.messages] == ["3", "three"]
    memory = mem.get(done.summary_memory_id or "")
    assert memory.content == "The user counted to three."
    assert len(memory.source_ids) == 4
    assert mem.get("counting").source_ids == memory.source_ids[:1]


def test_a_flush_turn_that_never_stops_calling_tools_does_not_stop_the_compaction(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(openai_server, history={"max_history_messages": 6, "min_messages": 4,
                                           "keep_recent": 2},
                   cognition={"synthesis": False}, agent={"max_tool_rounds": 2})
    looping = tool_call("memory_recall", {"query": "count"})
    openai_server.script([text("one"), text("two"), text("three"), looping, looping, looping,
                          text("The user counted.")])
    agent = agent_for(mem, openai_server, agents)
    agent.process("1")
    agent.process("2")
    reply = agent.process("3")

    assert reply.compaction is not None and reply.compaction.summarized_by == "summarizer"
    assert reply.problems == ("before compaction: the model was still calling tools after 2"
                              " rounds of its pre-compaction memory flush"
                              " (agent.max_tool_rounds)",)
    assert [m.content for m in agent.conversation.messages] == ["3", "three"]


def test_the_memory_flush_can_be_switched_off(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(openai_server, history={"max_history_messages": 6, "min_messages": 4,
                                           "keep_recent": 2},
                   cognition={"synthesis": False}, agent={"memory_flush": False})
    openai_server.script([text("one"), text("two"), text("three"), text("Counted.")])
    agent = agent_for(mem, openai_server, agents)
    for n in "123":
        reply = agent.process(n)
    assert reply.compaction is not None and len(openai_server.requests) == 4


# --- hatching (000) ------------------------------------------------------------------------------
SOUL = ('Wonderful, I am Rex now!\n<soul>{"identity": "I am Rex, cheerful and brief", "user":'
        ' "Ada, a developer in Lisbon", "philosophy": "Be honest and kind"}</soul>')


def test_hatching_builds_the_soul_then_the_agent_speaks_with_it(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, agents: list[Agent]
) -> None:
    mem = make_mem(llm_server)
    agent = agent_for(mem, llm_server, agents)
    agent.start_hatching()
    llm_server.script([
        text("Hello! What should I call myself?"),
        text("<soul>{broken"), text(SOUL),  # a malformed block gets one correction
        text('{"notes": [{"key": "user-job", "content": "Ada is a developer"}]}'),
        text("Hi Ada, Rex here."),
    ])
    first = agent.process("Hi, let's create you")
    assert (first.text, first.hatching, first.soul) == (
        "Hello! What should I call myself?", True, ())
    body = llm_server.requests[0].body
    assert HATCH_SYSTEM.format() in prompt_text(body) and "tools" not in body

    done = agent.process("Call yourself Rex. I'm Ada, a developer in Lisbon.")

    assert (done.text, done.hatching) == ("Wonderful, I am Rex now!", False)
    assert [mem.get(i).key for i in done.soul] == [
        "soul:identity", "soul:user", "soul:philosophy"]
    identity = mem.get("soul:identity")
    assert (identity.kind, identity.content, identity.source) == (
        "core", "I am Rex, cheerful and brief", "hatching")
    assert len(identity.source_ids) == 4  # the hatching conversation's episodes
    assert "could not be used" in prompt_text(llm_server.requests[2].body)
    assert mem.get("user-job").source == "synthesis" and len(done.synthesized) == 1
    after = agent.process("Who are you?")
    assert after.text == "Hi Ada, Rex here."
    assert "## Your Identity\nI am Rex, cheerful and brief" in prompt_text(
        llm_server.requests[-1].body)
    assert agent.history.store.len(agent.key + "#hatch") == 0  # 000: history cleared


# --- sessions ------------------------------------------------------------------------------------
def test_switching_sessions_summarises_and_consolidates_the_old_one(
    llm_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(llm_server)
    llm_server.script([
        text("Congratulations on the new job!"),
        text("Ada started a job at Initech."),  # the summary at session end (003)
        text('[{"content": "Ada started a new job at Initech", "sources": ["e1"]}]'),
        text("Hello in s2."),
    ])
    with AgentSessions(mem, llm_server.llm(), background=False) as sessions:
        sessions.process("s1", "I started a new job at Initech")
        assert sessions.end("s1")
        sessions.wait()
        assert sessions.process("s2", "hello").text == "Hello in s2."
        (run,) = sessions.runs

    assert run.outcome == "ok" and run.counts["facts"] == 1
    (fact,) = mem.list(kind="fact")
    (summary,) = mem.list(kind="summary")
    first_episode = mem.list(kind="episode", session_id="s1", order="oldest")[0]
    assert (fact.content, fact.source_ids) == ("Ada started a new job at Initech",
                                               (first_episode.id,))
    assert (summary.content, summary.source) == ("Ada started a job at Initech.", "session-end")
    assert pending_sessions(mem) == ["s2"]
    assert mem.store_backend.runs(mem.namespace, 5, job="consolidate") == [run]


def test_a_new_session_in_another_process_completes_the_previous_one(
    openai_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(openai_server)
    openai_server.script([text("first answer"), text("second answer"),
                          text('[{"content": "The user said hello twice"}]')])
    with AgentSessions(mem, openai_server.llm(), background=False) as one:
        one.process("a", "hello")
    with AgentSessions(mem, openai_server.llm(), background=False) as two:  # a later run
        two.process("b", "hello again")
        two.wait()
        (run,) = two.runs
    assert run.outcome == "ok" and pending_sessions(mem) == ["b"]
    assert [f.session_id for f in mem.list(kind="fact")] == ["a"]


def test_a_failed_consolidation_is_recorded_seen_and_retried_later(
    llm_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(llm_server, agent={"summary_on_end": False})
    llm_server.script([text("ok"), text("not json"), text("still not json"), text("ok 2")])
    with AgentSessions(mem, llm_server.llm(), background=False) as sessions:
        sessions.process("s1", "I like jazz")
        sessions.end("s1")
        sessions.wait()
        sessions.process("s2", "hi")
        (run,) = sessions.runs
    assert run.outcome == "failed" and "sessions failed: s1" in run.message
    assert pending_sessions(mem) == ["s1", "s2"]  # the nightly job or the next switch retries


def test_idle_sessions_are_evicted_with_events_and_a_summary(
    openai_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(openai_server)
    idle = Clock(0.0)
    seen: list[SessionEvent] = []
    openai_server.script([text("hello!"), text("The user said hi.")])
    with AgentSessions(mem, openai_server.llm(), clock=idle, background=False) as sessions:
        sessions.subscribe(seen.append)
        sessions.process("s1", "hi")
        idle.advance(3601)
        assert sessions.evict_idle() == ["s1"]
        sessions.wait()
        assert sessions.runs == []  # idle is not "switched away": the nightly job decides
    evicted = [e for e in seen if isinstance(e, SessionEvicted)]
    assert [(e.session_id, e.reason) for e in evicted] == [("s1", "idle")]
    (summary,) = mem.list(kind="summary")
    assert summary.content == "The user said hi." and len(summary.source_ids) == 2

"""The cognition steps against scripted OpenAI-compatible and Anthropic servers (real HTTP, both
wire formats): 001 extraction, 000 synthesis and its pre-compaction hook, the compaction
summarizer, 000 soul parsing, 004 consolidation (pages, two-level dedup, conflicts,
idempotency, resumption after a failure, the nightly job) and 004 reflection with its guards.
Failures (HTTP 500, malformed JSON, empty answers) are errors the caller sees or failed runs,
and nothing is written from them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_forget_for_real import file_bytes

from clawmemory import LLMError, Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.cognition import (
    LLMExtractor,
    NopExtractor,
    consolidate_session,
    episode_ids,
    llm_summarizer,
    parse_soul,
    remember_exchange,
    synthesis_hook,
    synthesize,
)
from clawmemory.config import EmbedderSettings
from clawmemory.core.ingest import is_session_consolidated, pending_sessions
from clawmemory.core.jobs import JobContext, run_job
from clawmemory.history import EPISODE_ID, History
from clawmemory.llm.base import Message
from clawmemory.llm.prompts import CONSOLIDATION_SYSTEM, SUMMARY_SYSTEM, SYNTHESIS_SYSTEM
from conftest import DAY, Clock
from llm_servers import ScriptedLLMServer, http_error, prompt_text, raw, slow, text

MakeMem = Callable[..., Memory]


def episodes(mem: Memory, session: str, lines: list[tuple[str, str]], clock: Clock) -> list[str]:
    out = []
    for role, content in lines:
        out.append(mem.observe(role, content, session))
        clock.advance(60)
    return out


# --- 001 extraction ------------------------------------------------------------------------------
def test_extraction_sends_001s_prompt_and_stores_one_fact_per_line(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server)
    ep = episodes(mem, "s1", [("user", "I'm Ada, I live in Lisbon and I drink tea"),
                              ("assistant", "Nice to meet you, Ada!")], clock)
    llm_server.script([text("- The user's name is Ada\n* Ada lives in Lisbon\n"
                            "2. Ada drinks tea\n\n- Ada drinks tea\nNONE")])

    ids = remember_exchange(mem, LLMExtractor(llm_server.llm()), "I'm Ada, I live in Lisbon"
                            " and I drink tea", "Nice to meet you, Ada!", session_id="s1",
                            source_ids=ep)

    facts = [mem.get(i) for i in ids]
    assert [f.content for f in facts] == [
        "The user's name is Ada", "Ada lives in Lisbon", "Ada drinks tea"]
    assert {(f.kind, f.source, f.session_id, f.source_ids) for f in facts} == {
        ("fact", "extraction", "s1", tuple(ep))}
    sent = prompt_text(llm_server.requests[0].body)
    assert ("Analyze the following exchange and extract important facts about the user.\n"
            "Return one fact per line. If there are no facts worth remembering, return "
            '"NONE".') in sent
    assert "User: I'm Ada, I live in Lisbon and I drink tea\nAssistant: Nice to meet you" in sent


@pytest.mark.parametrize("answer", ["NONE", "none.", '"NONE"', "- NONE\n"])
def test_none_means_no_facts(openai_server: ScriptedLLMServer, answer: str) -> None:
    openai_server.script([text(answer)])
    assert LLMExtractor(openai_server.llm()).extract("hi", "hello") == []


def test_an_empty_or_failed_extraction_is_an_error_and_stores_nothing(
    llm_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(llm_server)
    llm_server.script([text(""), http_error(500), http_error(500), http_error(500)])
    extractor = LLMExtractor(llm_server.llm())
    with pytest.raises(LLMError, match="empty"):
        remember_exchange(mem, extractor, "I like tea", "ok")
    with pytest.raises(LLMError, match="500"):
        remember_exchange(mem, extractor, "I like tea", "ok")
    assert mem.count() == 0 and len(llm_server.requests) == 4  # 1 + 3 tries of the 500


def test_the_nop_extractor_asks_nothing(openai_server: ScriptedLLMServer,
                                        make_mem: MakeMem) -> None:
    mem = make_mem(openai_server)
    assert remember_exchange(mem, NopExtractor(), "I like tea", "ok") == []
    assert openai_server.requests == []


# --- 000 synthesis -------------------------------------------------------------------------------
def conversation(ep: list[str]) -> list[Message]:
    context = "[Memory context]\n- old-note: Zanzibar holiday plans\n[/Memory context]\n\n"
    return [
        Message("user", context + "I switched the project to Python 3.12",
                metadata={EPISODE_ID: ep[0]}),
        Message("assistant", "Great, 3.12 it is.", metadata={EPISODE_ID: ep[1]}),
        Message("user", "And I prefer pytest over unittest", metadata={EPISODE_ID: ep[2]}),
        Message("assistant", "Noted.", metadata={EPISODE_ID: ep[3]}),
    ]


NOTES = ('Here are the notes:\n```json\n{"notes": ['
         '{"key": "project-python-version", "content": "The project uses Python 3.12",'
         ' "links": ["project-setup"], "sources": ["m1", "m2"]},'
         ' {"key": "User Prefers Pytest", "content": "The user prefers pytest over unittest",'
         ' "links": ["project-python-version", "no-such-key"], "sources": ["m3", "bogus"]}'
         ']}\n```\nHope this helps.')


def test_synthesis_stores_notes_with_keys_links_and_sources(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server)
    setup = mem.store("Project setup: Python and pytest, CI on every push", key="project-setup")
    ep = episodes(mem, "s1", [("user", "a"), ("assistant", "b"), ("user", "c"),
                              ("assistant", "d")], clock)
    llm_server.script([text(NOTES)])

    done = synthesize(mem, llm_server.llm(), conversation(ep), session_id="s1")

    version, pytest_note = (mem.get(i) for i in done.stored)
    assert (version.key, version.content, version.source, version.source_ids) == (
        "project-python-version", "The project uses Python 3.12", "synthesis",
        (ep[0], ep[1]))
    assert (pytest_note.key, pytest_note.source_ids) == ("user-prefers-pytest", (ep[2],))
    assert {n.id for n in mem.neighbors(version.id)} == {setup, pytest_note.id}
    assert (done.links, done.skipped_links, done.messages) == (2, 1, 4)
    body = llm_server.requests[0].body
    assert body["temperature"] == 0.3
    sent = prompt_text(body)
    assert SYNTHESIS_SYSTEM.format() in sent
    assert "[m1] user: I switched the project to Python 3.12" in sent
    assert "- project-setup: Project setup: Python and pytest" in sent
    assert "Memory context" not in sent and "Zanzibar" not in sent  # 000: stripped first


def test_synthesis_updates_its_own_notes_and_never_overwrites_other_keys(
    openai_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(openai_server)
    mine = mem.store("The user's name is Ada Lovelace", key="user-name", kind="core")
    note = ('{"notes": [{"key": "user-name", "content": "The user is called Ada"},'
            ' {"key": "user-city", "content": "%s"}]}')
    openai_server.script([text(note % "Ada lives in Lisbon"),
                          text(note % "Ada moved to Porto")])
    messages = [Message("user", "I'm Ada from Lisbon"), Message("assistant", "Hi Ada")]
    first = synthesize(mem, openai_server.llm(), messages)
    second = synthesize(mem, openai_server.llm(), messages)

    assert mem.get(mine).content == "The user's name is Ada Lovelace"  # untouched
    assert [mem.get(i).key for i in first.stored] == ["user-name-2", "user-city"]
    assert second.stored == first.stored  # its own notes are updated in place (000 upsert)
    assert mem.get("user-city").content == "Ada moved to Porto"
    assert mem.get("user-name-2").source_ids == ()  # messages not stored as episodes


def test_a_malformed_synthesis_answer_is_corrected_once_then_fails(
    llm_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(llm_server)
    messages = [Message("user", "I love hiking"), Message("assistant", "Nice!")]
    llm_server.script([text("Sure! notes: {broken"), text('{"notes": [{"key": "k"}]}')])
    with pytest.raises(LLMError, match="not usable JSON after 2 tries: note 1 has no content"):
        synthesize(mem, llm_server.llm(), messages)
    assert mem.count() == 0
    assert "could not be used" in prompt_text(llm_server.requests[1].body)

    llm_server.script([raw("{not json at all"), text('{"notes": [{"key": "likes-hiking",'
                                                     ' "content": "The user loves hiking"}]}')])
    with pytest.raises(LLMError, match=r"(openai|anthropic) LLM at"):
        synthesize(mem, llm_server.llm(), messages)  # a malformed HTTP body is not "corrected"
    assert mem.count() == 0
    assert synthesize(mem, llm_server.llm(), messages).stored  # the next call works


def test_synthesis_runs_before_compaction_discards_and_the_summary_is_the_models(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server)
    llm = llm_server.llm()
    ep = episodes(mem, "s1", [("user", f"message {i}") for i in range(14)], clock)
    llm_server.script([
        text('{"notes": [{"key": "early-topic", "content": "Early on the user said 3",'
             ' "sources": ["m4"]}]}'),
        text("The user sent numbered messages."),
    ])
    with History(mem, summarizer=llm_summarizer(llm), hooks=[synthesis_hook(mem, llm)]) as hist:
        conv = hist.conversation("chat:1:", session_id="s1", system="be brief")
        for i, e in enumerate(ep):
            conv.append(Message("user" if i % 2 == 0 else "assistant", f"message {i}",
                                metadata={EPISODE_ID: e}))
        done = conv.compact(force=True)

    assert done is not None and done.summarized_by == "summarizer"
    synthesis, summary = (prompt_text(r.body) for r in llm_server.requests)
    assert SYNTHESIS_SYSTEM.format() in synthesis and SUMMARY_SYSTEM in summary
    assert "message 3" in synthesis and "message 4" not in synthesis  # only what goes
    note = mem.get("early-topic")
    assert note.source_ids == (ep[3],)
    memory = mem.get(done.summary_memory_id or "")
    assert memory.content == "The user sent numbered messages."
    assert memory.source_ids == tuple(ep[:4])  # the discarded messages' episodes


def test_a_failing_summarizer_leaves_the_count_line(
    openai_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(openai_server)
    openai_server.script([text("   ")])
    with History(mem, summarizer=llm_summarizer(openai_server.llm())) as hist:
        conv = hist.conversation("chat:2:")
        for i in range(14):
            conv.append(Message("user", f"m{i}"))
        done = conv.compact(force=True)
    assert done is not None and done.summarized_by == "counts"
    assert done.summary_error is not None and "summary answer was empty" in done.summary_error


# --- 000 soul parsing ----------------------------------------------------------------------------
def test_parse_soul_reads_the_three_entries() -> None:
    soul = parse_soul('Lovely! <soul>```json\n{"identity": "I am Rex, playful", "user": "Ada,'
                      ' a developer", "philosophy": ["Be brief", "Be kind"]}\n```</soul>')
    assert soul is not None
    assert soul.entries() == {"soul:identity": "I am Rex, playful",
                              "soul:user": "Ada, a developer",
                              "soul:philosophy": "Be brief\nBe kind"}
    assert parse_soul("What should I call you?") is None


@pytest.mark.parametrize(("answer", "problem"), [
    ("<soul>{not json</soul>", "holds no JSON object"),
    ('<soul>{"identity": "Rex", "user": "Ada"}</soul>', 'no "philosophy" text'),
    ('<soul>{"identity": "Rex", "user": "Ada", "philosophy": "kind"}', "not closed"),
])
def test_an_unusable_soul_block_is_an_error(answer: str, problem: str) -> None:
    with pytest.raises(LLMError, match=problem):
        parse_soul(answer)


# --- 004 consolidation ---------------------------------------------------------------------------
def test_consolidation_pages_dedups_resolves_conflicts_and_marks_the_session(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server)
    berlin = mem.store("Ada lives in Berlin", kind="fact")
    ep = episodes(mem, "s1", [("user" if i % 2 == 0 else "assistant", f"turn {i} of the chat")
                              for i in range(35)], clock)
    llm_server.script([
        text('[{"content": "Ada lives in Lisbon", "sources": ["e2"], "tags": ["home"]},'
             ' {"content": "ada lives in  lisbon", "sources": ["e3"]},'
             ' {"content": "Ada has a cat named Miso", "sources": ["e5", "e99"]}]'),
        text('[{"new": "n1", "old": "s1"}, {"new": "n7", "old": "s1"}]'),
        text("[]"),  # page 2: nothing worth keeping
    ])

    done = consolidate_session(mem, llm_server.llm(), "s1")

    assert done.counts() == {"sessions": 1, "sessions_already_done": 0, "pages": 2,
                             "pages_done_before": 0, "facts": 2, "duplicates": 1,
                             "conflicts_resolved": 1}
    lisbon = mem.list(source="consolidation", order="oldest")[0]
    cat = mem.list(source="consolidation", order="oldest")[1]
    assert (lisbon.content, lisbon.source_ids, lisbon.tags, lisbon.session_id) == (
        "Ada lives in Lisbon", (ep[1],), ("home",), "s1")
    assert lisbon.event_time == mem.get(ep[1]).event_time
    assert (cat.content, cat.source_ids) == ("Ada has a cat named Miso", (ep[4],))
    assert mem.get(berlin).confidence == 0.3 and lisbon.supersedes == berlin
    assert is_session_consolidated(mem, "s1")
    page1, conflicts, page2 = (prompt_text(r.body) for r in llm_server.requests)
    assert CONSOLIDATION_SYSTEM.format() in page1
    assert "Session s1, turns 1 to 30 of 35" in page1 and "turns 31 to 35 of 35" in page2
    assert "[e1] (2023-11-14) user: turn 0 of the chat" in page1
    assert "new fact n1: Ada lives in Lisbon\n  stored fact s1: Ada lives in Berlin" in conflicts


def test_a_second_consolidation_adds_nothing_and_asks_nothing(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(openai_server)
    episodes(mem, "s1", [("user", "I am training for a marathon")], clock)
    openai_server.script([text('[{"content": "The user trains for a marathon"}]')])
    consolidate_session(mem, openai_server.llm(), "s1")
    before = mem.list(limit=100)

    again = consolidate_session(mem, openai_server.llm(), "s1")

    assert (again.sessions, again.already) == (0, 1)
    assert mem.list(limit=100) == before and len(openai_server.requests) == 1


def test_an_interrupted_consolidation_resumes_without_duplicates(
    anthropic_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(anthropic_server)
    ep = episodes(mem, "s1", [("user", f"fact number {i} is {i * 7}") for i in range(31)], clock)
    anthropic_server.script([text('[{"content": "Fact 0 is zero", "sources": ["e1"]}]'),
                             http_error(500), http_error(500), http_error(500)])
    with pytest.raises(LLMError, match="500"):
        consolidate_session(mem, anthropic_server.llm(), "s1")
    assert not is_session_consolidated(mem, "s1")
    assert [f.content for f in mem.list(kind="fact")] == ["Fact 0 is zero"]

    anthropic_server.script([text('[{"content": "Fact 30 is 210", "sources": ["e1"]}]'),
                             text("[]")])  # no conflict with "Fact 0 is zero"
    done = consolidate_session(mem, anthropic_server.llm(), "s1")

    assert (done.pages_done_before, done.pages, done.facts) == (1, 1, 1)
    first, second = mem.list(kind="fact", order="oldest")
    assert (first.content, first.source_ids) == ("Fact 0 is zero", (ep[0],))
    assert (second.content, second.source_ids) == ("Fact 30 is 210", (ep[30],))
    assert is_session_consolidated(mem, "s1")


def test_the_nightly_job_consolidates_idle_sessions_and_records_the_run(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server)
    episodes(mem, "old", [("user", "My sister Bea lives in Oslo")], clock)
    clock.advance(2 * 3600)
    episodes(mem, "live", [("user", "still talking")], clock)
    llm_server.script([text('[{"content": "The user\'s sister Bea lives in Oslo"}]')])

    run = run_job(mem, "consolidate")

    assert run.outcome == "ok", run.message
    assert run.counts == {"sessions": 1, "sessions_already_done": 0, "pages": 1,
                          "pages_done_before": 0, "facts": 1, "duplicates": 0,
                          "conflicts_resolved": 0, "llm_calls": 1, "prompt_tokens": 11,
                          "completion_tokens": 7}
    assert pending_sessions(mem) == ["live"]  # a session still going on is left alone
    assert len(llm_server.requests) == 1


def test_a_malformed_consolidation_answer_fails_the_run_and_writes_nothing(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server, consolidation={"min_idle_s": 0})
    episodes(mem, "s1", [("user", "I adopted a dog")], clock)
    llm_server.script([text("I found these facts: the user has a dog."),
                       text("Still no JSON, sorry.")])

    run = run_job(mem, "consolidate", JobContext.from_settings(mem.settings))

    assert run.outcome == "failed"
    assert "the consolidation answer is not usable JSON after 2 tries" in run.message
    assert "sessions failed: s1" in run.message
    assert run.counts["llm_calls"] == 2
    assert mem.count(kind="fact") == 0 and pending_sessions(mem) == ["s1"]


def test_an_unavailable_model_stops_the_nightly_run_at_the_first_session(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    # Each further session would wait out the same timeout (issue 22): they are not tried and
    # stay pending; a model that answers badly is still no reason to skip the others.
    mem = make_mem(openai_server, llm={"timeout_s": 0.5}, consolidation={"min_idle_s": 0})
    for session in ("s1", "s2", "s3"):
        episodes(mem, session, [("user", f"a note of {session}")], clock)
    openai_server.script([slow(3.0, text("[]"))])

    run = run_job(mem, "consolidate", JobContext.from_settings(mem.settings))

    assert run.outcome == "failed" and "timed out after 0.5 s" in run.message
    assert "(sessions failed: s1; not tried: s2, s3;" in run.message
    assert len(openai_server.requests) == 1
    assert pending_sessions(mem) == ["s1", "s2", "s3"]


def test_forgetting_an_episode_forgets_the_facts_consolidated_from_it_byte_for_byte(
    openai_server: ScriptedLLMServer, tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "c.db"
    cfg = Settings(embedder=EmbedderSettings(provider="none"), llm=openai_server.settings())
    mem = Memory(SQLiteStore(db), cfg, clock=clock)
    secret, other = episodes(mem, "s1", [("user", "My locker code is Zorbulax"),
                                         ("user", "I like green tea")], clock)
    openai_server.script([text('[{"content": "Locker code Quibblefex", "sources": ["e1"]},'
                               ' {"content": "Likes green tea and the Quibblefex", '
                               '"sources": ["e1", "e2"]}]')])
    consolidate_session(mem, openai_server.llm(), "s1")
    assert b"quibblefex" in file_bytes(db)

    done = mem.forget(secret)

    # Both facts quote the forgotten episode; the one also backed by `other` goes too and its
    # session is queued, so the next consolidation derives again from what is left (ADR 0022).
    assert mem.list(kind="fact") == [] and len(done.derived) == 2
    assert done.reopened_sessions == ("s1",)
    assert b"quibblefex" not in file_bytes(db) and b"zorbulax" not in file_bytes(db)
    openai_server.script([text('[{"content": "Likes green tea", "sources": ["e1"]}]')])
    consolidate_session(mem, openai_server.llm(), "s1")
    (again,) = mem.list(kind="fact")
    assert (again.content, again.source_ids) == ("Likes green tea", (other,))
    assert "Zorbulax" not in prompt_text(openai_server.requests[-1].body)


# --- 004 reflection ------------------------------------------------------------------------------
def test_reflection_guards_and_the_weekly_reflection(
    llm_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(llm_server)
    first = run_job(mem, "reflect")
    assert (first.outcome, first.message) == (
        "skipped", "skipped: 0 new facts in the last 7 days (3 needed)")
    facts = [mem.store(f"Ada fact {i}") for i in range(3)]
    ep = episodes(mem, "s1", [("user", "this week I started pottery")], clock)
    llm_server.script([text("Ada had a creative week: pottery started.")])

    made = run_job(mem, "reflect")

    assert made.outcome == "ok" and made.counts["reflections"] == 1, made.message
    (reflection,) = mem.list(kind="reflection")
    assert (reflection.content, reflection.tags, reflection.decay_rate, reflection.source) == (
        "Ada had a creative week: pottery started.", ("weekly",), 0.0, "reflection")
    assert set(reflection.source_ids) == {*facts, *ep}
    sent = prompt_text(llm_server.requests[0].body)
    assert "Ada fact 2" in sent and "this week I started pottery" in sent
    clock.advance(5 * DAY)
    for i in range(3):
        mem.store(f"New fact {i}")
    again = run_job(mem, "reflect")
    assert again.outcome == "skipped" and "the last reflection is 5.0 days old" in again.message
    clock.advance(DAY)
    llm_server.script([text("Another week.")])
    assert run_job(mem, "reflect").outcome == "ok"
    assert len(llm_server.requests) == 2


def test_an_empty_reflection_fails_the_run_and_saves_nothing(
    openai_server: ScriptedLLMServer, make_mem: MakeMem
) -> None:
    mem = make_mem(openai_server)
    for i in range(3):
        mem.store(f"fact {i}")
    openai_server.script([text("")])
    run = run_job(mem, "reflect")
    assert (run.outcome, run.message) == ("failed", "the reflection answer was empty")
    assert mem.count(kind="reflection") == 0


def test_episode_ids_of_messages() -> None:
    msgs = [Message("user", "a", metadata={EPISODE_ID: "e1"}), Message("assistant", "b"),
            Message("user", "c", metadata={EPISODE_ID: "e1"}),
            Message("user", "d", metadata={EPISODE_ID: "e2"})]
    assert episode_ids(msgs) == ["e1", "e2"]


def test_a_page_of_long_turns_is_cut_to_fit_the_prompt(
    openai_server: ScriptedLLMServer, make_mem: MakeMem, clock: Clock
) -> None:
    mem = make_mem(openai_server, cognition={"max_input_chars": 1000})
    episodes(mem, "s1", [("assistant", f"answer {i} " + "word " * 400) for i in range(5)], clock)
    openai_server.script([text("[]")])
    consolidate_session(mem, openai_server.llm(), "s1")
    dialogue = prompt_text(openai_server.requests[0].body).split("<<<DIALOGUE\n")[1]
    lines = dialogue.split("\nDIALOGUE>>>")[0].splitlines()
    assert [line.split(":", 1)[0] for line in lines] == [
        f"[e{i}] (2023-11-14) assistant" for i in range(1, 6)]
    assert all(line.endswith("…") and len(line) < 260 for line in lines)
    assert is_session_consolidated(mem, "s1")

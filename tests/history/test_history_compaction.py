"""Compaction (000 compact_history, 001 summaries and EmergencyCompact, 002 pre-compaction
flush, 003 session summaries) through ``Conversation.compact`` and the pure functions.

The summarizers here are plain Python callables: the LLM-backed one is the cognition layer's,
tested against the scripted provider server."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawmemory import ConfigError, LLMError, Memory, Settings
from clawmemory.config import HistorySettings
from clawmemory.history import (
    Compaction,
    Conversation,
    Discarding,
    History,
    compact,
    is_summary,
    should_compact,
)
from clawmemory.llm.base import Message, ToolCall, Usage
from conftest import DAY, Clock

KEY = "telegram:42:"
CFG = HistorySettings()
COUNTS = "[Conversation history compacted. Previous discussion covered: {} user messages, " \
         "{} assistant responses, {} tool calls]"


def turns(n: int, start: int = 0) -> list[Message]:
    """n messages alternating user / assistant: u0, a1, u2, ..."""
    return [Message("user", f"u{i}") if i % 2 == 0 else Message("assistant", f"a{i}")
            for i in range(start, start + n)]


def tool_round(i: int, results: int = 2) -> list[Message]:
    calls = tuple(ToolCall(f"c{i}-{j}", "memory_recall", {"query": f"q{j}"})
                  for j in range(results))
    return [Message("assistant", "", tool_calls=calls),
            *(Message("tool", f"r{i}-{j}", tool_call_id=f"c{i}-{j}") for j in range(results))]


@pytest.fixture
def history(mem: Memory) -> Iterator[History]:
    with History(mem) as h:
        yield h


def conversation(history: History, messages: Sequence[Message]) -> Conversation:
    conv = history.conversation(KEY, session_id="s-1", system="You are helpful.")
    conv.extend(messages)
    return conv


# --- the trigger (000) ---------------------------------------------------------------------------
def test_more_than_50_messages_triggers_compaction() -> None:
    system = [Message("system", "You are helpful.")]
    assert not should_compact(system + turns(49), CFG)  # 50 messages: not more than 50
    assert should_compact(system + turns(50), CFG)


def test_75_percent_of_the_token_limit_triggers_compaction() -> None:
    # 13 messages of 6,000 words each: 13 × 7,800 = 101,400 estimated tokens > 96,000.
    long = [Message("user", "word " * 6000)] * 13
    assert should_compact(long, CFG)
    assert not should_compact(long[:12], CFG)  # 12 messages are never compacted
    # 12,000 words: 93,600 estimated tokens, under the threshold.
    assert not should_compact([Message("user", "word " * 923)] * 13, CFG)


def test_the_providers_token_count_wins_over_the_estimate() -> None:
    short = turns(13)
    assert should_compact(short, CFG, prompt_tokens=96_001)
    assert not should_compact(short, CFG, prompt_tokens=96_000)
    long = [Message("user", "word " * 6000)] * 13
    assert not should_compact(long, CFG, prompt_tokens=1_000)


def test_a_conversation_uses_the_reported_prompt_tokens(history: History) -> None:
    conv = conversation(history, turns(13))
    assert not conv.needs_compaction()
    conv.record_usage(Usage(prompt_tokens=100_000, completion_tokens=10))
    assert conv.needs_compaction()
    result = conv.compact()
    assert result is not None and conv.prompt_tokens is None  # recounted after compaction


def test_settings_change_the_trigger_and_what_is_kept(mem: Memory) -> None:
    cfg = HistorySettings(max_history_messages=8, min_messages=5, keep_recent=3)
    with History(mem, settings=cfg) as history:
        conv = conversation(history, turns(8))  # 9 with the system prompt
        result = conv.compact()
        assert result is not None
        assert conv.messages == tuple(turns(3, start=5))


# --- what is kept ---------------------------------------------------------------------------------
def test_system_prompt_summary_line_and_exactly_10_recent_are_kept(history: History) -> None:
    conv = conversation(history, turns(50))
    result = conv.compact()
    assert result is not None
    sent = conv.assemble()
    assert sent[0] == Message("system", "You are helpful.")
    assert is_summary(sent[1]) and sent[1].content == COUNTS.format(20, 20, 0)
    assert sent[2:] == turns(10, start=40) and len(conv.messages) == 10
    assert result.summarized_by == "counts" and result.discarded == tuple(turns(40))


def test_a_cut_on_tool_results_walks_back_to_their_call(history: History) -> None:
    # 40 turns, then a tool round whose 3 results straddle the 10-message cut.
    messages = [*turns(40), *tool_round(1, results=3), *turns(8, start=100)]
    conv = conversation(history, messages)
    assert conv.compact() is not None
    kept = list(conv.messages)
    assert len(kept) == 12 and kept == messages[-12:]  # walked back by two
    assert kept[0].tool_calls and [m.role for m in kept[1:4]] == ["tool"] * 3
    assert conv.summary == COUNTS.format(20, 20, 0)


def _pairs_intact(messages: Sequence[Message]) -> bool:
    called: set[str] = set()
    for m in messages:
        called.update(c.id for c in m.tool_calls)
        if m.role == "tool" and m.tool_call_id not in called:
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=40),
       st.integers(min_value=1, max_value=12))
def test_compaction_never_separates_a_tool_result_from_its_call(
    shape: list[int], keep: int
) -> None:
    """Any mix of plain turns (0) and tool rounds with 1-3 results, compacted keeping any
    number of messages: every tool result kept still follows the call it answers."""
    messages = [Message("system", "sys")]
    for i, results in enumerate(shape):
        messages += tool_round(i, results) if results else turns(2, start=2 * i)
    cfg = HistorySettings(keep_recent=keep)
    result = compact(messages, cfg, force=True)
    if result is None:
        return
    assert result.messages[0] == messages[0] and is_summary(result.messages[1])
    assert _pairs_intact(result.messages[2:])
    assert len(result.kept) >= min(keep, len(messages) - 1)
    assert [*result.discarded, *result.kept] == messages[1:]


def test_nothing_is_done_when_only_an_earlier_summary_would_go(history: History) -> None:
    conv = conversation(history, turns(10))
    assert conv.compact(force=True) is None  # system prompt + 10 kept: nothing between
    assert conv.messages == tuple(turns(10))


# --- hooks before discarding (000 forced synthesis, 002 memory flush) ----------------------------
def test_hooks_run_before_anything_is_discarded_and_see_what_goes(mem: Memory) -> None:
    seen: list[tuple[str, Discarding, int]] = []
    with History(mem) as history:
        conv = conversation(history, turns(51))

        def synthesis(d: Discarding) -> None:  # on the History: runs for every conversation
            seen.append(("synthesis", d, len(conv.messages)))

        def flush(d: Discarding) -> None:  # for this compaction only
            seen.append(("flush", d, len(conv.messages)))

        history.hooks.append(synthesis)
        conv.compact(hooks=[flush])
    assert [name for name, _, _ in seen] == ["synthesis", "flush"]
    for _, d, window in seen:
        assert window == 51  # the window was still whole when the hook ran
        assert d.discarded == tuple(turns(41)) and d.kept == tuple(turns(10, start=41))
        assert d.messages[0].role == "system" and len(d.messages) == 52
        assert (d.key, d.session_id, d.emergency) == (KEY, "s-1", False)


def test_a_failing_hook_is_logged_and_compaction_goes_on(
    history: History, caplog: pytest.LogCaptureFixture
) -> None:
    def flush(d: Discarding) -> None:
        raise LLMError("provider unreachable")

    conv = conversation(history, turns(51))
    with caplog.at_level(logging.WARNING, logger="clawmemory.history"):
        result = conv.compact(hooks=[flush])
    assert result is not None and result.hook_errors == ("provider unreachable",)
    assert "pre-compaction hook flush failed: provider unreachable" in caplog.text
    assert len(conv.messages) == 10
    assert history.flush(10) and history.store.len(KEY) == 51  # the transcript stays stored


def test_a_hook_that_appends_keeps_its_message(history: History) -> None:
    conv = conversation(history, turns(51))
    note = Message("assistant", "Saved what matters before compaction.")
    conv.compact(hooks=[lambda d: conv.append(note)])
    assert conv.messages == (*turns(10, start=41), note)


# --- summaries ------------------------------------------------------------------------------------
def test_a_summarizer_writes_the_summary_and_sees_exactly_what_goes(history: History) -> None:
    asked: list[tuple[Message, ...]] = []

    def summarize(messages: Sequence[Message]) -> str:
        asked.append(tuple(messages))
        return f"  The user and assistant exchanged {len(messages)} messages about cats.  "

    conv = conversation(history, turns(51))
    result = conv.compact(summarizer=summarize)
    assert result is not None and result.summarized_by == "summarizer"
    assert asked == [tuple(turns(41))]
    assert conv.summary == ("[Conversation summary]\n"
                            "The user and assistant exchanged 41 messages about cats.")


@pytest.mark.parametrize("failure", ["raises", "empty"])
def test_a_failing_summarizer_falls_back_to_the_counts_line(
    history: History, failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    def summarize(messages: Sequence[Message]) -> str:
        if failure == "raises":
            raise LLMError("HTTP 500 from the provider")
        return "   "

    conv = conversation(history, [*turns(40), *tool_round(7), *turns(10, start=40)])
    with caplog.at_level(logging.WARNING, logger="clawmemory.history"):
        result = conv.compact(summarizer=summarize)
    assert result is not None and result.summarized_by == "counts"
    assert result.summary_error == ("HTTP 500 from the provider" if failure == "raises"
                                    else "the summarizer returned no text")
    assert conv.summary == COUNTS.format(20, 21, 2)  # the tool round went: 1 answer, 2 results
    assert "using the message counts instead" in caplog.text
    assert history.flush(10) and history.store.len(KEY) == 53  # nothing lost from the store
    assert result.summary_memory_id is None  # a count line is not worth remembering


def test_a_summarizer_bug_propagates_and_changes_nothing(history: History) -> None:
    def summarize(messages: Sequence[Message]) -> str:
        raise ZeroDivisionError("bug")

    conv = conversation(history, turns(51))
    with pytest.raises(ZeroDivisionError):
        conv.compact(summarizer=summarize)
    assert conv.messages == tuple(turns(51)) and conv.summary == ""


def test_counts_accumulate_and_earlier_summaries_survive_a_fallback(history: History) -> None:
    conv = conversation(history, turns(51))
    conv.compact()  # 41 go: 21 user, 20 assistant
    conv.extend(turns(40, start=51))
    conv.compact()  # the earlier line and 40 more go
    assert conv.summary == COUNTS.format(41, 40, 0)

    def fails(messages: Sequence[Message]) -> str:
        raise LLMError("down")

    conv.extend(turns(41, start=100))
    conv.compact(summarizer=lambda ms: "They discussed cats.")
    assert conv.summary == "[Conversation summary]\nThey discussed cats."
    conv.extend(turns(41, start=200))
    conv.compact(summarizer=fails)
    assert conv.summary.splitlines() == [
        "[Conversation summary]", "They discussed cats.", COUNTS.format(21, 20, 0)]


def test_the_summary_is_persisted_and_a_restore_skips_what_it_covers(mem: Memory) -> None:
    with History(mem) as history:
        conv = conversation(history, turns(51))
        conv.compact(summarizer=lambda ms: "About cats.")
        conv.extend(turns(3, start=51))
    with History(mem) as history:
        restored = history.conversation(KEY, session_id="s-2")
        assert restored.summary == "[Conversation summary]\nAbout cats."
        assert restored.messages == tuple(turns(13, start=41))
        assert history.store.covered(KEY) == 41 and history.store.len(KEY) == 54


def test_an_llm_summary_is_stored_as_a_summary_memory(history: History, mem: Memory) -> None:
    conv = conversation(history, turns(51))
    result = conv.compact(summarizer=lambda ms: "The user's cat Miso is seven years old.")
    assert result is not None and result.summary_memory_id is not None
    record = mem.get(result.summary_memory_id)
    assert (record.kind, record.source, record.session_id) == ("summary", "compaction", "s-1")
    assert record.content == "The user's cat Miso is seven years old."
    assert record.metadata == {"history_key": KEY, "covers": 41} and record.source_ids == ()
    assert [h.memory.id for h in mem.recall("Miso cat")] == [record.id]


def test_summary_memories_can_be_turned_off(mem: Memory) -> None:
    cfg = HistorySettings(summary_memory=False)
    with History(mem, settings=cfg) as history:
        result = conversation(history, turns(51)).compact(summarizer=lambda ms: "About cats.")
    assert result is not None and result.summary_memory_id is None
    assert mem.count() == 0


def test_the_session_end_summary_is_stored_and_purge_forgets_it(
    history: History, mem: Memory
) -> None:
    conv = conversation(history, turns(51))
    conv.compact(summarizer=lambda ms: "Compaction summary about cats.")
    end_id = conv.end(summarizer=lambda ms: f"Session of {len(ms)} messages about Miso.")
    assert end_id is not None
    ended = mem.get(end_id)
    assert (ended.source, ended.kind) == ("session-end", "summary")
    assert ended.content == "Session of 11 messages about Miso."  # the summary + 10 kept
    other = mem.store("Unrelated fact about Miso", metadata={"history_key": KEY})
    assert history.purge(KEY) == 2
    assert [r.id for r in mem.list()] == [other]
    assert history.store.len(KEY) == 0 and history.store.summary(KEY) == ""


def test_end_without_a_summarizer_stores_nothing(history: History, mem: Memory) -> None:
    assert conversation(history, turns(5)).end() is None and mem.count() == 0


# --- 000 hygiene, 001 emergency ------------------------------------------------------------------
def test_compaction_runs_the_hygiene_purge(history: History, mem: Memory, clock: Clock) -> None:
    old = mem.store("transient state from last week", kind="conversation")
    clock.advance(8 * DAY)
    fresh = mem.store("transient state from today", kind="conversation")
    result = conversation(history, turns(51)).compact()
    assert result is not None and result.hygiene_purged == 1
    assert [r.id for r in mem.list()] == [fresh] and old != fresh


def test_emergency_compaction_keeps_only_emergency_retain(history: History) -> None:
    conv = conversation(history, [*turns(6), *tool_round(1), *turns(2, start=6)])
    seen: list[Discarding] = []
    result = conv.emergency_compact(hooks=[seen.append])
    assert isinstance(result, Compaction) and result.emergency and seen[0].emergency
    # The last 4 start with a tool result: the cut walks back to the call.
    assert [m.role for m in conv.messages] == ["assistant", "tool", "tool", "user", "assistant"]
    assert conv.summary == COUNTS.format(3, 3, 0)


def test_emergency_retain_is_a_setting(mem: Memory) -> None:
    cfg = Settings(history={"emergency_retain": 2}).history
    with History(mem, settings=cfg) as history:
        conv = conversation(history, turns(20))
        conv.emergency_compact()
        assert conv.messages == tuple(turns(2, start=18))


@pytest.mark.parametrize("bad", [{"keep_recent": 0}, {"compact_threshold": 1.5},
                                 {"max_history_len": 0}, {"session_idle_s": 0}])
def test_history_settings_are_checked(bad: dict[str, object]) -> None:
    with pytest.raises(ConfigError, match="history"):
        Settings(history=bad)


def test_history_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAWMEM_HISTORY__KEEP_RECENT", "7")
    monkeypatch.setenv("CLAWMEM_HISTORY__TOKEN_LIMIT", "32000")
    cfg = Settings().history
    assert (cfg.keep_recent, cfg.token_limit, cfg.max_history_len) == (7, 32_000, 100)

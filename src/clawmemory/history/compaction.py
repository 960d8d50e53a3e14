"""History compaction (000 ``compact_history``, 001 compaction and ``EmergencyCompact``).

When a conversation grows past ``max_history_messages`` (50) or its tokens past
``compact_threshold`` × ``token_limit`` (75 % of 128,000), and it holds more than
``min_messages`` (12), ``compact`` keeps the system prompt (position 0) and the last
``keep_recent`` (10) messages, walking the cut back so that a tool result is never separated
from the assistant turn that called it, and replaces everything in between with one summary
message. Before anything is dropped, each pre-discard hook sees what is about to go (the 002
memory-flush turn and 000's forced synthesis plug in here).

The summary comes from the injected ``summarizer`` (``Callable[[Sequence[Message]], str]``;
the cognition layer wires an LLM into it). Without one, or when it fails (raises a
``ClawMemoryError`` or returns nothing), the summary is 000's deterministic line with the
counts of what was dropped, after any earlier LLM summary text, which is kept verbatim: no
message is ever dropped without a summary standing in for it.

These functions work on a list of messages and return a new one; ``Conversation.compact``
(``history/conversation.py``) applies the result to a live session and persists it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clawmemory.config import HistorySettings
from clawmemory.context import estimate_tokens
from clawmemory.errors import ClawMemoryError
from clawmemory.llm.base import Message

__all__ = [
    "SUMMARY_HEADER",
    "Compaction",
    "Discarding",
    "PreDiscardHook",
    "Summarizer",
    "compact",
    "counts_line",
    "emergency_compact",
    "estimate_message_tokens",
    "is_summary",
    "should_compact",
    "summary_message",
]

log = logging.getLogger("clawmemory.history")

Summarizer = Callable[[Sequence[Message]], str]
SUMMARY_HEADER = "[Conversation summary]"  # first line of an LLM summary's message
SUMMARY_MARK = "summary"  # Message.metadata["clawmemory"] of the summary message
_COUNTS = re.compile(
    r"\[Conversation history compacted\. Previous discussion covered: (\d+) user messages,"
    r" (\d+) assistant responses, (\d+) tool calls\]")


@dataclass(frozen=True, slots=True)
class Discarding:
    """What a pre-discard hook is shown: the whole history before compaction, the messages
    about to be dropped, and those that stay. Nothing has been dropped yet when it runs."""

    messages: tuple[Message, ...]
    discarded: tuple[Message, ...]
    kept: tuple[Message, ...]
    emergency: bool = False
    key: str | None = None  # the conversation's persistence key, when compacting one
    session_id: str | None = None


PreDiscardHook = Callable[[Discarding], None]


@dataclass(frozen=True, slots=True)
class Compaction:
    """The result: the new history and how it was made."""

    messages: tuple[Message, ...]  # system prompt, summary message, kept messages
    summary: str  # the summary message's content
    summarized_by: str  # "summarizer" or "counts" (000's deterministic line)
    discarded: tuple[Message, ...]
    kept: tuple[Message, ...]  # the messages kept verbatim after the summary
    emergency: bool = False
    summary_error: str | None = None  # why the summarizer's answer was not used
    hook_errors: tuple[str, ...] = ()
    # Filled in by Conversation.compact: the 003 summary memory, 000's hygiene purge.
    summary_memory_id: str | None = None
    hygiene_purged: int = 0


def is_summary(message: Message) -> bool:
    """True for the message a compaction put in place of what it dropped."""
    return message.role == "system" and message.metadata.get("clawmemory") == SUMMARY_MARK


def summary_message(text: str) -> Message:
    return Message("system", text, metadata={"clawmemory": SUMMARY_MARK})


def estimate_message_tokens(messages: Sequence[Message]) -> int:
    """Words × 1.3 (000's fallback) over contents and tool-call arguments."""
    total = 0
    for m in messages:
        total += estimate_tokens(m.content)
        for call in m.tool_calls:
            total += estimate_tokens(f"{call.name} {json.dumps(dict(call.arguments))}")
    return total


def should_compact(
    messages: Sequence[Message], cfg: HistorySettings, *, prompt_tokens: int | None = None
) -> bool:
    """000's trigger: more than ``max_history_messages`` messages, or more tokens than
    ``compact_threshold`` × ``token_limit`` (the provider's ``prompt_tokens`` when known, else
    the estimate), and in both cases more than ``min_messages``."""
    if len(messages) <= cfg.min_messages:
        return False
    tokens = prompt_tokens if prompt_tokens else estimate_message_tokens(messages)
    return len(messages) > cfg.max_history_messages or (
        tokens > cfg.compact_threshold * cfg.token_limit)


def _cut(messages: Sequence[Message], keep: int) -> tuple[int, int] | None:
    """(head, cut): messages[:head] is the system prompt, messages[head:cut] goes, the rest
    stays. None when there is nothing to drop."""
    head = 1 if messages and messages[0].role == "system" and not is_summary(messages[0]) else 0
    cut = max(len(messages) - keep, head)
    # 000: a cut landing on a tool result walks back to the assistant turn that called it.
    while cut > head and cut < len(messages) and messages[cut].role == "tool":
        cut -= 1
    middle = messages[head:cut]
    if not middle or all(is_summary(m) for m in middle):
        return None  # only an earlier summary would go: nothing gained
    return head, cut


def counts_line(discarded: Sequence[Message]) -> str:
    """000's deterministic summary, counting what earlier count lines counted too."""
    users = sum(m.role == "user" for m in discarded)
    answers = sum(m.role == "assistant" for m in discarded)
    tools = sum(m.role == "tool" for m in discarded)
    for m in discarded:
        if is_summary(m):
            for found in _COUNTS.finditer(m.content):
                users += int(found[1])
                answers += int(found[2])
                tools += int(found[3])
    return ("[Conversation history compacted. Previous discussion covered: "
            f"{users} user messages, {answers} assistant responses, {tools} tool calls]")


def _fallback(discarded: Sequence[Message]) -> str:
    """Earlier LLM summaries (their text without count lines), then the counts line."""
    earlier = [_COUNTS.sub("", m.content).strip() for m in discarded if is_summary(m)]
    return "\n".join([*(e for e in earlier if e), counts_line(discarded)])


def _summarize(
    discarded: Sequence[Message], summarizer: Summarizer | None
) -> tuple[str, str, str | None]:
    """(summary text, how it was made, why the summarizer's answer was not used)."""
    if summarizer is None:
        return _fallback(discarded), "counts", None
    try:
        text = summarizer(tuple(discarded))
    except ClawMemoryError as exc:  # e.g. LLMError: the provider failed; the line stands in
        log.warning("compaction summary failed (%s): using the message counts instead", exc)
        return _fallback(discarded), "counts", str(exc)
    if not isinstance(text, str) or not text.strip():
        log.warning("compaction summary was empty: using the message counts instead")
        return _fallback(discarded), "counts", "the summarizer returned no text"
    return f"{SUMMARY_HEADER}\n{text.strip()}", "summarizer", None


def _run_hooks(hooks: Sequence[PreDiscardHook], seen: Discarding) -> tuple[str, ...]:
    errors: list[str] = []
    for hook in hooks:
        try:
            hook(seen)
        except ClawMemoryError as exc:
            # A failed flush or synthesis (e.g. the LLM is down) must not keep the context
            # growing past the model's window: the transcript stays in the history store.
            log.warning("pre-compaction hook %s failed: %s", getattr(hook, "__name__", hook), exc)
            errors.append(str(exc))
    return tuple(errors)


def _compact(
    messages: Sequence[Message],
    keep: int,
    *,
    summarizer: Summarizer | None,
    hooks: Sequence[PreDiscardHook],
    emergency: bool,
    key: str | None,
    session_id: str | None,
) -> Compaction | None:
    found = _cut(messages, keep)
    if found is None:
        return None
    head, cut = found
    msgs = tuple(messages)
    discarded, kept = msgs[head:cut], msgs[cut:]
    hook_errors = _run_hooks(hooks, Discarding(msgs, discarded, kept, emergency, key, session_id))
    text, how, error = _summarize(discarded, summarizer)
    return Compaction(
        messages=(*msgs[:head], summary_message(text), *kept), summary=text, summarized_by=how,
        discarded=discarded, kept=kept, emergency=emergency, summary_error=error,
        hook_errors=hook_errors,
    )


def compact(
    messages: Sequence[Message],
    cfg: HistorySettings,
    *,
    summarizer: Summarizer | None = None,
    hooks: Sequence[PreDiscardHook] = (),
    prompt_tokens: int | None = None,
    force: bool = False,
    key: str | None = None,
    session_id: str | None = None,
) -> Compaction | None:
    """Compact ``messages`` when 000's trigger says so (or ``force``); None when nothing was
    done. Hooks run, in order, before the summary is made and before anything is dropped.
    A summarizer error other than ``ClawMemoryError`` propagates and nothing changes."""
    if not force and not should_compact(messages, cfg, prompt_tokens=prompt_tokens):
        return None
    return _compact(messages, cfg.keep_recent, summarizer=summarizer, hooks=hooks,
                    emergency=False, key=key, session_id=session_id)


def emergency_compact(
    messages: Sequence[Message],
    cfg: HistorySettings,
    *,
    summarizer: Summarizer | None = None,
    hooks: Sequence[PreDiscardHook] = (),
    key: str | None = None,
    session_id: str | None = None,
) -> Compaction | None:
    """001's last resort when the context window is exceeded: keep the system prompt and only
    ``emergency_retain`` messages (more when a tool call and its results must stay together),
    whatever the trigger says. The summary is the deterministic line unless a summarizer is
    given: a model that just refused an oversized context is a poor one to ask."""
    return _compact(messages, cfg.emergency_retain, summarizer=summarizer, hooks=hooks,
                    emergency=True, key=key, session_id=session_id)

"""The LLM compaction summarizer (000/001): what ``History(summarizer=...)`` calls with the
messages a compaction discards (and ``Conversation.end`` with a whole conversation, 003).

It renders the messages (tool calls by name, tool results, earlier summaries included) and asks
for a short prose summary (``prompts.SUMMARY_SYSTEM``). A failure or an empty answer raises
``LLMError``; the history layer then stands 000's count line in, so nothing is dropped
without a summary (ADR 0009).
"""

from __future__ import annotations

from collections.abc import Sequence

from clawmemory.cognition.base import clip, require_text
from clawmemory.context import strip_memory_context
from clawmemory.history.compaction import Summarizer
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.prompts import SUMMARY_SYSTEM, SUMMARY_USER

__all__ = ["llm_summarizer", "render_transcript"]

MESSAGE_CHARS = 2000  # of one message in the transcript shown


def render_transcript(messages: Sequence[Message], limit: int) -> str:
    """One line per message, the most recent kept when all do not fit in ``limit``."""
    lines: list[str] = []
    used = 0
    for m in reversed(messages):
        text = " ".join(strip_memory_context(m.content).split())
        calls = ", ".join(c.name for c in m.tool_calls)
        line = f"{m.role}: {clip(text, MESSAGE_CHARS)}" + (f" [called {calls}]" if calls else "")
        used += len(line) + 1
        if lines and used > limit:
            break
        lines.append(line)
    return "\n".join(reversed(lines))


def llm_summarizer(llm: LLM, *, max_chars: int = 24_000) -> Summarizer:
    """A ``Summarizer`` asking ``llm``."""

    def summarize(messages: Sequence[Message]) -> str:
        transcript = render_transcript(messages, max_chars)
        return require_text(llm, [Message("system", SUMMARY_SYSTEM),
                                  Message("user", SUMMARY_USER.format(conversation=transcript))],
                            what="the summary answer")

    return summarize

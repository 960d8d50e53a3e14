"""002's pre-compaction memory flush: before a compaction discards messages, the model gets a
turn of its own, with the memory tools, to save what is durable in them ("the agent is given a
special turn to save important information before it's lost to compaction").

It runs as a history pre-discard hook (``memory_flush_hook``), before 000's forced synthesis:
the model sees the messages about to go (rendered as a transcript, ``[Memory context]`` blocks
stripped) and may call the tools for at most ``max_rounds`` rounds; a model still calling tools
after that is an ``LLMError``, which the compaction records in ``hook_errors`` and goes on
(ADR 0009). What it stores goes through the same tools as in a conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clawmemory.cognition.summary import render_transcript
from clawmemory.errors import LLMError
from clawmemory.history.compaction import Discarding, PreDiscardHook
from clawmemory.llm.base import LLM, Message, ToolCall
from clawmemory.llm.prompts import FLUSH_SYSTEM, FLUSH_USER
from clawmemory.tools.registry import call_tool, tools_for

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["FlushResult", "memory_flush", "memory_flush_hook"]


@dataclass(frozen=True, slots=True)
class FlushResult:
    """The tool calls the model made during its flush turn, by name, and how many failed."""

    calls: tuple[str, ...]
    errors: int


def memory_flush(
    mem: LocalMemory,
    llm: LLM,
    discarded: Sequence[Message],
    *,
    dialect: str,
    max_rounds: int,
    max_chars: int = 24_000,
) -> FlushResult:
    """Give ``llm`` one turn with ``dialect``'s memory tools over ``discarded``."""
    tools = [{"name": t.name, "description": t.description, "parameters": dict(t.input_schema)}
             for t in tools_for(dialect)]
    transcript = render_transcript(discarded, max_chars)
    messages = [Message("system", FLUSH_SYSTEM),
                Message("user", FLUSH_USER.format(conversation=transcript))]
    calls: list[str] = []
    errors = 0
    for turn in range(max_rounds + 1):
        answer = llm.chat(messages, tools=tools if turn < max_rounds else (), temperature=0.0)
        if not answer.tool_calls:
            return FlushResult(tuple(calls), errors)
        if turn == max_rounds:
            break
        named = tuple(c if c.id else ToolCall(f"flush_{turn}_{n}", c.name, c.arguments)
                      for n, c in enumerate(answer.tool_calls, 1))
        messages.append(Message("assistant", answer.text, tool_calls=named))
        for call in named:
            result = call_tool(mem, call.name, call.arguments, dialect=dialect)
            calls.append(call.name)
            errors += result.is_error
            messages.append(Message("tool", result.text, tool_call_id=call.id, name=call.name))
    raise LLMError(f"the model was still calling tools after {max_rounds} rounds of its"
                   " pre-compaction memory flush (agent.max_tool_rounds)")


def memory_flush_hook(mem: LocalMemory, llm: LLM, *, dialect: str, max_rounds: int,
                      max_chars: int = 24_000) -> PreDiscardHook:
    """``memory_flush`` as a history pre-discard hook (it sees what is about to go)."""

    def flush_before_discard(seen: Discarding) -> None:
        memory_flush(mem, llm, seen.discarded, dialect=dialect, max_rounds=max_rounds,
                     max_chars=max_chars)

    return flush_before_discard

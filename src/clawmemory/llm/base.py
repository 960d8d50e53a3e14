"""The LLM boundary: one narrow ``LLM`` protocol and the frozen values that cross it.

Every step that needs a language model (extraction, synthesis, consolidation, reflection,
hatching, compaction summaries, LLM NER) talks to an ``LLM``; providers (OpenAI-compatible chat
completions, Anthropic messages) are one module each and translate their wire formats to and
from these values. The same ``Message`` is what the history store keeps (001), so a
conversation goes from history to a provider and back without conversion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

__all__ = ["LLM", "ROLES", "Completion", "Message", "Role", "ToolCall", "Usage"]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant", "tool")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call the model asked for. ``arguments`` is already decoded from JSON."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message. ``tool_calls`` on assistant messages; ``tool_call_id`` (and the tool's
    ``name``) on tool results; ``metadata`` is the caller's own (001 keeps it with the message)."""

    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call consumed, as the provider reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
        )


@dataclass(frozen=True, slots=True)
class Completion:
    """The model's answer: its text, the tool calls it asked for, and what it cost."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    stop_reason: str = ""  # the provider's own word: "stop", "tool_calls", "end_turn", ...

    def as_message(self) -> Message:
        """The assistant message to append to the conversation."""
        return Message("assistant", self.text, tool_calls=self.tool_calls)


@runtime_checkable
class LLM(Protocol):
    """A chat model. ``chat`` raises ``LLMError`` (clawmemory.errors) on any failure: a
    transport error after retries, an HTTP error, or an answer it cannot read."""

    model: str

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        """One completion. ``tools``: JSON-schema tool definitions in the registry's neutral
        shape ``{"name", "description", "parameters"}``; each provider renders its own."""
        ...

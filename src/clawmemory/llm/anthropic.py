"""Anthropic messages (``POST {base_url}/v1/messages``).

The wire format differs from chat completions in ways this module hides: the system prompt is a
separate field; the conversation alternates user and assistant turns, so consecutive messages of
one role are merged into one turn of several content blocks; a tool call is a ``tool_use``
block of the assistant and its result a ``tool_result`` block in the next user turn;
``max_tokens`` is required (``[llm] max_tokens`` when the step sets none). Usage counts cached
input tokens as prompt tokens: they are part of what the call read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from clawmemory.errors import InvalidInputError, LLMError
from clawmemory.llm.base import Completion, Message, ToolCall, Usage
from clawmemory.llm.transport import JSONTransport, body_error, token_counts

__all__ = ["API_VERSION", "AnthropicLLM", "decode_answer", "encode_request"]

API_VERSION = "2023-06-01"  # the anthropic-version header: the stable messages API


class AnthropicLLM:
    """An ``LLM`` over the messages API. ``base_url`` may end in ``/v1`` or not;
    ``default_max_tokens`` is sent when a call sets no ``max_tokens`` (the API requires one)."""

    provider = "anthropic"
    default_base_url = "https://api.anthropic.com"
    default_model = "claude-3-5-haiku-latest"
    key_env = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        default_max_tokens: int | None = 1024,
    ) -> None:
        self.model = model
        self.default_max_tokens = default_max_tokens or 1024
        root = (base_url or self.default_base_url).rstrip("/")
        root = root if root.endswith("/v1") else root + "/v1"
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        self._transport = JSONTransport(
            root + "/messages", provider=self.provider, headers=headers, timeout_s=timeout_s,
            max_retries=max_retries, backoff_s=backoff_s, secret=api_key)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        body = encode_request(self.model, messages, tools=tools, temperature=temperature,
                              max_tokens=max_tokens or self.default_max_tokens)
        return decode_answer(self._transport.post(body), self.model, self._transport.where)

    def close(self) -> None:
        self._transport.close()

    def __repr__(self) -> str:
        return f"AnthropicLLM(model={self.model!r}, url={self._transport.where!r})"


def encode_request(
    model: str,
    messages: Sequence[Message],
    *,
    max_tokens: int,
    tools: Sequence[Mapping[str, Any]] = (),
    temperature: float | None = None,
) -> dict[str, Any]:
    """The request body: system messages joined into ``system``, the rest as turns."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    if system:
        body["system"] = system
    body["messages"] = _turns([m for m in messages if m.role != "system"])
    if tools:
        body["tools"] = [{"name": t["name"], "description": t.get("description", ""),
                          "input_schema": t.get("parameters")
                          or {"type": "object", "properties": {}}} for t in tools]
    if temperature is not None:
        body["temperature"] = temperature
    return body


def _turns(messages: Sequence[Message]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for m in messages:
        role = "assistant" if m.role == "assistant" else "user"  # tool results go in user turns
        blocks = _blocks(m)
        if not blocks:
            continue  # the API refuses empty text blocks; an empty message says nothing
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    return turns


def _blocks(m: Message) -> list[dict[str, Any]]:
    if m.role == "tool":
        if not m.tool_call_id:
            raise InvalidInputError("a tool message needs the tool_call_id it answers")
        return [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
               for c in m.tool_calls]
    return blocks


def decode_answer(payload: Any, model: str, where: str) -> Completion:
    """A ``Completion`` from the decoded answer; ``LLMError`` naming what is missing."""
    if not isinstance(payload, dict):
        raise LLMError(f"{where} answered with a non-object: {str(payload)[:200]!r}")
    if payload.get("type") == "error" or "content" not in payload:
        detail = body_error(payload) or str(payload)[:200]
        raise LLMError(f"{where} answered with an error: {detail}")
    content = payload["content"]
    if not isinstance(content, list):
        raise LLMError(f"{where} answered with content that is not a list of blocks")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append(_tool_call(block, where))
    prompt = token_counts(payload, "input_tokens", "cache_creation_input_tokens",
                          "cache_read_input_tokens")
    return Completion(
        text="".join(texts),
        tool_calls=tuple(calls),
        usage=Usage(prompt, token_counts(payload, "output_tokens")),
        model=str(payload.get("model") or model),
        stop_reason=str(payload.get("stop_reason") or ""),
    )


def _tool_call(block: Mapping[str, Any], where: str) -> ToolCall:
    name, arguments = block.get("name"), block.get("input")
    if not isinstance(name, str) or not name:
        raise LLMError(f"{where} answered with a tool_use block without a name")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise LLMError(f"{where}: the input of tool {name} is not a JSON object")
    return ToolCall(str(block.get("id") or ""), name, arguments)

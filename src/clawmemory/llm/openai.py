"""OpenAI-compatible chat completions (``POST {base_url}/chat/completions``): OpenAI itself and
every server that speaks its wire format (Ollama, vLLM, llama.cpp server, LM Studio).

Tools go out as ``{"type": "function", "function": {name, description, parameters}}``; the
model's ``tool_calls`` come back with their ``arguments`` as a JSON string, decoded here (a
model that writes broken arguments is an ``LLMError``, not a call with no arguments). An
answer with HTTP 200 but no ``choices`` is an error too: a proxy that reports failures in the
body must not look like an empty answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from clawmemory.errors import InvalidInputError, LLMError
from clawmemory.llm.base import Completion, Message, ToolCall, Usage
from clawmemory.llm.parse import extract_json
from clawmemory.llm.transport import JSONTransport, body_error, token_counts

__all__ = ["OpenAILLM", "decode_answer", "encode_request"]


class OpenAILLM:
    """An ``LLM`` over the chat-completions API. ``api_key`` None sends no Authorization header
    (local servers); ``default_max_tokens`` caps answers when a call sets no ``max_tokens``
    (None: the server's default); ``close()`` releases the connection pool."""

    provider = "openai"
    default_base_url = "https://api.openai.com/v1"
    default_model = "gpt-4o-mini"
    key_env = "OPENAI_API_KEY"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        default_max_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.default_max_tokens = default_max_tokens
        base_url = base_url or self.default_base_url
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._transport = JSONTransport(
            base_url.rstrip("/") + "/chat/completions", provider=self.provider, headers=headers,
            timeout_s=timeout_s, max_retries=max_retries, backoff_s=backoff_s, secret=api_key)

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
        return f"OpenAILLM(model={self.model!r}, url={self._transport.where!r})"


def encode_request(
    model: str,
    messages: Sequence[Message],
    *,
    tools: Sequence[Mapping[str, Any]] = (),
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The request body. Optional fields are left out when not given, so each server applies
    its own default."""
    body: dict[str, Any] = {"model": model, "messages": [_message(m) for m in messages]}
    if tools:
        body["tools"] = [{"type": "function", "function": {
            "name": t["name"], "description": t.get("description", ""),
            "parameters": t.get("parameters") or {"type": "object", "properties": {}}}}
            for t in tools]
    if temperature is not None:
        body["temperature"] = temperature
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return body


def _message(m: Message) -> dict[str, Any]:
    if m.role == "tool":
        if not m.tool_call_id:
            raise InvalidInputError("a tool message needs the tool_call_id it answers")
        return {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
    out: dict[str, Any] = {"role": m.role, "content": m.content}
    if m.tool_calls:
        # null content alongside tool calls is what the API itself sends back
        out["content"] = m.content or None
        out["tool_calls"] = [{"id": c.id, "type": "function", "function": {
            "name": c.name, "arguments": json.dumps(dict(c.arguments), ensure_ascii=False)}}
            for c in m.tool_calls]
    return out


def decode_answer(payload: Any, model: str, where: str) -> Completion:
    """A ``Completion`` from the decoded answer; ``LLMError`` naming what is missing."""
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        if detail := body_error(payload):
            raise LLMError(f"{where} answered with an error: {detail}")
        raise LLMError(f"{where} answered without choices: {str(payload)[:200]!r}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise LLMError(f"{where} answered without choices[0].message")
    calls = tuple(_tool_call(c, i, where) for i, c in enumerate(message.get("tool_calls") or ()))
    return Completion(
        text=_text(message.get("content")),
        tool_calls=calls,
        usage=Usage(token_counts(payload, "prompt_tokens"),
                    token_counts(payload, "completion_tokens")),
        model=str(payload.get("model") or model),
        stop_reason=str(choices[0].get("finish_reason") or ""),
    )


def _text(content: Any) -> str:
    """``content`` is a string, null (tool calls only) or, from some servers, a list of parts."""
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


def _tool_call(raw: Any, index: int, where: str) -> ToolCall:
    function = raw.get("function") if isinstance(raw, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) \
            or not function["name"]:
        raise LLMError(f"{where} answered with a tool call without a function name")
    name, arguments = function["name"], function.get("arguments")
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    elif isinstance(arguments, str):  # the wire format; some servers send an object instead
        arguments = extract_json(arguments, expect=dict,
                                 what=f"{where}: the argument string of tool {name}")
    if not isinstance(arguments, dict):
        raise LLMError(f"{where}: the arguments of tool {name} are not a JSON object")
    call_id = raw.get("id") or f"call_{index}"  # llama.cpp and others may leave it out
    return ToolCall(str(call_id), name, arguments)

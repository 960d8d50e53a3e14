"""JSON out of a model's answer, robustly, and a helper that asks for JSON until it gets some.

Models wrap JSON in code fences, put prose before it ("Sure! Here it is:") and after it, or
answer an object where a list was asked for. ``extract_json`` looks inside fenced blocks first,
then anywhere in the text, and returns the first complete JSON value of the expected type.

``ask_json`` is what a step calls: one chat call, the answer parsed and checked; a malformed
answer gets ONE corrective turn by default (the model sees its answer and the reason it was
refused: ``prompts.JSON_CORRECTION``), and a second failure raises ``LLMError``, which the
step's job records as a failed run. Nothing is written from an answer that did not parse:
a failure is never a silently empty result (ADR 0008).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, overload

from clawmemory.errors import LLMError
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.prompts import JSON_CORRECTION

__all__ = ["DEFAULT_CORRECTIONS", "ask_json", "extract_json"]

T = TypeVar("T")
DEFAULT_CORRECTIONS = 1  # corrective turns after a malformed answer (ADR 0008)
_FENCED = re.compile(r"```[^\n`]*\n(.*?)```", re.S)
_FENCE_MARK = re.compile(r"```[A-Za-z0-9_-]*")
_QUOTE_CHARS = 200


def extract_json(
    text: str,
    *,
    expect: type | tuple[type, ...] = (dict, list),
    what: str = "the model's answer",
) -> Any:
    """The first JSON value of type ``expect`` (an object or an array by default) in ``text``:
    inside ``` fences first, then anywhere, so prose and trailing text around it do not
    matter. ``LLMError`` quoting the answer's start when there is none."""
    decoder = json.JSONDecoder()
    for source in (*_FENCED.findall(text), _FENCE_MARK.sub("", text)):
        for start, ch in enumerate(source):
            if ch not in "[{":
                continue
            try:
                value = decoder.raw_decode(source, start)[0]
            except json.JSONDecodeError:
                continue
            if isinstance(value, expect):
                return value
    kinds = " or ".join(_KIND_NAMES.get(t.__name__, t.__name__) for t in _types(expect))
    raise LLMError(f"{what} holds no JSON {kinds}: {_quote(text)}")


_KIND_NAMES = {"dict": "object", "list": "array"}


def _types(expect: type | tuple[type, ...]) -> tuple[type, ...]:
    return expect if isinstance(expect, tuple) else (expect,)


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat[:_QUOTE_CHARS] + ("…" if len(flat) > _QUOTE_CHARS else ""))


@overload
def ask_json(
    llm: LLM,
    messages: Sequence[Message],
    *,
    check: Callable[[Any], T],
    expect: type | tuple[type, ...] = ...,
    temperature: float | None = ...,
    max_tokens: int | None = ...,
    corrections: int = ...,
    what: str = ...,
) -> T: ...


@overload
def ask_json(
    llm: LLM,
    messages: Sequence[Message],
    *,
    check: None = ...,
    expect: type | tuple[type, ...] = ...,
    temperature: float | None = ...,
    max_tokens: int | None = ...,
    corrections: int = ...,
    what: str = ...,
) -> Any: ...


def ask_json(
    llm: LLM,
    messages: Sequence[Message],
    *,
    check: Callable[[Any], Any] | None = None,
    expect: type | tuple[type, ...] = (dict, list),
    temperature: float | None = 0.0,
    max_tokens: int | None = None,
    corrections: int = DEFAULT_CORRECTIONS,
    what: str = "the model's answer",
) -> Any:
    """Ask ``llm`` and return the JSON in its answer, passed through ``check``.

    ``check`` converts or validates the parsed value and raises ``ValueError`` (pydantic's
    ``ValidationError`` is one) or ``LLMError`` with a reason when it is unusable; the reason
    is shown to the model in the corrective turn. Provider failures (HTTP, timeouts) are not
    corrected: they raise at once. After ``corrections`` corrective turns, ``LLMError``."""
    conversation = list(messages)
    problem = ""
    for _ in range(max(0, corrections) + 1):
        answer = llm.chat(conversation, temperature=temperature, max_tokens=max_tokens)
        try:
            value = extract_json(answer.text, expect=expect, what=what)
            return check(value) if check is not None else value
        except (LLMError, ValueError) as exc:
            problem = " ".join(str(exc).split())[:400]
        conversation += [answer.as_message(),
                         Message("user", JSON_CORRECTION.format(problem=problem))]
    tries = max(0, corrections) + 1
    raise LLMError(f"{what} is not usable JSON after {tries} "
                   f"{'try' if tries == 1 else 'tries'}: {problem}")

"""Fact extraction per exchange (001 ``FactExtractor``).

``LLMExtractor`` sends one user/assistant exchange with 001's prompt (``prompts.EXTRACTION``)
and reads the answer line by line: bullet and number markers are stripped, "NONE" means no
facts, and each remaining line is one fact. ``NopExtractor`` (001: used when extraction is
disabled, and the default without an LLM) finds nothing. ``remember_exchange`` stores what an
extractor found as ``fact`` memories naming the exchange's episodes as their sources.

An empty answer is an ``LLMError``, not "no facts": only "NONE" says that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from clawmemory.cognition.base import SOURCES, clip
from clawmemory.errors import LLMError
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.prompts import EXTRACTION

if TYPE_CHECKING:
    from clawmemory.api import MemoryAPI

__all__ = ["FactExtractor", "LLMExtractor", "NopExtractor", "parse_facts", "remember_exchange"]

_MARKER = re.compile(r"^\s*(?:[-*•+‣◦]|\d{1,3}[.)]|\(\d{1,3}\))\s+")
_NONE = re.compile(r'^\W*none\W*$', re.I)
MAX_FACT_CHARS = 2000  # a "fact" longer than this is a model rambling, not one fact


@runtime_checkable
class FactExtractor(Protocol):
    """001 ``FactExtractor``: the facts worth remembering in one exchange."""

    def extract(self, user: str, assistant: str) -> list[str]: ...


class NopExtractor:
    """001 ``NopExtractor``: extraction disabled; always finds nothing."""

    def extract(self, user: str, assistant: str) -> list[str]:
        return []


class LLMExtractor:
    """001 ``LLMExtractor``: one LLM call per exchange with 001's prompt."""

    def __init__(self, llm: LLM, *, max_chars: int = 24_000) -> None:
        self.llm = llm
        self.max_chars = max_chars

    def extract(self, user: str, assistant: str) -> list[str]:
        half = self.max_chars // 2
        prompt = EXTRACTION.format(user=clip(user, half), assistant=clip(assistant, half))
        answer = self.llm.chat([Message("user", prompt)], temperature=0.0)
        if not answer.text.strip():
            raise LLMError("the fact extraction answer was empty (expected facts or NONE)")
        return parse_facts(answer.text)


def parse_facts(text: str) -> list[str]:
    """001's parsing: one fact per line, bullets stripped, "NONE" (alone, any case, quoted or
    with a full stop) means none. Repeated lines count once."""
    facts: list[str] = []
    for line in text.splitlines():
        fact = _MARKER.sub("", line).strip()
        if not fact or _NONE.match(fact):
            continue
        facts.append(clip(fact, MAX_FACT_CHARS))
    return list(dict.fromkeys(facts))


def remember_exchange(
    mem: MemoryAPI,
    extractor: FactExtractor,
    user: str,
    assistant: str,
    *,
    session_id: str | None = None,
    source_ids: Sequence[str] = (),
    metadata: Mapping[str, Any] | None = None,
) -> list[str]:
    """Extract the exchange's facts and store them (kind ``fact``, source ``extraction``, the
    exchange's episodes as ``source_ids``, each with ``metadata``). Returns the new memory
    ids."""
    facts = extractor.extract(user, assistant)
    return mem.store_many(
        {"content": f, "kind": "fact", "source": SOURCES["extraction"], "session_id": session_id,
         "source_ids": list(source_ids), "metadata": metadata}
        for f in facts
    )

"""LLM NER (004 ``llm``): the model lists entities as JSON; each is located in the text.

The model is any ``LLM`` (clawmemory.llm; ``make_llm(settings.llm)`` gives the configured one).
The prompt is ``NER_SYSTEM`` + ``NER_USER`` in ``llm/prompts.py``. Answers are parsed leniently
(code fences, prose around the JSON, an object wrapping the list, bare strings); an answer with
no JSON at all gets one corrective turn (``ask_json``), then raises ``LLMError``. Names the text
does not contain are dropped, so a hallucinated entity cannot be linked.
"""

from __future__ import annotations

import re
from typing import Any

from clawmemory.entities.base import EntityType, Mention, resolve_overlaps
from clawmemory.errors import LLMError
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.parse import ask_json, extract_json
from clawmemory.llm.prompts import NER_SYSTEM, NER_USER

__all__ = ["LLMProvider", "build_messages", "parse_entities"]

CONFIDENCE = 0.85
MAX_CHARS = 6000  # bounds the cost of one call; memories are far shorter
WHAT = "the LLM's NER answer"

# Labels models commonly answer with, mapped onto the closed set.
TYPE_ALIASES: dict[str, EntityType] = {
    "per": EntityType.PERSON, "people": EntityType.PERSON, "name": EntityType.PERSON,
    "org": EntityType.ORGANIZATION, "organisation": EntityType.ORGANIZATION,
    "company": EntityType.ORGANIZATION, "institution": EntityType.ORGANIZATION,
    "loc": EntityType.LOCATION, "gpe": EntityType.LOCATION, "place": EntityType.LOCATION,
    "city": EntityType.LOCATION, "country": EntityType.LOCATION, "fac": EntityType.LOCATION,
    "product": EntityType.PROJECT, "software": EntityType.PROJECT, "tool": EntityType.PROJECT,
    "library": EntityType.PROJECT, "technology": EntityType.PROJECT,
    "time": EntityType.DATE, "e-mail": EntityType.EMAIL, "link": EntityType.URL,
    "handle": EntityType.MENTION, "tag": EntityType.HASHTAG,
}


def build_messages(text: str) -> list[Message]:
    """The NER request for ``text`` (cut to ``MAX_CHARS``)."""
    types = ", ".join(t.value for t in EntityType)
    return [Message("system", NER_SYSTEM.format(types=types)),
            Message("user", NER_USER.format(text=text[:MAX_CHARS]))]


def _entity_type(label: Any) -> EntityType:
    low = str(label or "").strip().lower()
    try:
        return EntityType(low)
    except ValueError:
        return TYPE_ALIASES.get(low, EntityType.OTHER)


def _pairs(payload: Any) -> list[tuple[str, EntityType]]:
    """(text, type) pairs from decoded JSON; malformed items are skipped."""
    if isinstance(payload, dict):
        payload = next((v for v in payload.values() if isinstance(v, list)), [payload])
    if not isinstance(payload, list):
        raise LLMError(f"{WHAT} is not a JSON list")
    out: list[tuple[str, EntityType]] = []
    for item in payload:
        if isinstance(item, str):
            out.append((item.strip(), EntityType.OTHER))
        elif isinstance(item, dict):
            name = item.get("text") or item.get("name") or item.get("entity")
            if isinstance(name, str):
                out.append((name.strip(), _entity_type(item.get("type") or item.get("label"))))
    return [(name, etype) for name, etype in out if name]


def parse_entities(answer: str) -> list[tuple[str, EntityType]]:
    """(text, type) pairs from an LLM answer's text; ``LLMError`` when it holds no JSON."""
    return _pairs(extract_json(answer, what=WHAT))


def _locate(text: str, name: str) -> list[tuple[int, int]]:
    """Spans of ``name`` in ``text`` on word boundaries; case-insensitive as a fallback."""
    pattern = r"(?<!\w)" + re.escape(name) + r"(?!\w)"
    spans = [m.span() for m in re.finditer(pattern, text)]
    return spans or [m.span() for m in re.finditer(pattern, text, re.IGNORECASE)]


class LLMProvider:
    """Entities named by an LLM. A failed call or an unusable answer raises ``LLMError``."""

    name = "llm"

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    def extract(self, text: str) -> list[Mention]:
        if not text.strip():
            return []
        pairs = ask_json(self.llm, build_messages(text), check=_pairs, temperature=0.0,
                         what=WHAT)
        found = [
            Mention(text[s:e], etype, s, e, CONFIDENCE, self.name)
            for name, etype in pairs
            for s, e in _locate(text[:MAX_CHARS], name)
        ]
        return resolve_overlaps(found)

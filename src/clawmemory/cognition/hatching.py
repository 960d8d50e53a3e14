"""Soul hatching (000): the conversation that gives the agent its identity.

During hatching the model runs on ``prompts.HATCH_SYSTEM`` (no tools, no memory enrichment)
and, when it knows enough, ends an answer with a ``<soul>...</soul>`` block of JSON.
``parse_soul`` reads it into 000's three entries and ``store_soul`` saves them as ``core``
memories with the keys ``soul:identity``, ``soul:user`` and ``soul:philosophy`` (a new hatching
replaces the old soul in place), naming the hatching conversation's episodes as their sources.
The agent then runs synthesis on the hatching conversation (000) and leaves hatching mode.

A soul block that is not valid JSON with the three texts is an ``LLMError`` with the reason;
the agent shows the model that reason once and asks again (the one corrective turn).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clawmemory.cognition.base import SOURCES
from clawmemory.errors import LLMError
from clawmemory.llm.parse import extract_json

if TYPE_CHECKING:
    from clawmemory.api import MemoryAPI

__all__ = ["SOUL_KEYS", "Soul", "parse_soul", "store_soul", "strip_soul"]

# 000's three soul entries: the JSON field the model writes -> the core entry's key.
SOUL_KEYS: Mapping[str, str] = {
    "identity": "soul:identity",
    "user": "soul:user",
    "philosophy": "soul:philosophy",
}
_SOUL = re.compile(r"<soul>(.*?)</soul>", re.S | re.I)
_OPEN = re.compile(r"<soul>", re.I)


@dataclass(frozen=True, slots=True)
class Soul:
    identity: str
    user: str
    philosophy: str

    def entries(self) -> dict[str, str]:
        return {SOUL_KEYS[name]: getattr(self, name) for name in SOUL_KEYS}


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name, data.get(SOUL_KEYS[name]))
    if isinstance(value, list | tuple):
        value = "\n".join(str(v) for v in value)
    if not isinstance(value, str) or not value.strip():
        raise LLMError(f'the <soul> block has no "{name}" text')
    return value.strip()


def parse_soul(text: str) -> Soul | None:
    """000 ``parse_soul_json``: the soul in an answer, None when the answer has no
    ``<soul>`` block yet; ``LLMError`` when it has one that is not usable."""
    found = _SOUL.search(text)
    if found is None:
        if _OPEN.search(text):
            raise LLMError("the <soul> block is not closed with </soul>")
        return None
    data = extract_json(found.group(1), expect=dict, what="the <soul> block")
    return Soul(_text(data, "identity"), _text(data, "user"), _text(data, "philosophy"))


def strip_soul(text: str) -> str:
    """The answer without its soul block: what the user is shown."""
    return _SOUL.sub("", text).strip()


def store_soul(mem: MemoryAPI, soul: Soul, source_ids: Sequence[str] = ()) -> list[str]:
    """Save the soul as ``core`` entries (upserted by key); returns their ids."""
    return [mem.store(content, key=key, kind="core", source=SOURCES["hatching"],
                      source_ids=list(source_ids))
            for key, content in soul.entries().items()]

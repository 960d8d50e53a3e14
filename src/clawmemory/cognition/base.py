"""What the cognition steps share: provenance tags, message references a model can cite, and
the rendering of conversations and memories into prompts.

A prompt shows each message or episode under a short reference (``m1``, ``e3``) instead of its
id: short references cost fewer tokens and small models copy them back reliably. The step maps
the references a model cites back to memory ids (``Refs.cited``); a model that cites nothing
usable gets every shown source, so a derived memory always names where it came from.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from clawmemory.context import strip_memory_context
from clawmemory.errors import LLMError
from clawmemory.history.base import EPISODE_ID
from clawmemory.llm.base import LLM, Message

__all__ = [
    "EPISODE_ID",
    "SOURCES",
    "Refs",
    "clip",
    "day",
    "episode_ids",
    "render_messages",
    "require_text",
]


# The ``source`` (003 provenance tag) of each step's memories.
SOURCES = {
    "extraction": "extraction",
    "synthesis": "synthesis",
    "consolidation": "consolidation",
    "reflection": "reflection",
    "hatching": "hatching",
}


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters (a prompt must stay bounded), marked when cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def day(ts: float | None) -> str:
    """A timestamp as the date a model reads (UTC), or "" without one."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d") if ts is not None else ""


def episode_ids(messages: Iterable[Message]) -> list[str]:
    """The episode ids the messages were stored as, in order, without repeats."""
    found = (m.metadata.get(EPISODE_ID) for m in messages)
    return list(dict.fromkeys(str(i) for i in found if isinstance(i, str) and i))


@dataclass
class Refs:
    """Short references (``m1``, ``m2``...) for the sources shown in one prompt."""

    prefix: str
    ids: dict[str, str | None] = field(default_factory=dict)  # reference -> memory id

    def add(self, memory_id: str | None) -> str:
        ref = f"{self.prefix}{len(self.ids) + 1}"
        self.ids[ref] = memory_id
        return ref

    def all(self) -> list[str]:
        return list(dict.fromkeys(i for i in self.ids.values() if i))

    def cited(self, refs: Iterable[object]) -> list[str]:
        """The memory ids behind the references a model cited; every shown one when it cited
        none that exists (a model that cites badly must not leave a memory without sources)."""
        found = [self.ids.get(str(r).strip().strip("[]").lower()) for r in refs]
        chosen = list(dict.fromkeys(i for i in found if i))
        return chosen or self.all()


def render_messages(
    messages: Sequence[Message], refs: Refs, limit: int
) -> tuple[str, list[Message]]:
    """The user and assistant messages as ``[m1] user: text`` lines, ``[Memory context]``
    blocks stripped (000), newest kept when they do not all fit in ``limit`` characters."""
    shown: list[tuple[Message, str]] = []
    used = 0
    for m in reversed(messages):
        if m.role not in ("user", "assistant"):
            continue
        text = " ".join(strip_memory_context(m.content).split())
        if not text:
            continue
        used += len(text) + 16
        if shown and used > limit:
            break
        shown.append((m, clip(text, limit)))
    shown.reverse()
    lines = [f"[{refs.add(m.metadata.get(EPISODE_ID))}] {m.role}: {t}" for m, t in shown]
    return "\n".join(lines), [m for m, _ in shown]


def require_text(llm: LLM, messages: Sequence[Message], *, what: str,
                 temperature: float | None = 0.0, max_tokens: int | None = None) -> str:
    """The model's text answer; an empty one is an ``LLMError`` (never an empty result)."""
    answer = llm.chat(messages, temperature=temperature, max_tokens=max_tokens)
    text = answer.text.strip()
    if not text:
        raise LLMError(f"{what} was empty")
    return text

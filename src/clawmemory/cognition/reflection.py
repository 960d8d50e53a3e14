"""Weekly reflection (004 ``memory_reflection``): what the past week says about the user.

Guards, as 004: at most one reflection per ``reflection_min_days`` (6) days, judged by the
newest ``reflection`` memory; at least ``reflection_min_facts`` (3) facts learned in the past
``reflection_window_days`` (7). Otherwise ``NotDue`` says why and nothing is asked. Then the
week's facts and episodes (newest first, at most ``reflection_max_memories``, 200) go to the
model (``prompts.REFLECTION_SYSTEM``) and its prose answer is saved as a ``reflection``: tag
``weekly``, source ``reflection``, the memories it read as ``source_ids``, decay rate 0 (the
kind never decays). An empty answer is an ``LLMError``: nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clawmemory.cognition.base import SOURCES, clip, day, require_text
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.prompts import REFLECTION_SYSTEM, REFLECTION_USER
from clawmemory.model import Filter, MemoryRecord

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["REFLECTION_TAG", "NotDue", "Reflection", "check_due", "reflect"]

DAY = 86_400.0
REFLECTION_TAG = "weekly"  # 004: a reflection memory tagged weekly
MEMORY_CHARS = 1000  # of one memory in the prompt


class NotDue(Exception):  # noqa: N818 - an outcome, not an error
    """The guards say no reflection now; the message says why."""


@dataclass(frozen=True, slots=True)
class Reflection:
    id: str
    facts: int
    episodes: int

    def counts(self) -> dict[str, int]:
        return {"reflections": 1, "facts_read": self.facts, "episodes_read": self.episodes}


def _recent(mem: LocalMemory, kind: str, since: float, limit: int) -> list[MemoryRecord]:
    return mem.store_backend.list(mem.namespace, Filter(kinds=(kind,), created_after=since),
                                  limit=limit)


def _lines(records: list[MemoryRecord], budget: int) -> str:
    lines: list[str] = []
    used = 0
    for r in records:
        text = clip(" ".join(r.content.split()), MEMORY_CHARS)
        line = f"- ({day(r.event_time or r.created_at)}) {text}"
        used += len(line) + 1
        if used > budget and lines:
            break
        lines.append(line)
    return "\n".join(lines) or "(none)"


def check_due(mem: LocalMemory) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
    """The week's facts and episodes when a reflection is due; ``NotDue`` otherwise."""
    cfg = mem.settings.cognition
    now = mem.clock()
    latest = mem.store_backend.list(mem.namespace, Filter(kinds=("reflection",)), limit=1)
    if latest and now - latest[0].created_at < cfg.reflection_min_days * DAY:
        age = (now - latest[0].created_at) / DAY
        raise NotDue(f"skipped: the last reflection is {age:.1f} days old (at most one every "
                     f"{cfg.reflection_min_days:g} days)")
    since = now - cfg.reflection_window_days * DAY
    facts = _recent(mem, "fact", since, cfg.reflection_max_memories)
    if len(facts) < cfg.reflection_min_facts:
        raise NotDue(f"skipped: {len(facts)} new facts in the last "
                     f"{cfg.reflection_window_days:g} days ({cfg.reflection_min_facts} needed)")
    episodes = _recent(mem, "episode", since, max(cfg.reflection_max_memories - len(facts), 0))
    return facts, episodes


def reflect(mem: LocalMemory, llm: LLM) -> Reflection:
    """Write and save this week's reflection (004 ``execute_reflection``); ``NotDue`` when
    the guards say no."""
    cfg = mem.settings.cognition
    facts, episodes = check_due(mem)
    half = cfg.max_input_chars // 2
    prompt = [Message("system", REFLECTION_SYSTEM),
              Message("user", REFLECTION_USER.format(
                  days=f"{cfg.reflection_window_days:g}", facts=_lines(facts, half),
                  episodes=_lines(episodes, half)))]
    text = require_text(llm, prompt, what="the reflection answer", temperature=0.3)
    rid = mem.store(text, kind="reflection", tags=[REFLECTION_TAG], source=SOURCES["reflection"],
                    source_ids=[r.id for r in (*facts, *episodes)])
    return Reflection(rid, len(facts), len(episodes))

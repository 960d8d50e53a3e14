"""Cognition: the LLM steps that turn conversations into memories (DESIGN.md "Processes that
need an LLM"), one module per step, each recording where what it wrote came from
(``source_ids``, ``source``):

- ``extraction``: 001's per-exchange fact extractor (``LLMExtractor``, ``NopExtractor``);
- ``synthesis``: 000's atomic notes every N user messages, before compaction, after hatching;
- ``summary``: the LLM summarizer of history compaction (000/001) and session ends (003);
- ``consolidation``: 004's session consolidation through the consolidator tools;
- ``reflection``: 004's weekly reflection with its guards;
- ``hatching``: 000's ``<soul>`` parsing into core entries;
- ``steps``: the maintenance jobs' steps (nightly consolidation, weekly reflection).

Layering: above the engine, the history and the LLM layer; the agent (``clawmemory.agent``)
and the maintenance jobs call it. docs/llm.md describes each step and shows its prompt.
"""

from clawmemory.cognition.base import EPISODE_ID, SOURCES, episode_ids
from clawmemory.cognition.consolidation import (
    Consolidation,
    consolidate_pending,
    consolidate_session,
    consolidate_sessions,
    sessions_due,
)
from clawmemory.cognition.extraction import (
    FactExtractor,
    LLMExtractor,
    NopExtractor,
    parse_facts,
    remember_exchange,
)
from clawmemory.cognition.hatching import SOUL_KEYS, Soul, parse_soul, store_soul, strip_soul
from clawmemory.cognition.reflection import REFLECTION_TAG, NotDue, Reflection, reflect
from clawmemory.cognition.steps import default_steps
from clawmemory.cognition.summary import llm_summarizer
from clawmemory.cognition.synthesis import Note, Synthesis, parse_notes, synthesis_hook, synthesize

__all__ = [
    "EPISODE_ID",
    "REFLECTION_TAG",
    "SOUL_KEYS",
    "SOURCES",
    "Consolidation",
    "FactExtractor",
    "LLMExtractor",
    "NopExtractor",
    "NotDue",
    "Note",
    "Reflection",
    "Soul",
    "Synthesis",
    "consolidate_pending",
    "consolidate_session",
    "consolidate_sessions",
    "default_steps",
    "episode_ids",
    "llm_summarizer",
    "parse_facts",
    "parse_notes",
    "parse_soul",
    "reflect",
    "remember_exchange",
    "sessions_due",
    "store_soul",
    "strip_soul",
    "synthesis_hook",
    "synthesize",
]

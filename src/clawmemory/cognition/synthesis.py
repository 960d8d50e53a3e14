"""Synthesis (000): atomic notes distilled from the conversation, stored and linked.

000 runs it every ``synthesis_interval`` (5) user messages, before history compaction (a
pre-discard hook: ``synthesis_hook``) and at the end of soul hatching. It takes the last
``synthesis_messages`` (10) user and assistant messages, strips ``[Memory context]`` blocks,
shows the keyed entries recall finds for them (so notes can link to and update them), and asks
at ``synthesis_temperature`` (0.3) for JSON notes with a key, content, links and the messages
each comes from (``prompts.SYNTHESIS_SYSTEM``). Each note is stored as a ``fact`` with source
``synthesis`` (an existing note with its key is updated in place, as 000's store upserts), its
sources being the episodes of the messages it cites, then linked (origin ``synthesis``).

A key already held by a memory synthesis did not write (the user's own, a soul entry) is never
overwritten: the note takes the first free ``key-2``, ``key-3``... A link to a key that exists
nowhere is skipped and counted. A malformed answer gets one corrective turn, then fails the
step with an ``LLMError``: nothing is stored from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clawmemory.cognition.base import SOURCES, Refs, clip, render_messages
from clawmemory.config import CognitionSettings
from clawmemory.history.compaction import Discarding, PreDiscardHook
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.parse import ask_json
from clawmemory.llm.prompts import SYNTHESIS_SYSTEM, SYNTHESIS_USER
from clawmemory.model import MemoryRecord

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["Note", "Synthesis", "parse_notes", "synthesis_hook", "synthesize"]

_KEY_CHARS = re.compile(r"[^a-z0-9:_.-]+")
MAX_KEY = 80  # characters of a note's key
MAX_NOTES = 20  # notes taken from one answer (a bound on the work one answer can cause)
ENTRY_KINDS = ("fact", "preference", "event", "summary", "reflection")


@dataclass(frozen=True, slots=True)
class Note:
    key: str
    content: str
    links: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Synthesis:
    """What one synthesis did: the memories it stored (new or updated), links made, links
    skipped (their target exists nowhere), and the messages it read."""

    stored: tuple[str, ...] = ()
    links: int = 0
    skipped_links: int = 0
    messages: int = 0

    def counts(self) -> dict[str, int]:
        return {"notes": len(self.stored), "note_links": self.links,
                "note_links_skipped": self.skipped_links}


def _key(value: object) -> str:
    text = _KEY_CHARS.sub("-", str(value).strip().lower().replace(" ", "-")).strip("-")
    return text[:MAX_KEY].strip("-")


def _strings(value: object, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
        raise ValueError(f"{what} must be a list of strings")
    return tuple(str(v) for v in value)


def parse_notes(value: Any) -> list[Note]:
    """The notes of a synthesis answer (``{"notes": [...]}`` or the bare list); ValueError with
    the reason the model is shown when it is not usable."""
    items = value.get("notes") if isinstance(value, dict) else value
    if not isinstance(items, list):
        raise ValueError('expected {"notes": [...]}')
    notes: list[Note] = []
    for n, item in enumerate(items[:MAX_NOTES], 1):
        if not isinstance(item, dict):
            raise ValueError(f"note {n} is not an object")
        content, key = item.get("content"), _key(item.get("key") or "")
        if not isinstance(content, str) or not content.strip():
            raise ValueError(f"note {n} has no content")
        if not key:
            raise ValueError(f"note {n} has no usable key")
        notes.append(Note(key, content.strip(), tuple(_key(k) for k in _strings(
            item.get("links"), f"links of note {n}") if _key(k)),
            _strings(item.get("sources"), f"sources of note {n}")))
    return notes


def _entries(mem: LocalMemory, text: str, limit: int) -> list[MemoryRecord]:
    """Keyed entries related to the conversation: what a note may link to or update."""
    if limit <= 0 or not text.strip():
        return []
    hits = mem.recall(text, limit=limit * 3, kind=ENTRY_KINDS, touch=False)
    return [h.memory for h in hits if h.memory.key][:limit]


def synthesize(
    mem: LocalMemory,
    llm: LLM,
    messages: Sequence[Message],
    *,
    session_id: str | None = None,
    settings: CognitionSettings | None = None,
) -> Synthesis:
    """Distil the last messages into notes, store and link them (000 ``run_synthesis``)."""
    cfg = settings or mem.settings.cognition
    recent = [m for m in messages if m.role in ("user", "assistant")][-cfg.synthesis_messages:]
    refs = Refs("m")
    conversation, shown = render_messages(recent, refs, cfg.max_input_chars)
    if not shown:
        return Synthesis()
    entries = _entries(mem, " ".join(m.content for m in shown if m.role == "user"),
                       cfg.synthesis_context)
    listed = "\n".join(f"- {r.key}: {clip(' '.join(r.content.split()), 300)}" for r in entries)
    prompt = [Message("system", SYNTHESIS_SYSTEM.format()),
              Message("user", SYNTHESIS_USER.format(entries=listed or "(none)",
                                                    conversation=conversation))]
    notes = ask_json(llm, prompt, check=parse_notes, expect=(dict, list),
                     temperature=cfg.synthesis_temperature, what="the synthesis answer")
    return _store_notes(mem, notes, refs, session_id, len(shown))


def _free_key(mem: LocalMemory, key: str, taken: set[str]) -> str:
    """``key`` if it is free or a synthesis note's, else the first free ``key-N``."""
    candidate, n = key, 1
    while True:
        existing = mem.store_backend.get(mem.namespace, candidate)
        mine = existing is None or (existing.key == candidate and existing.kind == "fact"
                                    and existing.source == SOURCES["synthesis"])
        if mine and candidate not in taken:
            return candidate
        n += 1
        candidate = f"{key[: MAX_KEY - 4]}-{n}"


def _store_notes(
    mem: LocalMemory, notes: Sequence[Note], refs: Refs, session_id: str | None, shown: int
) -> Synthesis:
    keys: dict[str, str] = {}  # the key a note asked for -> the key it got
    stored: list[str] = []
    for note in notes:
        key = _free_key(mem, note.key, set(keys.values()))
        keys.setdefault(note.key, key)
        stored.append(mem.store(note.content, key=key, kind="fact", source=SOURCES["synthesis"],
                                session_id=session_id, source_ids=refs.cited(note.sources)))
    made = skipped = 0
    for note in notes:
        for target in note.links:
            end = keys.get(target, target)
            if end == keys.get(note.key):
                continue
            if mem.link(keys[note.key], end, origin="synthesis"):
                made += 1
            else:
                skipped += 1
    return Synthesis(tuple(dict.fromkeys(stored)), made, skipped, shown)


def synthesis_hook(mem: LocalMemory, llm: LLM, settings: CognitionSettings | None = None
                   ) -> PreDiscardHook:
    """000's forced synthesis before compaction, as a history pre-discard hook: the messages
    about to be discarded are synthesised first (their last ``synthesis_messages``)."""

    def synthesize_before_discard(seen: Discarding) -> None:
        synthesize(mem, llm, seen.discarded, session_id=seen.session_id, settings=settings)

    return synthesize_before_discard

"""The consolidator's operations (004): read a session's episodes page by page, save the facts an
LLM extracted from them with two-level deduplication, find and resolve conflicting facts, and
keep the session ledger. None of them calls an LLM: the consolidator agent does that and calls
these as tools. They are a separate set, never offered to the main agent.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from clawmemory.config import ConsolidationSettings
from clawmemory.core.ingest import is_session_consolidated, mark_session_consolidated
from clawmemory.errors import InvalidInputError
from clawmemory.model import MemoryRecord
from clawmemory.tools.base import (
    MAX_RESULTS,
    IdRef,
    ToolArgs,
    ToolResult,
    ToolSpec,
    hit_data,
    record_data,
)

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "CONFLICT_CONFIDENCE",
    "CONSOLIDATOR_OPERATIONS",
    "DEDUP_JACCARD",
    "EPISODES_PAGE_SIZE",
    "jaccard",
]

# The 004 numbers, as defaults: each call reads ``mem.settings.consolidation``, and these only
# word the tool descriptions, which are written once for every store.
_DEFAULTS = ConsolidationSettings()
EPISODES_PAGE_SIZE = _DEFAULTS.episodes_page_size
DEDUP_JACCARD = _DEFAULTS.dedup_jaccard
CONFLICT_CONFIDENCE = _DEFAULTS.conflict_confidence
FACT_SOURCE = "consolidation"

_WORD = re.compile(r"\w+")


def _words(text: str) -> frozenset[str]:
    return frozenset(_WORD.findall(text.casefold()))


def jaccard(a: str, b: str) -> float:
    """Word-set Jaccard similarity of two texts (case-insensitive), 0..1."""
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return 0.0  # no words, no evidence of sameness
    return len(wa & wb) / len(wa | wb)


def _exact(text: str) -> str:
    """The intra-batch identity of a fact: case and spacing do not make a new fact."""
    return " ".join(text.casefold().split())


# --- input models -------------------------------------------------------------------------------
class SessionArgs(ToolArgs):
    session_id: str = Field(min_length=1, description="The conversation session.")


class EpisodesArgs(SessionArgs):
    page: int = Field(0, ge=0, description=f"Page number, from 0 ({EPISODES_PAGE_SIZE} "
                      "episodes per page, oldest first).")


class FactIn(ToolArgs):
    content: str = Field(min_length=1, description="One atomic fact.")
    tags: list[str] = Field(default_factory=list, description="Keywords.")
    confidence: float = Field(1.0, ge=0.0, le=1.0, description="How sure the extraction is.")
    source_ids: list[str] = Field(
        default_factory=list, description="Ids of the episodes this fact was extracted from.")
    event_time: float | str | None = Field(
        None, description="When it happened: epoch seconds or ISO-8601.")


class FactsBatchArgs(ToolArgs):
    facts: list[FactIn | str] = Field(
        min_length=1, max_length=MAX_RESULTS, description="The facts to save (at most 100).")
    session_id: str | None = Field(None, description="The session the facts come from.")

    @field_validator("facts", mode="before")
    @classmethod
    def _texts_as_facts(cls, value: Any) -> Any:
        # A fact given as plain text is checked as a FactIn here, with the other arguments,
        # so an empty one is a refused argument rather than a failure inside the handler.
        if isinstance(value, list):
            return [{"content": f} if isinstance(f, str) else f for f in value]
        return value


class ConflictArgs(ToolArgs):
    fact_id: IdRef | None = Field(None, description="A saved fact to check.")
    content: str | None = Field(None, min_length=1, description="Or: the text of a new fact.")
    limit: int = Field(5, ge=1, le=MAX_RESULTS, description="Maximum candidates.")

    @model_validator(mode="after")
    def _one(self) -> ConflictArgs:
        if (self.fact_id is None) == (self.content is None):
            raise ValueError("give exactly one of fact_id or content")
        return self


class ResolveArgs(ToolArgs):
    old_fact_id: IdRef = Field(description="The fact that is superseded.")
    new_fact_id: IdRef = Field(description="The fact that supersedes it.")


# --- handlers -----------------------------------------------------------------------------------
def episodes(mem: LocalMemory, args: EpisodesArgs) -> ToolResult:
    size = mem.settings.consolidation.episodes_page_size
    records = mem.list(kind="episode", session_id=args.session_id, order="oldest",
                       limit=size, offset=args.page * size)
    total = mem.count(kind="episode", session_id=args.session_id)
    more = (args.page + 1) * size < total
    lines = [f"[id:{r.id}] {r.source_role or 'unknown'}: {r.content}" for r in records]
    if more:
        lines.append(f"(more: call again with page={args.page + 1})")
    text = "\n".join(lines) if records else f"No episodes on page {args.page} of this session."
    data = {"session_id": args.session_id, "page": args.page, "total": total,
            "next_page": args.page + 1 if more else None,
            "episodes": [record_data(r) for r in records]}
    return ToolResult(text, data)


def _duplicate_of(mem: LocalMemory, content: str) -> MemoryRecord | None:
    cfg = mem.settings.consolidation
    hits = mem.recall(content, kind="fact", limit=cfg.dedup_candidates, touch=False)
    for h in hits:
        if jaccard(content, h.memory.content) >= cfg.dedup_jaccard:
            return h.memory
    return None


def save_facts(mem: LocalMemory, args: FactsBatchArgs) -> ToolResult:
    facts = [FactIn.model_validate({"content": f}) if isinstance(f, str) else f
             for f in args.facts]
    seen: set[str] = set()
    fresh: list[FactIn] = []
    skipped: list[dict[str, Any]] = []
    for f in facts:
        ident = _exact(f.content)
        if ident in seen:  # level 1: exact repeats inside the batch
            skipped.append({"content": f.content, "reason": "repeated in batch"})
            continue
        seen.add(ident)
        dup = _duplicate_of(mem, f.content)  # level 2: near-duplicates already stored
        if dup is not None:
            skipped.append({"content": f.content, "reason": "already stored",
                            "duplicate_of": dup.id})
            continue
        fresh.append(f)
    ids = mem.store_many([
        {"content": f.content, "kind": "fact", "tags": f.tags, "confidence": f.confidence,
         "source_ids": f.source_ids, "event_time": f.event_time, "session_id": args.session_id,
         "source": FACT_SOURCE}
        for f in fresh
    ])
    saved = [{"id": i, "content": f.content} for i, f in zip(ids, fresh, strict=True)]
    text = f"Saved {len(saved)} facts"
    if saved:
        text += ": " + ", ".join(f"[id:{s['id']}]" for s in saved)
    text += f"; skipped {len(skipped)} duplicates."
    return ToolResult(text, {"saved": saved, "skipped": skipped})


def mark(mem: LocalMemory, args: SessionArgs) -> ToolResult:
    changed = mark_session_consolidated(mem, args.session_id)
    text = (f"Session {args.session_id} marked as consolidated." if changed
            else f"Session {args.session_id} was already consolidated.")
    return ToolResult(text, {"session_id": args.session_id, "changed": changed})


def is_consolidated(mem: LocalMemory, args: SessionArgs) -> ToolResult:
    done = is_session_consolidated(mem, args.session_id)
    text = (f"Session {args.session_id} is already consolidated." if done
            else f"Session {args.session_id} is not consolidated yet.")
    return ToolResult(text, {"session_id": args.session_id, "consolidated": done})


def conflicts(mem: LocalMemory, args: ConflictArgs) -> ToolResult:
    own = mem.get(args.fact_id) if args.fact_id is not None else None
    content = own.content if own is not None else str(args.content)
    hits = [h for h in mem.recall(content, kind="fact", limit=args.limit + 1, touch=False)
            if own is None or h.memory.id != own.id][: args.limit]
    results = [{**hit_data(h), "similarity": round(jaccard(content, h.memory.content), 3)}
               for h in hits]
    lines = [f"- [id:{r['id']}] {r['content']} (confidence {r['confidence']:.2f})"
             for r in results]
    text = ("Facts that may conflict:\n" + "\n".join(lines)) if lines else "No conflicting facts."
    return ToolResult(text, {"fact": content, "candidates": results})


def resolve(mem: LocalMemory, args: ResolveArgs) -> ToolResult:
    old, new = mem.get(args.old_fact_id), mem.get(args.new_fact_id)
    if old.id == new.id:
        raise InvalidInputError("a fact cannot supersede itself")
    now = mem.clock()
    lowered = old.evolve(confidence=mem.settings.consolidation.conflict_confidence,
                         updated_at=now)
    marked = new.evolve(supersedes=old.id, updated_at=now)
    # Both sides in one transaction: a crash between them must not leave a lowered fact that
    # nothing supersedes.
    mem.store_backend.replace_many([lowered, marked])
    text = (f"[id:{marked.id}] now supersedes [id:{old.id}], whose confidence is lowered to "
            f"{lowered.confidence}.")
    return ToolResult(text, {"old": record_data(lowered), "new": record_data(marked)})


CONSOLIDATOR_OPERATIONS: tuple[ToolSpec, ...] = (
    ToolSpec("get_episodes_for_consolidation",
             f"Read a session's raw dialogue turns, {EPISODES_PAGE_SIZE} per page, oldest first.",
             EpisodesArgs, episodes, writes=False),
    ToolSpec("save_facts_batch",
             "Save facts extracted from a session. Exact repeats in the batch and facts "
             f"at least {DEDUP_JACCARD:.0%} similar (Jaccard) to a stored fact are skipped.",
             FactsBatchArgs, save_facts, writes=True),
    ToolSpec("mark_session_consolidated", "Record that a session has been consolidated.",
             SessionArgs, mark, writes=True),
    ToolSpec("is_session_consolidated", "Check whether a session was already consolidated.",
             SessionArgs, is_consolidated, writes=False),
    ToolSpec("detect_conflicts", "Find stored facts that may contradict a fact.",
             ConflictArgs, conflicts, writes=False),
    ToolSpec("resolve_conflict",
             f"Resolve a contradiction: the old fact's confidence drops to {CONFLICT_CONFIDENCE} "
             "and the new fact records that it supersedes it.",
             ResolveArgs, resolve, writes=True),
)

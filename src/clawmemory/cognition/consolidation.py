"""Session consolidation (004): a finished session's episodes become facts.

A fixed pipeline, not an agent loop (ADR 0010): the code walks the session and calls the 004
consolidator tools (``tools/consolidator.py``, through ``call_tool``) in 004's order; the model
only reads and judges. For each session:

1. ``is_session_consolidated``: a session already done is skipped (a re-run adds nothing);
2. ``get_episodes_for_consolidation``, page by page (``episodes_page_size``, 30); a page some
   earlier, interrupted run already turned into facts (facts from this step naming its
   episodes among their sources) is skipped, so a retry after a failure adds nothing twice;
3. the model extracts the page's facts (``prompts.CONSOLIDATION_SYSTEM``), each citing the
   turns it comes from: those episodes become its ``source_ids`` and the newest of their dates
   its ``event_time``;
4. ``save_facts_batch`` saves them with 004's two-level deduplication (exact repeats in the
   batch; Jaccard >= 0.75 against stored facts);
5. ``detect_conflicts`` finds stored facts near each saved one; when there are any, the model
   says which ones the new facts make untrue (``prompts.CONFLICT_SYSTEM``), and
   ``resolve_conflict`` lowers each to confidence 0.3 with the new fact superseding it;
6. ``mark_session_consolidated`` once every page is done.

A failed or malformed model answer (after the one corrective turn) stops the session with an
``LLMError``: nothing from that answer is written, the session stays pending, and the job run
records the failure. Triggers: a session switch (``clawmemory.agent``) and the nightly
``consolidate`` job (``steps.py``), which leaves sessions younger than ``min_idle_s`` alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clawmemory.cognition.base import SOURCES, Refs, clip, day
from clawmemory.config import ConsolidationSettings
from clawmemory.core.ingest import pending_sessions
from clawmemory.errors import ClawMemoryError, LLMUnavailableError
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.parse import ask_json
from clawmemory.llm.prompts import (
    CONFLICT_SYSTEM,
    CONFLICT_USER,
    CONSOLIDATION_SYSTEM,
    CONSOLIDATION_USER,
)
from clawmemory.model import MemoryRecord
from clawmemory.tools.base import MAX_RESULTS
from clawmemory.tools.registry import call_tool
from clawmemory.validation import check_content

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "Consolidation",
    "consolidate_pending",
    "consolidate_session",
    "consolidate_sessions",
    "sessions_due",
]

log = logging.getLogger("clawmemory.cognition")
DIALECT = "consolidator"
MAX_TAGS = 8
MAX_TAG_CHARS = 64
EPISODE_CHARS = 4000  # of one episode in a prompt, at most...
MIN_EPISODE_CHARS = 200  # ...and at least, whatever cognition.max_input_chars says


@dataclass
class Consolidation:
    """What consolidating sessions did, as a job run's counts."""

    sessions: int = 0
    already: int = 0  # sessions found consolidated before (idempotency guard)
    pages: int = 0
    pages_done_before: int = 0  # pages an interrupted earlier run had already consolidated
    facts: int = 0
    duplicates: int = 0
    conflicts: int = 0
    failed: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {"sessions": self.sessions, "sessions_already_done": self.already,
               "pages": self.pages, "pages_done_before": self.pages_done_before,
               "facts": self.facts, "duplicates": self.duplicates,
               "conflicts_resolved": self.conflicts}
        if self.failed:
            out["sessions_failed"] = len(self.failed)
        return out


def _tool(mem: LocalMemory, name: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
    """Call a consolidator tool; its refusal is an error of the step, never ignored."""
    result = call_tool(mem, name, args, dialect=DIALECT)
    if result.is_error:
        raise ClawMemoryError(f"consolidation of session {args.get('session_id', '?')}: "
                              f"{result.text}")
    return result.data


# --- the model's answers -------------------------------------------------------------------------
def _tags(value: object) -> list[str]:
    if not isinstance(value, list):
        return []
    tags = [" ".join(str(t).split())[:MAX_TAG_CHARS] for t in value if isinstance(t, str)]
    return [t for t in dict.fromkeys(tags) if t and "\x00" not in t][:MAX_TAGS]


def _facts_check(mem: LocalMemory, refs: Refs, dates: Mapping[str, float]) -> Any:
    max_chars = mem.settings.storage.max_content_chars

    def check(value: Any) -> list[dict[str, Any]]:
        items = value.get("facts") if isinstance(value, dict) else value
        if not isinstance(items, list):
            raise ValueError("expected a JSON array of facts")
        facts = []
        for n, raw in enumerate(items[:MAX_RESULTS], 1):
            item = {"content": raw} if isinstance(raw, str) else raw
            if not isinstance(item, dict) or not isinstance(item.get("content"), str):
                raise ValueError(f"fact {n} has no content")
            content = check_content(item["content"].strip(), max_chars)
            cited = item.get("sources")
            sources = refs.cited(cited if isinstance(cited, list) else [])
            when = max((dates[s] for s in sources if s in dates), default=None)
            facts.append({"content": content, "tags": _tags(item.get("tags")),
                          "source_ids": sources, "event_time": when})
        return facts

    return check


def _conflicts_check(new: Refs, old: Refs) -> Any:
    def check(value: Any) -> list[tuple[str, str]]:
        items = value.get("conflicts") if isinstance(value, dict) else value
        if not isinstance(items, list):
            raise ValueError("expected a JSON array of conflicts")
        pairs = []
        for item in items:
            if not isinstance(item, dict):
                raise ValueError("each conflict must be an object with new and old")
            a = new.ids.get(str(item.get("new", "")).strip().lower())
            b = old.ids.get(str(item.get("old", "")).strip().lower())
            if a and b:  # a reference the prompt did not show is ignored, not guessed at
                pairs.append((b, a))
        return list(dict.fromkeys(pairs))

    return check


# --- one session ---------------------------------------------------------------------------------
def _page_done_before(mem: LocalMemory, episode_ids: Sequence[str]) -> bool:
    return any(r.source == SOURCES["consolidation"] and r.kind == "fact"
               for r, _ in mem.store_backend.derived(mem.namespace, episode_ids))


def _dialogue(
    episodes: Sequence[Mapping[str, Any]], limit: int
) -> tuple[str, Refs, dict[str, float]]:
    """The page as ``[e1] (date) role: text`` lines within ``limit`` characters: each episode
    gets an equal share (at most ``EPISODE_CHARS``), so a page of long turns is cut, not
    refused."""
    share = max(min(EPISODE_CHARS, limit // max(len(episodes), 1) - 40), MIN_EPISODE_CHARS)
    refs, dates = Refs("e"), {}
    lines: list[str] = []
    for e in episodes:
        when = e.get("event_time") or e.get("created_at")
        text = clip(" ".join(str(e["content"]).split()), share)
        who = e.get("source_role") or "unknown"
        lines.append(f"[{refs.add(str(e['id']))}] ({day(when)}) {who}: {text}")
        if when is not None:
            dates[str(e["id"])] = float(when)
    return "\n".join(lines), refs, dates


def _page(
    mem: LocalMemory, llm: LLM, sid: str, data: Mapping[str, Any], done: Consolidation
) -> None:
    episodes = list(data["episodes"])
    dialogue, refs, dates = _dialogue(episodes, mem.settings.cognition.max_input_chars)
    size = mem.settings.consolidation.episodes_page_size
    first = data["page"] * size + 1
    prompt = [Message("system", CONSOLIDATION_SYSTEM.format()),
              Message("user", CONSOLIDATION_USER.format(
                  session_id=sid, first=first, last=first + len(episodes) - 1,
                  total=data["total"], dialogue=dialogue))]
    facts = ask_json(llm, prompt, check=_facts_check(mem, refs, dates), expect=(list, dict),
                     what="the consolidation answer")
    done.pages += 1
    if not facts:
        return
    saved = _tool(mem, "save_facts_batch", {"facts": facts, "session_id": sid})
    done.facts += len(saved["saved"])
    done.duplicates += len(saved["skipped"])
    _resolve_conflicts(mem, llm, [str(s["id"]) for s in saved["saved"]], done)


def _resolve_conflicts(
    mem: LocalMemory, llm: LLM, fresh: Sequence[str], done: Consolidation
) -> None:
    limit = mem.settings.consolidation.conflict_candidates
    if limit <= 0 or not fresh:
        return
    new, old = Refs("n"), Refs("s")
    blocks = []
    for fid in fresh:
        found = _tool(mem, "detect_conflicts",
                      {"fact_id": fid, "limit": min(limit + len(fresh), MAX_RESULTS)})
        stored = [c for c in found["candidates"] if c["id"] not in fresh][:limit]
        if stored:
            lines = [f"new fact {new.add(fid)}: {found['fact']}"]
            lines += [f"  stored fact {old.add(str(c['id']))}: {c['content']}" for c in stored]
            blocks.append("\n".join(lines))
    if not blocks:
        return
    prompt = [Message("system", CONFLICT_SYSTEM.format()),
              Message("user", CONFLICT_USER.format(facts="\n".join(blocks)))]
    for old_id, new_id in ask_json(llm, prompt, check=_conflicts_check(new, old),
                                   expect=(list, dict), what="the conflict answer"):
        current = mem.store_backend.get(mem.namespace, old_id)
        if current is None or current.supersedes == new_id:
            continue
        _tool(mem, "resolve_conflict", {"old_fact_id": old_id, "new_fact_id": new_id})
        done.conflicts += 1


def consolidate_session(
    mem: LocalMemory, llm: LLM, session_id: str, done: Consolidation | None = None
) -> Consolidation:
    """Consolidate one session (004's consolidator loop). Raises the first failure."""
    done = done if done is not None else Consolidation()
    if _tool(mem, "is_session_consolidated", {"session_id": session_id})["consolidated"]:
        done.already += 1
        return done
    page = 0
    while True:
        data = _tool(mem, "get_episodes_for_consolidation",
                     {"session_id": session_id, "page": page})
        ids = [str(e["id"]) for e in data["episodes"]]
        if ids and _page_done_before(mem, ids):
            done.pages_done_before += 1
        elif ids:
            _page(mem, llm, session_id, data, done)
        if data["next_page"] is None:
            break
        page = int(data["next_page"])
    _tool(mem, "mark_session_consolidated", {"session_id": session_id})
    done.sessions += 1
    return done


def consolidate_sessions(mem: LocalMemory, llm: LLM, session_ids: Sequence[str]) -> Consolidation:
    """Consolidate each session in turn; one that fails stays pending and the others go on,
    unless the model is unavailable (``LLMUnavailableError``): then the rest are not tried,
    since each would wait out the same retries and fail the same way. When any failed, an
    ``LLMError``/``ClawMemoryError`` is raised at the end naming them, those not tried and
    what was done before, so the run is recorded as failed and the caller sees why."""
    done = Consolidation()
    first: ClawMemoryError | None = None
    untried: list[str] = []
    for n, sid in enumerate(session_ids):
        try:
            consolidate_session(mem, llm, sid, done)
        except ClawMemoryError as exc:
            # Said once, by the caller, through the error raised below (with every session).
            log.info("consolidation of session %s failed: %s", sid, exc)
            done.failed.append(sid)
            first = first or exc
            if isinstance(exc, LLMUnavailableError):
                untried = list(session_ids[n + 1:])
                break
    if first is not None:
        summary = ", ".join(f"{k} {v}" for k, v in done.counts().items() if v)
        skipped = f"; not tried: {', '.join(untried)}" if untried else ""
        raise type(first)(f"{first} (sessions failed: {', '.join(done.failed)}{skipped};"
                          f" {summary})")
    return done


def sessions_due(mem: LocalMemory, exclude_session_id: str | None = None) -> list[str]:
    """Pending sessions the nightly job takes: those whose newest episode is at least
    ``min_idle_s`` old, oldest first, at most ``max_sessions``."""
    cfg: ConsolidationSettings = mem.settings.consolidation
    cutoff = mem.clock() - cfg.min_idle_s
    due = []
    for sid in pending_sessions(mem, exclude_session_id):
        newest: list[MemoryRecord] = mem.list(kind="episode", session_id=sid, limit=1)
        if not newest or newest[0].created_at <= cutoff:
            due.append(sid)
        if len(due) >= cfg.max_sessions:
            break
    return due


def consolidate_pending(mem: LocalMemory, llm: LLM) -> Consolidation:
    """The nightly run: every session due (``sessions_due``)."""
    return consolidate_sessions(mem, llm, sessions_due(mem))

"""Context injection: the blocks each specification puts in front of the model.

- 000 ``ptrclaw_enrich``: a ``[Memory context]`` block prepended to the user message, and
  ``strip_memory_context`` to remove it again before synthesis; ``soul_block``: identity,
  human, philosophy and learned traits from ``core`` entries;
- 001 ``relevant_memory_block``: ``## Relevant Memory`` within MaxFacts and MaxTokens;
- 002 ``devclaw_layer``: ``## Relevant Memories`` with ``- [category] content`` lines in a
  2000-token budget, cached by ``LayerCache`` (30 s stale-while-revalidate);
- 004 ``sandbox_context``: ``## Relevant memory`` (facts from other sessions) and
  ``## Weekly insight`` (the latest reflection).

Token counts come from a pluggable ``TokenEstimator``; the default is the specifications'
fallback heuristic, words × 1.3. Nothing here writes except recall's access bookkeeping.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from clawmemory.config import ContextSettings
from clawmemory.errors import ClawMemoryError
from clawmemory.model import MemoryRecord

# The block format and the token estimate live in ``text`` (stdlib only), so the Claude Code
# hooks build and strip the same block without importing the settings; named here as before.
from clawmemory.text import (
    CONTEXT_CLOSE,
    CONTEXT_OPEN,
    TOKENS_PER_WORD,
    estimate_tokens,
    strip_memory_context,
)

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "CONTEXT_CLOSE",
    "CONTEXT_OPEN",
    "TOKENS_PER_WORD",
    "LayerCache",
    "TokenEstimator",
    "devclaw_layer",
    "estimate_tokens",
    "ptrclaw_enrich",
    "relevant_memory_block",
    "sandbox_context",
    "soul_block",
    "strip_memory_context",
]

log = logging.getLogger("clawmemory.context")

# The specifications' other numbers live in ``Settings.context``; these are its defaults.
LAYER_CACHE_TTL_S = ContextSettings().layer_cache_ttl_s  # LayerCache has no Memory to ask


class TokenEstimator(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    """Counts the tokens of a text (001 ``Estimator``). Any ``str -> int`` function fits."""

    def __call__(self, text: str, /) -> int: ...


# --- 000 PtrClaw ----------------------------------------------------------------------------------
NEIGHBOR_LIMIT = 10  # links listed per entry


def ptrclaw_enrich(
    mem: LocalMemory | None,
    message: str,
    recall_limit: int = 5,
    enrich_depth: int = 1,
    *,
    exclude: Callable[[MemoryRecord], bool] | None = None,
) -> str:
    """The user message with a ``[Memory context]`` block in front (000 ``memory_enrich``).

    Recall ``recall_limit × 2`` (over-fetch), drop ``core`` entries (the soul block has them),
    keep ``recall_limit``, then with ``enrich_depth > 0`` add linked entries (at most
    ``recall_limit`` more, one hop per depth level). No match, no memory: the message comes
    back unchanged — never an empty block. Recalled entries list their links; added neighbours
    are shown bare, as in the specification's example. ``exclude``: recalled memories to leave
    out as well (an agent storing its messages as episodes leaves out this session's: they are
    in its history already); twice as many are fetched then, so the block still fills."""
    if mem is None or recall_limit <= 0 or not message.strip():
        return message
    try:
        fetch = recall_limit * (4 if exclude is not None else 2)
        hits = mem.recall(_query(mem, message), limit=fetch)
        entries = [h.memory for h in hits if h.memory.kind != "core"
                   and (exclude is None or not exclude(h.memory))][:recall_limit]
        if not entries:
            return message
        links = {r.id: mem.neighbors(r.id, limit=NEIGHBOR_LIMIT) for r in entries}
        extra = _collect_neighbors(mem, entries, links, enrich_depth, recall_limit)
    except ClawMemoryError as exc:  # enrichment is an aid: a failing store must not block chat
        log.warning("memory enrichment skipped: %s", exc)
        return message
    lines = [_entry_line(r, links[r.id]) for r in entries]
    lines += [f"- {_label(r)}: {r.content}" for r in extra]
    return "\n".join([CONTEXT_OPEN, *lines, CONTEXT_CLOSE]) + "\n\n" + message


def _query(mem: LocalMemory, text: str) -> str:
    """A whole chat message as a recall query, cut to ``recall.max_query_chars`` (recall
    refuses longer queries). The cut costs next to nothing: keyword search keeps the first 32
    distinct words and the embedding model reads the first few hundred tokens."""
    return text[: mem.settings.recall.max_query_chars]


def _label(r: MemoryRecord) -> str:
    return r.key or r.id


def _entry_line(r: MemoryRecord, neighbours: list[MemoryRecord]) -> str:
    tail = f" [links: {', '.join(_label(n) for n in neighbours)}]" if neighbours else ""
    return f"- {_label(r)}: {r.content}{tail}"


def _collect_neighbors(
    mem: LocalMemory,
    entries: list[MemoryRecord],
    links: dict[str, list[MemoryRecord]],
    depth: int,
    limit: int,
) -> list[MemoryRecord]:
    """Linked entries not already present, breadth first, deduplicated, core left out."""
    seen = {r.id for r in entries}
    found: list[MemoryRecord] = []
    frontier = entries
    for _ in range(max(depth, 0)):
        nxt: list[MemoryRecord] = []
        for r in frontier:
            near = links[r.id] if r.id in links else mem.neighbors(r.id, limit=NEIGHBOR_LIMIT)
            for n in near:
                if n.id in seen or n.kind == "core":
                    continue
                seen.add(n.id)
                found.append(n)
                nxt.append(n)
                if len(found) >= limit:
                    return found
        frontier = nxt
    return found


_SOUL_SECTIONS = (
    ("soul:identity", "## Your Identity"),
    ("soul:user", "## About your human"),
    ("soul:philosophy", "## Your philosophy"),
)


def soul_block(mem: LocalMemory) -> str:
    """The 000 identity block from ``core`` entries; "" when there are none."""
    sections = []
    for key, title in _SOUL_SECTIONS:
        record = mem.store_backend.get(mem.namespace, key)
        if record is not None and record.kind == "core" and record.is_valid:
            sections.append(f"{title}\n{record.content}")
    traits = _newest_traits(mem)
    if traits:
        sections.append("## Learned traits\n" + "\n".join(f"- {r.content}" for r in traits))
    return "\n\n".join(sections)


def _newest_traits(mem: LocalMemory) -> list[MemoryRecord]:
    core = mem.list(kind="core", limit=10_000)
    traits = [r for r in core if (r.key or "").startswith("personality:")]
    # 000's timestamp moves on every upsert, so "newest" is the last write, not the creation.
    traits.sort(key=lambda r: (r.updated_at, r.created_at), reverse=True)
    return traits[: mem.settings.context.soul_traits]


# --- 001 sclaw ----------------------------------------------------------------------------------
def relevant_memory_block(
    mem: LocalMemory | None,
    query: str,
    max_facts: int = 10,
    max_tokens: int = 2000,
    estimator: TokenEstimator = estimate_tokens,
    *,
    kind: str | None = None,
) -> str | None:
    """001 ``InjectMemory``: ``## Relevant Memory`` with facts in rank order while their
    tokens (the facts' text; the heading is not counted) stay within ``max_tokens``. None when
    there is no memory or nothing relevant fits."""
    if mem is None or max_facts <= 0 or not query.strip():
        return None
    hits = mem.recall(_query(mem, query), limit=max_facts, kind=kind)
    facts: list[str] = []
    used = 0
    for h in hits:
        cost = estimator(h.memory.content)
        if used + cost > max_tokens:
            break  # rank order: a lower-ranked short fact never jumps the queue
        used += cost
        facts.append(f"- {h.memory.content}")
    if not facts:
        return None
    return "## Relevant Memory\n\n" + "\n".join(facts)


# --- 002 DevClaw --------------------------------------------------------------------------------
DEVCLAW_HEADER = "## Relevant Memories\n\n"


def devclaw_layer(
    mem: LocalMemory,
    query: str,
    budget_tokens: int | None = None,
    *,
    estimator: TokenEstimator = estimate_tokens,
    limit: int | None = None,
    cache: LayerCache | None = None,
    session_id: str = "",
) -> str:
    """002 LayerMemory: ``## Relevant Memories`` then ``- [category] content`` lines, the whole
    layer within ``budget_tokens``; what does not fit is announced as
    ``[truncated - N more memories available]``. "" when nothing matches.

    With a ``cache``, the layer is cached per ``session_id`` (stale-while-revalidate).
    ``budget_tokens`` and ``limit`` default to ``Settings.context`` (2000 and 20, as 002)."""
    budget_tokens = budget_tokens or mem.settings.context.devclaw_budget_tokens
    limit = limit or mem.settings.context.devclaw_max_results
    if cache is not None:
        return cache.get(session_id,
                         lambda: devclaw_layer(mem, query, budget_tokens, estimator=estimator,
                                               limit=limit))
    if not query.strip():
        return ""
    hits = mem.recall(_query(mem, query), limit=limit)
    lines = [f"- [{h.memory.kind}] {h.memory.content}\n" for h in hits]
    if not lines:
        return ""
    used = estimator(DEVCLAW_HEADER)
    if used + sum(estimator(line) for line in lines) <= budget_tokens:
        return DEVCLAW_HEADER + "".join(lines)
    used += estimator("...\n") + estimator(_truncated(len(lines)))  # the marker must fit too
    kept: list[str] = []
    for line in lines:
        cost = estimator(line)
        if used + cost > budget_tokens:
            break
        used += cost
        kept.append(line)
    return DEVCLAW_HEADER + "".join(kept) + "...\n" + _truncated(len(lines) - len(kept))


def _truncated(n: int) -> str:
    return f"[truncated - {n} more memories available]\n"


@dataclass
class _Cached:
    value: str
    at: float
    refreshing: bool = False


def _spawn_thread(job: Callable[[], None]) -> None:
    threading.Thread(target=job, name="clawmemory-layer-refresh", daemon=True).start()


class LayerCache:
    """002's memory-layer cache: stale-while-revalidate with a 30-second TTL.

    Fresh (younger than ``ttl_s``): the cached layer. Stale: the cached layer at once, and a
    background refresh whose result the next prompt gets — a memory search never blocks the
    agent once a layer exists. Missing: computed now. A failed refresh keeps the old layer.
    ``clock`` and ``spawn`` (how a refresh is started) are injectable for tests."""

    def __init__(
        self,
        ttl_s: float = LAYER_CACHE_TTL_S,
        *,
        clock: Callable[[], float] = time.monotonic,
        spawn: Callable[[Callable[[], None]], None] = _spawn_thread,
        max_entries: int = 1024,
    ) -> None:
        self.ttl_s = ttl_s
        self._clock = clock
        self._spawn = spawn
        self._max = max_entries
        self._entries: OrderedDict[Hashable, _Cached] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, compute: Callable[[], str]) -> str:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                if self._clock() - entry.at < self.ttl_s or entry.refreshing:
                    return entry.value
                entry.refreshing = True
        if entry is not None:
            self._spawn(lambda: self._refresh(key, compute))
            return entry.value
        value = compute()
        self._put(key, value)
        return value

    def _refresh(self, key: Hashable, compute: Callable[[], str]) -> None:
        try:
            value = compute()
        except Exception:  # keep serving the old layer; the next stale read tries again
            log.warning("memory layer refresh failed", exc_info=True)
            with self._lock:
                if (entry := self._entries.get(key)) is not None:
                    entry.refreshing = False
            return
        self._put(key, value)

    def _put(self, key: Hashable, value: str) -> None:
        with self._lock:
            self._entries[key] = _Cached(value, self._clock())
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def invalidate(self, key: Hashable | None = None) -> None:
        """Forget one key's layer, or every layer."""
        with self._lock:
            if key is None:
                self._entries.clear()
            else:
                self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


# --- 004 sandbox --------------------------------------------------------------------------------
def sandbox_context(
    mem: LocalMemory | None, prompt: str, session_id: str | None, limit: int | None = None
) -> str:
    """004 ``get_context``: facts from *other* sessions relevant to ``prompt``, then the latest
    reflection. "" when there is neither."""
    if mem is None:
        return ""
    limit = limit or mem.settings.context.sandbox_facts
    parts = []
    if prompt.strip():
        hits = mem.recall(_query(mem, prompt), kind="fact", limit=limit,
                          exclude_session_id=session_id)
        if hits:
            parts.append("## Relevant memory\n" + "\n".join(f"- {h.memory.content}"
                                                             for h in hits))
    latest = mem.list(kind="reflection", limit=1, order="newest")
    if latest:
        parts.append("## Weekly insight\n" + latest[0].content)
    return "\n\n".join(parts)


# --- the agent's choice (agent.context_style) -----------------------------------------------------
def enrich(
    mem: LocalMemory | None,
    message: str,
    style: str,
    *,
    limit: int = 5,
    depth: int = 1,
    session_id: str | None = None,
    exclude: Callable[[MemoryRecord], bool] | None = None,
) -> str:
    """The message as the agent sends it this once, with what ``style`` puts in front:
    000's ``[Memory context]`` block ("ptrclaw"), 001's ``## Relevant Memory`` ("sclaw"),
    002's memory layer ("devclaw"), 004's facts of earlier sessions ("sandbox"), or nothing
    ("none": 003's model recalls through its tools). The conversation history keeps the
    message as written."""
    if style == "ptrclaw":
        return ptrclaw_enrich(mem, message, limit, depth, exclude=exclude)
    if mem is None or style == "none":
        return message
    try:
        if style == "sclaw":
            block = relevant_memory_block(mem, message) or ""
        elif style == "devclaw":
            block = devclaw_layer(mem, message)
        else:
            block = sandbox_context(mem, message, session_id)
    except ClawMemoryError as exc:  # an aid: a failing store must not block the chat
        log.warning("memory context skipped: %s", exc)
        return message
    return f"{block.rstrip()}\n\n{message}" if block else message

"""The tool dialects: each specification's tool names, arguments and result text, as tables.

A dialect never defines an operation. Each of its tools is a row: the dialect's tool name, the
registry operation it calls (``ToolMap.op``), how its argument names map onto the operation's
(``args``), what it fixes, defaults or restricts, and how it words the result (``format``).
The 002 ``memory`` tool is a ``Dispatch``: its ``action`` argument picks the row.

Dialects (spec, tools):

- ``unified`` (new users): every memory operation under its own name;
- ``ptrclaw`` (000): memory_store, memory_recall, memory_forget, memory_link;
- ``devclaw`` (002): memory with action = save | search | list | index;
- ``koshi`` (003): memory_store, memory_query, memory_reinforce, memory_demote, memory_update;
- ``sandbox`` (004): search_memory, remember_fact, correct_fact, confirm_fact, memory_stats,
  get_entity_info;
- ``consolidator`` (004): the consolidator agent's tools, never offered to the main agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "DIALECT_ALIASES",
    "DialectEntry",
    "Dispatch",
    "Formatter",
    "ToolMap",
    "resolve_dialect",
]

Formatter = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True, slots=True)
class ToolMap:
    """How one dialect tool (or one action of a dispatcher) calls a registry operation.

    ``args`` maps the dialect's argument names to the operation's; None exposes every
    operation argument under its own name (except ``fixed`` ones). ``defaults``, ``choices``
    and ``schema`` are keyed by the dialect's names; ``fixed`` by the operation's."""

    op: str
    args: Mapping[str, str] | None = None
    fixed: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    schema: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    required: tuple[str, ...] = ()  # dialect arguments required although the operation's aren't
    format: Formatter | None = None  # None: the operation's own text


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One tool whose ``selector`` argument picks the operation (002 ``memory``)."""

    selector: str
    routes: Mapping[str, ToolMap]


@dataclass(frozen=True, slots=True)
class DialectEntry:
    name: str
    target: ToolMap | Dispatch
    description: str | None = None  # None: the operation's description


# --- result formatters --------------------------------------------------------------------------
def _results(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(data.get("results", ()))


def _label(m: Mapping[str, Any]) -> str:
    return str(m.get("key") or m["id"])


def ptrclaw_recall(data: Mapping[str, Any]) -> str:
    """000: ``- key: content [links: a, b]``."""
    lines = []
    for m in _results(data):
        links = f" [links: {', '.join(m['links'])}]" if m.get("links") else ""
        lines.append(f"- {_label(m)}: {m['content']}{links}")
    return "\n".join(lines) if lines else "No memories found."


def ptrclaw_store(data: Mapping[str, Any]) -> str:
    verb = "Stored" if data["created"] else "Updated"
    text = f"{verb} memory '{_label(data['memory'])}'"
    if data["linked"]:
        text += f" (linked to {', '.join(data['linked'])})"
    return text + "."


def ptrclaw_forget(data: Mapping[str, Any]) -> str:
    return f"Forgot memory '{_label(data['memory'])}'."


def koshi_query(data: Mapping[str, Any]) -> str:
    """003: every result carries ``[id:N]`` so the agent can reinforce, demote or update it."""
    lines = []
    for m in _results(data):
        extras = [f"tags: {', '.join(m['tags'])}"] if m["tags"] else []
        extras.append(f"score: {m['score']}")
        lines.append(f"[id:{m['id']}] {m['content']} ({'; '.join(extras)})")
    return "\n".join(lines) if lines else "No memories found."


def koshi_store(data: Mapping[str, Any]) -> str:
    return f"Stored memory [id:{data['memory']['id']}]."


def koshi_update(data: Mapping[str, Any]) -> str:
    m = data["memory"]
    return f"Updated memory [id:{m['id']}]: {m['content']}"


def devclaw_lines(data: Mapping[str, Any]) -> str:
    """002: ``- [category] content``, the LayerMemory form."""
    lines = [f"- [{m['kind']}] {m['content']}" for m in _results(data)]
    if "total" in data and lines:
        first = data["offset"] + 1
        lines.insert(0, f"Memories {first}-{first + len(lines) - 1} of {data['total']}:")
    return "\n".join(lines) if lines else "No memories found."


def devclaw_save(data: Mapping[str, Any]) -> str:
    m = data["memory"]
    return f"Saved [{m['kind']}] memory (id {m['id']})."


def sandbox_search(data: Mapping[str, Any]) -> str:
    lines = [f"- [id:{m['id']}] {m['content']} (confidence {m['confidence']:.2f})"
             for m in _results(data)]
    return "\n".join(lines) if lines else "No relevant memories."


# --- the tables ---------------------------------------------------------------------------------
def _same(*ops: str) -> tuple[DialectEntry, ...]:
    return tuple(DialectEntry(op, ToolMap(op)) for op in ops)


_KEY = {"key": {"description": "Unique key of the memory (e.g. python-version)."}}
_PTRCLAW_CATEGORIES = ("core", "knowledge", "conversation")
_DEVCLAW_CATEGORIES = ("fact", "preference", "event", "summary")
_DEVCLAW_CATEGORY = {"category": {"description": "fact, preference, event or summary."}}

UNIFIED = _same(
    "memory_store", "memory_recall", "memory_get", "memory_list", "memory_update",
    "memory_forget", "memory_link", "memory_reinforce", "memory_demote", "memory_confirm",
    "memory_correct", "memory_history", "memory_stats", "memory_entity", "memory_index",
)

PTRCLAW = (  # 000
    DialectEntry("memory_store", ToolMap(
        "memory_store",
        args={"key": "key", "content": "content", "category": "kind", "links": "links"},
        defaults={"category": "knowledge"}, choices={"category": _PTRCLAW_CATEGORIES},
        schema=_KEY, required=("key",), format=ptrclaw_store),
        "Store or upsert a memory entry by key; optionally link it to existing keys."),
    DialectEntry("memory_recall", ToolMap(
        "memory_recall",
        args={"query": "query", "limit": "limit", "category": "kind", "depth": "depth"},
        fixed={"include_links": True}, defaults={"limit": 5, "depth": 0},
        choices={"category": _PTRCLAW_CATEGORIES}, format=ptrclaw_recall),
        "Search memories by query. depth=1 also returns linked entries."),
    DialectEntry("memory_forget", ToolMap(
        "memory_forget", args={"key": "id"}, schema=_KEY, format=ptrclaw_forget),
        "Delete a memory entry by key; its links are removed too."),
    DialectEntry("memory_link", ToolMap(
        "memory_link", args={"action": "action", "from": "from_id", "to": "to_id"},
        required=("action",), schema={"from": {"description": "Key of one entry."},
                                      "to": {"description": "Key of the other entry."}}),
        "Create or remove a bidirectional link between two entries."),
)

DEVCLAW = (  # 002
    DialectEntry("memory", Dispatch("action", {
        "save": ToolMap(
            "memory_store",
            args={"content": "content", "category": "kind", "keywords": "tags",
                  "metadata": "metadata"},
            defaults={"category": "fact"}, choices={"category": _DEVCLAW_CATEGORIES},
            schema={"content": {"description": "Memory content to store (for save)."},
                    "keywords": {"type": "array", "items": {"type": "string"},
                                 "description": "Tags for categorization."},
                    **_DEVCLAW_CATEGORY},
            required=("content",), format=devclaw_save),
        "search": ToolMap(
            "memory_recall", args={"query": "query", "category": "kind", "limit": "limit"},
            defaults={"limit": 20}, choices={"category": _DEVCLAW_CATEGORIES},
            schema={"query": {"description": "Search query text (for search)."}},
            required=("query",), format=devclaw_lines),
        "list": ToolMap(
            "memory_list", args={"category": "kind", "limit": "limit", "offset": "offset"},
            defaults={"limit": 20}, choices={"category": _DEVCLAW_CATEGORIES},
            format=devclaw_lines),
        "index": ToolMap("memory_index", args={}),
    }), "Long-term memory: save, search, list or re-index memories "
        "(action = save | search | list | index). limit: default 20, at most 100."),
)

_KOSHI_PROVENANCE = {"narrative_id": "narrative_id", "task_id": "task_id"}  # 003's columns

KOSHI = (  # 003
    DialectEntry("memory_store", ToolMap(
        "memory_store", args={"content": "content", "tags": "tags", **_KOSHI_PROVENANCE},
        schema={"tags": {"type": "string", "description": "Comma-separated keywords."}},
        format=koshi_store),
        "Remember something: one discrete fact, decision or piece of context."),
    DialectEntry("memory_query", ToolMap(
        "memory_recall", args={"query": "query", "limit": "limit", **_KOSHI_PROVENANCE},
        defaults={"limit": 5},
        schema={"query": {"description": "Targeted keywords and natural synonyms, not a raw "
                          "question."}},
        format=koshi_query),
        "Recall memories by keywords. Results carry [id:N] for reinforce, demote and update."),
    DialectEntry("memory_reinforce", ToolMap("memory_reinforce", args={"id": "id"}),
                 "This memory was useful: score +3 and its recency resets."),
    DialectEntry("memory_demote", ToolMap("memory_demote", args={"id": "id"}),
                 "This memory is wrong, stale or irrelevant: score -1."),
    DialectEntry("memory_update", ToolMap(
        "memory_update", args={"id": "id", "content": "content", "tags": "tags"},
        schema={"tags": {"type": "string", "description": "Comma-separated keywords."}},
        required=("content",), format=koshi_update),
        "Fix or update a memory in place; its score is kept."),
)

SANDBOX = (  # 004 orchestrator tools
    DialectEntry("search_memory", ToolMap(
        "memory_recall", args={"query": "query", "limit": "limit", "kind": "kind",
                               "since": "since", "until": "until"},
        defaults={"limit": 5}, choices={"kind": ("fact", "episode", "reflection")},
        format=sandbox_search),
        "Hybrid search over long-term memory (facts, episodes, reflections); since/until keep "
        "what happened in that time."),
    DialectEntry("remember_fact", ToolMap(
        "memory_store", args={"content": "content", "tags": "tags", "event_time": "event_time"},
        fixed={"kind": "fact"}),
        "Explicitly save a fact to long-term memory."),
    DialectEntry("correct_fact", ToolMap(
        "memory_correct",
        args={"fact_id": "id", "new_content": "new_content", "reason": "reason"}),
        "Correct a fact: the old one is retired (kept as history) and a replacement saved."),
    DialectEntry("confirm_fact", ToolMap("memory_confirm", args={"fact_id": "id"}),
                 "Confirm a fact: full confidence, permanently protected from decay."),
    DialectEntry("memory_stats", ToolMap("memory_stats"),
                 "Memory counts by kind and the latest record time."),
    DialectEntry("get_entity_info", ToolMap(
        "memory_entity", args={"name": "name", "limit": "limit"}),
        "Everything about a person, project or thing: profile and linked memories."),
)

CONSOLIDATOR = _same(  # 004 consolidator agent
    "get_episodes_for_consolidation", "save_facts_batch", "mark_session_consolidated",
    "is_session_consolidated", "detect_conflicts", "resolve_conflict",
)

DIALECTS: Mapping[str, tuple[DialectEntry, ...]] = {
    "unified": UNIFIED,
    "ptrclaw": PTRCLAW,
    "devclaw": DEVCLAW,
    "koshi": KOSHI,
    "sandbox": SANDBOX,
    "consolidator": CONSOLIDATOR,
}
DEFAULT_DIALECT = "unified"
DIALECT_ALIASES: Mapping[str, str] = {
    "000": "ptrclaw", "002": "devclaw", "003": "koshi", "004": "sandbox",
    "004-consolidator": "consolidator",
}


def resolve_dialect(name: str) -> str:
    """The canonical dialect name for a name or spec number; KeyError when unknown."""
    key = name.strip().lower()
    key = DIALECT_ALIASES.get(key, key)
    if key not in DIALECTS:
        raise KeyError(name)
    return key

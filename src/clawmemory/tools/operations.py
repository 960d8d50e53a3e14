"""The memory operations every dialect exposes: input models and handlers over ``Memory``.

Each handler validates everything it needs *before* its first write, so a refused call leaves
the store as it was. Refusals are ``ClawMemoryError``s; ``call_tool`` renders them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, JsonValue, field_validator, model_validator

from clawmemory.errors import InvalidInputError, NotFoundError
from clawmemory.model import KIND_ALIASES, KINDS, MemoryRecord, as_kind, legible, normalize_kind
from clawmemory.tools.base import (
    MAX_RESULTS,
    IdRef,
    ToolArgs,
    ToolResult,
    ToolSpec,
    hit_data,
    record_data,
)
from clawmemory.validation import MAX_OFFSET

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["MEMORY_OPERATIONS", "links_of", "render_record"]

_KIND_ENUM: dict[str, JsonValue] = {"enum": [*KINDS, *KIND_ALIASES]}
_ID = "Memory id (as shown in [id:...]) or key."


def _kind(value: Any) -> Any:
    """Normalise one kind or a list of kinds; unknown kinds fail validation with the list."""
    if value is None:
        return None
    if isinstance(value, str):
        return normalize_kind(value)
    if isinstance(value, list):
        return [normalize_kind(v) if isinstance(v, str) else v for v in value]
    return value


KindField = Field(
    "fact", description="Kind of memory.", json_schema_extra=_KIND_ENUM
)


# --- input models -------------------------------------------------------------------------------
class StoreArgs(ToolArgs):
    content: str = Field(min_length=1, description="The memory: one fact, decision or note.")
    key: str | None = Field(
        None, min_length=1, description="Human-readable unique key; storing an existing key "
        "updates that memory in place.")
    kind: str = KindField
    tags: list[str] | str = Field(
        default_factory=list, description="Keywords (a list, or one comma-separated string).")
    metadata: dict[str, Any] | None = Field(None, description="Structured key/value data.")
    links: list[str] = Field(
        default_factory=list, description="Ids or keys of existing memories to link to.")
    session_id: str | None = Field(None, description="Session this memory came from.")
    narrative_id: str | int | None = Field(
        None, description="The narrative (story arc) active when this memory was created.")
    task_id: str | int | None = Field(None, description="The task that produced this memory.")
    source: str | None = Field("agent", description="Provenance tag (agent, conversation...).")
    event_time: float | str | None = Field(
        None, description="When the remembered thing happened: epoch seconds or ISO-8601.")
    confidence: float = Field(1.0, ge=0.0, le=1.0, description="Confidence, 0 to 1.")

    _norm_kind = field_validator("kind", mode="before")(_kind)


_WHEN = ("epoch seconds, ISO-8601 (2024-01-15) or an expression such as 'yesterday', "
         "'2 weeks ago', 'last March'")


class TimeArgs(ToolArgs):
    """The time filters of recall and list (ADR 0017)."""

    since: float | str | None = Field(
        None, description=f"Only what happened from then on (event time, else when stored): "
        f"{_WHEN}.")
    until: float | str | None = Field(
        None, description="Only what happened before then; a date or period counts whole.")
    created_since: float | str | None = Field(None, description="Only memories stored since.")
    created_until: float | str | None = Field(None, description="Only memories stored before.")
    as_of: float | str | None = Field(
        None, description="What was valid then: memories stored by then and not yet corrected "
        "or invalidated (a later-corrected one as the version it had).")

    def times(self) -> dict[str, Any]:
        return {"since": self.since, "until": self.until, "created_since": self.created_since,
                "created_until": self.created_until, "as_of": self.as_of}


class _RecallFields(ToolArgs):
    query: str = Field(description="What to look for: keywords or a natural-language question.")
    limit: int | None = Field(
        None, ge=1, le=MAX_RESULTS, description="Maximum number of results.")
    kind: str | list[str] | None = Field(None, description="Only memories of this kind (or kinds).")
    tags: list[str] = Field(default_factory=list, description="Only memories with all these tags.")
    session_id: str | None = Field(None, description="Only memories from this session.")
    exclude_session_id: str | None = Field(None, description="Leave out this session's memories.")
    narrative_id: str | int | None = Field(None, description="Only memories of this narrative.")
    task_id: str | int | None = Field(None, description="Only memories this task produced.")
    metadata: dict[str, Any] | None = Field(None, description="Only memories whose metadata has "
                                            "these key/value pairs.")
    depth: int = Field(0, ge=0, le=3, description="0 = flat results; 1 = add linked memories.")
    mode: Literal["auto", "keyword", "vector", "hybrid"] | None = Field(
        None, description="Retrieval mode; default: hybrid when embeddings work, else keyword.")
    include_links: bool = Field(False, description="List each result's linked memories.")
    explain: bool = Field(False, description="Say why each result matched.")

    _norm_kind = field_validator("kind", mode="before")(_kind)


class RecallArgs(TimeArgs, _RecallFields):
    """Recall's fields, then the time filters (in this order in the schema)."""


class IdArgs(ToolArgs):
    id: IdRef = Field(description=_ID)


class _ListFields(ToolArgs):
    kind: str | list[str] | None = Field(None, description="Only memories of this kind (or kinds).")
    tags: list[str] = Field(default_factory=list, description="Only memories with all these tags.")
    session_id: str | None = Field(None, description="Only memories from this session.")
    narrative_id: str | int | None = Field(None, description="Only memories of this narrative.")
    task_id: str | int | None = Field(None, description="Only memories this task produced.")
    source: str | None = Field(None, description="Only memories with this provenance tag.")
    limit: int = Field(20, ge=1, le=MAX_RESULTS, description="Page size (max 100).")
    offset: int = Field(0, ge=0, le=MAX_OFFSET, description="How many memories to skip "
                        "(pagination).")
    order: Literal["newest", "oldest", "score", "accessed"] = Field(
        "newest", description="Sort order.")

    _norm_kind = field_validator("kind", mode="before")(_kind)


class ListArgs(TimeArgs, _ListFields):
    """List's fields, then the time filters (in this order in the schema)."""


class UpdateArgs(ToolArgs):
    id: IdRef = Field(description=_ID)
    content: str | None = Field(None, min_length=1, description="New content.")
    tags: list[str] | str | None = Field(None, description="New tags (replace the old ones).")
    metadata: dict[str, Any] | None = Field(None, description="New metadata (replaces the old).")
    kind: str | None = Field(None, description="New kind.", json_schema_extra=_KIND_ENUM)

    _norm_kind = field_validator("kind", mode="before")(_kind)

    @model_validator(mode="after")
    def _something(self) -> UpdateArgs:
        if all(v is None for v in (self.content, self.tags, self.metadata, self.kind)):
            raise ValueError("nothing to update: give content, tags, metadata or kind")
        return self


class LinkArgs(ToolArgs):
    action: Literal["link", "unlink"] = Field("link", description="Create or remove the link.")
    from_id: IdRef = Field(description="Id or key of one memory.")
    to_id: IdRef = Field(description="Id or key of the other memory.")


class CorrectArgs(ToolArgs):
    id: IdRef = Field(description=_ID)
    new_content: str = Field(min_length=1, description="The corrected content.")
    reason: str | None = Field(None, description="Why the old content was wrong.")


class EntityArgs(ToolArgs):
    name: str = Field(min_length=1, description="Name of a person, project, place or thing.")
    limit: int = Field(10, ge=1, le=MAX_RESULTS, description="Maximum linked memories to show.")


class NoArgs(ToolArgs):
    pass


# --- shared rendering ---------------------------------------------------------------------------
def render_record(r: MemoryRecord, relevance: float | None = None) -> str:
    """The default one-line view of a memory: ``[id:X] [kind] content (key: k; tags: a, b)``.
    A recall hit shows its ``relevance`` instead of the reinforcement score, which a model
    would read as relevance."""
    extras = [f"key: {r.key}"] if r.key else []
    if r.tags:
        extras.append("tags: " + ", ".join(r.tags))
    if relevance is not None:
        extras.append(f"relevance: {legible(relevance, 3)}")
    elif r.score:
        extras.append(f"score: {r.score}")
    if not r.is_valid:
        extras.append("invalidated")
    tail = f" ({'; '.join(extras)})" if extras else ""
    return f"[id:{r.id}] [{r.kind}] {r.content}{tail}"


def links_of(mem: LocalMemory, record: MemoryRecord, limit: int = 20) -> list[str]:
    """Keys (ids where a memory has no key) of the memories linked to ``record``."""
    return [n.key or n.id for n in mem.neighbors(record.id, limit=limit)]


def _records_text(records: list[MemoryRecord], empty: str) -> str:
    return "\n".join("- " + render_record(r) for r in records) if records else empty


# --- handlers -----------------------------------------------------------------------------------
def store(mem: LocalMemory, args: StoreArgs) -> ToolResult:
    targets = _link_targets(mem, args.links, args.key)  # before writing: no half-linked memory
    existed = args.key is not None and _exists(mem, args.key)
    mid = mem.store(
        args.content, key=args.key, kind=as_kind(args.kind), tags=args.tags, metadata=args.metadata,
        session_id=args.session_id, narrative_id=args.narrative_id, task_id=args.task_id,
        source=args.source, event_time=args.event_time, confidence=args.confidence,
    )
    linked = [name for name, target in targets if mem.link(mid, target)]
    record = mem.get(mid)
    verb = "Updated" if existed else "Stored"
    text = f"{verb} memory {render_record(record)}"
    if linked:
        text += "; linked to " + ", ".join(linked)
    data = {"memory": record_data(record), "created": not existed, "linked": linked}
    return ToolResult(text, data)


def _exists(mem: LocalMemory, id_or_key: str) -> bool:
    try:
        mem.get(id_or_key)
    except NotFoundError:
        return False
    return True


def _link_targets(mem: LocalMemory, links: list[str], key: str | None) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for name in dict.fromkeys(s.strip() for s in links):
        if not name:
            continue
        if key is not None and name == key.strip():
            raise InvalidInputError(f"a memory cannot link to itself ({name!r})")
        try:
            out.append((name, mem.get(name).id))
        except NotFoundError:
            raise NotFoundError(f"cannot link to {name!r}: no memory has that key or id") from None
    return out


def recall(mem: LocalMemory, args: RecallArgs) -> ToolResult:
    hits = mem.recall(
        args.query, limit=args.limit, kind=args.kind, tags=args.tags, session_id=args.session_id,
        exclude_session_id=args.exclude_session_id, narrative_id=args.narrative_id,
        task_id=args.task_id, metadata=args.metadata, mode=args.mode,
        depth=args.depth, **args.times(),
    )
    results = [
        hit_data(h, links_of(mem, h.memory) if args.include_links else None) for h in hits
    ]
    lines = []
    for h in hits:
        lines.append("- " + render_record(h.memory, relevance=h.score))
        if args.explain:
            lines.append(f"  why: {h.explain}")
    text = "\n".join(lines) if lines else f"No memories found for {args.query!r}."
    return ToolResult(text, {"query": args.query, "count": len(results), "results": results})


def get(mem: LocalMemory, args: IdArgs) -> ToolResult:
    record = mem.get(args.id)
    data = {"memory": record_data(record), "links": links_of(mem, record)}
    return ToolResult(render_record(record), data)


def list_(mem: LocalMemory, args: ListArgs) -> ToolResult:
    filters = {"kind": args.kind, "tags": args.tags, "session_id": args.session_id,
               "narrative_id": args.narrative_id, "task_id": args.task_id,
               "source": args.source, **args.times()}
    records = mem.list(limit=args.limit, offset=args.offset, order=args.order, **filters)
    total = mem.count(**filters)
    head = f"{total} memories"
    if records:
        head += f"; showing {args.offset + 1}-{args.offset + len(records)}"
    text = (head + ":\n" + _records_text(records, "")) if records else head + "."
    data = {"total": total, "offset": args.offset, "count": len(records),
            "results": [record_data(r) for r in records]}
    return ToolResult(text, data)


def update(mem: LocalMemory, args: UpdateArgs) -> ToolResult:
    record = mem.update(args.id, content=args.content, tags=args.tags, metadata=args.metadata,
                        kind=as_kind(args.kind) if args.kind else None)
    return ToolResult(f"Updated memory {render_record(record)}", {"memory": record_data(record)})


def forget(mem: LocalMemory, args: IdArgs) -> ToolResult:
    done = mem.forget(args.id)
    text = f"Forgot memory {render_record(done.record)}"
    if tail := done.went_with():
        text += f" ({tail})"
    return ToolResult(text, {"memory": record_data(done.record), **done.to_dict()})


def link(mem: LocalMemory, args: LinkArgs) -> ToolResult:
    a, b = mem.get(args.from_id), mem.get(args.to_id)  # NotFoundError names the missing one
    if a.id == b.id:
        raise InvalidInputError("a memory cannot link to itself")
    data = {"action": args.action, "from": args.from_id, "to": args.to_id}
    if args.action == "link":
        # Linking a linked pair again changes nothing (Memory.link keeps the larger strength).
        before = {lk.other_id: lk.strength for lk in mem.links(a.id, limit=10_000)}
        mem.link(a.id, b.id)
        if before.get(b.id, 0.0) >= 1.0:
            return ToolResult(f"{args.from_id} and {args.to_id} were already linked.",
                              {**data, "changed": False})
        return ToolResult(f"Linked {args.from_id} <-> {args.to_id}.", {**data, "changed": True})
    changed = mem.unlink(a.id, b.id)
    text = (f"Unlinked {args.from_id} <-> {args.to_id}." if changed
            else f"{args.from_id} and {args.to_id} were not linked.")
    return ToolResult(text, {**data, "changed": changed})


def reinforce(mem: LocalMemory, args: IdArgs) -> ToolResult:
    r = mem.reinforce(args.id)
    text = f"Reinforced [id:{r.id}]; score is now {r.score}."
    return ToolResult(text, {"memory": record_data(r)})


def demote(mem: LocalMemory, args: IdArgs) -> ToolResult:
    r = mem.demote(args.id)
    text = f"Demoted [id:{r.id}]; score is now {r.score}."
    return ToolResult(text, {"memory": record_data(r)})


def confirm(mem: LocalMemory, args: IdArgs) -> ToolResult:
    r = mem.confirm(args.id)
    return ToolResult(f"Confirmed [id:{r.id}]; it is now protected from decay.",
                      {"memory": record_data(r)})


def correct(mem: LocalMemory, args: CorrectArgs) -> ToolResult:
    new = mem.correct(args.id, args.new_content, reason=args.reason)
    text = f"Corrected: {render_record(new)} replaces [id:{new.supersedes}]."
    return ToolResult(text, {"memory": record_data(new), "replaced": new.supersedes})


def history(mem: LocalMemory, args: IdArgs) -> ToolResult:
    chain = mem.history(args.id)
    text = "\n".join(f"{i}. {render_record(r)}" for i, r in enumerate(chain, start=1))
    return ToolResult(text, {"chain": [record_data(r) for r in chain]})


def stats(mem: LocalMemory, args: NoArgs) -> ToolResult:
    s = mem.stats()
    kinds = ", ".join(f"{k}: {n}" for k, n in sorted(s["by_kind"].items())) or "none"
    newest = _when(s["newest"])
    text = f"{s['total']} memories ({kinds}); latest recorded {newest}."
    return ToolResult(text, s)


def _when(ts: float | None) -> str:
    if ts is None:
        return "never"
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def entity(mem: LocalMemory, args: EntityArgs) -> ToolResult:
    info = mem.entity_info(args.name, limit=args.limit)
    memories = [record_data(r) for r in info["memories"] if r.is_valid]
    data = {**info, "memories": memories}
    head = f"{info['name']} ({info['type']}, mentioned {info['mention_count']} times)"
    if info["aliases"]:
        head += "; also: " + ", ".join(info["aliases"])
    lines = [head] + [f"- [id:{m['id']}] [{m['kind']}] {m['content']}" for m in memories]
    return ToolResult("\n".join(lines), data)


def index(mem: LocalMemory, args: NoArgs) -> ToolResult:
    # The full-text index follows every write by itself (triggers); only vectors can lag behind.
    if mem.parts.vectors.vectors() is None:
        text = ("The full-text index is up to date; vector search is not configured "
                f"({mem.parts.vectors.vector_status()}), so there was nothing to rebuild.")
        return ToolResult(text, {"embedded": 0, "vectors": False})
    done = mem.backfill()
    return ToolResult(f"Index rebuilt: embedded {done} memories that had no vector.",
                      {"embedded": done, "vectors": True})


MEMORY_OPERATIONS: tuple[ToolSpec, ...] = (
    ToolSpec("memory_store", "Store a memory (upsert by key) and optionally link it to others.",
             StoreArgs, store, writes=True),
    ToolSpec("memory_recall", "Search memories; best matches first, with ids for follow-up.",
             RecallArgs, recall, writes=False),
    ToolSpec("memory_get", "Read one memory by id or key, with its links.",
             IdArgs, get, writes=False),
    ToolSpec("memory_list", "List memories page by page, optionally filtered.",
             ListArgs, list_, writes=False),
    ToolSpec("memory_update", "Change a memory in place (keeps its score).",
             UpdateArgs, update, writes=True),
    ToolSpec("memory_forget", "Delete a memory for good, with its links, its earlier versions"
             " and the memories derived from it alone.", IdArgs, forget, writes=True),
    ToolSpec("memory_link", "Create or remove a two-way link between two memories.",
             LinkArgs, link, writes=True),
    ToolSpec("memory_reinforce", "Mark a memory as useful (score +3); it will rank higher.",
             IdArgs, reinforce, writes=True),
    ToolSpec("memory_demote", "Mark a memory as wrong or stale (score -1); it will rank lower.",
             IdArgs, demote, writes=True),
    ToolSpec("memory_confirm", "Protect a memory for good: full confidence, no decay.",
             IdArgs, confirm, writes=True),
    ToolSpec("memory_correct", "Replace a wrong memory with a corrected one; the old one is "
             "kept as history.", CorrectArgs, correct, writes=True),
    ToolSpec("memory_history", "Show the chain of corrections through a memory.",
             IdArgs, history, writes=False),
    ToolSpec("memory_stats", "Count memories by kind and show the latest record time.",
             NoArgs, stats, writes=False),
    ToolSpec("memory_entity", "Everything known about a person, project or thing: its profile "
             "and the memories that mention it.", EntityArgs, entity, writes=False),
    ToolSpec("memory_index", "Rebuild the search index: embed memories that have no vector yet.",
             NoArgs, index, writes=True),
)

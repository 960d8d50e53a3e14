"""The unified memory record, the kinds with their lifecycle, filters, and explained hits.

Times are Unix epoch seconds (float, UTC). Every record belongs to exactly one namespace.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from clawmemory.errors import InvalidInputError

__all__ = [
    "ALREADY_PRESENT",
    "DEFAULT_NAMESPACE",
    "KINDS",
    "ArchiveEntry",
    "Explanation",
    "Filter",
    "Forgotten",
    "Hit",
    "ImportReport",
    "Kind",
    "KindName",
    "KindPolicy",
    "Link",
    "MemoryRecord",
    "ParsedImport",
    "RunRecord",
    "SkippedItem",
    "as_kind",
    "correction_of",
    "event_or_created",
    "kind_policy",
    "legible",
    "meta_equal",
    "next_version",
    "normalize_kind",
    "searchable_text",
]

DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class KindPolicy:
    """How one kind of memory lives and dies. The lifecycle is this table, not scattered ifs."""

    name: str
    origin: str
    decay_rate: float  # Ebbinghaus rate per day for confidence decay (004); 0 = never decays
    idle_purge: bool  # 000 knowledge decay: purge (archive by default) when idle too long
    hygiene_purge: bool  # 000 conversation hygiene: purge (archive by default) when idle too long
    prunable: bool  # 003 size-based pruning may archive it
    description: str


KINDS: Mapping[str, KindPolicy] = {
    p.name: p
    for p in (
        KindPolicy("core", "000 Core, soul:*, personality:*", 0.0, False, False, False,
                   "Identity and personality; permanent; injected into the system prompt."),
        KindPolicy("fact", "all", 0.1, True, False, True,
                   "A learned fact or atomic note (alias: knowledge)."),
        KindPolicy("preference", "002", 0.1, True, False, True, "A user preference."),
        KindPolicy("event", "002", 0.1, True, False, True, "Something that happened, with a date."),
        KindPolicy("summary", "002, 003", 0.1, True, False, True, "Summarised knowledge."),
        KindPolicy("reflection", "004", 0.0, False, False, False,
                   "A periodic meta-cognitive reflection; never decays."),
        KindPolicy("episode", "004", 0.0, False, False, True,
                   "A raw dialogue turn; kept as the source for consolidation."),
        KindPolicy("conversation", "000", 0.0, False, True, True,
                   "Transient operational state; archived after hygiene_max_age unused."),
    )
}

KIND_ALIASES: Mapping[str, str] = {"knowledge": "fact"}

# The kinds as types, for type checkers (a test keeps them equal to KINDS and KIND_ALIASES);
# normalize_kind still checks at run time, so a typo is an error either way.
KindName = Literal["core", "fact", "preference", "event", "summary", "reflection", "episode",
                   "conversation"]
Kind = Literal[KindName, "knowledge"]  # what the API accepts: a kind or an alias (any case)


def normalize_kind(kind: str) -> str:
    """Return the canonical kind name, accepting aliases and any case."""
    if not isinstance(kind, str):
        raise InvalidInputError(f"kind must be text, not {type(kind).__name__}")
    name = kind.strip().lower()
    name = KIND_ALIASES.get(name, name)
    if name not in KINDS:
        allowed = ", ".join([*KINDS, *KIND_ALIASES])
        raise InvalidInputError(f"unknown kind {kind!r} (expected one of: {allowed})")
    return name


def as_kind(kind: str) -> Kind:
    """``kind`` checked (aliases and any case accepted) and typed: where text from outside (a
    CLI option, a tool argument) becomes an argument of ``Memory.store``/``update``."""
    return normalize_kind(kind)  # type: ignore[return-value]  # it returns names of KINDS


def kind_policy(kind: str) -> KindPolicy:
    return KINDS[normalize_kind(kind)]


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One memory. Field meanings follow DESIGN.md's unified data model."""

    id: str
    content: str
    namespace: str = DEFAULT_NAMESPACE
    key: str | None = None
    kind: str = "fact"
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None  # provenance tag (003): conversation, agent, extraction, migration...
    source_role: str | None = None  # "user" or the agent's name (004 episodes)
    source_ids: tuple[str, ...] = ()  # provenance: memories this one was derived from (004)
    session_id: str | None = None
    # The narrative (story arc) active when this memory was created and the task that produced
    # it (003's narrative_id / task_id): another system's ids, kept as text (ADR 0024).
    narrative_id: str | None = None
    task_id: str | None = None
    created_at: float = 0.0
    event_time: float | None = None  # when the remembered thing happened (004)
    updated_at: float = 0.0
    # When the memory entered this store's live set: its first store, its import (an import
    # keeps the source's created_at, but arrives now) or its restore from the archive. An upsert
    # keeps it. Idle clocks never start before it (lifecycle.idle_since).
    stored_at: float = 0.0
    last_accessed: float | None = None
    access_count: int = 0
    score: int = 0  # reinforcement (003): +3 reinforce, -1 demote
    confidence: float = 1.0  # 0..1 (004)
    decay_rate: float = 0.1  # 0 = protected (004)
    valid_until: float | None = None  # set = invalidated / soft-deleted (004)
    supersedes: str | None = None  # id of the memory this one corrects (004)

    @property
    def is_valid(self) -> bool:
        return self.valid_until is None

    @property
    def searchable(self) -> str:
        """What keyword search indexes of it, as one text (``searchable_text``)."""
        return searchable_text(self.key, self.content, self.tags, self.source)

    def to_dict(self) -> dict[str, Any]:
        # Field by field, not dataclasses.asdict: its deep copy was a third of the cost of
        # serving a recall over HTTP, and the containers are rebuilt just below anyway.
        d = {name: getattr(self, name) for name in self.__dataclass_fields__}
        d["tags"] = list(self.tags)
        d["source_ids"] = list(self.source_ids)
        d["metadata"] = dict(self.metadata)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryRecord:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["tags"] = tuple(values.get("tags") or ())
        values["source_ids"] = tuple(values.get("source_ids") or ())
        values["metadata"] = dict(values.get("metadata") or {})
        if "kind" in values:
            values["kind"] = normalize_kind(str(values["kind"]))
        if values.get("stored_at") is None:  # written before arrival times existed
            values["stored_at"] = max(values.get("created_at") or 0.0,
                                      values.get("updated_at") or 0.0)
        return cls(**values)

    def evolve(self, **changes: Any) -> MemoryRecord:
        return replace(self, **changes)


def next_version(existing: MemoryRecord, incoming: MemoryRecord) -> MemoryRecord:
    """``incoming`` written over ``existing`` in place (a keyed upsert, a transfer): the one
    rule every backend applies, so no path cuts a memory's history or drops its protection.

    Kept from ``existing``: its identity (id, created_at, stored_at), what it earned (score,
    access_count, confidence), the version it corrects (``supersedes``: ``forget`` walks that
    chain, so a keyed upsert after a correction must not cut it) and a protection (decay_rate
    0, from ``confirm()`` or its kind: an upsert is new content, not a withdrawal of trust).
    The rest is ``incoming``'s."""
    protected = existing.decay_rate == 0
    return incoming.evolve(
        id=existing.id, created_at=existing.created_at, stored_at=existing.stored_at,
        score=existing.score, access_count=existing.access_count,
        confidence=existing.confidence,
        supersedes=incoming.supersedes or existing.supersedes,
        decay_rate=0.0 if protected else incoming.decay_rate,
    )


def correction_of(old: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
    """``new`` as the version that corrects ``old`` (004 correct_fact): it ``supersedes`` old
    (the chain ``history`` and ``forget`` walk), takes over its key and score and keeps a
    protection (``next_version``'s rule: a corrected memory is still the one the user
    trusted)."""
    return new.evolve(key=old.key, supersedes=old.id, score=old.score,
                      decay_rate=0.0 if old.decay_rate == 0 else new.decay_rate)


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What one ``forget`` removed: the memory named, its other versions (corrections, a key's
    archived holder), the memories derived from it (each with its versions) and the sessions
    queued to be consolidated again because a fact derived from them went (ADR 0022).
    ``id``, ``key`` and ``content`` are the named memory's."""

    record: MemoryRecord
    versions: tuple[str, ...] = ()
    derived: tuple[str, ...] = ()
    reopened_sessions: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def key(self) -> str | None:
        return self.record.key

    @property
    def content(self) -> str:
        return self.record.content

    @property
    def deleted(self) -> int:
        """How many memories went: the named one, its versions and what was derived."""
        return 1 + len(self.versions) + len(self.derived)

    def went_with(self) -> str:
        """What went with the named memory, for people ("" when nothing did): ``with 1 other
        version(s) and 2 derived memory(ies); 1 session(s) will be ...``."""
        extra = []
        if self.versions:
            extra.append(f"{len(self.versions)} other version(s)")
        if self.derived:
            extra.append(f"{len(self.derived)} derived memory(ies)")
        tail = f"with {' and '.join(extra)}" if extra else ""
        if self.reopened_sessions:
            tail += (f"; {len(self.reopened_sessions)} session(s) will be consolidated again"
                     " from what is left")
        return tail

    def summary(self) -> str:
        """One line for people: ``forgot ID`` and what went with it."""
        tail = self.went_with()
        return f"forgot {self.id}" + (f" {tail}" if tail else "")

    def to_dict(self) -> dict[str, Any]:
        return {"deleted": self.deleted, "id": self.id, "key": self.key,
                "versions": list(self.versions), "derived": list(self.derived),
                "reopened_sessions": list(self.reopened_sessions)}


@dataclass(frozen=True, slots=True)
class Filter:
    """Conditions every returned memory must meet. Empty fields do not filter.

    Times (epoch seconds; every backend implements exactly ``matches``):

    * ``since`` / ``until``: when the remembered thing happened, ``event_time``, or for a memory
      without one its ``created_at`` (``COALESCE(event_time, created_at)`` in SQL):
      ``since <= t < until``;
    * ``created_after`` / ``created_before``: ``created_after <= created_at < created_before``;
    * ``as_of``: what was valid then. A memory counts when ``created_at <= as_of`` and it was
      not yet invalidated then (``valid_until`` is NULL or later than ``as_of``): a memory
      corrected later is returned as the version it had then (the correction is created later
      and its predecessor's ``valid_until`` is the time of the correction). ``include_invalid``
      still drops the validity condition (not the creation one).
    """

    kinds: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()  # all of these tags must be present
    session_id: str | None = None
    exclude_session_id: str | None = None
    narrative_id: str | None = None
    task_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)  # metadata[k] == v for each pair
    source: str | None = None
    created_after: float | None = None
    created_before: float | None = None
    include_invalid: bool = False  # include memories with valid_until set
    since: float | None = None  # COALESCE(event_time, created_at) >= since
    until: float | None = None  # COALESCE(event_time, created_at) < until
    as_of: float | None = None  # created by then and valid then

    @classmethod
    def build(
        cls,
        *,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        exclude_session_id: str | None = None,
        narrative_id: str | None = None,
        task_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        created_after: float | None = None,
        created_before: float | None = None,
        include_invalid: bool = False,
        since: float | None = None,
        until: float | None = None,
        as_of: float | None = None,
    ) -> Filter:
        if kind is None:
            kinds: tuple[str, ...] = ()
        elif isinstance(kind, str):
            kinds = (normalize_kind(kind),)
        else:
            kinds = tuple(normalize_kind(k) for k in kind)
        return cls(
            kinds=kinds,
            tags=tuple(t.strip() for t in tags if t.strip()),
            session_id=session_id,
            exclude_session_id=exclude_session_id,
            narrative_id=narrative_id,
            task_id=task_id,
            metadata=dict(metadata or {}),
            source=source,
            created_after=created_after,
            created_before=created_before,
            include_invalid=include_invalid,
            since=since,
            until=until,
            as_of=as_of,
        )

    def matches(self, r: MemoryRecord) -> bool:
        """Reference semantics, used by the in-memory backends and to cross-check SQL backends."""
        checks = (
            not self.kinds or r.kind in self.kinds,
            all(t in r.tags for t in self.tags),
            self.session_id is None or r.session_id == self.session_id,
            self.exclude_session_id is None or r.session_id != self.exclude_session_id,
            self.narrative_id is None or r.narrative_id == self.narrative_id,
            self.task_id is None or r.task_id == self.task_id,
            all(meta_equal(r.metadata.get(k), v) for k, v in self.metadata.items()),
            self.source is None or r.source == self.source,
            self.created_after is None or r.created_at >= self.created_after,
            self.created_before is None or r.created_at < self.created_before,
            self.since is None or event_or_created(r) >= self.since,
            self.until is None or event_or_created(r) < self.until,
            self.as_of is None or r.created_at <= self.as_of,
            self.include_invalid or r.valid_until is None or (
                self.as_of is not None and r.valid_until > self.as_of),
        )
        return all(checks)

    @property
    def restrictive(self) -> bool:
        """Whether the filter may leave few of a namespace's memories (recall then searches
        vectors among the allowed ones only)."""
        return bool(self.kinds or self.tags or self.session_id or self.narrative_id
                    or self.task_id or self.metadata or self.source
                    or self.created_after is not None or self.created_before is not None
                    or self.since is not None or self.until is not None
                    or self.as_of is not None)


def event_or_created(r: MemoryRecord) -> float:
    """When the remembered thing happened: ``event_time``, else ``created_at``."""
    return r.event_time if r.event_time is not None else r.created_at


def searchable_text(key: str | None, content: str, tags: Sequence[str], source: str | None) -> str:
    """The fields keyword search indexes, as one text: recall reads it to say which query
    words a hit holds."""
    return f"{key or ''} {content} {' '.join(tags)} {source or ''}"


def meta_equal(actual: Any, wanted: Any) -> bool:
    """Whether a stored metadata value equals a filter's value. Every backend uses this
    definition (SQLite calls it from SQL)."""
    # 001 metadata is map[string]string; compare as text so "3" finds 3.
    if actual is None:
        return False
    if isinstance(actual, dict | list | tuple) or isinstance(wanted, dict | list | tuple):
        # Containers compare as JSON values: their text would depend on key order, which a
        # backend may not keep (SQLite stores objects with sorted keys).
        return _canonical_json(actual) == _canonical_json(wanted)
    if isinstance(actual, bool) or isinstance(wanted, bool):
        return str(actual).lower() == str(wanted).lower()
    return str(actual) == str(wanted)


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a memory matched and how its score was computed (debuggability is a feature — 003).

    ``lists`` holds each candidate list the memory appeared in (``{"keyword": {"rank": 1,
    "bm25": 4.2}}``); ``factors`` holds each multiplier applied after fusion.
    """

    matched_terms: tuple[str, ...] = ()
    lists: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    fused: float = 0.0
    factors: Mapping[str, float] = field(default_factory=dict)
    via: str | None = None  # e.g. "like-fallback", "link:<id>"
    final: float = 0.0
    # Why the relevance floor kept it ("cosine 0.41 >= 0.15", "holds a query word"); None
    # where no floor applied (keyword mode, the floor off, a linked neighbour).
    floor: str | None = None
    # A newer hit stating the same thing differently (search/updates.py): this one is history.
    superseded_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "matched_terms": list(self.matched_terms),
            "lists": {k: dict(v) for k, v in self.lists.items()},
            "fused": self.fused,
            "factors": dict(self.factors),
            "via": self.via,
            "final": self.final,
            "floor": self.floor,
            "superseded_by": self.superseded_by,
        }

    def __str__(self) -> str:
        parts = []
        if self.matched_terms:
            parts.append("matched " + ", ".join(self.matched_terms))
        for name, info in self.lists.items():
            detail = " ".join(f"{k}={_fmt(v)}" for k, v in info.items())
            parts.append(f"{name}[{detail}]")
        if self.via:
            parts.append(f"via {self.via}")
        parts.extend(f"{k}×{_fmt(v)}" for k, v in self.factors.items())
        parts.append(f"= {_fmt(self.final)}")
        if self.floor:
            parts.append(f"kept: {self.floor}")
        if self.superseded_by:
            parts.append(f"superseded by {self.superseded_by}")
        return "; ".join(parts)


def _fmt(v: float) -> str:
    if isinstance(v, int) or (math.isfinite(v) and v == int(v) and abs(v) < 1e6):
        return str(int(v))
    return legible(v)


def legible(v: float, digits: int = 4) -> str:
    """``v`` with ``digits`` significant digits and never in scientific notation: a keyword
    score of a word most memories hold is 0.000002, not 2e-06; 1234567.8 is 1234568. Below
    0.000001 it is 0 (a 0 or - sign: as Python prints the value)."""
    text = f"{v:.{digits}g}"
    if "e" not in text or not math.isfinite(v):
        return text
    fixed = f"{v:.6f}" if abs(v) < 1 else f"{v:.0f}"
    return fixed.rstrip("0").rstrip(".") if "." in fixed else fixed


@dataclass(frozen=True, slots=True)
class Hit:
    """One recall result: the memory, its final score and the explanation of that score."""

    memory: MemoryRecord
    score: float
    explain: Explanation

    def to_dict(self) -> dict[str, Any]:
        return {"memory": self.memory.to_dict(), "score": self.score,
                "explain": self.explain.to_dict()}


# --- values returned by Memory's operations (they cross the API, so they live here, below every
# implementation: the engine, its backends and the remote client all build them) -------------
@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    """An archived memory (003) and when it was archived."""

    record: MemoryRecord
    archived_at: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.record.to_dict(), "archived_at": self.archived_at}


@dataclass(frozen=True, slots=True)
class Link:
    """An undirected link between two memories as seen from one end."""

    other_id: str
    strength: float
    origin: str  # manual | synthesis | co-recall


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One recorded maintenance run (``maintenance_runs``): which job, when, what it changed
    (``counts``), how it ended (one of ``store.base.OUTCOMES``) and a one-line message."""

    id: int
    namespace: str
    job: str
    started_at: float
    finished_at: float
    outcome: str
    counts: dict[str, int] = field(default_factory=dict)
    message: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "namespace": self.namespace,
            "job": self.job,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "outcome": self.outcome,
            "counts": dict(self.counts),
            "message": self.message,
        }


ALREADY_PRESENT = "already in this namespace (same id or key)"
_EXAMPLES = 3  # places named per skip reason in a summary


class SkippedItem(Protocol):
    """What an import report reads of a skipped item (``snapshot.Skip``)."""

    @property
    def reason(self) -> str: ...

    @property
    def where(self) -> str: ...


class ParsedImport(Protocol):
    """What ``import_records`` reads of a reader's output (``snapshot.ParsedSnapshot``): the
    validated records, links between them (``(a, b, strength, origin)``), the items left out,
    the records that arrive archived (id -> archive time) and the entities the source linked
    each record to (``(name, type)`` each)."""

    @property
    def records(self) -> Sequence[MemoryRecord]: ...

    @property
    def links(self) -> Sequence[tuple[str, str, float, str]]: ...

    @property
    def skipped(self) -> Sequence[SkippedItem]: ...

    @property
    def archived(self) -> Mapping[str, float]: ...

    @property
    def entities(self) -> Mapping[str, tuple[tuple[str, str], ...]]: ...


class ImportReport(dict[str, int]):
    """Counts from an import: ``created``, ``skipped``, ``links``. ``skips`` says why what was
    skipped was left out: one entry per reason, ``{"reason", "count", "examples"}`` (the
    first few places), most frequent first; ``archived``: how many of the created went
    straight to the archive (their source had archived them)."""

    def __init__(self, *, created: int, skipped: int, links: int,
                 skips: Sequence[SkippedItem] = (), present: int = 0, archived: int = 0) -> None:
        super().__init__(created=created, skipped=skipped, links=links)
        reasons = [(s.reason, s.where) for s in skips] + [(ALREADY_PRESENT, "")] * present
        self.skips = _summarize(reasons)
        self.archived = archived


def _summarize(skips: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for reason, where in skips:
        group = groups.setdefault(reason, {"reason": reason, "count": 0, "examples": []})
        group["count"] += 1
        if where and len(group["examples"]) < _EXAMPLES:
            group["examples"].append(where)
    return sorted(groups.values(), key=lambda g: -int(g["count"]))

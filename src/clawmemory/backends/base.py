"""The storage boundary: a narrow ``Store`` protocol and the frozen values that cross it.

Backends store and find records; they do not rank. The engine owns ranking, fusion and
explanations, so every backend gives the same answers to the same question apart from the raw
relevance numbers of its own full-text index.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from clawmemory.backends.keys import KeyStore
from clawmemory.config import Settings
from clawmemory.entities.base import EntityIndex
from clawmemory.llm.base import Message, ToolCall
from clawmemory.model import ArchiveEntry, Filter, Link, MemoryRecord, RunRecord, next_version
from clawmemory.vectors.base import VectorQueue, VectorStore

__all__ = [
    "CONTEXT_CHARS",
    "CONTEXT_TURNS",
    "ORDERS",
    "OUTCOMES",
    "SUBSTRING_SCAN_ROWS",
    "ArchiveEntry",
    "Backend",
    "HistoryStore",
    "Link",
    "Plan",
    "RankInfo",
    "RunRecord",
    "SQLRows",
    "SessionLedger",
    "Store",
    "StoreStats",
    "TextHit",
    "Version",
    "candidate_plans",
    "connected_versions",
    "decode_tool_calls",
    "encode_tool_calls",
    "is_turn",
    "keyword_weights",
    "order_versions",
    "time_sql",
    "turn_context",
    "upsert",
]

Version = tuple[MemoryRecord, bool]  # a record and whether it is archived

# list() orderings every backend supports.
ORDERS = ("newest", "oldest", "score", "accessed")

# The substring fallback (000: ``LIKE`` when full-text search finds nothing) reads at most this
# many of the namespace's newest memories. Unbounded, a question whose words no memory holds
# scanned every row: 38 ms at 20k on SQLite (the peers harness's first query), seconds at 1M.
SUBSTRING_SCAN_ROWS = 2_000

# When the remembered thing happened (``Filter.since``/``until``). Both SQL backends index this
# exact expression per namespace (SQLite migration 013, PostgreSQL migration 003), and SQLite
# uses an expression index only where a query repeats it word for word.
EVENT_OR_CREATED = "COALESCE({a}.event_time, {a}.created_at)"


def time_sql(a: str, flt: Filter, mark: str) -> tuple[builtins.list[str], builtins.list[Any]]:
    """The time and validity conditions of a SQL backend's filter (``mark``: its parameter
    placeholder), as ``Filter.matches`` states them:

    * since / until: ``COALESCE(event_time, created_at) >= since`` / ``< until``;
    * as_of: ``created_at <= as_of``, and unless include_invalid
      ``(valid_until IS NULL OR valid_until > as_of)`` instead of ``valid_until IS NULL``."""
    when = EVENT_OR_CREATED.format(a=a)
    where: builtins.list[str] = []
    args: builtins.list[Any] = []
    for sql, value in ((f"{when} >= {mark}", flt.since), (f"{when} < {mark}", flt.until),
                       (f"{a}.created_at <= {mark}", flt.as_of)):
        if value is not None:
            where.append(sql)
            args.append(value)
    if flt.include_invalid:
        return where, args
    if flt.as_of is not None:
        where.append(f"({a}.valid_until IS NULL OR {a}.valid_until > {mark})")
        args.append(flt.as_of)
    else:
        where.append(f"{a}.valid_until IS NULL")
    return where, args


class RankInfo(NamedTuple):
    """The few fields ranking needs. Candidate lists carry these instead of whole records, so a
    recall decodes full records (tags, metadata JSON) only for the hits it returns. A named
    tuple: a recall makes a few hundred, and a frozen dataclass takes six times as long to
    make (2.2 µs against 0.35)."""

    id: str
    score: int
    created_at: float
    last_accessed: float | None
    confidence: float
    updated_at: float = 0.0  # recency counts from the last write or arrival, not creation
    stored_at: float = 0.0
    session_id: str | None = None  # session support (ADR 0020)
    source_role: str | None = None  # who said it: the speaker a question names (ADR 0026)


@dataclass(frozen=True, slots=True)
class TextHit:
    """A keyword candidate and its relevance (higher is better; BM25 for FTS). ``text``: its
    searchable text (``model.searchable_text``) where the search read the row anyway, so
    recall need not read the record to see which query words it holds; None otherwise."""

    info: RankInfo
    relevance: float
    text: str | None = None


@dataclass(frozen=True, slots=True)
class StoreStats:
    backend: str
    total: int
    by_kind: dict[str, int] = field(default_factory=dict)
    invalidated: int = 0
    links: int = 0
    newest: float | None = None
    oldest: float | None = None
    size_bytes: int | None = None
    path: str | None = None


# How a maintenance run ended.
OUTCOMES = ("ok", "skipped", "failed")


@runtime_checkable
class Store(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    """What every storage backend provides. All methods are scoped by namespace."""

    backend: str

    def close(self) -> None: ...

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran: background writers (access counts) stop then instead of
        retrying on a store that can no longer be written."""
        ...

    # --- records -------------------------------------------------------------------------------
    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        """Insert ``record``; if it has a key that exists in its namespace, update that memory
        in place instead (id, created_at, stored_at, score, access_count and confidence are
        kept).
        Atomic. Returns the stored record and whether it was newly created."""
        ...

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        """Insert many records, then ``links`` (a_id, b_id, strength, origin) between them, in one
        all-or-nothing transaction. A record whose key already exists is skipped
        (``skip_existing_keys``, the existing memory is returned) or upserted; link ends given as
        a skipped record's id are mapped to the memory that was kept."""
        ...

    def get(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        """The memory with this id, else the one with this key, else None."""
        ...

    def get_many(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryRecord]: ...

    def replace(self, record: MemoryRecord) -> None:
        """Overwrite every field of the existing memory with ``record.id``."""
        ...

    def supersede(self, retired: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        """A correction (004) in one transaction: overwrite the old memory with ``retired`` and
        insert ``new``, so a crash leaves the old version valid or both versions, never
        neither. Returns the stored new record."""
        ...

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        """Hard delete, live or archived: the records and everything derived from them (index
        rows, links, entity links, vectors), gone from the backend's files too (no copy left in
        free space or a log). Returns how many records (live and archived) were removed."""
        ...

    def delete_namespace(self, namespace: str) -> int:
        """Remove the whole tenant (records, archive, links, entities, history, runs), gone from
        the backend's files too. Returns how many live records were removed."""
        ...

    def find_archived(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        """The archived record with this id, else the newest archived one with this key."""
        ...

    def chain(self, namespace: str, id_: str) -> builtins.list[tuple[MemoryRecord, bool]]:
        """Every version of a memory: the records linked to ``id_`` through ``supersedes`` in
        either direction (004 corrections), live, invalidated or archived, each with whether it
        is archived; oldest first. Empty when ``id_`` is nowhere."""
        ...

    def derived(self, namespace: str, source_ids: Sequence[str]) -> builtins.list[Version]:
        """Memories, live or archived, that name any of ``source_ids`` among their own
        ``source_ids`` (what was derived from those memories), each with whether it is
        archived. Looked up by index: forget calls it for every memory it removes."""
        ...

    def list(
        self, namespace: str, flt: Filter, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> builtins.list[MemoryRecord]: ...

    def count(self, namespace: str, flt: Filter) -> int: ...

    def touch(self, namespace: str, ids: Sequence[str], now: float) -> None:
        """Record a recall: set last_accessed and increment access_count."""
        ...

    # --- keyword search ------------------------------------------------------------------------
    def keyword_search(
        self, namespace: str, terms: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        """Best ``limit`` memories matching any of ``terms`` (already sanitised), best first."""
        ...

    def rank_info(self, namespace: str, ids: Sequence[str], flt: Filter) -> dict[str, RankInfo]:
        """Ranking fields of those ``ids`` that exist and pass ``flt`` (for vector and entity
        candidates)."""
        ...

    def like_search(
        self, namespace: str, tokens: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        """Substring fallback (000): memories containing any token; relevance = tokens found.
        Only the ``SUBSTRING_SCAN_ROWS`` newest memories passing the filter are read."""
        ...

    # --- graph ---------------------------------------------------------------------------------
    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str,
             accumulate: bool = True) -> bool:
        """Create the link a<->b, or strengthen an existing one: ``accumulate`` adds
        ``strength`` to it (co-recall links grow with use); otherwise it keeps the larger of
        the two, so linking a pair again is idempotent (a manual link). False if either end is
        missing."""
        ...

    def unlink(self, namespace: str, a: str, b: str) -> bool: ...

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, builtins.list[Link]]: ...

    # --- housekeeping --------------------------------------------------------------------------
    def namespaces(self) -> builtins.list[str]: ...

    def stats(self, namespace: str) -> StoreStats: ...

    # --- lifecycle: soft delete, archive (003), maintenance runs --------------------------------
    def replace_many(self, records: Sequence[MemoryRecord]) -> None:
        """``replace`` for many memories in one transaction (one file write for JSON): what
        the nightly lifecycle jobs use to update thousands of memories at once."""
        ...

    def drop_derived(self, namespace: str, ids: Sequence[str]) -> None:
        """Delete what search derived from these records and the store keeps (vectors, entity
        links) while keeping the records: what a soft delete (004 decay) drops."""
        ...

    def archive(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        """Move records to the archive (003 pruning): they leave the live set with everything
        derived from them (index rows, links, entity links, vectors) but stay full-text
        searchable with ``archive_search``. ``at`` is the archive time. Returns how many moved."""
        ...

    def archive_search(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> builtins.list[MemoryRecord]:
        """Archived records matching any of ``terms`` (already sanitised), best first (BM25)."""
        ...

    def archive_count(self, namespace: str) -> int: ...

    def archive_list(
        self, namespace: str, *, limit: int, offset: int = 0
    ) -> builtins.list[ArchiveEntry]:
        """Archived records, most recently archived first (ties: the newest memory first, then
        by id)."""
        ...

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None:
        """Move an archived record back into the live set, or None when it is not archived. If
        its key is taken by a live memory meanwhile, it comes back without a key."""
        ...

    def live_size_bytes(self) -> int | None:
        """Bytes the live data takes (records and their indexes; not the archive, not free
        space), or None when the backend cannot tell. Size-based pruning compares this with its
        limit: a database file does not shrink when rows move to an archive inside it."""
        ...

    def record_run(
        self,
        namespace: str,
        job: str,
        started_at: float,
        finished_at: float,
        outcome: str,
        counts: dict[str, int],
        message: str,
    ) -> RunRecord:
        """Record one maintenance run and return it with its id."""
        ...

    def runs(
        self, namespace: str, limit: int, *, job: str | None = None
    ) -> builtins.list[RunRecord]:
        """Recorded maintenance runs, newest first (only ``job``'s when given)."""
        ...


def connected_versions(versions: Sequence[Version], id_: str) -> builtins.list[Version]:
    """Of ``versions``, those linked to ``id_`` through ``supersedes`` (either direction),
    oldest first: what ``Store.chain`` returns, for backends that hold every record in RAM."""
    by_id = {v[0].id: v for v in versions}
    newer: dict[str, builtins.list[str]] = {}
    for r, _ in versions:
        if r.supersedes:
            newer.setdefault(r.supersedes, []).append(r.id)
    found: dict[str, Version] = {}
    frontier = [id_] if id_ in by_id else []
    while frontier:
        rid = frontier.pop()
        if rid in found or rid not in by_id:
            continue
        found[rid] = by_id[rid]
        older = by_id[rid][0].supersedes
        frontier.extend([*newer.get(rid, []), *([older] if older else [])])
    return order_versions(builtins.list(found.values()))


def order_versions(versions: builtins.list[Version]) -> builtins.list[Version]:
    """A correction chain in order: each record right after the one it supersedes."""
    by_old = {r.supersedes: (r, a) for r, a in versions if r.supersedes}
    ids = {r.id for r, _ in versions}
    heads = [(r, a) for r, a in versions if r.supersedes not in ids]
    out: builtins.list[Version] = []
    for head in sorted(heads, key=lambda v: v[0].created_at):
        step: Version | None = head
        while step is not None and step not in out:
            out.append(step)
            step = by_old.get(step[0].id)
    return out + [v for v in versions if v not in out]


class KeyedWrites(Protocol):
    """What ``upsert`` needs of a backend, all inside the backend's write transaction."""

    def key_holder(self, namespace: str, key: str) -> MemoryRecord | None: ...

    def insert_new(self, record: MemoryRecord) -> None: ...

    def replace_in_place(self, record: MemoryRecord) -> None: ...

    def find_archived(self, namespace: str, id_or_key: str) -> MemoryRecord | None: ...

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None: ...


def upsert(
    store: KeyedWrites, record: MemoryRecord, skip_existing: bool
) -> tuple[MemoryRecord, bool]:
    """Write ``record``; with a key some memory already holds, that memory is the target
    (``skip_existing``: it is returned untouched; otherwise ``record`` becomes its next
    version in place, by ``next_version``). The holder may be archived (maintenance moved
    it): it comes back first, so a key names one memory with one history, and ``forget(key)``
    reaches every text ever stored under it. Returns the stored record and whether it is
    new. Every backend's ``put``/``put_many`` goes through here."""
    existing = store.key_holder(record.namespace, record.key) if record.key else None
    if existing is None and record.key:
        archived = store.find_archived(record.namespace, record.key)
        if archived is not None and archived.key == record.key:
            if skip_existing:
                return archived, False
            existing = store.restore(record.namespace, archived.id)
    if existing is None:
        store.insert_new(record)
        return record, True
    if skip_existing:
        return existing, False
    merged = next_version(existing, record)
    store.replace_in_place(merged)
    return merged, False


# --- the other parts of a backend ------------------------------------------------------------

@runtime_checkable
class HistoryStore(Protocol):
    """Per-conversation message logs and summaries of one namespace (001 ``HistoryStore``:
    Append/GetRecent/GetAll/SetSummary/GetSummary/Purge/Len). Safe for concurrent use.

    Messages of a key are numbered 0, 1, 2... in the order they were appended; nothing but
    ``purge`` removes them, so a store is the whole transcript and ``len`` its length."""

    def append(self, key: str, message: Message) -> int:
        """Add ``message`` at the end of the key's log; returns its position."""
        ...

    def recent(self, key: str, n: int) -> builtins.list[Message]:
        """The ``n`` most recent messages, oldest first."""
        ...

    def all(self, key: str) -> builtins.list[Message]:
        """Every message of the key, oldest first."""
        ...

    def set_summary(self, key: str, summary: str, *, covers: int = 0) -> None:
        """Store the compaction summary, replacing any previous one. ``covers``: how many of
        the key's first messages it stands for (a restore skips those)."""
        ...

    def summary(self, key: str) -> str:
        """The stored summary, or "" when there is none."""
        ...

    def covered(self, key: str) -> int:
        """How many of the key's first messages the summary stands for (0 without one)."""
        ...

    def purge(self, key: str) -> None:
        """Remove every message and the summary of the key."""
        ...

    def len(self, key: str, role: str | None = None) -> int:
        """How many messages the key's log holds; only those of ``role`` when given (the
        agent counts the user messages to synthesise every N of them, across processes)."""
        ...

    def keys(self) -> builtins.list[str]:
        """Every key with messages or a summary, sorted."""
        ...


def encode_tool_calls(calls: Sequence[ToolCall]) -> str | None:
    if not calls:
        return None
    return json.dumps([{"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                       for c in calls], ensure_ascii=False)


def decode_tool_calls(text: str | None) -> tuple[ToolCall, ...]:
    if not text:
        return ()
    items: list[Mapping[str, Any]] = json.loads(text)
    return tuple(ToolCall(str(c["id"]), str(c["name"]), dict(c.get("arguments") or {}))
                 for c in items)


class SessionLedger(Protocol):
    """Consolidation state per (namespace, session): when first seen, when consolidated."""

    def ensure(self, namespace: str, session_id: str, now: float) -> bool:
        """Register the session if new; True when it was new."""
        ...

    def pending(self, namespace: str, exclude: str | None) -> list[str]:
        """Unconsolidated sessions, first seen first, without ``exclude``."""
        ...

    def mark(self, namespace: str, session_id: str, now: float) -> bool:
        """Record consolidation (registering the session if needed); False if already done."""
        ...

    def consolidated_at(self, namespace: str, session_id: str) -> float | None: ...

    def reopen(self, namespace: str, session_id: str) -> bool:
        """Mark a consolidated session pending again; False when it was not consolidated."""
        ...


class SQLRows(Protocol):
    """Raw access to a SQL backend's tables for repair (rows derived from memories: entity
    links, sequence links). Queries are written with SQLite's ``?`` marks; a backend of another
    dialect translates them."""

    def rows(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]: ...

    def set_meta(self, key: str, value: str) -> None: ...


Clock = Callable[[], float]


@dataclass(frozen=True)
class Backend:
    """Everything one open store brings, built once per store by its package's ``parts()``
    (``backends/registry.py`` finds the package). The engine asks this bundle, never the
    store's type or name, what the backend can do: a part it cannot keep is None.

    ``vectors(centre_min_rows, centre_min_norm)``: a new vector store over the records (None:
    no vectors here; the two arguments are ``recall``'s centring settings, ADR 0029);
    ``queue``: memories waiting for their vector, kept in the store's own tables; ``entities``:
    the entity index; ``history(namespace, clock)``: the conversation history of a namespace;
    ``sessions``: the consolidation ledger; ``keys``: API keys (None: this backend cannot
    protect a server); ``sql``: raw rows for repair (None: in-process backends);
    ``forget_namespace``: drops what the backend keeps for a namespace outside its records (the
    in-process history and ledger); ``disabled``: memory is off (the none backend)."""

    name: str
    records: Store
    vectors: Callable[[int, float], VectorStore | None] | None
    queue: VectorQueue | None
    entities: EntityIndex | None
    history: Callable[[str, Clock], HistoryStore]
    sessions: SessionLedger
    keys: KeyStore | None
    sql: SQLRows | None
    forget_namespace: Callable[[str], None]
    disabled: bool = False


# Keyword context (ADR 0036): a dialogue turn is keyword-indexed, as a field of its own, with the
# last CONTEXT_CHARS characters of each of the CONTEXT_TURNS turns before it in its session.
# Measured on LoCoMo and LongMemEval: two turns' tails of 100 characters (~16 words) lift both;
# whole turns, or tails of 150-200 characters, drown LongMemEval's long assistant turns in their
# neighbours' words (ADR 0036).
CONTEXT_TURNS = 2
CONTEXT_CHARS = 100


def is_turn(record: MemoryRecord) -> bool:
    """A dialogue turn: an episode of a session, without a key (a keyed episode is an upsert
    target, not a turn)."""
    return record.kind == "episode" and record.session_id is not None and record.key is None


def turn_context(before: Sequence[str]) -> str:
    """The keyword context of a turn from the texts of the turns before it, newest first."""
    return " ".join(text[-CONTEXT_CHARS:] for text in before[:CONTEXT_TURNS])


def keyword_weights(settings: Settings) -> tuple[float, float, float, float, float]:
    """The keyword index's field weights (key, content, tags, source, a turn's context) from
    settings."""
    r = settings.recall
    return (r.weight_key, r.weight_content, r.weight_tags, r.weight_source, r.weight_context)


Plan = tuple[str, builtins.list[int]]  # ("|" any of / "&" all of, term indexes)


def candidate_plans(
    order: Sequence[int], counts: Sequence[int], size: int, cap: int
) -> builtins.list[Plan]:
    """Which rows to rank, as (operator, terms) tried in turn until ``limit`` memories are
    found, from the terms ordered rarest first (both SQL backends; ADR 0015, ADR 0006).
    First any of the rarest terms while their counts add up to ``cap``. When even the rarest
    term is more common than that: the rows holding all of the fewest rarest terms expected
    (as if independent) to leave at most ``cap`` rows (the rows BM25 ranks first), then the
    rows of the rarest term. Last, any term."""
    plans: builtins.list[Plan] = []
    pickers: builtins.list[int] = []
    total = 0
    for i in order:
        if total + counts[i] > cap:
            break
        pickers.append(i)
        total += counts[i]
    if pickers:
        plans.append(("|", pickers))
    elif len(order) > 1:
        expected, k = float(max(size, 1)), 0
        while k < len(order) and (k < 2 or expected > cap):
            expected *= counts[order[k]] / max(size, 1)
            k += 1
        plans += [("&", builtins.list(order[:k])), ("|", [order[0]])]
    whole = ("|", builtins.list(order))
    return [p for p in plans if p != whole] + [whole]

"""Forgetting: conversation hygiene and idle-knowledge purge (000), Ebbinghaus confidence decay
(004), size-based pruning into a searchable archive (003).

Every function works on one ``Memory``: its namespace, its store, its settings
(``settings.lifecycle``) and its clock, so a test moves time instead of waiting. Which kinds each
step touches comes from the kinds table (``model.KINDS``), never from kind names written here.
A memory whose own ``decay_rate`` is 0 (confirmed — 004 ``confirm_fact``) is protected from
both idle purge and confidence decay, whatever its kind.

Confidence decay and idempotency. 004 multiplies confidence by ``exp(-rate × days since last
access)`` every night, which applies the same idle days again on every run (two runs on one day
would decay twice as much). Here each memory remembers when decay last ran on it
(``metadata["decayed_at"]``) and a run applies only the days since the later of that time and
its last access. Because ``exp(-r·a) × exp(-r·b) = exp(-r·(a+b))``, runs at any cadence (hourly,
nightly, twice in a row) give exactly the confidence one run over the whole idle time gives, and
a second run at the same instant changes nothing. An access stops the clock: the decay already
applied is kept, and the idle time is counted again from that access.

The two ways a fact fades overlap by design (DESIGN.md gives facts both): with the defaults,
000's idle purge (30 idle days, 5% survival) and 004's decay (rate 0.1/day, threshold 0.05, so
e^-3 < 0.05 after 30 idle days) retire an unused fact at about the same age; whichever sees it
first wins. The idle purge only looks at valid memories, so a fact decay soft-deleted first stays,
invalidated, until pruning archives it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from clawmemory.errors import NotFoundError
from clawmemory.model import KINDS, Explanation, Filter, Hit, KindPolicy, MemoryRecord
from clawmemory.search.ranking import DAY, factors
from clawmemory.search.sanitize import content_terms, sanitize_terms
from clawmemory.store.memory import stem, tokenize
from clawmemory.validation import check_limit

if TYPE_CHECKING:
    from clawmemory.engine import Memory

__all__ = [
    "DECAYED_AT",
    "Counts",
    "confidence_decay",
    "hygiene_purge",
    "knowledge_decay",
    "prune",
    "prune_weight",
    "recall_archive",
    "restore",
    "scan",
]

Counts = dict[str, int]
DECAYED_AT = "decayed_at"  # metadata key: when confidence decay last ran on the memory
PAGE = 1000  # records read per page while scanning
BATCH = 500  # ids per delete/archive call (bounds SQL parameters)


# --- shared helpers ------------------------------------------------------------------------------
def _kinds(rule: Callable[[KindPolicy], bool]) -> tuple[str, ...]:
    return tuple(p.name for p in KINDS.values() if rule(p))


def scan(mem: Memory, flt: Filter) -> list[MemoryRecord]:
    """Every record passing ``flt``, oldest first (a stable order: survival rolls and pruning
    ties come out the same on every backend). Read fully before anything is changed, so paging
    by offset cannot skip records that an earlier page deleted."""
    mem.flush()  # recalls' queued access counts decide what is idle
    out: list[MemoryRecord] = []
    while batch := mem.store_backend.list(
        mem.namespace, flt, limit=PAGE, offset=len(out), order="oldest"
    ):
        out.extend(batch)
    return out


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), BATCH):
        yield ids[i : i + BATCH]


def _last_use(r: MemoryRecord) -> float:
    # 000: last_accessed 0/unset falls back to the creation time.
    return r.last_accessed or r.created_at


def _forget_derived(mem: Memory, ids: Sequence[str]) -> None:
    """Drop what the engine's components keep for these memories (cached or in-RAM vectors,
    entity links of the in-memory index); the store drops its own rows."""
    vectors = mem.components.loaded_vectors()  # never load a model just to forget
    if vectors is not None:
        vectors.forget(mem.namespace, ids)
    layer = mem.components.entity_layer()
    if layer is not None:
        for mid in ids:
            layer[0].unlink_memory(mem.namespace, mid)


def _delete(mem: Memory, ids: Sequence[str]) -> int:
    removed = 0
    for part in _chunks(ids):
        removed += mem.store_backend.delete(mem.namespace, part)
        _forget_derived(mem, part)
    return removed


# --- 000 hygiene ---------------------------------------------------------------------------------
def hygiene_purge(mem: Memory) -> Counts:
    """Hard-delete memories of hygiene kinds (``conversation``) created more than
    ``hygiene_max_age_s`` ago (000). 0 disables it. Returns ``{"hygiene_purged": n}``."""
    max_age = mem.settings.lifecycle.hygiene_max_age_s
    kinds = _kinds(lambda p: p.hygiene_purge)
    if max_age <= 0 or not kinds:
        return {"hygiene_purged": 0}
    cutoff = mem.clock() - max_age  # older than max_age: created strictly before the cutoff
    flt = Filter(kinds=kinds, created_before=cutoff, include_invalid=True)
    return {"hygiene_purged": _delete(mem, [r.id for r in scan(mem, flt)])}


# --- 000 knowledge decay -------------------------------------------------------------------------
def knowledge_decay(mem: Memory, rng: random.Random | None = None) -> Counts:
    """Use it or lose it (000): valid memories of idle-purge kinds not used for longer than
    ``knowledge_max_idle_days`` are deleted, except that each rolls ``rng.random() <
    knowledge_survival_chance`` and a winner survives with ``last_accessed`` set to now. Rolls
    are made oldest memory first, so a seeded ``rng`` gives exact results. 0 days disables it.
    Returns ``{"idle_purged": n, "idle_survived": m}``."""
    cfg = mem.settings.lifecycle
    kinds = _kinds(lambda p: p.idle_purge and p.decay_rate > 0)
    if cfg.knowledge_max_idle_days <= 0 or not kinds:
        return {"idle_purged": 0, "idle_survived": 0}
    roll = rng or random.Random()
    now = mem.clock()
    cutoff = now - cfg.knowledge_max_idle_days * DAY
    idle = [r for r in scan(mem, Filter(kinds=kinds)) if r.decay_rate > 0 and _last_use(r) < cutoff]
    survivors: list[MemoryRecord] = []
    losers: list[MemoryRecord] = []
    for r in idle:
        (survivors if roll.random() < cfg.knowledge_survival_chance else losers).append(r)
    mem.store_backend.replace_many([r.evolve(last_accessed=now) for r in survivors])
    purged = _delete(mem, [r.id for r in losers])
    return {"idle_purged": purged, "idle_survived": len(survivors)}


# --- 004 Ebbinghaus confidence decay -------------------------------------------------------------
def _decay_reference(r: MemoryRecord) -> float:
    """Where this memory's idle time starts: its last use, or the last decay run if later."""
    try:
        last_run = float(r.metadata.get(DECAYED_AT) or 0.0)
    except (TypeError, ValueError):  # a user's own value under that key: ignore it
        last_run = 0.0
    return max(_last_use(r), last_run if math.isfinite(last_run) else 0.0)


def confidence_decay(mem: Memory) -> Counts:
    """004: ``confidence × exp(-decay_rate × days idle)`` for valid memories whose kind decays
    and whose own ``decay_rate`` is above 0; under ``decay_threshold`` the memory is soft-deleted
    (``valid_until`` = now) and its vectors and entity links are dropped. See the module notes
    for why this is idempotent. Returns ``{"decayed": n, "soft_deleted": m}``."""
    cfg = mem.settings.lifecycle
    kinds = _kinds(lambda p: p.decay_rate > 0)
    now = mem.clock()
    changed: list[MemoryRecord] = []
    dropped: list[str] = []
    for r in scan(mem, Filter(kinds=kinds)) if kinds else []:
        days = (now - _decay_reference(r)) / DAY
        if r.decay_rate <= 0 or days <= 0:
            continue
        confidence = r.confidence * math.exp(-r.decay_rate * days)
        changes: dict[str, object] = {
            "confidence": confidence,
            "metadata": {**r.metadata, DECAYED_AT: now},
        }
        if confidence < cfg.decay_threshold:
            changes.update(valid_until=now, updated_at=now)
            dropped.append(r.id)
        changed.append(r.evolve(**changes))
    mem.store_backend.replace_many(changed)
    for part in _chunks(dropped):
        mem.store_backend.drop_derived(mem.namespace, part)
        _forget_derived(mem, part)
    return {"decayed": len(changed), "soft_deleted": len(dropped)}


# --- 003 size-based pruning ----------------------------------------------------------------------
def prune_weight(mem: Memory, r: MemoryRecord, now: float) -> float:
    """How much a memory is worth keeping: the product of the ranking factors recall multiplies
    by (reinforcement × recency × confidence — 003's scoreWeight × recency, plus 004's
    confidence). An invalidated memory weighs 0: recall never returns it."""
    if not r.is_valid:
        return 0.0
    return math.prod(factors(r, now, mem.settings.recall).values())


def prune(mem: Memory) -> Counts:
    """003: when the live data is larger than ``max_size_bytes``, archive the bottom
    ``prune_percent`` % (rounded up) of prunable memories by ``prune_weight``. Archived memories
    leave recall but stay searchable (``recall_archive``) and restorable; nothing is deleted.
    The measure is the live data (``Store.live_size_bytes``), not the file: the archive lives in
    the same file, so the file would stay over the limit and every run would archive another
    slice. Backends that cannot measure their size (memory, none) never prune.
    Returns ``{"archived": n, "live_bytes": size}``."""
    cfg = mem.settings.lifecycle
    size = mem.store_backend.live_size_bytes()
    counts = {"archived": 0, "live_bytes": size or 0}
    kinds = _kinds(lambda p: p.prunable)
    if size is None or size <= cfg.max_size_bytes or cfg.prune_percent <= 0 or not kinds:
        return counts
    now = mem.clock()
    pool = scan(mem, Filter(kinds=kinds, include_invalid=True))
    share = min(cfg.prune_percent, 100.0) / 100.0
    n = math.ceil(len(pool) * share)
    # Ties (equal weight) go oldest first: the scan order is oldest first and sorted() is stable.
    victims = [r.id for r in sorted(pool, key=lambda r: prune_weight(mem, r, now))[:n]]
    for part in _chunks(victims):
        counts["archived"] += mem.store_backend.archive(mem.namespace, part, at=now)
        _forget_derived(mem, part)
    return counts


# --- the archive ---------------------------------------------------------------------------------
def recall_archive(mem: Memory, query: str, limit: int | None = None) -> list[Hit]:
    """Archived memories matching ``query`` (BM25 over the archive's own full-text index), best
    first. Each hit explains itself with ``via="archive"`` and its rank in the archive list; the
    score is RRF-shaped (``1 / (rrf_k + rank)``) because archived memories have no live ranking
    factors. The archive is read-only here: nothing is touched or restored."""
    cfg = mem.settings.recall
    count = check_limit(limit if limit is not None else cfg.limit)
    terms = sanitize_terms(query) if isinstance(query, str) else []
    if cfg.stopwords:
        terms = content_terms(terms)
    if not terms:
        return []
    hits = []
    for rank, r in enumerate(mem.store_backend.archive_search(mem.namespace, terms, count), 1):
        stems = set(tokenize(f"{r.key or ''} {r.content} {' '.join(r.tags)} {r.source or ''}"))
        score = 1.0 / (cfg.rrf_k + rank)
        explain = Explanation(
            matched_terms=tuple(t for t in terms if stem(t) in stems),
            lists={"archive": {"rank": float(rank)}},
            fused=score,
            via="archive",
            final=score,
        )
        hits.append(Hit(r, score, explain))
    return hits


def restore(mem: Memory, id_: str) -> MemoryRecord:
    """Bring an archived memory back into recall, re-indexing its vector and entities. Raises
    NotFoundError when no archived memory has that id."""
    record = mem.store_backend.restore(mem.namespace, id_)
    if record is None:
        raise NotFoundError(f"no archived memory with id {id_!r} in namespace {mem.namespace!r}")
    vectors = mem.components.embed_documents([record])
    store = mem.components.loaded_vectors()
    if store is not None and vectors:
        store.upsert(mem.namespace, vectors)
    layer = mem.components.entity_layer()
    if layer is not None:
        index, ner = layer
        index.link_mentions(mem.namespace, record.id, ner.extract(record.content))
    return record

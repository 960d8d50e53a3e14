"""Forgetting: conversation hygiene and idle-knowledge purge (000), Ebbinghaus confidence decay
(004), size-based pruning into a searchable archive (003) — the steps of the ``decay`` job.

What each step does to data, in run order, with the default policy first
(``[lifecycle] purge = "archive"``; ``"delete"`` is 000's hard delete, an explicit choice):

=======  ======================================================  ===============================
step     which memories                                          what happens to them
=======  ======================================================  ===============================
hygiene  hygiene kinds (``conversation``) idle longer than       archived (purge="delete":
         ``hygiene_max_age_s``, valid or not                      deleted)
idle     valid idle-purge kinds (facts, preferences, events,     each rolls ``survival_chance``:
         summaries) with a decay rate, idle longer than          winners stay and their idle
         ``knowledge_max_idle_days``                              clock restarts; the others are
                                                                 archived (purge="delete":
                                                                 deleted)
decay    valid memories of decaying kinds with a decay rate      confidence × e^(-rate × idle
                                                                 days); under ``decay_threshold``
                                                                 invalidated (``valid_until``),
                                                                 kept in the store
prune    when the live data exceeds ``max_size_bytes``: the      archived (always: 003 never
         bottom ``prune_percent`` % of prunable kinds by weight   deletes)
=======  ======================================================  ===============================

So with the defaults no step deletes anything: archived memories leave recall but stay
full-text searchable (``recall(..., archive=True)``), listed (``Memory.archived``) and
restorable (``Memory.restore``). Which kinds each step touches comes from the kinds table
(``model.KINDS``), never from kind names written here. A memory whose own ``decay_rate`` is 0
(confirmed — 004 ``confirm_fact``) is protected from both idle purge and confidence decay.

Idle clocks. A memory is idle since the latest of its last access (recall, reinforce), its last
write (upsert, update) and its arrival in this store (``stored_at``: first store, import,
restore) — ``idle_since``. An imported memory with 2023 dates is therefore not idle to this
store, and a conversation entry kept alive by upserts is not purged for its age. (000 counts
from ``last_accessed``, falling back to the creation time; it has no imports to protect.)

Plans and previews. Each step first plans a list of ``Change`` (which memory, what, why) and
then applies it. With ``dry_run=True`` nothing is written: the steps of ``run_decay`` still see
what earlier steps would have done (purged memories gone, survivors refreshed). Two things a
preview cannot know exactly: the survival roll is random (pass the same seeded ``rng`` to get
the run's exact outcome), and pruning measures the live data as it is before the run's purges.

Confidence decay and idempotency. 004 multiplies confidence by ``exp(-rate × days since last
access)`` every night, which applies the same idle days again on every run (two runs on one day
would decay twice as much). Here each memory remembers when decay last ran on it
(``metadata["decayed_at"]``) and a run applies only the days since the later of that time and
its idle clock. Because ``exp(-r·a) × exp(-r·b) = exp(-r·(a+b))``, runs at any cadence (hourly,
nightly, twice in a row) give exactly the confidence one run over the whole idle time gives, and
a second run at the same instant changes nothing. An access stops the clock: the decay already
applied is kept, and the idle time is counted again from that access.

The two ways a fact fades overlap by design (DESIGN.md gives facts both): with the defaults,
000's idle purge (30 idle days, 5% survival) and 004's decay (rate 0.1/day, threshold 0.05, so
e^-3 < 0.05 after 30 idle days) retire an unused fact at about the same age; whichever sees it
first wins. The idle purge only looks at valid memories, so a fact decay invalidated first stays,
invalidated, until pruning archives it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clawmemory.errors import InvalidInputError
from clawmemory.model import KINDS, Filter, Hit, KindPolicy, MemoryRecord
from clawmemory.search.ranking import DAY, factors

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "DECAYED_AT",
    "Change",
    "Counts",
    "Report",
    "confidence_decay",
    "hygiene_purge",
    "idle_since",
    "knowledge_decay",
    "prune",
    "prune_weight",
    "recall_archive",
    "restore",
    "run_decay",
    "scan",
]

Counts = dict[str, int]
DECAYED_AT = "decayed_at"  # metadata key: when confidence decay last ran on the memory
PAGE = 1000  # records read per page while scanning
BATCH = 500  # ids per delete/archive call (bounds SQL parameters)
_PAST = {"archive": "archived", "delete": "deleted"}


@dataclass(frozen=True, slots=True)
class Change:
    """What one step does (in a preview: would do) to one memory, and why."""

    step: str  # hygiene | idle | decay | prune (enrich: the enrich job's preview)
    action: str  # archive | delete | survive | decay | invalidate | enrich
    record: MemoryRecord  # the memory before the change
    reason: str
    after: MemoryRecord | None = None  # the memory after an in-place change (survive, decay...)

    def to_dict(self) -> dict[str, Any]:
        r = self.record
        return {"step": self.step, "action": self.action, "id": r.id, "key": r.key,
                "kind": r.kind, "content": first_words(r.content), "reason": self.reason}


@dataclass
class Report:
    """What a run of one or more steps did (or, as a preview, would do)."""

    counts: Counts = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)

    def add(self, other: Report) -> Report:
        self.counts.update(other.counts)
        self.changes.extend(other.changes)
        return self


# --- shared helpers ------------------------------------------------------------------------------
def _kinds(rule: Callable[[KindPolicy], bool]) -> tuple[str, ...]:
    return tuple(p.name for p in KINDS.values() if rule(p))


def scan(mem: LocalMemory, flt: Filter) -> list[MemoryRecord]:
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


def idle_since(r: MemoryRecord) -> float:
    """When a memory's idle time starts: the latest of its last access, its last write and its
    arrival in this store (never before its creation: 000's fallback when never accessed)."""
    return max(r.last_accessed or 0.0, r.created_at, r.updated_at, r.stored_at)


def first_words(text: str, limit: int = 60) -> str:
    """The start of a memory's text, on one line, for previews."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _days(seconds: float) -> str:
    return f"{seconds / DAY:.1f} days"


def _chunks(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), BATCH):
        yield ids[i : i + BATCH]


def _forget_derived(mem: LocalMemory, ids: Sequence[str]) -> None:
    """Drop what the engine keeps for these memories (cached or in-RAM vectors,
    entity links of the in-memory index); the store drops its own rows."""
    vectors = mem.parts.vectors.loaded_vectors()  # never load a model just to forget
    if vectors is not None:
        vectors.forget(mem.namespace, ids)
    layer = mem.parts.entities.layer()
    if layer is not None:
        for mid in ids:
            layer.entity_index.unlink_memory(mem.namespace, mid)


def _apply(mem: LocalMemory, changes: Sequence[Change]) -> None:
    """Write one step's changes: in-place updates, then invalidations' derived rows, then the
    memories that leave the live set (into the archive, or deleted under purge="delete")."""
    store, ns, now = mem.store_backend, mem.namespace, mem.clock()
    store.replace_many([c.after for c in changes if c.after is not None])
    for part in _chunks([c.record.id for c in changes if c.action == "invalidate"]):
        store.drop_derived(ns, part)
        _forget_derived(mem, part)
    leaving = [c.record for c in changes if c.action in _PAST]
    for action in _PAST:
        for part in _chunks([c.record.id for c in changes if c.action == action]):
            if action == "archive":
                store.archive(ns, part, at=now)
            else:
                store.delete(ns, part)
            _forget_derived(mem, part)
    if leaving:
        # The Markdown mirror shows the live set; a note with edits no sync has read stays (the
        # next sync reports its memory as archived, `clawmem restore` brings it back).
        mem.parts.writes.mirror(retired=leaving)


class _View:
    """The memories the steps of one run see. A run applies each step before the next one
    reads the store; a preview applies nothing and keeps what each step would have done, so
    later steps see that state (purged memories gone, survivors refreshed)."""

    def __init__(self, mem: LocalMemory, *, dry_run: bool) -> None:
        self.mem, self.dry_run = mem, dry_run
        self.gone: set[str] = set()
        self.changed: dict[str, MemoryRecord] = {}

    def scan(self, flt: Filter) -> list[MemoryRecord]:
        found = (self.changed.get(r.id, r) for r in scan(self.mem, flt) if r.id not in self.gone)
        return [r for r in found if flt.matches(r)]

    def commit(self, changes: Sequence[Change]) -> None:
        if not self.dry_run:
            _apply(self.mem, changes)
            return
        for c in changes:
            if c.after is None:
                self.gone.add(c.record.id)
            else:
                self.changed[c.record.id] = c.after


def _step(view: _View, changes: list[Change], counts: Counts) -> Report:
    view.commit(changes)
    return Report(counts, changes)


def _purge_action(mem: LocalMemory) -> str:
    policy = str(mem.settings.lifecycle.purge)
    if policy not in _PAST:  # settings built without validation (model_construct)
        raise InvalidInputError(f"lifecycle.purge must be 'archive' or 'delete', not {policy!r}")
    return policy


def _tally(changes: Sequence[Change], action: str) -> int:
    return sum(c.action == action for c in changes)


# --- 000 hygiene ---------------------------------------------------------------------------------
def _hygiene(mem: LocalMemory, view: _View) -> Report:
    max_age = mem.settings.lifecycle.hygiene_max_age_s
    kinds = _kinds(lambda p: p.hygiene_purge)
    action = _purge_action(mem)
    changes: list[Change] = []
    if max_age > 0 and kinds:
        now = mem.clock()
        cutoff = now - max_age  # idle for longer than max_age: idle since strictly before it
        # idle_since >= created_at, so the store may skip memories created after the cutoff.
        for r in view.scan(Filter(kinds=kinds, created_before=cutoff, include_invalid=True)):
            if idle_since(r) < cutoff:
                why = (f"{r.kind} memory unused for {_days(now - idle_since(r))}"
                       f" (hygiene_max_age_s: {_days(max_age)})")
                changes.append(Change("hygiene", action, r, why))
    return _step(view, changes, {f"hygiene_{_PAST[action]}": len(changes)})


def hygiene_purge(mem: LocalMemory, *, dry_run: bool = False) -> Report:
    """000 hygiene: memories of hygiene kinds (``conversation``) whose idle clock
    (``idle_since``) is older than ``hygiene_max_age_s`` leave the live set: archived, or
    deleted under ``purge = "delete"``. 0 disables it. Counts: ``hygiene_archived`` (or
    ``hygiene_deleted``)."""
    return _hygiene(mem, _View(mem, dry_run=dry_run))


# --- 000 knowledge decay -------------------------------------------------------------------------
def _idle(mem: LocalMemory, view: _View, rng: random.Random | None) -> Report:
    cfg = mem.settings.lifecycle
    kinds = _kinds(lambda p: p.idle_purge and p.decay_rate > 0)
    action = _purge_action(mem)
    changes: list[Change] = []
    if cfg.knowledge_max_idle_days > 0 and kinds:
        roll = rng or random.Random()
        now = mem.clock()
        cutoff = now - cfg.knowledge_max_idle_days * DAY
        for r in view.scan(Filter(kinds=kinds, created_before=cutoff)):
            if r.decay_rate <= 0 or idle_since(r) >= cutoff:
                continue
            idle = (f"unused for {_days(now - idle_since(r))}"
                    f" (knowledge_max_idle_days: {cfg.knowledge_max_idle_days})")
            if roll.random() < cfg.knowledge_survival_chance:
                changes.append(Change("idle", "survive", r,
                                      f"{idle}; won the survival roll: its idle clock restarts",
                                      after=r.evolve(last_accessed=now)))
            else:
                changes.append(Change("idle", action, r, f"{idle}; lost the survival roll"))
    counts = {f"idle_{_PAST[action]}": _tally(changes, action),
              "idle_survived": _tally(changes, "survive")}
    return _step(view, changes, counts)


def knowledge_decay(
    mem: LocalMemory, rng: random.Random | None = None, *, dry_run: bool = False
) -> Report:
    """Use it or lose it (000): valid memories of idle-purge kinds idle for longer than
    ``knowledge_max_idle_days`` each roll ``rng.random() < knowledge_survival_chance``; a
    winner stays with ``last_accessed`` set to now, a loser leaves the live set (archived, or
    deleted under ``purge = "delete"``). Rolls are made oldest memory first, so a seeded ``rng``
    gives exact results. 0 days disables it. Counts: ``idle_archived`` (or ``idle_deleted``),
    ``idle_survived``."""
    return _idle(mem, _View(mem, dry_run=dry_run), rng)


# --- 004 Ebbinghaus confidence decay -------------------------------------------------------------
def _decay_reference(r: MemoryRecord) -> float:
    """Where this memory's decay time starts: its idle clock, or the last decay run if later."""
    try:
        last_run = float(r.metadata.get(DECAYED_AT) or 0.0)
    except (TypeError, ValueError):  # a user's own value under that key: ignore it
        last_run = 0.0
    return max(idle_since(r), last_run if math.isfinite(last_run) else 0.0)


def _decay(mem: LocalMemory, view: _View) -> Report:
    threshold = mem.settings.lifecycle.decay_threshold
    kinds = _kinds(lambda p: p.decay_rate > 0)
    now = mem.clock()
    changes: list[Change] = []
    for r in view.scan(Filter(kinds=kinds)) if kinds else []:
        days = (now - _decay_reference(r)) / DAY
        if r.decay_rate <= 0 or days <= 0:
            continue
        confidence = r.confidence * math.exp(-r.decay_rate * days)
        after = r.evolve(confidence=confidence, metadata={**r.metadata, DECAYED_AT: now})
        why = (f"confidence {r.confidence:.3g} -> {confidence:.3g} after {days:.1f} more idle"
               f" days at rate {r.decay_rate:g}/day")
        if confidence < threshold:
            changes.append(Change(
                "decay", "invalidate", r,
                f"{why}: under decay_threshold {threshold:g}, invalidated (kept in the store)",
                after=after.evolve(valid_until=now, updated_at=now)))
        else:
            changes.append(Change("decay", "decay", r, why, after=after))
    counts = {"decayed": len(changes), "invalidated": _tally(changes, "invalidate")}
    return _step(view, changes, counts)


def confidence_decay(mem: LocalMemory, *, dry_run: bool = False) -> Report:
    """004: ``confidence × exp(-decay_rate × days idle)`` for valid memories whose kind decays
    and whose own ``decay_rate`` is above 0; under ``decay_threshold`` the memory is
    invalidated (``valid_until`` = now: a soft delete, the record stays) and its vectors and
    entity links are dropped. See the module notes for why this is idempotent. Counts:
    ``decayed`` (every memory whose confidence changed), ``invalidated``."""
    return _decay(mem, _View(mem, dry_run=dry_run))


# --- 003 size-based pruning ----------------------------------------------------------------------
def prune_weight(mem: LocalMemory, r: MemoryRecord, now: float) -> float:
    """How much a memory is worth keeping: the product of the ranking factors recall multiplies
    by (reinforcement × recency × confidence — 003's scoreWeight × recency, plus 004's
    confidence). An invalidated memory weighs 0: recall never returns it."""
    if not r.is_valid:
        return 0.0
    return math.prod(factors(r, now, mem.settings.recall).values())


def _prune(mem: LocalMemory, view: _View) -> Report:
    cfg = mem.settings.lifecycle
    size = mem.store_backend.live_size_bytes()
    kinds = _kinds(lambda p: p.prunable)
    changes: list[Change] = []
    if size is not None and size > cfg.max_size_bytes and cfg.prune_percent > 0 and kinds:
        now = mem.clock()
        pool = view.scan(Filter(kinds=kinds, include_invalid=True))
        n = math.ceil(len(pool) * min(cfg.prune_percent, 100.0) / 100.0)
        # Ties (equal weight) go oldest first: the scan is oldest first and sorted() is stable.
        weighed = sorted(((prune_weight(mem, r, now), r) for r in pool), key=lambda p: p[0])
        why = (f"live data {size} bytes > max_size_bytes {cfg.max_size_bytes}: in the bottom"
               f" {cfg.prune_percent:g}% by weight")
        changes = [Change("prune", "archive", r, f"{why} ({w:.3g})") for w, r in weighed[:n]]
    return _step(view, changes, {"prune_archived": len(changes), "live_bytes": size or 0})


def prune(mem: LocalMemory, *, dry_run: bool = False) -> Report:
    """003: when the live data is larger than ``max_size_bytes``, archive the bottom
    ``prune_percent`` % (rounded up) of prunable memories by ``prune_weight``, whatever the
    purge policy: 003 never deletes. The measure is the live data (``Store.live_size_bytes``),
    not the file: the archive lives in the same file, so the file would stay over the limit and
    every run would archive another slice. Backends that cannot measure their size (memory,
    none) never prune. Counts: ``prune_archived``, ``live_bytes``."""
    return _prune(mem, _View(mem, dry_run=dry_run))


# --- the decay job -------------------------------------------------------------------------------
def run_decay(
    mem: LocalMemory, rng: random.Random | None = None, *, dry_run: bool = False
) -> Report:
    """The four steps in order: purges first, so decay and pruning do not work on what leaves
    anyway. ``dry_run=True`` plans them all and writes nothing (see the module notes)."""
    view = _View(mem, dry_run=dry_run)
    report = _hygiene(mem, view).add(_idle(mem, view, rng))
    return report.add(_decay(mem, view)).add(_prune(mem, view))


# --- the archive ---------------------------------------------------------------------------------
def recall_archive(mem: LocalMemory, query: str, limit: int | None = None) -> list[Hit]:
    """Archived memories matching ``query`` (BM25 over the archive's own full-text index), best
    first (``core.retrieval.Retrieval.recall_archive``)."""
    return mem.parts.retrieval.recall_archive(query, limit)


def restore(mem: LocalMemory, id_: str) -> MemoryRecord:
    """Bring an archived memory back into the live set (``core.records.Records.restore``)."""
    return mem.parts.records.restore(id_)

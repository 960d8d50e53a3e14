"""Repairing derived rows (the ``repair`` maintenance job, ``Memory.repair()``).

Since the vector queue (migration 004), every write commits a memory together with its entity
links, its link to the previous turn and its queue row, so a crash cannot leave them half done.
This repairs what older versions, a killed process or a failing model left behind, on the whole
file (every namespace, as ``reindex`` does):

- vectors: memories still queued, and any other without a vector (``backfill``);
- entity links: memories that have none are read again by the fast NER;
- dialogue chains: each session's episodes linked turn to turn (origin ``sequence``), exactly
  once: missing links are added, links that skip a turn (a fork left by concurrent writers
  before the chain was serialised) are removed.

Entity and chain checks start where the last run stopped (``meta.repair_checked_seq``), so a
nightly run reads only what arrived since. SQLite and PostgreSQL both keep these rows (the same
tables, a ``seq`` per memory); the in-process backends write everything under one lock.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import SQLRows as Rows
from clawmemory.backends.registry import backend_of
from clawmemory.errors import ClawMemoryError
from clawmemory.model import Filter, MemoryRecord

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["repair"]

MARK = "repair_checked_seq"
BATCH = 500


def repair(mem: LocalMemory) -> dict[str, int]:
    """Repair the whole store behind ``mem``; counts of what was rebuilt."""
    counts = {"vectors": _vectors(mem), "entity_links": 0, "sequence_links": 0,
              "skipping_links": 0}
    store = _database(mem)
    if store is None:
        return counts  # in-process backends write everything under one lock
    mark = _mark(store)
    head = int(_rows(store, "SELECT COALESCE(MAX(seq), 0) FROM memories")[0][0])
    if head <= mark:
        return counts
    for ns in mem.store_backend.namespaces():
        view = mem.with_namespace(ns)
        counts["entity_links"] += _entities(view, store, mark, head)
        if mem.settings.storage.sequence_links:
            added, removed = _chains(view, store, mark, head)
            counts["sequence_links"] += added
            counts["skipping_links"] += removed
    _set_mark(store, head)
    return counts


def _database(mem: LocalMemory) -> Rows | None:
    """The store's raw rows with the derived-row tables, or None (in-process backends)."""
    return backend_of(mem.store_backend).sql


def _rows(store: Rows, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    return store.rows(sql, args)


def _set_mark(store: Rows, head: int) -> None:
    store.set_meta(MARK, str(head))


def _vectors(mem: LocalMemory) -> int:
    if mem.parts.vectors.vectors() is None:
        return 0  # no embedder here: the queue waits for a process that has one
    done = 0
    for ns in mem.store_backend.namespaces():
        try:
            done += mem.with_namespace(ns).backfill()
        except ClawMemoryError:  # the model failed: rows stay queued, the rest still runs
            continue
    return done


def _mark(store: Rows) -> int:
    rows = _rows(store, "SELECT value FROM meta WHERE key = ?", (MARK,))
    try:
        return int(rows[0][0]) if rows else 0
    except ValueError:
        return 0


def _entities(mem: LocalMemory, store: Rows, mark: int, head: int) -> int:
    """Link memories in (mark, head] that have no entity link; returns how many got some."""
    layer = mem.parts.entities.layer()
    if layer is None:
        return 0
    index, ner = layer
    linked = 0
    after = mark
    while rows := _rows(
        store,
        "SELECT m.seq, m.id, m.content FROM memories m WHERE m.namespace = ? AND m.seq > ?"
        " AND m.seq <= ? AND NOT EXISTS (SELECT 1 FROM memory_entities e WHERE"
        " e.namespace = m.namespace AND e.memory_id = m.id) ORDER BY m.seq LIMIT ?",
        (mem.namespace, after, head, BATCH),
    ):
        after = int(rows[-1][0])
        items = [(str(mid), ner.extract(str(text))) for _, mid, text in rows]
        items = [(mid, found) for mid, found in items if found]
        if items:
            index.link_many(mem.namespace, items)
            linked += len(items)
    return linked


def _chains(mem: LocalMemory, store: Rows, mark: int, head: int) -> tuple[int, int]:
    """Make each session touched since ``mark`` one chain of sequence links."""
    sessions = [str(r[0]) for r in _rows(
        store, "SELECT DISTINCT session_id FROM memories WHERE namespace = ? AND seq > ? AND"
        " seq <= ? AND kind = 'episode' AND session_id IS NOT NULL", (mem.namespace, mark, head))]
    added = removed = 0
    for sid in sessions:
        # The namespace's writer transaction (PostgreSQL: its lock taken before the read):
        # a concurrent observe() cannot extend the chain between reading and mending it.
        with mem.parts.writes.transaction():
            episodes = mem.store_backend.list(
                mem.namespace, Filter(kinds=("episode",), session_id=sid), limit=1_000_000,
                order="oldest")
            a, r = _fix_chain(mem, episodes)
        added += a
        removed += r
    return added, removed


def _fix_chain(mem: LocalMemory, episodes: Sequence[MemoryRecord]) -> tuple[int, int]:
    ns, backend = mem.namespace, mem.store_backend
    wanted = {tuple(sorted((p.id, c.id))) for p, c in itertools.pairwise(episodes)
              if not c.key}  # a keyed episode is an upsert target, not a turn (as on write)
    members = {e.id for e in episodes}
    have: set[tuple[str, ...]] = set()
    for i in range(0, len(episodes), BATCH):
        part = [e.id for e in episodes[i : i + BATCH]]
        for mid, links in backend.links(ns, part).items():
            have.update(tuple(sorted((mid, lk.other_id))) for lk in links
                        if lk.origin == "sequence" and lk.other_id in members)
    for a, b in wanted - have:
        backend.link(ns, a, b, strength=1.0, origin="sequence")
    for a, b in have - wanted:
        backend.unlink(ns, a, b)
    return len(wanted - have), len(have - wanted)

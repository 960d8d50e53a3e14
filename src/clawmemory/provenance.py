"""Provenance: what a memory was derived from, and what goes with it when it is forgotten.

A derived memory (an extracted or consolidated fact, a synthesis note, a summary, a
reflection, a soul entry) names the memories it came from in ``source_ids`` (004). Forgetting
a memory forgets, with it, every memory that names it among its sources, whatever else backs
that memory: its text may quote the forgotten one word for word, and nothing can tell which of
its words came from which source (ADR 0022, which amends ADR 0010). It repeats: what was derived
from a derived memory that goes, goes too. Each memory that goes takes its whole history: its
correction chain (``supersedes``) and any archived memory holding the same key.

The store finds derived memories by index (``Store.derived``; the ``memory_sources`` table on
SQLite), so forgetting a memory nothing was derived from costs one indexed lookup.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clawmemory.backends.base import Store
from clawmemory.model import MemoryRecord

__all__ = ["ForgetPlan", "forget_set"]


@dataclass
class ForgetPlan:
    """Everything one ``forget`` removes: the named memory's versions (``record`` first),
    then the derived memories (with their versions), and the sources those derived memories
    also named that stay (what was derived from them may be derived again)."""

    record: MemoryRecord
    versions: list[MemoryRecord] = field(default_factory=list)
    derived: list[MemoryRecord] = field(default_factory=list)
    survivors: list[str] = field(default_factory=list)

    @property
    def removed(self) -> list[MemoryRecord]:
        return [*self.versions, *self.derived]


def forget_set(store: Store, namespace: str, record: MemoryRecord) -> ForgetPlan:
    """Plan forgetting ``record``: its history, then, recursively, every memory derived from
    anything removed (with its history)."""
    doomed: dict[str, MemoryRecord] = {}
    plan = ForgetPlan(record)
    plan.versions = _take_history(store, namespace, record, doomed)
    plan.versions.sort(key=lambda r: r.id != record.id)
    frontier = list(plan.versions)
    sources: set[str] = set()
    while frontier:
        found = store.derived(namespace, [r.id for r in frontier])
        frontier = []
        for r, _ in found:
            if r.id not in doomed:
                sources.update(r.source_ids)
                frontier += _take_history(store, namespace, r, doomed)
        plan.derived += frontier
    plan.survivors = sorted(sources - set(doomed))
    return plan


def _take_history(
    store: Store, namespace: str, record: MemoryRecord, doomed: dict[str, MemoryRecord]
) -> list[MemoryRecord]:
    """``record``'s versions not yet in ``doomed`` (added to it): its correction chain, and
    the holders of any key a version carries, live or archived (a store written before keyed
    writes revived archived holders can have both)."""
    fresh: list[MemoryRecord] = []
    todo = [record]
    while todo:
        r = todo.pop()
        if r.id in doomed:
            continue
        versions = [v for v, _ in store.chain(namespace, r.id)] or [r]
        for v in versions:
            if v.id not in doomed:
                doomed[v.id] = v
                fresh.append(v)
                todo += _key_holders(store, namespace, v)
    return fresh


def _key_holders(store: Store, namespace: str, record: MemoryRecord) -> list[MemoryRecord]:
    if not record.key:
        return []
    found = [store.get(namespace, record.key), store.find_archived(namespace, record.key)]
    return [r for r in found if r is not None and r.key == record.key and r.id != record.id]

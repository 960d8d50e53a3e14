"""Provenance: what a memory was derived from, and what goes with it when it is forgotten.

A derived memory (an extracted or consolidated fact, a synthesis note, a summary, a
reflection, a soul entry) names the memories it came from in ``source_ids`` (004). Forgetting
a memory forgets, with it, every memory derived from it *alone*: one whose every source is
being forgotten now or is no longer stored. A memory with another source still stored stays
(what it says is still backed by that source). It repeats: what was derived from a derived
memory that goes, goes too if nothing else backs it. Each memory that goes takes its whole
correction chain (004 corrections), as ``forget`` always did. ADR 0010.

The store finds derived memories by index (``Store.derived``; the ``memory_sources`` table on
SQLite), so forgetting a memory nothing was derived from costs one indexed lookup.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from clawmemory.model import MemoryRecord
from clawmemory.store.base import Store

__all__ = ["forget_set"]


def forget_set(store: Store, namespace: str, record: MemoryRecord) -> list[MemoryRecord]:
    """Everything forgetting ``record`` removes: its versions, then, recursively, the memories
    derived from what is removed alone (with their versions). ``record``'s versions first."""
    doomed: dict[str, MemoryRecord] = {}

    def take_chain(r: MemoryRecord) -> list[MemoryRecord]:
        versions = [v for v, _ in store.chain(namespace, r.id)] or [r]
        fresh = [v for v in versions if v.id not in doomed]
        doomed.update((v.id, v) for v in fresh)
        return fresh

    frontier = take_chain(record)
    while frontier:
        found = store.derived(namespace, [r.id for r in frontier])
        frontier = []
        for r, _ in found:
            if r.id not in doomed and _unbacked(store, namespace, r.source_ids, doomed):
                frontier += take_chain(r)
    return list(doomed.values())


def _unbacked(
    store: Store, namespace: str, sources: Sequence[str], doomed: Collection[str]
) -> bool:
    """Whether none of ``sources`` outlives this forget: each is being forgotten or is not
    stored (live or archived) any more."""
    others = [s for s in dict.fromkeys(sources) if s not in doomed]
    if not others:
        return True
    if store.get_many(namespace, others):
        return False
    return all(store.find_archived(namespace, s) is None for s in others)

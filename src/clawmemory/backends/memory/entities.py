"""The entity index in Python dicts, for the in-memory and JSON backends. Same contract and same
answers as the SQLite index (both resolve names with ``linking``); ``to_dict``/``from_dict`` let
the JSON backend persist it. Thread-safe."""

from __future__ import annotations

import heapq
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from clawmemory.entities.base import (
    COMMON_MIN,
    COMMON_SHARE,
    MAX_SEARCH_NAMES,
    EntityHit,
    EntityProfile,
    EntityType,
    Mention,
    alias_key,
    match_keys,
    normalize_name,
    rank_entity_hits,
    surface_form,
)
from clawmemory.entities.linking import (
    Stored,
    Wanted,
    best_named,
    group_mentions,
    merge_alias,
    new_entity_id,
    pick,
    refreshed,
    upgraded_type,
)

__all__ = ["MemoryEntityIndex"]

Exists = Callable[[str, str], bool]


@dataclass
class _Namespace:
    entities: dict[str, Stored] = field(default_factory=dict)
    by_memory: dict[str, dict[str, int]] = field(default_factory=dict)  # memory -> entity -> seq
    by_entity: dict[str, dict[str, int]] = field(default_factory=dict)  # entity -> memory -> seq
    # Name and alias keys -> entity ids, as the SQLite indexes: a lookup never scans.
    by_norm: dict[str, set[str]] = field(default_factory=dict)
    by_alias: dict[str, set[str]] = field(default_factory=dict)

    def put(self, s: Stored) -> None:
        """Add or replace an entity (its norm never changes; aliases only grow)."""
        self.entities[s.id] = s
        self.by_norm.setdefault(s.norm, set()).add(s.id)
        for a in s.aliases:
            self.by_alias.setdefault(alias_key(a), set()).add(s.id)

    def remove(self, entity_id: str) -> None:
        s = self.entities.pop(entity_id, None)
        if s is None:
            return
        for table, key in ((self.by_norm, s.norm), *((self.by_alias, alias_key(a))
                                                     for a in s.aliases)):
            ids = table.get(key)
            if ids is not None:
                ids.discard(entity_id)
                if not ids:
                    del table[key]

    def lookup(self, norms: set[str], keys: set[str]) -> list[Stored]:
        ids = {i for n in norms for i in self.by_norm.get(n, ())}
        ids |= {i for k in keys for i in self.by_alias.get(k, ())}
        return [self.entities[i] for i in sorted(ids)]


class MemoryEntityIndex:
    """``exists(namespace, memory_id)``, when given, refuses links to memories that are gone."""

    def __init__(self, exists: Exists | None = None) -> None:
        self._ns: defaultdict[str, _Namespace] = defaultdict(_Namespace)
        self._lock = threading.RLock()
        self._exists = exists
        self._seq = 0

    # --- writes --------------------------------------------------------------------------------
    def link_many(
        self, namespace: str, items: Sequence[tuple[str, Sequence[Mention]]], *,
        replace: bool = False,
    ) -> None:
        for memory_id, mentions in items:
            self.link_mentions(namespace, memory_id, mentions, replace=replace)

    def link_mentions(
        self, namespace: str, memory_id: str, mentions: Sequence[Mention], *,
        replace: bool = False,
    ) -> list[str]:
        if self._exists is not None and not self._exists(namespace, memory_id):
            return []
        with self._lock:
            ns = self._ns[namespace]
            ids = list(dict.fromkeys(self._resolve(ns, memory_id, w)
                                     for w in group_mentions(mentions)))
            if replace:
                stale = [e for e in ns.by_memory.get(memory_id, {}) if e not in ids]
                self._drop_links(ns, memory_id, stale)
            return ids

    def _resolve(self, ns: _Namespace, memory_id: str, w: Wanted) -> str:
        found = pick(ns.lookup({w.norm}, set(w.keys)), w)
        if found is None:
            found = Stored(new_entity_id(), w.display, w.norm, w.type, (), 0)
        better = upgraded_type(found, w)
        if better is not None and any(
            ns.entities[i].type is better for i in ns.by_norm.get(found.norm, ())
        ):
            better = None  # another entity holds that name and type already
        found = refreshed(found, w, better)
        linked = ns.by_memory.setdefault(memory_id, {})
        if found.id not in linked:
            self._seq += 1
            linked[found.id] = self._seq
            ns.by_entity.setdefault(found.id, {})[memory_id] = self._seq
            found = replace(found, mention_count=found.mention_count + 1)
        ns.put(found)
        return found.id

    def _drop_links(self, ns: _Namespace, memory_id: str, entity_ids: Sequence[str]) -> int:
        linked = ns.by_memory.get(memory_id, {})
        removed = 0
        for eid in entity_ids:
            if linked.pop(eid, None) is None:
                continue
            removed += 1
            mems = ns.by_entity.get(eid, {})
            mems.pop(memory_id, None)
            if not mems:  # nobody mentions it any more: its name goes with the memory
                ns.by_entity.pop(eid, None)
                ns.remove(eid)
            elif eid in ns.entities:
                s = ns.entities[eid]
                ns.put(replace(s, mention_count=max(s.mention_count - 1, 1)))
        if not linked:
            ns.by_memory.pop(memory_id, None)
        return removed

    def unlink_memory(self, namespace: str, memory_id: str) -> int:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return 0
            return self._drop_links(ns, memory_id, list(ns.by_memory.get(memory_id, {})))

    def add_alias(self, namespace: str, entity_id: str, alias: str) -> bool:
        with self._lock:
            ns = self._ns.get(namespace)
            s = ns.entities.get(entity_id) if ns else None
            if ns is None or s is None:
                return False
            aliases = merge_alias(s, [surface_form(alias)])
            if aliases is None:
                return False
            ns.put(replace(s, aliases=aliases))
            return True

    def drop_namespace(self, namespace: str) -> None:
        with self._lock:
            self._ns.pop(namespace, None)

    # --- reads ---------------------------------------------------------------------------------
    def search(self, namespace: str, names: Sequence[str], limit: int) -> list[EntityHit]:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None or limit <= 0:
                return []
            names = list(names)[:MAX_SEARCH_NAMES]
            norms = {normalize_name(n) for n in names} - {""}
            keys = {k for n in names for k in match_keys(n)}
            common = max(COMMON_MIN, COMMON_SHARE * len(ns.by_memory))
            matched = [s for s in ns.lookup(norms, keys) if s.mention_count <= common]
            # See SQLiteEntityIndex.search: each entity's `limit` most recent memories.
            return rank_entity_hits([
                (s.canonical_name, s.mention_count,
                 heapq.nlargest(limit, ns.by_entity.get(s.id, {}).items(), key=lambda x: x[1]))
                for s in matched], limit)

    def entities_of(
        self, namespace: str, memory_ids: Sequence[str]
    ) -> dict[str, list[EntityProfile]]:
        with self._lock:
            ns = self._ns.get(namespace) or _Namespace()
            return {
                mid: [ns.entities[e].profile()
                      for e in sorted(ns.by_memory.get(mid, {}),
                                      key=lambda e: ns.by_memory[mid][e])
                      if e in ns.entities]
                for mid in memory_ids
            }

    def profile(self, namespace: str, name: str) -> EntityProfile | None:
        with self._lock:
            ns = self._ns.get(namespace)
            if ns is None:
                return None
            found = best_named(ns.lookup({normalize_name(name)}, set(match_keys(name))), name)
            return found.profile() if found else None

    def memories_of(self, namespace: str, entity_id: str, limit: int) -> list[str]:
        with self._lock:
            ns = self._ns.get(namespace)
            mems = ns.by_entity.get(entity_id, {}) if ns else {}
            return sorted(mems, key=lambda m: -mems[m])[: max(limit, 0)]

    def entity_count(self, namespace: str) -> int:
        with self._lock:
            ns = self._ns.get(namespace)
            return len(ns.entities) if ns else 0

    def entities(self, namespace: str, limit: int) -> list[EntityProfile]:
        with self._lock:
            ns = self._ns.get(namespace)
            rows = sorted(ns.entities.values(), key=lambda s: (-s.mention_count, s.norm, s.id)) \
                if ns else []
            return [s.profile() for s in rows[: max(limit, 0)]]

    # --- persistence (JSON backend) ------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able state; links keep their order."""
        with self._lock:
            return {
                name: {
                    "entities": [_entity_dict(s) for s in ns.entities.values()],
                    "links": sorted(
                        ([mid, eid, seq] for mid, ents in ns.by_memory.items()
                         for eid, seq in ents.items()), key=lambda x: x[2]),
                }
                for name, ns in self._ns.items() if ns.entities
            }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], exists: Exists | None = None) -> MemoryEntityIndex:
        index = cls(exists)
        for name, state in data.items():
            ns = index._ns[name]
            for e in state.get("entities", []):
                ns.put(_entity_from(e))
            for mid, eid, seq in state.get("links", []):
                ns.by_memory.setdefault(mid, {})[eid] = int(seq)
                ns.by_entity.setdefault(eid, {})[mid] = int(seq)
                index._seq = max(index._seq, int(seq))
        return index


def _entity_dict(s: Stored) -> dict[str, Any]:
    return {"id": s.id, "canonical_name": s.canonical_name, "type": s.type.value,
            "aliases": list(s.aliases), "mention_count": s.mention_count, "summary": s.summary}


def _entity_from(e: Mapping[str, Any]) -> Stored:
    try:
        etype = EntityType(e.get("type", "other"))
    except ValueError:
        etype = EntityType.OTHER
    name = str(e["canonical_name"])
    return Stored(str(e["id"]), name, normalize_name(name), etype,
                  tuple(str(a) for a in e.get("aliases", ())), int(e.get("mention_count", 1)),
                  e.get("summary"))

"""The link graph (000) and the entities (004) of one namespace: link, unlink, neighbours, a
memory's links, the entities a memory mentions and everything known about one entity."""

from __future__ import annotations

import builtins
from typing import Any

from clawmemory.backends.base import Link, Store
from clawmemory.core.entities import EntitySource
from clawmemory.errors import InvalidInputError, NotFoundError
from clawmemory.model import MemoryRecord
from clawmemory.validation import check_label, check_limit, check_ref, check_strength

__all__ = ["Graph"]


class Graph:
    """Links between memories and the entities they mention, in one namespace."""

    def __init__(self, store: Store, namespace: str, *, entities: EntitySource) -> None:
        self.store = store
        self.namespace = namespace
        self.entities = entities

    def link(self, a: str, b: str, *, strength: float = 1.0, origin: str = "manual") -> bool:
        """``Memory.link``: both ways; False if either does not exist."""
        strength = check_strength(strength)
        label = check_label(origin, "origin")
        if label is None:
            raise InvalidInputError("origin must be non-empty text")
        ra = self.store.get(self.namespace, check_ref(a))
        rb = self.store.get(self.namespace, check_ref(b))
        if ra is None or rb is None:
            return False
        return self.store.link(
            self.namespace, ra.id, rb.id, strength=strength, origin=label, accumulate=False
        )

    def unlink(self, a: str, b: str) -> bool:
        ra = self.store.get(self.namespace, check_ref(a))
        rb = self.store.get(self.namespace, check_ref(b))
        if ra is None or rb is None:
            return False
        return self.store.unlink(self.namespace, ra.id, rb.id)

    def links(self, record: MemoryRecord, limit: int) -> builtins.list[Link]:
        """The links of a memory, strongest first."""
        return self.store.links(self.namespace, [record.id])[record.id][
            : check_limit(limit, maximum=10_000)]

    def neighbors(self, record: MemoryRecord, limit: int) -> builtins.list[MemoryRecord]:
        """Memories linked to this one, strongest link first."""
        links = self.store.links(self.namespace, [record.id])[record.id]
        ids = [lk.other_id for lk in links[: check_limit(limit)]]
        return self.store.get_many(self.namespace, ids)

    def entities_of(self, record: MemoryRecord) -> builtins.list[dict[str, Any]]:
        """The entities a memory mentions; [] when the entity layer is off."""
        layer = self.entities.layer()
        if layer is None:
            return []
        found = layer.entity_index.entities_of(self.namespace, [record.id]).get(record.id, [])
        return [{"id": p.id, "name": p.canonical_name, "type": str(p.type),
                 "aliases": list(p.aliases), "mention_count": p.mention_count} for p in found]

    def entity_info(self, name: str, *, limit: int = 20) -> dict[str, Any]:
        """``Memory.entity_info``: an entity's profile and the memories that mention it."""
        name = check_ref(name, "entity name")
        limit = check_limit(limit)
        layer = self.entities.layer()
        index = layer.entity_index if layer is not None else None
        profile = index.profile(self.namespace, name) if index is not None else None
        if index is None or profile is None:
            raise NotFoundError(f"no entity named {name!r} in namespace {self.namespace!r}")
        ids = index.memories_of(self.namespace, profile.id, limit)
        return {
            "id": profile.id,
            "name": profile.canonical_name,
            "type": str(profile.type),
            "aliases": list(profile.aliases),
            "mention_count": profile.mention_count,
            "summary": profile.summary,
            "memories": self.store.get_many(self.namespace, ids),
        }

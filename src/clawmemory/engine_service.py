"""The operations of ``Memory`` that a service exposes beyond reading and writing memories (a
mixin, so engine.py stays one readable service): maintenance runs and previews, the link graph
(link, unlink, neighbours, a memory's links) and entities. Each is public so that every
interface (CLI, REST, inspector, the remote client) calls the same method."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from clawmemory.errors import InvalidInputError, NotFoundError
from clawmemory.validation import check_label, check_limit, check_ref, check_strength

if TYPE_CHECKING:
    from clawmemory.backends.base import Link, RunRecord, Store
    from clawmemory.core.composition import Parts
    from clawmemory.engine import Memory
    from clawmemory.model import MemoryRecord

__all__ = ["ALL_JOBS", "ServiceMixin"]

ALL_JOBS = "all"  # every job, in the table's order


def _job_name(job: Any) -> str:
    from clawmemory.maintenance import JOBS

    if not isinstance(job, str) or (job != ALL_JOBS and job not in JOBS):
        raise InvalidInputError(f"unknown job {job!r}; one of: {', '.join(JOBS)}, {ALL_JOBS}")
    return job


class ServiceMixin:
    """Maintenance, the link graph and entities of one namespace."""

    store_backend: Store
    namespace: str
    parts: Parts

    if TYPE_CHECKING:

        def get(self, id_or_key: str) -> MemoryRecord: ...

        def with_namespace(self, namespace: str) -> Memory: ...

    def maintain(self, job: str = ALL_JOBS) -> builtins.list[RunRecord]:
        """Run one maintenance job now (``maintenance.JOBS``: enrich, consolidate, decay,
        reflect, repair), or all of them, in this namespace. Each run is recorded and
        returned, whatever its outcome (ok, skipped, failed)."""
        from clawmemory.maintenance import run_all, run_job

        view = self.with_namespace(self.namespace)
        name = _job_name(job)
        return run_all(view) if name == ALL_JOBS else [run_job(view, name)]

    def preview_maintenance(self, job: str = ALL_JOBS) -> builtins.list[dict[str, Any]]:
        """What ``maintain(job)`` would do now, memory by memory, writing nothing: one
        ``JobPreview.to_dict()`` per job (namespace, job, outcome, counts, message, changes)."""
        from clawmemory.maintenance import preview_all, preview_job

        view = self.with_namespace(self.namespace)
        name = _job_name(job)
        previews = preview_all(view) if name == ALL_JOBS else [preview_job(view, name)]
        return [p.to_dict() for p in previews]

    def runs(self, limit: int = 20, *, job: str | None = None) -> builtins.list[RunRecord]:
        """Recorded maintenance runs of this namespace, newest first (only ``job``'s when
        given)."""
        if job is not None:
            _job_name(job)
        return self.store_backend.runs(self.namespace, check_limit(limit, maximum=10_000),
                                       job=job)

    def links(self, id_or_key: str, *, limit: int = 50) -> builtins.list[Link]:
        """The links of a memory (the other end's id, strength and origin: manual, synthesis,
        co-recall, sequence), strongest first; ``neighbors`` gives the linked memories."""
        record = self.get(id_or_key)
        return self.store_backend.links(self.namespace, [record.id])[record.id][
            : check_limit(limit, maximum=10_000)]

    def entities_of(self, id_or_key: str) -> builtins.list[dict[str, Any]]:
        """The entities a memory mentions (id, name, type, aliases, mention_count); [] when
        the entity layer is off."""
        record = self.get(id_or_key)
        layer = self.parts.entities.layer()
        if layer is None:
            return []
        found = layer.entity_index.entities_of(self.namespace, [record.id]).get(record.id, [])
        return [{"id": p.id, "name": p.canonical_name, "type": str(p.type),
                 "aliases": list(p.aliases), "mention_count": p.mention_count} for p in found]

    # --- graph (000) ---------------------------------------------------------------------------
    def link(self, a: str, b: str, *, strength: float = 1.0, origin: str = "manual") -> bool:
        """Link two memories (by id or key) both ways. False if either does not exist.
        ``strength``: greater than 0, at most 1,000. Linking a linked pair again keeps the
        larger strength, so a repeated link changes nothing and never weakens a link that
        co-recall has grown (to lower it: ``unlink``, then ``link``)."""
        strength = check_strength(strength)
        label = check_label(origin, "origin")
        if label is None:
            raise InvalidInputError("origin must be non-empty text")
        ra = self.store_backend.get(self.namespace, check_ref(a))
        rb = self.store_backend.get(self.namespace, check_ref(b))
        if ra is None or rb is None:
            return False
        return self.store_backend.link(
            self.namespace, ra.id, rb.id, strength=strength, origin=label, accumulate=False
        )

    def unlink(self, a: str, b: str) -> bool:
        ra = self.store_backend.get(self.namespace, check_ref(a))
        rb = self.store_backend.get(self.namespace, check_ref(b))
        if ra is None or rb is None:
            return False
        return self.store_backend.unlink(self.namespace, ra.id, rb.id)

    def neighbors(self, id_or_key: str, limit: int = 10) -> builtins.list[MemoryRecord]:
        """Memories linked to this one, strongest link first."""
        record = self.get(id_or_key)
        links = self.store_backend.links(self.namespace, [record.id])[record.id]
        ids = [lk.other_id for lk in links[: check_limit(limit)]]
        return self.store_backend.get_many(self.namespace, ids)

    # --- entities (004) ------------------------------------------------------------------------
    def entity_info(self, name: str, *, limit: int = 20) -> dict[str, Any]:
        """Everything known about an entity (004 get_entity_info): its profile (canonical name,
        type, aliases, mention count) and the memories that mention it, newest first."""
        name = check_ref(name, "entity name")
        limit = check_limit(limit)
        layer = self.parts.entities.layer()
        index = layer[0] if layer is not None else None
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
            "memories": self.store_backend.get_many(self.namespace, ids),
        }

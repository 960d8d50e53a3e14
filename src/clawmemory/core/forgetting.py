"""Forgetting for real (ADR 0022): a memory with every version of it and everything derived
from it, or a whole namespace, leaves the store, its derived rows, the Markdown mirror and the
LLM response cache."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from clawmemory.config import Settings
from clawmemory.core.shared import StoreParts
from clawmemory.core.writes import WritePath
from clawmemory.errors import NotFoundError
from clawmemory.model import Forgotten
from clawmemory.private import scrub_file
from clawmemory.provenance import forget_set
from clawmemory.validation import check_ref

__all__ = ["Forgetting"]

log = logging.getLogger("clawmemory")


class Forgetting:
    """Hard deletes in one namespace."""

    def __init__(
        self, shared: StoreParts, settings: Settings, namespace: str, *, writes: WritePath
    ) -> None:
        self.shared = shared
        self.store = shared.store
        self.settings = settings
        self.namespace = namespace
        self.writes = writes

    def forget(self, id_or_key: str) -> Forgotten:
        """``Memory.forget``: the memory, live or archived, its versions and what was derived
        from it go; the sessions a forgotten derived fact came from are consolidated again."""
        ref = check_ref(id_or_key)
        record = self.store.get(self.namespace, ref)
        if record is None:
            record = self.store.find_archived(self.namespace, ref)
        if record is None:
            raise NotFoundError(
                f"no memory with id or key {id_or_key!r} in namespace {self.namespace!r}"
            )
        plan = forget_set(self.store, self.namespace, record)
        ids = [r.id for r in plan.removed]
        self.store.delete(self.namespace, ids)
        self.unindex(ids)
        self.writes.mirror(removed=plan.removed)
        self.scrub_response_cache()
        reopened = self.reopen_sessions(plan.survivors) if plan.derived else ()
        done = Forgotten(record, tuple(r.id for r in plan.versions[1:]),
                         tuple(r.id for r in plan.derived), reopened)
        if done.deleted > 1:
            log.info("%s", done.summary())
        return done

    def forget_namespace(self) -> int:
        """Remove this whole tenant: records, links, entities, history, archive."""
        removed = self.store.delete_namespace(self.namespace)
        self.shared.forget_namespace_state(self.namespace)
        self.scrub_response_cache()
        mirror = self.shared.mirrors.of(self.namespace)
        if mirror is not None:
            mirror.sync([])
        vectors = self.shared.vectors.loaded_vectors()
        if vectors is not None:
            vectors.drop_namespace(self.namespace)
        layer = self.shared.entities.layer()
        if layer is not None:
            layer.entity_index.drop_namespace(self.namespace)
        return removed

    def unindex(self, ids: Sequence[str]) -> None:
        """Drop what the engine keeps for these memories outside the store's own rows (cached
        or in-RAM vectors, entity links of the in-memory index)."""
        vectors = self.shared.vectors.loaded_vectors()  # never load a model just to forget
        if vectors is not None:
            vectors.forget(self.namespace, ids)
        layer = self.shared.entities.layer()
        if layer is not None:
            for mid in ids:
                layer.entity_index.unlink_memory(self.namespace, mid)

    def reopen_sessions(self, survivors: Sequence[str]) -> tuple[str, ...]:
        """The sessions of the surviving episodes a forgotten derived fact also came from,
        marked unconsolidated: the next consolidation derives again from what is left (pages
        whose facts still stand are skipped, ADR 0010 decision 2)."""
        episodes = [r for r in self.store.get_many(self.namespace, list(survivors))
                    if r.kind == "episode" and r.session_id]
        ledger = self.shared.backend.sessions
        sessions = sorted({r.session_id for r in episodes if r.session_id})
        return tuple(s for s in sessions if ledger.reopen(self.namespace, s))

    def scrub_response_cache(self) -> None:
        """Answers in the LLM response cache may quote what was just forgotten: the file goes
        (a cache; every ``ResponseCache`` notices and drops what it holds in RAM)."""
        scrub_file(self.settings.llm.resolved_cache_path())

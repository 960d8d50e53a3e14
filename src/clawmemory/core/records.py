"""Reading and changing stored memories one at a time: get, list, count, update, the feedback
operations (reinforce, demote, confirm, correct: 003, 004), the correction chain, the archive
(list, restore) and the namespace's statistics. Every change goes through the write path, so
its derived rows (entity links, vector, mirror note) follow it."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from clawmemory.api import TIME_FIELDS, UNSET
from clawmemory.backends.base import ORDERS, ArchiveEntry, Store
from clawmemory.config import Settings
from clawmemory.core.retrieval import checked_filter
from clawmemory.core.vectors import VectorService
from clawmemory.core.writes import WritePath
from clawmemory.errors import InvalidInputError, NotFoundError
from clawmemory.model import Filter, Kind, MemoryRecord, correction_of, kind_policy, normalize_kind
from clawmemory.search.access import settle
from clawmemory.validation import (
    check_content,
    check_key,
    check_limit,
    check_offset,
    check_ref,
    check_tags,
    check_time,
    check_weight,
)

__all__ = ["COUNT_FILTERS", "UNSET", "Records"]

# count()'s filters: the time arguments (api.TIME_FIELDS, defined once) and these.
COUNT_FILTERS = frozenset({"tags", "metadata", "session_id", "exclude_session_id",
                           "narrative_id", "task_id", "source", *TIME_FIELDS})


class Records:
    """The memories of one namespace, one at a time."""

    def __init__(
        self,
        store: Store,
        settings: Settings,
        namespace: str,
        clock: Callable[[], float],
        *,
        writes: WritePath,
        vectors: VectorService,
    ) -> None:
        self.store = store
        self.settings = settings
        self.namespace = namespace
        self.clock = clock
        self.writes = writes
        self.vectors = vectors

    def flush(self) -> None:
        """Write queued access counts now (search/access.py): every read of stored records
        flushes first, so what a recall counted is always what the next read sees."""
        settle(self.store)

    # --- reading -------------------------------------------------------------------------------
    def get(self, id_or_key: str) -> MemoryRecord:
        """The memory with this id or key; raises NotFoundError."""
        self.flush()
        record = self.store.get(self.namespace, check_ref(id_or_key))
        if record is None:
            raise NotFoundError(
                f"no memory with id or key {id_or_key!r} in namespace {self.namespace!r}"
            )
        return record

    def list(self, *, limit: int = 50, offset: int = 0, order: str = "newest",
             **filters: Any) -> builtins.list[MemoryRecord]:
        """Memories matching ``filters`` (``Memory.list``'s), in ``order``."""
        self.flush()
        if not isinstance(order, str) or order not in ORDERS:
            raise InvalidInputError(f"order must be one of {', '.join(ORDERS)}")
        flt = checked_filter(self.settings, self.clock, **filters)
        return self.store.list(
            self.namespace,
            flt,
            limit=check_limit(limit, maximum=10_000),
            offset=check_offset(offset),
            order=order,
        )

    def count(self, *, kind: str | Iterable[str] | None = None, include_invalid: bool = False,
              **filters: Any) -> int:
        self.flush()
        if unknown := sorted(set(filters) - COUNT_FILTERS):
            raise InvalidInputError(f"count() got an unknown filter {unknown[0]!r}; filters: "
                                    f"{', '.join(sorted(COUNT_FILTERS))}")
        flt = checked_filter(self.settings, self.clock, kind=kind,
                             include_invalid=include_invalid, **filters)
        return self.store.count(self.namespace, flt)

    def history(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        """The correction chain through this memory, oldest first (archived versions are not
        part of it)."""
        record = self.get(id_or_key)
        chain = [r for r, archived in self.store.chain(self.namespace, record.id)
                 if not archived]
        return chain or [record]

    def derived(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        """The live memories derived from this one (naming it in their ``source_ids``)."""
        record = self.get(id_or_key)
        found = self.store.derived(self.namespace, [record.id])
        return [r for r, archived in found if not archived]

    def stats(self) -> dict[str, Any]:
        self.flush()
        s = self.store.stats(self.namespace)
        return {
            "backend": s.backend,
            "path": s.path,
            "namespace": self.namespace,
            "total": s.total,
            "by_kind": s.by_kind,
            "invalidated": s.invalidated,
            "archived": self.store.archive_count(self.namespace),
            "links": s.links,
            "newest": s.newest,
            "oldest": s.oldest,
            "size_bytes": s.size_bytes,
            "vectors": self.vectors.vector_status(),
            "vectors_queued": self.vectors.queued(self.namespace),
        }

    # --- changing ------------------------------------------------------------------------------
    def update(
        self,
        id_or_key: str,
        *,
        content: str | None = None,
        tags: Iterable[str] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        kind: Kind | None = None,
        key: str | None = UNSET,
        event_time: Any = UNSET,
    ) -> MemoryRecord:
        """Change a memory in place. Its score is kept and its recency clock reset (003)."""
        current = self.get(id_or_key)
        changes = self._changes(current, content=content, tags=tags, metadata=metadata,
                                kind=kind, key=key, event_time=event_time)
        updated = current.evolve(**changes)
        text_changed = updated.content != current.content or updated.key != current.key
        mentions = self.writes.mentions([updated]) if "content" in changes else []
        with self.writes.transaction():
            self.store.replace(updated)
            entries = self.writes.derive([(updated, False)], mentions) if text_changed else []
        self.writes.mirror([updated])
        if text_changed:
            self.writes.fill([updated], entries, {})
        return updated

    def _changes(self, current: MemoryRecord, *, content: str | None,
                 tags: Iterable[str] | str | None, metadata: Mapping[str, Any] | None,
                 kind: Kind | None, key: str | None, event_time: Any) -> dict[str, Any]:
        """The checked fields an update sets."""
        cfg = self.settings.storage
        changes: dict[str, Any] = {"updated_at": self.clock(), "last_accessed": self.clock()}
        if content is not None:
            changes["content"] = check_content(content, cfg.max_content_chars)
        if tags is not None:
            changes["tags"] = check_tags(tags)
        if metadata is not None:
            changes["metadata"] = self.writes.metadata(metadata)
        if kind is not None:
            changes["kind"] = normalize_kind(kind)
            if changes["kind"] != current.kind and current.decay_rate > 0:
                # A memory keeps a confirm (rate 0); otherwise it lives by its new kind's rule.
                changes["decay_rate"] = kind_policy(changes["kind"]).decay_rate
        if key is not UNSET:
            changes["key"] = check_key(key, cfg.max_key_chars)
            clash = changes["key"] and self.store.get(self.namespace, changes["key"])
            if clash and clash.id != current.id:
                raise InvalidInputError(f"key {changes['key']!r} is already used by {clash.id}")
        if event_time is not UNSET:
            changes["event_time"] = check_time(event_time, "event_time")
        return changes

    def _replace(self, updated: MemoryRecord) -> MemoryRecord:
        self.store.replace(updated)
        self.writes.mirror([updated])
        return updated

    def reinforce(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        """Mark as useful: score += reinforce_weight (3) and the recency clock resets (003)."""
        w = self.settings.lifecycle.reinforce_weight if weight is None else check_weight(weight)
        current = self.get(id_or_key)
        return self._replace(current.evolve(score=current.score + w, last_accessed=self.clock()))

    def demote(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        """Mark as wrong or stale: score -= demote_weight (1) (003)."""
        w = self.settings.lifecycle.demote_weight if weight is None else check_weight(weight)
        current = self.get(id_or_key)
        return self._replace(current.evolve(score=current.score - w))

    def confirm(self, id_or_key: str) -> MemoryRecord:
        """Protect a memory for good: decay_rate 0, confidence 1 (004 confirm_fact)."""
        current = self.get(id_or_key)
        return self._replace(current.evolve(decay_rate=0.0, confidence=1.0,
                                            updated_at=self.clock()))

    def correct(
        self,
        id_or_key: str,
        new_content: str,
        *,
        tags: Iterable[str] | str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        """Replace a memory with a corrected one (004 correct_fact): the old one is
        invalidated and superseded, the key moves to the new one (``Memory.correct``)."""
        old = self.get(id_or_key)
        if not old.is_valid:
            raise InvalidInputError(f"memory {old.id} was already corrected or invalidated")
        now = self.clock()
        meta = dict(old.metadata)
        if reason:
            meta["correction_reason"] = reason
        new = self.writes.new_record(
            new_content,
            key=None,
            kind=old.kind,
            tags=old.tags if tags is None else tags,
            metadata=meta,
            session_id=old.session_id,
            narrative_id=old.narrative_id,
            task_id=old.task_id,
            event_time=old.event_time,
            source=old.source,
            source_role=old.source_role,
            source_ids=(*old.source_ids, old.id),
            confidence=1.0,
        )
        new = correction_of(old, new)
        retired = old.evolve(valid_until=now, key=None, updated_at=now)
        mentions = self.writes.mentions([new])
        with self.writes.transaction():  # the retired and the new version together: never neither
            new = self.store.supersede(retired, new)
            entries = self.writes.derive([(new, True)], mentions)
        self.writes.mirror([retired, new])
        self.writes.fill([new], entries, {})
        return new

    # --- the archive (003) ---------------------------------------------------------------------
    def archived(self, *, limit: int = 50, offset: int = 0) -> builtins.list[ArchiveEntry]:
        """Archived memories of this namespace, most recently archived first."""
        return self.store.archive_list(
            self.namespace, limit=check_limit(limit, maximum=10_000), offset=check_offset(offset)
        )

    def restore(self, id_: str) -> MemoryRecord:
        """Bring an archived memory back into the live set: recall, its vector, its entity links
        and its Markdown mirror note. It arrives again (``stored_at`` = now), so its idle clock
        restarts and the next maintenance run does not archive it straight back; every other
        field is as it was archived. Raises NotFoundError when no archived memory has that id."""
        if not isinstance(id_, str) or not id_:
            raise InvalidInputError("an archived memory's id must be non-empty text")
        missing = NotFoundError(
            f"no archived memory with id {id_!r} in namespace {self.namespace!r}")
        archived = self.store.find_archived(self.namespace, id_)
        if archived is None or archived.id != id_:
            raise missing
        # An invalidated memory comes back invalidated, with no search rows.
        mentions = self.writes.mentions([archived]) if archived.is_valid else []
        # The record, its entity links and its vector-queue row together.
        with self.writes.transaction():
            record = self.store.restore(self.namespace, id_)
            if record is None:
                raise missing
            record = record.evolve(stored_at=self.clock())
            self.store.replace(record)
            entries = self.writes.derive([(record, True)], mentions) if record.is_valid else []
        if record.is_valid:
            self.writes.fill([record], entries, {})
        self.writes.mirror([record])
        return record

    def every(self) -> builtins.list[MemoryRecord]:
        """Every memory of the namespace, invalidated ones too, oldest first (snapshots)."""
        records: builtins.list[MemoryRecord] = []
        flt = Filter(include_invalid=True)
        while batch := self.store.list(
            self.namespace, flt, limit=5000, offset=len(records), order="oldest"
        ):
            records.extend(batch)
        return records

"""``Memory``: the one service. The CLI, MCP server, REST API and agent loop are thin adapters
over this class; they translate arguments and errors and nothing more."""

from __future__ import annotations

import builtins
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from clawmemory.backends.base import ORDERS, ArchiveEntry, Store
from clawmemory.backends.registry import open_store
from clawmemory.config import Settings, load_settings
from clawmemory.core.composition import Parts, StoreParts, compose, compose_store
from clawmemory.core.legacy import Components
from clawmemory.core.vectors import VectorWrites
from clawmemory.embed.base import Embedder
from clawmemory.engine_io import ImportReport, PortabilityMixin
from clawmemory.engine_service import ServiceMixin
from clawmemory.errors import ClawMemoryError, InvalidInputError, NotFoundError
from clawmemory.model import (
    Filter,
    Forgotten,
    Hit,
    Kind,
    MemoryRecord,
    correction_of,
    kind_policy,
    normalize_kind,
)
from clawmemory.portability.markdown import MarkdownMirror
from clawmemory.search.pipeline import RecallRequest, Retriever
from clawmemory.validation import (
    check_content,
    check_filter,
    check_flag,
    check_key,
    check_limit,
    check_namespace,
    check_offset,
    check_query,
    check_ref,
    check_store_items,
    check_tags,
    check_time,
    check_weight,
)

__all__ = ["ImportReport", "Memory"]

log = logging.getLogger("clawmemory")
_UNSET: Any = object()
_MODES = ("auto", "keyword", "vector", "hybrid")


class Memory(PortabilityMixin, ServiceMixin):
    """Long-term memory for one namespace (tenant) over one store.

    >>> with Memory.open("/tmp/demo.db") as mem:           # doctest: +SKIP
    ...     mem.store("User prefers dark mode", kind="preference")
    ...     hits = mem.recall("dark mode")
    """

    def __init__(
        self,
        store: Store,
        settings: Settings | None = None,
        *,
        namespace: str = "default",
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = _UNSET,
        components: Components | None = None,
        shared: StoreParts | None = None,
        vector_writes: VectorWrites = "sync",
    ) -> None:
        """Wrap an open store. ``embedder``: an ``Embedder``, None for keyword recall only, or
        omitted to build the one named in settings (lazily, on first use). ``shared``: the
        parts of this store another view already built (``components``: its deprecated
        name). ``vector_writes``: "sync" (a write embeds right after it commits) or "queue"
        (writes only queue their vectors, for one-shot commands that should not load a
        model)."""
        self.store_backend = store
        self.settings = settings or Settings()
        self.namespace = check_namespace(namespace)
        self.clock = clock
        if shared is None and components is not None:
            shared = components.shared
        if shared is None:
            shared = compose_store(
                store, self.settings, embedder=None if embedder is _UNSET else embedder,
                embedder_given=embedder is not _UNSET, vector_writes=vector_writes,
                mirror_factory=MarkdownMirror)
        self.parts: Parts = compose(shared, self.settings, self.namespace, clock)
        self._writes = self.parts.writes

    @property
    def components(self) -> Components:
        """Deprecated: the store's shared parts under their old name (``parts`` replaces
        it); kept for one release."""
        return Components(self.parts.shared)

    @classmethod
    def open(
        cls,
        path: str | Path | None = None,
        *,
        namespace: str | None = None,
        backend: str | None = None,
        settings: Settings | None = None,
        clock: Callable[[], float] = time.time,
        embedder: Any = _UNSET,
        create: bool = True,
        read_only: bool = False,
        api_key: str | None = None,
        vector_writes: VectorWrites = "sync",
    ) -> Memory:
        """Open (creating if needed) a memory store. With no path, the default location under
        the user's home (``~/.clawmemory/memory.db``) or ``CLAWMEM_DB`` is used.

        ``create=False``: a store that does not exist yet is a NotFoundError (nothing is
        created). ``read_only=True``: the file is only read; recall works and leaves access
        counts unchanged. A file that is not a clawmemory store is refused (StorageError)
        before anything is written to it.

        ``path`` an ``http(s)://`` URL: the memory of a clawmemory server (``clawmem serve``)
        over its REST API, with the same methods (``client.RemoteMemory``); ``api_key``, or
        ``CLAWMEM_API_KEY``, is sent as its bearer key."""
        if isinstance(path, str) and path.startswith(("http://", "https://")):
            from clawmemory.client.remote import RemoteMemory

            remote = RemoteMemory(path, api_key=api_key or os.environ.get("CLAWMEM_API_KEY"),
                                  namespace=namespace, settings=settings)
            # RemoteMemory is no Memory: it implements MemoryAPI, every public operation
            # (tests/test_api_parity.py). Typed as Memory so callers of open() keep one type.
            return cast("Memory", remote)
        if settings is None:
            settings = load_settings(db=path, namespace=namespace, backend=backend)
        else:
            updates = {
                k: v
                for k, v in (("db", path), ("namespace", namespace), ("backend", backend))
                if v is not None
            }
            settings = settings.model_copy(update=updates)
        return cls(
            open_store(settings, create=create and not read_only, read_only=read_only),
            settings,
            namespace=settings.namespace,
            clock=clock,
            embedder=embedder,
            vector_writes=vector_writes,
        )

    def warm_up(self) -> str:
        """Load the embedding model and this namespace's vectors now, so a server's first call
        costs what later ones do (the model takes a fraction of a second, the vectors of a 20k
        namespace a few hundred milliseconds), and start embedding whatever waits in the vector
        queue (in the background). Blocks until loaded; returns a line for the server's log."""
        started = time.perf_counter()
        if self.parts.vectors.vectors() is None:
            note = f"keyword recall only ({self.parts.vectors.vector_status()})"
        else:
            try:
                # One recall that counts nothing reads the namespace's vectors and its centre,
                # runs the model's first (slow) forward pass and compiles the NER and keyword
                # helpers: what made the first recall after a reopen ~50 times a warm one.
                self.recall("warming up", limit=1, touch=False)
                # A query that matches no memory never reaches the stemmer of calibrated
                # fusion's word matching, and snowballstemmer imports every language's module
                # on first use (~30 ms of the first real recall, bench/first_recall.py).
                from clawmemory.backends.memory.store import stem

                stem("warming")
            except ClawMemoryError:
                log.debug("warm-up recall failed", exc_info=True)
            embedder = self.parts.vectors.embedder
            note = (f"embedder {embedder.name if embedder else 'none'} warmed up in"
                    f" {time.perf_counter() - started:.2f} s")
            worker = self.parts.vectors.worker()
            waiting = self.parts.vectors.queued(None)
            if worker is not None and waiting:
                worker.sweep()
                note += f"; embedding {waiting} queued memories in the background"
        self.parts.vectors.warm_note = note
        return note

    def with_namespace(self, namespace: str) -> Memory:
        """The same store (and the same loaded embedder) seen as another tenant."""
        return Memory(
            self.store_backend,
            self.settings,
            namespace=namespace,
            clock=self.clock,
            shared=self.parts.shared,
        )

    def close(self) -> None:
        """Write the queued access counts, let the background worker embed what this process
        queued, then close the store."""
        from clawmemory.search.access import close_tracker

        close_tracker(self.store_backend)  # queued access counts first (search/access.py)
        self.parts.vectors.close()
        self.store_backend.close()

    def flush(self) -> None:
        """Write queued access counts now. Recalls queue them and a background thread writes
        them within ``recall.touch_delay_s``; ``close()`` and every read of stored records
        (get, list, count, history, neighbors, stats, maintenance) flush first, so what a
        recall counted is always what the next read sees."""
        from clawmemory.search.access import settle

        settle(self.store_backend)

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- writing -------------------------------------------------------------------------------
    def store(
        self,
        content: str,
        *,
        key: str | None = None,
        kind: Kind = "fact",
        tags: Iterable[str] | str = (),
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        event_time: Any = None,
        source: str | None = None,
        source_role: str | None = None,
        source_ids: Iterable[str] = (),
        confidence: float = 1.0,
    ) -> str:
        """Store a memory and return its id. With a ``key`` that already exists in this
        namespace, that memory is updated in place (upsert — 000) and keeps its id."""
        record = self._writes.new_record(
            content,
            key=key,
            kind=kind,
            tags=tags,
            metadata=metadata,
            session_id=session_id,
            event_time=event_time,
            source=source,
            source_role=source_role,
            source_ids=source_ids,
            confidence=confidence,
        )
        return self._writes.write([record])[0].id

    def store_many(
        self, items: Iterable[Mapping[str, Any]], *, batch_size: int | None = None
    ) -> builtins.list[str]:
        """Store many memories (each a mapping of ``store()``'s arguments, ``content``
        required). Embeddings are computed in batches; each batch is one transaction."""
        items = check_store_items(items)
        if batch_size is not None:
            check_limit(batch_size, maximum=100_000, name="batch_size")
        ids: builtins.list[str] = []
        # 1024 per batch: the model sorts each batch by length before padding, and measured
        # ingest with embeddings rose from ~0.75 to ~0.95 of its raw throughput over 256.
        size = batch_size or max(self.settings.embedder.batch_size, 1024)
        batch: builtins.list[MemoryRecord] = []
        for item in items:
            fields = {
                "key": None,
                "kind": "fact",
                "tags": (),
                "metadata": None,
                "session_id": None,
                "event_time": None,
                "source": None,
                "source_role": None,
                "source_ids": (),
                "confidence": 1.0,
                **item,
            }
            batch.append(self._writes.new_record(fields.pop("content"), **fields))
            if len(batch) >= size:
                ids.extend(self._store_batch(batch))
                batch = []
        ids.extend(self._store_batch(batch))
        return ids

    def _store_batch(self, records: builtins.list[MemoryRecord]) -> builtins.list[str]:
        return [r.id for r in self._writes.write(records)] if records else []

    def _filter(self, **fields: Any) -> Filter:
        """A checked filter; the time arguments (``since``, ``until``, ``created_since``,
        ``created_until``, ``as_of``) are read against the clock (search/temporal.py)."""
        from clawmemory.search.temporal import TIME_FILTERS

        cfg = self.settings.storage
        times = {name: fields.pop(name) for name in TIME_FILTERS if name in fields}
        if any(v is not None for v in times.values()):
            from clawmemory.search.temporal import filter_times, zone

            t = self.settings.time
            fields.update(filter_times(times, self.clock(), zone(t.time_zone),
                                       tuple(t.languages)))
        return check_filter(fields, cfg.max_metadata_chars, cfg.max_metadata_depth)

    def get(self, id_or_key: str) -> MemoryRecord:
        """The memory with this id or key; raises NotFoundError."""
        self.flush()
        record = self.store_backend.get(self.namespace, check_ref(id_or_key))
        if record is None:
            raise NotFoundError(
                f"no memory with id or key {id_or_key!r} in namespace {self.namespace!r}"
            )
        return record

    def update(
        self,
        id_or_key: str,
        *,
        content: str | None = None,
        tags: Iterable[str] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        kind: Kind | None = None,
        key: str | None = _UNSET,
        event_time: Any = _UNSET,
    ) -> MemoryRecord:
        """Change a memory in place. Its score is kept and its recency clock reset (003)."""
        current = self.get(id_or_key)
        cfg = self.settings.storage
        changes: dict[str, Any] = {"updated_at": self.clock(), "last_accessed": self.clock()}
        if content is not None:
            changes["content"] = check_content(content, cfg.max_content_chars)
        if tags is not None:
            changes["tags"] = check_tags(tags)
        if metadata is not None:
            changes["metadata"] = self._writes.metadata(metadata)
        if kind is not None:
            changes["kind"] = normalize_kind(kind)
            if changes["kind"] != current.kind and current.decay_rate > 0:
                # A memory keeps a confirm (rate 0); otherwise it lives by its new kind's rule.
                changes["decay_rate"] = kind_policy(changes["kind"]).decay_rate
        if key is not _UNSET:
            changes["key"] = check_key(key, cfg.max_key_chars)
            clash = changes["key"] and self.store_backend.get(self.namespace, changes["key"])
            if clash and clash.id != current.id:
                raise InvalidInputError(f"key {changes['key']!r} is already used by {clash.id}")
        if event_time is not _UNSET:
            changes["event_time"] = check_time(event_time, "event_time")
        updated = current.evolve(**changes)
        text_changed = updated.content != current.content or updated.key != current.key
        mentions = self._writes.mentions([updated]) if "content" in changes else []
        with self._writes.transaction():
            self.store_backend.replace(updated)
            entries = self._writes.derive([(updated, False)], mentions) if text_changed else []
        self._writes.mirror([updated])
        if text_changed:
            self._writes.fill([updated], entries, {})
        return updated

    def forget(self, id_or_key: str) -> Forgotten:
        """Hard-delete a memory, live or archived, with every version of it (the corrections
        it went through, 004, and an archived holder of its key), every memory derived from it
        (``source_ids`` naming it, whatever else they name, recursively: ADR 0022) and
        everything derived from those (index rows, links, entity links, vectors, mirror
        files). Nothing is left in the database file either: no copy in free pages or the
        write-ahead log; the LLM response cache, whose answers may quote it, is scrubbed. The
        sessions whose episodes backed a forgotten derived fact are queued to be consolidated
        again from what is left. Returns what went (``Forgotten``); raises NotFoundError."""
        ref = check_ref(id_or_key)
        record = self.store_backend.get(self.namespace, ref)
        if record is None:
            record = self.store_backend.find_archived(self.namespace, ref)
        if record is None:
            raise NotFoundError(
                f"no memory with id or key {id_or_key!r} in namespace {self.namespace!r}"
            )
        from clawmemory.provenance import forget_set

        plan = forget_set(self.store_backend, self.namespace, record)
        ids = [r.id for r in plan.removed]
        self.store_backend.delete(self.namespace, ids)
        self._unindex(ids)
        self._writes.mirror(removed=plan.removed)
        self._scrub_response_cache()
        reopened = self._reopen_sessions(plan.survivors) if plan.derived else ()
        done = Forgotten(record, tuple(r.id for r in plan.versions[1:]),
                         tuple(r.id for r in plan.derived), reopened)
        if done.deleted > 1:
            log.info("%s", done.summary())
        return done

    def _reopen_sessions(self, survivors: Sequence[str]) -> tuple[str, ...]:
        """The sessions of the surviving episodes a forgotten derived fact also came from,
        marked unconsolidated: the next consolidation derives again from what is left (pages
        whose facts still stand are skipped, ADR 0010 decision 2)."""
        from clawmemory.ingest import reopen_sessions

        episodes = [r for r in self.store_backend.get_many(self.namespace, list(survivors))
                    if r.kind == "episode" and r.session_id]
        return reopen_sessions(self, sorted({r.session_id for r in episodes if r.session_id}))

    def derived(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        """The live memories derived from this one (naming it in their ``source_ids``)."""
        record = self.get(id_or_key)
        found = self.store_backend.derived(self.namespace, [record.id])
        return [r for r, archived in found if not archived]

    def _scrub_response_cache(self) -> None:
        """Answers in the LLM response cache may quote what was just forgotten: the file goes
        (a cache; every ``ResponseCache`` notices and drops what it holds in RAM)."""
        from clawmemory.private import scrub_file

        scrub_file(self.settings.llm.resolved_cache_path())

    def _unindex(self, ids: Sequence[str]) -> None:
        vectors = self.parts.vectors.loaded_vectors()  # never load a model just to forget
        if vectors is not None:
            vectors.forget(self.namespace, ids)
        layer = self.parts.entities.layer()
        if layer is not None:
            for mid in ids:
                layer.entity_index.unlink_memory(self.namespace, mid)

    def forget_namespace(self) -> int:
        """Remove this whole tenant: records, links, entities, history, archive."""
        removed = self.store_backend.delete_namespace(self.namespace)
        self.parts.shared.forget_namespace_state(self.namespace)
        self._scrub_response_cache()
        mirror = self.parts.shared.mirrors.of(self.namespace)
        if mirror is not None:
            mirror.sync([])
        vectors = self.parts.vectors.loaded_vectors()
        if vectors is not None:
            vectors.drop_namespace(self.namespace)
        layer = self.parts.entities.layer()
        if layer is not None:
            layer.entity_index.drop_namespace(self.namespace)
        return removed

    # --- the archive (003) ---------------------------------------------------------------------
    def restore(self, id_: str) -> MemoryRecord:
        """Bring an archived memory back into recall, re-indexed; its idle clock restarts.
        Returns the restored record; raises NotFoundError when no archived memory has that id.
        (Maintenance archives memories: ``archived()`` lists them.)"""
        from clawmemory.lifecycle import restore

        return restore(self, check_ref(id_, "id"))

    def archived(self, *, limit: int = 50, offset: int = 0) -> builtins.list[ArchiveEntry]:
        """Archived memories of this namespace, most recently archived first, each with its
        ``archived_at``. ``recall(query, archive=True)`` searches them."""
        return self.store_backend.archive_list(
            self.namespace, limit=check_limit(limit, maximum=10_000), offset=check_offset(offset)
        )

    # --- feedback and correction (003, 004) -----------------------------------------------------
    def reinforce(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        """Mark as useful: score += reinforce_weight (3) and the recency clock resets (003)."""
        w = self.settings.lifecycle.reinforce_weight if weight is None else check_weight(weight)
        current = self.get(id_or_key)
        updated = current.evolve(score=current.score + w, last_accessed=self.clock())
        self.store_backend.replace(updated)
        self._writes.mirror([updated])
        return updated

    def demote(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        """Mark as wrong or stale: score -= demote_weight (1) (003)."""
        w = self.settings.lifecycle.demote_weight if weight is None else check_weight(weight)
        current = self.get(id_or_key)
        updated = current.evolve(score=current.score - w)
        self.store_backend.replace(updated)
        self._writes.mirror([updated])
        return updated

    def confirm(self, id_or_key: str) -> MemoryRecord:
        """Protect a memory for good: decay_rate 0, confidence 1 (004 confirm_fact)."""
        current = self.get(id_or_key)
        updated = current.evolve(decay_rate=0.0, confidence=1.0, updated_at=self.clock())
        self.store_backend.replace(updated)
        self._writes.mirror([updated])
        return updated

    def correct(
        self,
        id_or_key: str,
        new_content: str,
        *,
        tags: Iterable[str] | str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        """Replace a memory with a corrected one (004 correct_fact). The old memory is
        invalidated (``valid_until`` set, never deleted) and the new one ``supersedes`` it, so
        the chain of corrections stays queryable (``history``). The key moves to the new one."""
        old = self.get(id_or_key)
        if not old.is_valid:
            raise InvalidInputError(f"memory {old.id} was already corrected or invalidated")
        now = self.clock()
        meta = dict(old.metadata)
        if reason:
            meta["correction_reason"] = reason
        new = self._writes.new_record(
            new_content,
            key=None,
            kind=old.kind,
            tags=old.tags if tags is None else tags,
            metadata=meta,
            session_id=old.session_id,
            event_time=old.event_time,
            source=old.source,
            source_role=old.source_role,
            source_ids=(*old.source_ids, old.id),
            confidence=1.0,
        )
        new = correction_of(old, new)
        retired = old.evolve(valid_until=now, key=None, updated_at=now)
        mentions = self._writes.mentions([new])
        with self._writes.transaction():  # the retired and the new version together: never neither
            new = self.store_backend.supersede(retired, new)
            entries = self._writes.derive([(new, True)], mentions)
        self._writes.mirror([retired, new])
        self._writes.fill([new], entries, {})
        return new

    def history(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        """The correction chain through this memory, oldest first (archived versions are not
        part of it; ``forget`` removes them with the rest)."""
        record = self.get(id_or_key)
        chain = [r for r, archived in self.store_backend.chain(self.namespace, record.id)
                 if not archived]
        return chain or [record]

    def observe(self, role: str, content: str, session_id: str) -> str:
        """Hot-path ingestion (004): store one user or agent message as an episode, with fast
        NER and no LLM, and register its session for consolidation. Returns the id."""
        from clawmemory.ingest import observe

        return observe(self, role, content, session_id)

    # --- reading -------------------------------------------------------------------------------
    def list(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        include_invalid: bool = False,
        limit: int = 50,
        offset: int = 0,
        order: str = "newest",
        since: Any = None,
        until: Any = None,
        created_since: Any = None,
        created_until: Any = None,
        as_of: Any = None,
    ) -> builtins.list[MemoryRecord]:
        """Memories matching the filters, in ``order``. Times (``since``/``until`` on when the
        thing happened, ``created_since``/``created_until`` on creation, ``as_of``: what was
        valid then) are epoch seconds, datetimes, ISO-8601 or expressions ("2 weeks ago")."""
        self.flush()
        if not isinstance(order, str) or order not in ORDERS:
            raise InvalidInputError(f"order must be one of {', '.join(ORDERS)}")
        flt = self._filter(kind=kind, tags=tags, session_id=session_id, metadata=metadata,
                           source=source, include_invalid=include_invalid, since=since,
                           until=until, created_since=created_since,
                           created_until=created_until, as_of=as_of)
        return self.store_backend.list(
            self.namespace,
            flt,
            limit=check_limit(limit, maximum=10_000),
            offset=check_offset(offset),
            order=order,
        )

    def count(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        include_invalid: bool = False,
        **filters: Any,
    ) -> int:
        self.flush()
        allowed = {"tags", "metadata", "session_id", "exclude_session_id", "source", "since",
                   "until", "created_since", "created_until", "as_of"}
        if unknown := sorted(set(filters) - allowed):
            raise InvalidInputError(f"count() got an unknown filter {unknown[0]!r}; filters: "
                                    f"{', '.join(sorted(allowed))}")
        flt = self._filter(kind=kind, include_invalid=include_invalid, **filters)
        return self.store_backend.count(self.namespace, flt)

    def search_by_metadata(
        self, key: str, value: Any, *, limit: int = 100
    ) -> builtins.list[MemoryRecord]:
        """Memories whose ``metadata[key] == value`` (001 SearchByMetadata)."""
        if not isinstance(key, str):
            raise InvalidInputError(f"metadata key must be text, not {type(key).__name__}")
        return self.list(metadata={key: value}, limit=limit)

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        exclude_session_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        mode: str | None = None,
        depth: int = 0,
        archive: bool = False,
        touch: bool = True,
        since: Any = None,
        until: Any = None,
        created_since: Any = None,
        created_until: Any = None,
        as_of: Any = None,
    ) -> builtins.list[Hit]:
        """The memories most relevant to ``query``, best first, each with its explanation.

        ``mode``: "keyword" (BM25), "vector" (embeddings), "hybrid" (keyword + vector + entity
        lists fused), or None for the configured default ("auto": hybrid when an embedder
        works, else keyword). ``depth=1`` adds the linked neighbours of the hits (000).
        ``archive=True`` searches the archive instead: what maintenance moved out of the live
        set (003 pruning, and the hygiene and idle purges by default).
        Recall counts as access: ``last_accessed`` and ``access_count`` are updated (``touch``).

        Time (ADR 0017): ``since``/``until`` keep memories by when the thing happened
        (``event_time``, else ``created_at``), ``created_since``/``created_until`` by creation,
        ``as_of`` returns what was valid then (a memory corrected later comes back as the
        version it had). Each is epoch seconds, a datetime, ISO-8601 or an expression
        ("yesterday", "2 weeks ago"). A period the query itself names ("what did I do last
        March?") ranks that period's memories first (the ``time`` factor) and hides nothing.
        """
        query = check_query(query, self.settings.recall.max_query_chars)  # before any parsing
        limit = check_limit(limit if limit is not None else self.settings.recall.limit)
        if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 3:
            raise InvalidInputError("depth must be 0, 1, 2 or 3")
        flt = self._filter(kind=kind, tags=tags, session_id=session_id,
                           exclude_session_id=exclude_session_id, metadata=metadata,
                           include_invalid=include_invalid, since=since, until=until,
                           created_since=created_since, created_until=created_until,
                           as_of=as_of)
        check_flag(touch, "touch")
        check_flag(archive, "archive")
        if mode is not None and (not isinstance(mode, str) or mode.lower() not in _MODES):
            raise InvalidInputError(f"mode must be one of {', '.join(_MODES)}")
        if not query.strip():
            return []  # 000: empty queries return immediately
        if archive:
            from clawmemory.lifecycle import recall_archive

            return recall_archive(self, query, limit)
        now = self.clock()
        chosen = self._mode(mode)
        req = RecallRequest(self.namespace, query, limit, flt, now, chosen, depth)
        hits = self._retriever(chosen).recall(req)
        if touch and hits:
            self._after_recall(hits, now)
            hits = [
                Hit(
                    h.memory.evolve(last_accessed=now, access_count=h.memory.access_count + 1),
                    h.score,
                    h.explain,
                )
                for h in hits
            ]
        return hits

    def _mode(self, mode: str | None) -> str:
        mode = (mode or self.settings.recall.mode).lower()
        if mode == "keyword":
            return mode
        available = self.parts.vectors.vectors() is not None
        if mode == "auto":
            return "hybrid" if available else "keyword"
        if not available:
            raise InvalidInputError(
                f"{mode} recall needs vectors: {self.parts.vectors.vector_status()}"
            )
        return mode

    def _retriever(self, mode: str) -> Retriever:
        # Keyword recall never loads the embedding model (a cold `clawmem recall --mode
        # keyword` must not pay for it).
        vectors = None if mode == "keyword" else self.parts.vectors.vectors()
        return Retriever(
            self.store_backend,
            self.settings.recall,
            time_cfg=self.settings.time,
            vectors=vectors,
            embed_query=self.parts.vectors.embed_query if vectors is not None else None,
            entity_search=self._entity_search if self.parts.entities.layer() else None,
        )

    def _entity_search(
        self, namespace: str, query: str, limit: int
    ) -> builtins.list[tuple[str, str, float]]:
        layer = self.parts.entities.layer()
        if layer is None:
            return []
        from clawmemory.entities import candidate_names

        index, ner = layer
        names = candidate_names(query, ner)
        hits = index.search(namespace, names, limit) if names else []
        return [(h.memory_id, h.entity_name, h.score) for h in hits]

    def _after_recall(self, hits: Sequence[Hit], now: float) -> None:
        """Side effects of a recall: access bookkeeping (queued for a background write, see
        search/access.py) and (003 v2) co-recall links."""
        from clawmemory.search.access import tracker_for

        ids = [h.memory.id for h in hits]
        tracker_for(self.store_backend, self.settings.recall.touch_delay_s).record(
            self.namespace, ids, now)
        if self.settings.recall.co_recall:
            top = ids[:5]
            inc = self.settings.recall.co_recall_increment
            for i, a in enumerate(top):
                for b in top[i + 1 :]:
                    self.store_backend.link(self.namespace, a, b, strength=inc, origin="co-recall")

    # --- introspection -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        self.flush()
        s = self.store_backend.stats(self.namespace)
        return {
            "backend": s.backend,
            "path": s.path,
            "namespace": self.namespace,
            "total": s.total,
            "by_kind": s.by_kind,
            "invalidated": s.invalidated,
            "archived": self.store_backend.archive_count(self.namespace),
            "links": s.links,
            "newest": s.newest,
            "oldest": s.oldest,
            "size_bytes": s.size_bytes,
            "vectors": self.parts.vectors.vector_status(),
            "vectors_queued": self.parts.vectors.queued(self.namespace),
        }

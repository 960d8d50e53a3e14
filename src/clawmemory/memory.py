"""``Memory``: the one service, a thin façade. Each method checks nothing and decides nothing
itself: it hands its arguments to one collaborator of the local engine (``core``: the write
path, records, retrieval, forgetting, the graph, transfers, the maintenance jobs), built once
per store by the composition root (``core.composition``) and shared by every namespace view.

This module is the composition root's entry: ``Memory.open`` opens a store (or, for an
``http(s)://`` URL, a ``RemoteMemory``), and the layers above the core are wired in here: the
Markdown mirror (portability), the LLM steps of the maintenance jobs (cognition) and the opener
of ``AsyncMemory`` (client). The CLI, MCP server, REST API and agent loop are thin adapters over
this class; they translate arguments and errors and nothing more."""

from __future__ import annotations

import builtins
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast

from clawmemory.api import ALL_JOBS, NotesReport
from clawmemory.backends.base import ArchiveEntry, Link, RunRecord, Store
from clawmemory.backends.registry import open_store
from clawmemory.client.aio import install_opener
from clawmemory.config import Settings, load_settings
from clawmemory.core import ingest, jobs, repair
from clawmemory.core.composition import Parts, StoreParts, compose, compose_store
from clawmemory.core.legacy import Components
from clawmemory.core.mirror import MirrorNotes
from clawmemory.core.records import UNSET
from clawmemory.core.vectors import VectorWrites
from clawmemory.embed.base import Embedder
from clawmemory.errors import ClawMemoryError, ConfigError, InvalidInputError
from clawmemory.model import Forgotten, Hit, ImportReport, Kind, MemoryRecord, ParsedImport
from clawmemory.search.access import close_tracker
from clawmemory.search.temporal import warm_parser
from clawmemory.text import stem
from clawmemory.validation import check_limit, check_namespace, check_ref, check_store_items

if TYPE_CHECKING:
    from clawmemory.api import MemoryAPI
    from clawmemory.core.local import LocalMemory

__all__ = ["ALL_JOBS", "ImportReport", "Memory"]

log = logging.getLogger("clawmemory")
# A store_many of at least this many memories is followed by a warm-up recall: its cost
# (~20 ms) is then under 1% of the ingest's.
_WARM_AFTER = 1_000
_UNSET: Any = UNSET


def _job_name(job: Any) -> str:
    if not isinstance(job, str) or (job != ALL_JOBS and job not in jobs.JOBS):
        raise InvalidInputError(
            f"unknown job {job!r}; one of: {', '.join(jobs.JOBS)}, {ALL_JOBS}")
    return job


class Memory:
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
                mirror_factory=markdown_mirror)
        self.parts: Parts = compose(shared, self.settings, self.namespace, clock)

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
        embedder: Embedder | None = _UNSET,
        create: bool = True,
        read_only: bool = False,
        api_key: str | None = None,
        vector_writes: VectorWrites = "sync",
        profile: str | None = None,
        warm: bool | None = None,
    ) -> Memory:
        """Open (creating if needed) a memory store. With no path, the default location under
        the user's home (``~/.clawmemory/memory.db``) or ``CLAWMEM_DB`` is used.

        ``create=False``: a store that does not exist yet is a NotFoundError (nothing is
        created). ``read_only=True``: the file is only read; recall works and leaves access
        counts unchanged. A file that is not a clawmemory store is refused (StorageError)
        before anything is written to it.

        ``path`` an ``http(s)://`` URL: the memory of a clawmemory server (``clawmem serve``)
        over its REST API, with the same methods (``client.RemoteMemory``); ``api_key``, or
        ``CLAWMEM_API_KEY``, is sent as its bearer key.

        ``profile``: one specification's defaults under the user's own settings
        ("ptrclaw", "sclaw", "devclaw", "koshi", "sandbox"; docs/profiles.md). With
        ``settings``, give the profile there instead (``load_settings(profile=...)``).

        ``warm`` (default ``embedder.warm_at_open``): with the local model, load it and this
        namespace's vectors on a background thread while open returns, so the first recall
        costs what later ones do (``warm_up`` without the wait)."""
        if isinstance(path, str) and path.startswith(("http://", "https://")):
            # Function-local: the remote client loads httpx, which `import clawmemory` must
            # not pay for (tests/test_exports.py).
            from clawmemory.client.remote import RemoteMemory

            remote = RemoteMemory(path, api_key=api_key or os.environ.get("CLAWMEM_API_KEY"),
                                  namespace=namespace, settings=settings)
            # RemoteMemory is no Memory: it implements MemoryAPI, every public operation
            # (tests/core/test_api_parity.py). Typed as Memory so callers of open() keep one type.
            return cast("Memory", remote)
        if settings is None:
            settings = load_settings(db=path, namespace=namespace, backend=backend,
                                     profile=profile)
        else:
            if profile is not None and profile != settings.profile:
                raise ConfigError("a profile applies when settings are built: pass "
                                  f"load_settings(profile={profile!r}) as settings, or no"
                                  " settings")
            updates = {
                k: v
                for k, v in (("db", path), ("namespace", namespace), ("backend", backend))
                if v is not None
            }
            settings = settings.model_copy(update=updates)
        mem = cls(
            open_store(settings, create=create and not read_only, read_only=read_only),
            settings,
            namespace=settings.namespace,
            clock=clock,
            embedder=embedder,
            vector_writes=vector_writes,
        )
        if (settings.embedder.warm_at_open if warm is None else warm) and embedder is _UNSET:
            mem._warm_in_background()
        return mem

    def _warm_in_background(self) -> None:
        """``warm_up`` on a thread of its own, for the local model only (a remote embedder
        would be called before the user asked for anything). A recall that comes first waits
        for the loads in progress instead of repeating them; one that comes later pays none."""
        if self.settings.embedder.provider != "local":
            return
        # The model loads on a thread the interpreter waits for at exit: ONNX Runtime aborts
        # the process ("terminate called") when it exits while a session is being created (a
        # script that opens a store and ends 0.2 s later). The rest may be abandoned.
        threading.Thread(target=self._load_then_warm, name="clawmemory-warm-model").start()

    def _load_then_warm(self) -> None:
        try:
            self.parts.vectors.vectors()
        except Exception:  # the store closed meanwhile: the first recall would say what failed
            log.debug("background model load stopped", exc_info=True)
            return
        if threading.main_thread().is_alive():  # not when the program is exiting
            threading.Thread(target=self._warm_quietly, name="clawmemory-warm",
                             daemon=True).start()

    def _warm_quietly(self) -> None:
        try:
            self._warm(sweep=False)
        except Exception:  # the store closed meanwhile: the first recall would say what failed
            log.debug("background warm-up stopped", exc_info=True)

    def warm_up(self) -> str:
        """Load the embedding model and this namespace's vectors now, so a server's first call
        costs what later ones do (the model takes a fraction of a second, the vectors of a 20k
        namespace about a tenth of one), and start embedding whatever waits in the vector queue
        (in the background). Blocks until loaded; returns a line for the server's log.
        ``Memory.open`` does the same on a background thread, without the queue (ADR 0033)."""
        return self._warm(sweep=True)

    def _warm(self, *, sweep: bool) -> str:
        started = time.perf_counter()
        vectors = self.parts.vectors
        if vectors.vectors() is None:
            note = f"keyword recall only ({vectors.vector_status()})"
        else:
            try:
                # One recall that counts nothing reads the namespace's vectors and its centre,
                # runs the model's first (slow) forward pass and compiles the NER and keyword
                # helpers: what made the first recall after a reopen ~50 times a warm one.
                self.recall("warming up", limit=1, touch=False)
                # A query that matches no memory never reaches the stemmer of calibrated
                # fusion's word matching, and snowballstemmer imports every language's module
                # on first use (~30 ms of the first real recall, bench/first_recall.py).
                stem("warming")
            except ClawMemoryError:
                log.debug("warm-up recall failed", exc_info=True)
            embedder = vectors.embedder
            note = (f"embedder {embedder.name if embedder else 'none'} warmed up in"
                    f" {time.perf_counter() - started:.2f} s")
            worker = vectors.worker() if sweep else None
            waiting = vectors.queued(None) if sweep else 0
            if worker is not None and waiting:
                worker.sweep()
                note += f"; embedding {waiting} queued memories in the background"
        try:
            # In any mode: the first question naming a time ("last summer") loads the date
            # parser, every locale's data (~0.25 s; ADR 0033's amendment).
            warm_parser(self.settings.time)
        except ClawMemoryError:
            log.debug("warming the date parser failed", exc_info=True)
        vectors.warm_note = note
        return note

    def with_namespace(self, namespace: str) -> Memory:
        """The same store (and the same loaded embedder) seen as another tenant."""
        return Memory(self.store_backend, self.settings, namespace=namespace, clock=self.clock,
                      shared=self.parts.shared)

    def close(self) -> None:
        """Write the queued access counts, let the background worker embed what this process
        queued, then close the store."""
        close_tracker(self.store_backend)  # queued access counts first (search/access.py)
        self.parts.vectors.close()
        self.store_backend.close()

    def flush(self) -> None:
        """Write queued access counts now. Recalls queue them and a background thread writes
        them within ``recall.touch_delay_s``; ``close()`` and every read of stored records
        (get, list, count, history, neighbors, stats, maintenance) flush first, so what a
        recall counted is always what the next read sees."""
        self.parts.records.flush()

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
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        event_time: Any = None,
        source: str | None = None,
        source_role: str | None = None,
        source_ids: Iterable[str] = (),
        confidence: float = 1.0,
    ) -> str:
        """Store a memory and return its id. With a ``key`` that already exists in this
        namespace, that memory is updated in place (upsert — 000) and keeps its id.
        ``narrative_id``/``task_id``: the narrative active when it was created and the task
        that produced it (003 provenance; an integer is kept as its decimal text)."""
        record = self.parts.writes.new_record(
            content, key=key, kind=kind, tags=tags, metadata=metadata, session_id=session_id,
            narrative_id=narrative_id, task_id=task_id, event_time=event_time, source=source,
            source_role=source_role, source_ids=source_ids, confidence=confidence)
        return self.parts.writes.write([record])[0].id

    def store_many(
        self, items: Iterable[Mapping[str, Any]], *, batch_size: int | None = None
    ) -> builtins.list[str]:
        """Store many memories (each a mapping of ``store()``'s arguments, ``content``
        required). Embeddings are computed in batches; each batch is one transaction."""
        items = check_store_items(items)
        if batch_size is not None:
            check_limit(batch_size, maximum=100_000, name="batch_size")
        # 1024 per batch: the model sorts each batch by length before padding, and measured
        # ingest with embeddings rose from ~0.75 to ~0.95 of its raw throughput over 256.
        size = batch_size or max(self.settings.embedder.batch_size, 1024)
        ids = self.parts.writes.store_many(items, size)
        if len(ids) >= _WARM_AFTER:
            self._warm_after_bulk(ids[-1])
        return ids

    def _warm_after_bulk(self, last: str) -> None:
        """After a bulk store, one recall that counts nothing, as the warm-up at open runs,
        asking for the last memory stored (a question that matches many: the keyword, entity
        and fusion code and the index pages the next question will use). Only where the local
        model is loaded already: a remote embedder would be called for it, and a store whose
        vectors wait in the queue must not load the model for it."""
        if (self.settings.embedder.provider != "local"
                or self.parts.vectors.loaded_vectors() is None):
            return
        try:
            self.recall(self.get(last).content[:200], limit=1, touch=False)
        except ClawMemoryError:
            log.debug("warm-up recall after a bulk store failed", exc_info=True)

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
        return self.parts.records.update(id_or_key, content=content, tags=tags,
                                         metadata=metadata, kind=kind, key=key,
                                         event_time=event_time)

    def forget(self, id_or_key: str) -> Forgotten:
        """Hard-delete a memory, live or archived, with every version of it (the corrections
        it went through, 004, and an archived holder of its key), every memory derived from it
        (``source_ids`` naming it, whatever else they name, recursively: ADR 0022) and
        everything derived from those (index rows, links, entity links, vectors, mirror
        files). Nothing is left in the database file either: no copy in free pages or the
        write-ahead log; the LLM response cache, whose answers may quote it, is scrubbed. The
        sessions whose episodes backed a forgotten derived fact are queued to be consolidated
        again from what is left. Returns what went (``Forgotten``); raises NotFoundError."""
        return self.parts.forgetting.forget(id_or_key)

    def derived(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        """The live memories derived from this one (naming it in their ``source_ids``)."""
        return self.parts.records.derived(id_or_key)

    def forget_namespace(self) -> int:
        """Remove this whole tenant: records, links, entities, history, archive."""
        return self.parts.forgetting.forget_namespace()

    # --- the archive (003) ---------------------------------------------------------------------
    def restore(self, id_: str) -> MemoryRecord:
        """Bring an archived memory back into recall, re-indexed; its idle clock restarts.
        Returns the restored record; raises NotFoundError when no archived memory has that id.
        (Maintenance archives memories: ``archived()`` lists them.)"""
        return self.parts.records.restore(check_ref(id_, "id"))

    def archived(self, *, limit: int = 50, offset: int = 0) -> builtins.list[ArchiveEntry]:
        """Archived memories of this namespace, most recently archived first, each with its
        ``archived_at``. ``recall(query, archive=True)`` searches them."""
        return self.parts.records.archived(limit=limit, offset=offset)

    # --- feedback and correction (003, 004) -----------------------------------------------------
    def reinforce(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        """Mark as useful: score += reinforce_weight (3) and the recency clock resets (003)."""
        return self.parts.records.reinforce(id_or_key, weight)

    def demote(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        """Mark as wrong or stale: score -= demote_weight (1) (003)."""
        return self.parts.records.demote(id_or_key, weight)

    def confirm(self, id_or_key: str) -> MemoryRecord:
        """Protect a memory for good: decay_rate 0, confidence 1 (004 confirm_fact)."""
        return self.parts.records.confirm(id_or_key)

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
        return self.parts.records.correct(id_or_key, new_content, tags=tags, reason=reason)

    def history(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        """The correction chain through this memory, oldest first (archived versions are not
        part of it; ``forget`` removes them with the rest)."""
        return self.parts.records.history(id_or_key)

    def observe(
        self,
        role: str,
        content: str,
        session_id: str,
        *,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
    ) -> str:
        """Hot-path ingestion (004): store one user or agent message as an episode, with fast
        NER and no LLM, and register its session for consolidation. Returns the id."""
        return ingest.observe(self, role, content, session_id, narrative_id=narrative_id,
                              task_id=task_id)

    # --- reading -------------------------------------------------------------------------------
    def get(self, id_or_key: str) -> MemoryRecord:
        """The memory with this id or key; raises NotFoundError."""
        return self.parts.records.get(id_or_key)

    def list(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
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
        return self.parts.records.list(
            limit=limit, offset=offset, order=order, kind=kind, tags=tags,
            session_id=session_id, narrative_id=narrative_id, task_id=task_id,
            metadata=metadata, source=source, include_invalid=include_invalid, since=since,
            until=until, created_since=created_since, created_until=created_until, as_of=as_of)

    def count(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        include_invalid: bool = False,
        **filters: Any,
    ) -> int:
        return self.parts.records.count(kind=kind, include_invalid=include_invalid, **filters)

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
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
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
        March?") ranks that period's memories first (the ``time`` factor) and hides nothing;
        it is read against ``as_of`` when given (the time the question is asked at), as is
        recency, else against now.
        """
        return self.parts.retrieval.recall(
            query, limit=limit, kind=kind, tags=tags, session_id=session_id,
            exclude_session_id=exclude_session_id, narrative_id=narrative_id, task_id=task_id,
            metadata=metadata, include_invalid=include_invalid, mode=mode, depth=depth,
            archive=archive, touch=touch, since=since, until=until, created_since=created_since,
            created_until=created_until, as_of=as_of)

    # --- introspection -------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        return self.parts.records.stats()

    # --- maintenance ---------------------------------------------------------------------------
    def maintain(self, job: str = ALL_JOBS) -> builtins.list[RunRecord]:
        """Run one maintenance job now (``maintenance.JOBS``: enrich, consolidate, decay,
        reflect, repair), or all of them, in this namespace. Each run is recorded and
        returned, whatever its outcome (ok, skipped, failed)."""
        view = self.with_namespace(self.namespace)
        name = _job_name(job)
        return jobs.run_all(view) if name == ALL_JOBS else [jobs.run_job(view, name)]

    def preview_maintenance(self, job: str = ALL_JOBS) -> builtins.list[dict[str, Any]]:
        """What ``maintain(job)`` would do now, memory by memory, writing nothing: one
        ``JobPreview.to_dict()`` per job (namespace, job, outcome, counts, message, changes)."""
        view = self.with_namespace(self.namespace)
        name = _job_name(job)
        previews = (jobs.preview_all(view) if name == ALL_JOBS
                    else [jobs.preview_job(view, name)])
        return [p.to_dict() for p in previews]

    def runs(self, limit: int = 20, *, job: str | None = None) -> builtins.list[RunRecord]:
        """Recorded maintenance runs of this namespace, newest first (only ``job``'s when
        given)."""
        if job is not None:
            _job_name(job)
        return self.store_backend.runs(self.namespace, check_limit(limit, maximum=10_000),
                                       job=job)

    def repair(self) -> dict[str, int]:
        """Rebuild derived rows a crash or an older version left missing (``clawmem
        maintain`` runs it): vectors of queued or unembedded memories, entity links of
        memories never linked, and the turn-to-turn chain of sessions. Counts per kind."""
        return repair.repair(self.with_namespace(self.namespace))

    # --- graph (000) and entities (004) --------------------------------------------------------
    def links(self, id_or_key: str, *, limit: int = 50) -> builtins.list[Link]:
        """The links of a memory (the other end's id, strength and origin: manual, synthesis,
        co-recall, sequence), strongest first; ``neighbors`` gives the linked memories."""
        return self.parts.graph.links(self.get(id_or_key), limit)

    def entities_of(self, id_or_key: str) -> builtins.list[dict[str, Any]]:
        """The entities a memory mentions (id, name, type, aliases, mention_count); [] when
        the entity layer is off."""
        return self.parts.graph.entities_of(self.get(id_or_key))

    def link(self, a: str, b: str, *, strength: float = 1.0, origin: str = "manual") -> bool:
        """Link two memories (by id or key) both ways. False if either does not exist.
        ``strength``: greater than 0, at most 1,000. Linking a linked pair again keeps the
        larger strength, so a repeated link changes nothing and never weakens a link that
        co-recall has grown (to lower it: ``unlink``, then ``link``)."""
        return self.parts.graph.link(a, b, strength=strength, origin=origin)

    def unlink(self, a: str, b: str) -> bool:
        return self.parts.graph.unlink(a, b)

    def neighbors(self, id_or_key: str, limit: int = 10) -> builtins.list[MemoryRecord]:
        """Memories linked to this one, strongest link first."""
        return self.parts.graph.neighbors(self.get(id_or_key), limit)

    def entity_info(self, name: str, *, limit: int = 20) -> dict[str, Any]:
        """Everything known about an entity (004 get_entity_info): its profile (canonical name,
        type, aliases, mention count) and the memories that mention it, newest first."""
        return self.parts.graph.entity_info(name, limit=limit)

    # --- portability (000) and vectors ---------------------------------------------------------
    def sync_notes(
        self, *, progress: Callable[[int, int], None] | None = None
    ) -> NotesReport:
        """Read this namespace's notes folder (``storage.mirror_dir``) back into the store: an
        edited note becomes a new version (``history`` keeps the old text), a new note a new
        memory (its id is written into it), a deleted note forgets its memory, a moved one is
        followed, ``[[wikilinks]]`` become links; a note and a memory that both changed keep
        both versions (a conflict). Returns what was done and what was skipped, and why
        (ADR 0023). ``progress(done, total)`` over the notes read."""
        # Imported on first use: the portability package (every importer, ~60 ms) is no part
        # of an ordinary start.
        from clawmemory.portability.notes import sync_notes

        return sync_notes(self, progress=progress)

    def export_snapshot(self) -> str:
        """Every memory of this namespace as JSON (embeddings excluded). Lossless with
        ``import_snapshot``."""
        return self.parts.transfers.export_snapshot()

    def import_snapshot(
        self, text: str, *, source: str = "<snapshot>", dry_run: bool = False
    ) -> ImportReport:
        """Import a snapshot; entries whose key or id already exists are skipped. All or
        nothing: a malformed entry raises ImportFormatError and nothing is written."""
        return self.parts.transfers.import_snapshot(text, source=source, dry_run=dry_run)

    def import_records(
        self,
        parsed: ParsedImport,
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Write already-validated records (and links between them) in one all-or-nothing
        transaction, skipping ids and keys that already exist, then index what was created
        (embeddings in batches, entity links; ``progress(done, total)``). Every importer ends
        here. Episodes join their session's turn-to-turn chain as on every write; records the
        reader marks ``archived`` go to the archive (their source had archived them)."""
        return self.parts.transfers.import_records(parsed, dry_run=dry_run, progress=progress)

    def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int:
        """Drop every stored vector and embed all memories again with the current embedder
        (after a model change). The model is locked per database, so this covers every
        namespace in the store, not just this one. Returns how many were embedded."""
        return self.parts.transfers.reindex(progress=progress, batch_size=batch_size)

    def backfill(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int:
        """Embed the memories that have no vector yet: those queued (stored by a process that
        did not load the model, or killed before it stored the vector) and any other without
        one (stored while no embedder worked). Returns how many were embedded."""
        return self.parts.transfers.backfill(progress=progress, batch_size=batch_size)


def llm_steps() -> Mapping[str, jobs.Step]:
    """The LLM steps of the maintenance jobs (004 consolidation and reflection)."""
    # Imported on the first maintenance run that asks for them: the steps bring cognition,
    # history and tools (~0.2 s), which a command that only stores or recalls never needs.
    from clawmemory.cognition.steps import default_steps

    return default_steps()


def markdown_mirror(root: Path) -> MirrorNotes:
    """The Markdown mirror of one namespace (002's file store), when ``storage.mirror_dir``
    is set."""
    # Imported only when a mirror is configured: the portability package (every importer,
    # ~60 ms) is no part of an ordinary start.
    from clawmemory.portability.markdown import MarkdownMirror

    return MarkdownMirror(root)


# The layers above the core, wired in once: the LLM steps of the maintenance jobs (cognition,
# loaded on first use) and what ``AsyncMemory.open`` opens (client).
jobs.install_default_steps(llm_steps)
install_opener(Memory.open)

if TYPE_CHECKING:  # mypy proves the façade implements both protocols, signature by signature
    _IS_API: type[MemoryAPI] = Memory
    _IS_LOCAL: type[LocalMemory] = Memory

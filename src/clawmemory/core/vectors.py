"""The vector side of one open store: the embedder, the vector store bound to it, the vector
queue and its background worker. Built once per store (``core.composition``) and shared by every
namespace view.

Loading an embedding model takes seconds, so nothing is loaded until a write or a recall
needs vectors; commands that only read records (get, list, stats) never pay for it.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from clawmemory.backends.base import Backend, Store
from clawmemory.config import Settings
from clawmemory.core.indexing import VectorWorker
from clawmemory.embed.base import Embedder
from clawmemory.embed.factory import LocalOptions, make_embedder
from clawmemory.errors import ClawMemoryError, ConfigError
from clawmemory.model import Filter, MemoryRecord
from clawmemory.vectors.base import VectorQueue, VectorStore

__all__ = ["VECTOR_WRITES", "VectorService", "VectorWrites", "document_text"]

VectorWrites = Literal["sync", "queue"]
VECTOR_WRITES: tuple[VectorWrites, ...] = ("sync", "queue")

log = logging.getLogger("clawmemory")
if TYPE_CHECKING:  # numpy loads on first vector use, not at import
    import numpy as np
    import numpy.typing as npt

    F32 = npt.NDArray[np.float32]


@runtime_checkable
class ContextEmbedder(Protocol):
    """A local model that embeds a text after its context (late chunking, ADR 0007)."""

    def embed_in_context(self, items: Sequence[tuple[str, str]]) -> F32: ...


class VectorService:
    """The embedder, the vector store and the vector queue of one store."""

    def __init__(
        self,
        store: Store,
        backend: Backend,
        settings: Settings,
        *,
        embedder: Embedder | None = None,
        embedder_given: bool = False,
        vector_writes: VectorWrites = "sync",
    ) -> None:
        self.store = store
        self.settings = settings
        self._embedder = embedder
        self._embedder_given = embedder_given
        self._vectors: VectorStore | None = None
        self._vector_state: str | None = None  # None = not yet tried; "ok"; or why not
        self._lock = threading.RLock()
        # "sync": a write embeds its memories right after it commits (the library's default);
        # "queue": writes only queue them (one-shot CLI commands: no model load). observe()
        # always leaves them to the background worker.
        if vector_writes not in VECTOR_WRITES:
            raise ConfigError(f"vector_writes must be one of {', '.join(VECTOR_WRITES)}")
        self.vector_writes: VectorWrites = vector_writes
        self._worker: VectorWorker | None = None
        self.warm_note = ""  # what the last warm-up did, for a server's start-up line
        self.backend = backend
        self._queue = self.backend.queue
        self._embedder_problem: str | None = None

    # --- embeddings ----------------------------------------------------------------------------
    @property
    def embedder(self) -> Embedder | None:
        with self._lock:
            if not self._embedder_given:
                self._embedder_given = True
                self._embedder = self._make_embedder()
            return self._embedder

    def _make_embedder(self) -> Embedder | None:
        e = self.settings.embedder
        if self.backend.disabled or e.provider in ("", "none"):
            return None
        try:
            api_key = e.api_key
            if api_key is None and e.provider == "openai":  # 000: fall back to the usual variable
                api_key = os.environ.get("OPENAI_API_KEY")
            return make_embedder(
                e.provider,
                model=e.model,
                base_url=e.base_url,
                api_key=api_key,
                dimensions=e.dimensions,
                batch_size=e.batch_size,
                query_cache_size=e.query_cache_size,
                local=LocalOptions(e.runtime, threads=e.threads, bulk_threads=e.bulk_threads,
                                   cache_dir=e.cache_dir, allow_download=e.allow_download,
                                   quantized=e.quantized),
            )
        except (ImportError, ClawMemoryError) as exc:
            # Said once, by vectors(), with the reason.
            self._embedder_problem = f"embedder {e.provider!r} unavailable ({exc})"
            return None

    def vectors(self) -> VectorStore | None:
        """The bound vector store, or None when vector search is unavailable (said once)."""
        with self._lock:
            if self._vector_state is None:
                self._vector_state = self._bind()
                if self._vector_state != "ok":
                    # Said once. A user who chose "none" needs no warning about it.
                    chose_none = self.settings.embedder.provider in ("", "none")
                    log.log(
                        logging.INFO if chose_none else logging.WARNING, "%s", self._vector_state
                    )
            return self._vectors if self._vector_state == "ok" else None

    def _bind(self) -> str:
        embedder = self.embedder
        if embedder is None:
            return (f"{self._embedder_problem or 'no embedder configured'}: keyword and entity"
                    " recall only")
        vectors = self._new_vector_store()
        if vectors is None:
            return f"the {self.store.backend} backend cannot store vectors: keyword recall only"
        try:
            problem = vectors.bind(embedder.name, embedder.dimension)
        except ClawMemoryError as exc:
            return f"embedder failed to load ({exc}): keyword and entity recall only"
        if problem:
            return problem
        self._vectors = vectors
        return "ok"

    def _new_vector_store(self) -> VectorStore | None:
        make = self.backend.vectors
        recall = self.settings.recall
        return (make(recall.centre_min_rows, recall.centre_min_norm) if make is not None
                else None)

    def vector_queue(self) -> VectorQueue | None:
        """The vector queue when new memories should be queued: a SQLite file with sqlite-vec
        and an embedder configured. Loads nothing."""
        e = self.settings.embedder
        if (self._queue is None or (self._embedder_given and self._embedder is None)
                or (not self._embedder_given and e.provider in ("", "none"))):
            return None
        return self._queue

    def queued(self, namespace: str | None) -> int:
        """How many memories of ``namespace`` (None: of every namespace) wait for their vector
        (0 without a queue)."""
        return self._queue.size(namespace) if self._queue is not None else 0

    def worker(self) -> VectorWorker | None:
        """The background embedding worker (created on first use), or None without a queue."""
        queue = self.vector_queue()
        if queue is None:
            return None
        with self._lock:
            if self._worker is None:
                self._worker = VectorWorker(self, queue, self.settings.embedder.worker_batch)
            return self._worker

    def close(self) -> None:
        """Let the worker embed what this process queued, then stop it."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.stop()

    def loaded_vectors(self) -> VectorStore | None:
        """The vector store if it is already bound; never loads a model."""
        return self._vectors if self._vector_state == "ok" else None

    def vector_status(self) -> str:
        """A one-line description of the vector side for ``stats()``."""
        if self._vector_state is None:
            e = self.settings.embedder
            return f"not loaded yet (embedder: {e.provider} {e.model or 'default'})"
        return self._vector_state

    def reset_vectors(self) -> VectorStore:
        """Drop every stored vector and rebind to the current embedder (reindex)."""
        with self._lock:
            embedder = self.embedder
            if embedder is None:
                raise ConfigError(
                    "no embedder configured (embedder.provider); nothing to reindex with"
                )
            vectors = self._new_vector_store()
            if vectors is None:
                raise ConfigError(f"the {self.store.backend} backend cannot store vectors")
            vectors.reset(embedder.name, embedder.dimension)
            self._vectors, self._vector_state = vectors, "ok"
            return vectors

    def embed_documents(
        self,
        records: Sequence[MemoryRecord],
        preceding: Sequence[Sequence[MemoryRecord]] | None = None,
        ready: Mapping[str, F32] | None = None,
    ) -> list[tuple[str, F32]]:
        """Embeddings for records, batched; computed outside any store lock (000). Each episode
        is embedded after the turns before it (``context_turns``; a reply such as "Sure, I'd
        love to!" means something only next to what it answers). ``preceding``: those turns,
        when the caller has already looked them up. ``ready``: vectors the caller already has
        (by id; the same text in the same context), not computed again."""
        embedder = self.embedder
        if not records or self.vectors() is None or embedder is None:
            return []
        if preceding is None:
            preceding = self.preceding_turns(records, self.settings.embedder.context_turns)
        if ready:
            todo = [i for i, r in enumerate(records) if r.id not in ready]
            rest = dict(self.embed_documents([records[i] for i in todo],
                                             [preceding[i] for i in todo])) if todo else {}
            return [(r.id, ready[r.id] if r.id in ready else rest[r.id]) for r in records]
        contexts = self.contexts(preceding)
        if not isinstance(embedder, ContextEmbedder):  # remote: the context is prepended
            matrix = embedder.embed(
                [document_text(r, [c] if c else []) for r, c in zip(records, contexts, strict=True)]
            )
            return [(r.id, matrix[i]) for i, r in enumerate(records)]
        # Local model: turns with context are embedded in context (late chunking, ADR 0007).
        plain = [i for i, c in enumerate(contexts) if not c]
        ctx = [i for i, c in enumerate(contexts) if c]
        out: dict[int, F32] = {}
        if plain:
            out.update(zip(plain, embedder.embed([document_text(records[i]) for i in plain]),
                           strict=True))
        if ctx:
            pairs = [(contexts[i], document_text(records[i])) for i in ctx]
            vecs = embedder.embed_in_context(pairs)
            out.update(zip(ctx, vecs, strict=True))
        return [(r.id, out[i]) for i, r in enumerate(records)]

    def contexts(self, preceding: Sequence[Sequence[MemoryRecord]]) -> list[str]:
        """The context each record is embedded after: its last ``context_turns`` turns, cut to
        their last ``context_chars`` characters."""
        n = self.settings.embedder.context_turns
        texts = ["\n".join(p.content for p in prev[-n:]) if n > 0 else "" for prev in preceding]
        cap = self.settings.embedder.context_chars
        return [_tail(t, cap) for t in texts] if cap > 0 else texts

    def preceding_turns(
        self, records: Sequence[MemoryRecord], n: int, *, new: bool = False
    ) -> list[list[MemoryRecord]]:
        """For each episode with a session, up to ``n`` turns recorded before it in that session,
        oldest first: from the same batch when they are in it, else from the store (one query
        per session). Works for stored records (reindex, backfill) and, with ``new``, for
        records about to be written: then every stored turn counts as earlier, whatever its
        time (a concurrent writer's clock may have run ahead; the caller holds the write
        lock and moves the new turn's time up to the last one)."""
        out: list[list[MemoryRecord]] = [[] for _ in records]
        if n <= 0:
            return out
        recent: dict[tuple[str, str], list[MemoryRecord]] = {}
        for i, r in enumerate(records):
            if r.kind != "episode" or not r.session_id:
                continue
            key = (r.namespace, r.session_id)
            if key not in recent:
                # Up to and including this record's time (a frozen clock gives equal times),
                # then without the record itself when it is already stored.
                earlier = self.store.list(
                    r.namespace,
                    Filter(
                        kinds=("episode",),
                        session_id=r.session_id,
                        created_before=None if new else math.nextafter(r.created_at, math.inf),
                    ),
                    limit=n + 1,
                    order="newest",
                )
                recent[key] = [e for e in reversed(earlier) if e.id != r.id][-n:]
            out[i] = recent[key][-n:]
            recent[key].append(r)
        return out

    def embed_query(self, text: str) -> F32:
        """The query's embedding (the embedder keeps an LRU of recent queries)."""
        embedder = self.embedder
        if embedder is None:
            raise ConfigError("no embedder configured (embedder.provider)")
        return embedder.embed_query(text)


def document_text(record: MemoryRecord, context: Sequence[str] = ()) -> str:
    """What gets embedded for a memory: its content, with its key when it has one (a key is a
    human-written title and carries meaning), after the dialogue turns that lead up to it."""
    text = f"{record.key}: {record.content}" if record.key else record.content
    return "\n".join([*context, text])


def _tail(text: str, chars: int) -> str:
    """The last ``chars`` characters of ``text``, from the start of a word (a cut inside a
    word drops that word's end; turns are joined by newlines, so any whitespace counts)."""
    if len(text) <= chars:
        return text
    start = len(text) - chars
    if text[start - 1].isspace():
        return text[start:]
    cut = text[start:].split(maxsplit=1)
    return cut[1] if len(cut) == 2 else text[start:]

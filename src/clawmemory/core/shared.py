"""The parts of one open store, built once (``compose_store``) and shared by every namespace
view: the vector side, the entity layer, the Markdown mirrors and the write lock."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from clawmemory.backends.base import Backend, Store
from clawmemory.backends.registry import backend_of
from clawmemory.config import Settings
from clawmemory.core.entities import EntitySource
from clawmemory.core.mirror import MirrorFactory, Mirrors
from clawmemory.core.vectors import VectorService, VectorWrites
from clawmemory.embed.base import Embedder

__all__ = ["StoreParts", "compose_store"]


@dataclass(frozen=True)
class StoreParts:
    """The parts of one open store, built once and shared by every namespace view."""

    store: Store
    backend: Backend
    settings: Settings  # the settings the parts were built with
    vectors: VectorService
    entities: EntitySource
    mirrors: Mirrors
    # Serialises "find the previous turn + insert + link" on backends without transactions.
    write_lock: threading.RLock = field(default_factory=threading.RLock)

    def forget_namespace_state(self, namespace: str) -> None:
        """Drop what this process keeps for a namespace outside the store (the in-process
        history and session ledger of the in-RAM backends: their bundle's job)."""
        self.backend.forget_namespace(namespace)


def compose_store(
    store: Store,
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    embedder_given: bool = False,
    vector_writes: VectorWrites = "sync",
    mirror_factory: MirrorFactory | None = None,
) -> StoreParts:
    """The shared parts of ``store``. ``embedder``: the one to use when ``embedder_given``
    (None: keyword recall only), else the one ``settings`` name is built on first use.
    ``vector_writes``: "sync" (a write embeds right after it commits) or "queue" (writes only
    queue their vectors: one-shot commands that should not load a model)."""
    backend = backend_of(store)
    return StoreParts(
        store=store,
        backend=backend,
        settings=settings,
        vectors=VectorService(store, backend, settings, embedder=embedder,
                              embedder_given=embedder_given, vector_writes=vector_writes),
        entities=EntitySource(backend, settings),
        mirrors=Mirrors(settings, mirror_factory),
    )

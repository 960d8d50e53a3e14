"""The composition root of the local engine: what one open store needs is built once
(``compose_store``, core/shared.py) and shared by every namespace view; ``compose`` binds it to
one view (a namespace, its settings and its clock) as the collaborators the ``Memory`` façade
delegates to (``Parts``). A view's collaborators are small objects over the shared parts, so
``Memory.with_namespace`` costs a few allocations and loads nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clawmemory.backends.base import Store
from clawmemory.config import Settings
from clawmemory.core.entities import EntitySource
from clawmemory.core.forgetting import Forgetting
from clawmemory.core.graph import Graph
from clawmemory.core.records import Records
from clawmemory.core.retrieval import Retrieval
from clawmemory.core.shared import StoreParts, compose_store
from clawmemory.core.transfers import Transfers
from clawmemory.core.vectors import VectorService
from clawmemory.core.writes import WritePath

__all__ = ["Parts", "StoreParts", "compose", "compose_store"]


@dataclass(frozen=True)
class Parts:
    """The collaborators of one namespace view: what ``Memory``'s methods delegate to."""

    shared: StoreParts
    namespace: str
    settings: Settings
    clock: Callable[[], float]
    writes: WritePath  # every write, with its derived rows
    records: Records  # get, list, count, update, feedback, correct, archive, stats
    retrieval: Retrieval  # recall
    forgetting: Forgetting  # forget, forget_namespace
    graph: Graph  # links and entities
    transfers: Transfers  # snapshots, imports, reindex, backfill

    @property
    def store(self) -> Store:
        return self.shared.store

    @property
    def vectors(self) -> VectorService:
        return self.shared.vectors

    @property
    def entities(self) -> EntitySource:
        return self.shared.entities


def compose(
    shared: StoreParts, settings: Settings, namespace: str, clock: Callable[[], float]
) -> Parts:
    """The collaborators of the view (``namespace``, ``settings``, ``clock``) over ``shared``."""
    store, vectors = shared.store, shared.vectors
    writes = WritePath(store, settings, namespace, clock, vectors=vectors,
                       entities=shared.entities, mirrors=shared.mirrors,
                       write_lock=shared.write_lock)
    return Parts(
        shared=shared,
        namespace=namespace,
        settings=settings,
        clock=clock,
        writes=writes,
        records=Records(store, settings, namespace, clock, writes=writes, vectors=vectors),
        retrieval=Retrieval(store, settings, namespace, clock, vectors=vectors,
                            entities=shared.entities),
        forgetting=Forgetting(shared, settings, namespace, writes=writes),
        graph=Graph(store, namespace, entities=shared.entities),
        transfers=Transfers(store, settings, namespace, clock, writes=writes, vectors=vectors),
    )

"""The entity layer of one store (004): its entity index and the fast NER pipeline that feeds
it on every write. Decided once per store, lazily: entities are off when settings say so or the
backend keeps no entity index."""

from __future__ import annotations

import threading
from typing import NamedTuple

from clawmemory.backends.base import Backend
from clawmemory.config import Settings
from clawmemory.entities import make_pipeline
from clawmemory.entities.base import EntityIndex
from clawmemory.entities.pipeline import NERPipeline

__all__ = ["EntityLayer", "EntitySource"]


class EntityLayer(NamedTuple):
    """The index the entity links live in and the NER that finds a text's mentions (a
    tuple, so ``index, ner = layer`` and ``layer[0]`` keep working)."""

    entity_index: EntityIndex
    ner: NERPipeline


class EntitySource:
    """The store's entity layer, built on first use."""

    def __init__(self, backend: Backend, settings: Settings) -> None:
        self._backend = backend
        self._enabled = settings.entities.enabled
        self._layer: EntityLayer | None = None
        self._tried = False
        self._lock = threading.Lock()

    def layer(self) -> EntityLayer | None:
        """(entity index, NER pipeline) or None when entities are off or unsupported.

        Lock-free once decided: writers call it inside a store transaction, while a thread
        binding the vectors holds the vector side's lock and waits for the store."""
        if self._tried:
            return self._layer
        with self._lock:
            if not self._tried:
                index = self._backend.entities if self._enabled else None
                if index is not None:
                    self._layer = EntityLayer(index, make_pipeline())
                self._tried = True  # last: lock-free readers then see the layer
            return self._layer

"""``Components``: the deprecated name of a store's shared parts (``Memory.components``), kept
for one release. New code uses ``Memory.parts`` (``core.composition.Parts``): its
``vectors``, ``entities`` and ``shared.mirrors``. Vector writes are chosen when the memory is
opened (``Memory.open(..., vector_writes="queue")``); setting ``components.vector_writes``
still works until then."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from clawmemory.backends.base import Store
from clawmemory.core.entities import EntityLayer
from clawmemory.core.indexing import VectorWorker
from clawmemory.core.mirror import MirrorNotes
from clawmemory.core.shared import StoreParts
from clawmemory.core.vectors import VectorWrites
from clawmemory.embed.base import Embedder
from clawmemory.model import MemoryRecord
from clawmemory.vectors.base import VectorQueue, VectorStore

if TYPE_CHECKING:  # numpy loads on first vector use, not at import
    import numpy as np
    import numpy.typing as npt

__all__ = ["Components"]


class Components:
    """The old service locator's methods, each forwarded to the part that now owns it."""

    def __init__(self, shared: StoreParts) -> None:
        self.shared = shared

    @property
    def store(self) -> Store:
        return self.shared.store

    @property
    def vector_writes(self) -> VectorWrites:
        return self.shared.vectors.vector_writes

    @vector_writes.setter
    def vector_writes(self, value: VectorWrites) -> None:
        self.shared.vectors.vector_writes = value

    @property
    def warm_note(self) -> str:
        return self.shared.vectors.warm_note

    @property
    def embedder(self) -> Embedder | None:
        return self.shared.vectors.embedder

    def vectors(self) -> VectorStore | None:
        return self.shared.vectors.vectors()

    def loaded_vectors(self) -> VectorStore | None:
        return self.shared.vectors.loaded_vectors()

    def vector_queue(self) -> VectorQueue | None:
        return self.shared.vectors.vector_queue()

    def vector_status(self) -> str:
        return self.shared.vectors.vector_status()

    def queued(self, namespace: str | None) -> int:
        return self.shared.vectors.queued(namespace)

    def worker(self) -> VectorWorker | None:
        return self.shared.vectors.worker()

    def embed_documents(
        self, records: Sequence[MemoryRecord],
        preceding: Sequence[Sequence[MemoryRecord]] | None = None,
        ready: Mapping[str, npt.NDArray[np.float32]] | None = None,
    ) -> list[tuple[str, npt.NDArray[np.float32]]]:
        return self.shared.vectors.embed_documents(records, preceding, ready)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        return self.shared.vectors.embed_query(text)

    def entity_layer(self) -> EntityLayer | None:
        return self.shared.entities.layer()

    def mirror(self, namespace: str) -> MirrorNotes | None:
        return self.shared.mirrors.of(namespace)

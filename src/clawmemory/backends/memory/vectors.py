"""Vectors for the in-memory and JSON backends: one ``VectorMatrix`` per namespace. The JSON
backend also keeps them in its file's ``embeddings`` object (000's object shape)."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from clawmemory.backends.memory.store import MemoryStore
from clawmemory.model import Filter
from clawmemory.vectors.matrix import VectorMatrix

__all__ = ["MemoryVectors"]

F32 = npt.NDArray[np.float32]


class MemoryVectors:
    def __init__(self, store: MemoryStore, centre_min_rows: int = 50,
                 centre_min_norm: float = 0.0) -> None:
        self.store = store
        self.centre_min_rows = centre_min_rows
        self.centre_min_norm = centre_min_norm
        self.dimension: int | None = None
        self.model: str | None = None
        self._matrices: dict[str, VectorMatrix] = {}
        self._lock = threading.RLock()
        self._persisted: dict[str, list[float]] | None = getattr(store, "embeddings", None)

    def bind(self, model: str, dimension: int) -> str | None:
        stored = next(iter(self._persisted.values()), None) if self._persisted else None
        if stored is not None and len(stored) != dimension:
            return (
                f"vector search disabled: the file holds {len(stored)}-d embeddings but the"
                f" embedder {model!r} gives {dimension}-d. Run `clawmem reindex`."
            )
        self.model, self.dimension = model, dimension
        return None

    def _matrix(self, namespace: str) -> VectorMatrix:
        assert self.dimension is not None
        m = self._matrices.get(namespace)
        if m is None:
            m = self._matrices[namespace] = VectorMatrix(
                self.dimension, centre_min_rows=self.centre_min_rows,
                centre_min_norm=self.centre_min_norm,
            )
            if self._persisted:  # JSON backend: vectors saved by an earlier run
                ids = [
                    r.id
                    for r in self.store.list(namespace, Filter(include_invalid=True), limit=10**9)
                ]
                m.upsert(
                    (i, np.asarray(self._persisted[i], dtype=np.float32))
                    for i in ids
                    if i in self._persisted
                )
        return m

    def upsert(
        self,
        namespace: str,
        items: Sequence[tuple[str, F32]],
        *,
        queued: Mapping[str, int] | None = None,  # no queue here: writes embed synchronously
    ) -> int:
        if self.dimension is None or not items:
            return 0
        with self._lock:
            known = {r.id for r in self.store.get_many(namespace, [i for i, _ in items])}
            kept = [(i, v) for i, v in items if i in known]
            self._matrix(namespace).upsert(kept)
            if self._persisted is not None:
                self._persisted.update((i, [float(x) for x in v]) for i, v in kept)
                flush = getattr(self.store, "flush", None)
                if flush is not None:
                    flush()
            return len(kept)

    def search(
        self, namespace: str, query: F32, k: int, *, allowed: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if self.dimension is None:
            return []
        with self._lock:
            return self._matrix(namespace).search(query, k, allowed=allowed)

    def similarities(self, namespace: str, query: F32, ids: Sequence[str]) -> dict[str, float]:
        if self.dimension is None:
            return {}
        with self._lock:
            return self._matrix(namespace).similarities(query, ids)

    def drop_namespace(self, namespace: str) -> None:
        with self._lock:
            matrix = self._matrices.pop(namespace, None)
            if matrix is not None and self._persisted is not None:
                for i in matrix.ids():
                    self._persisted.pop(i, None)

    def forget(self, namespace: str, ids: Sequence[str]) -> None:
        with self._lock:
            if namespace in self._matrices:
                self._matrices[namespace].remove(ids)
            if self._persisted is not None:
                for i in ids:
                    self._persisted.pop(i, None)

    def missing(self, namespace: str, limit: int) -> list[str]:
        if self.dimension is None:
            return []
        with self._lock:
            m = self._matrix(namespace)
            ids = [
                r.id
                for r in self.store.list(
                    namespace, Filter(), limit=10**9, order="oldest"
                )
            ]
            return [i for i in ids if i not in m][:limit]

    def count(self, namespace: str) -> int:
        return 0 if self.dimension is None else len(self._matrix(namespace))

    def centred(self, namespace: str) -> bool:
        if self.dimension is None:
            return False
        with self._lock:
            return self._matrix(namespace).centred

    def reset(self, model: str, dimension: int) -> None:
        with self._lock:
            self._matrices.clear()
            if self._persisted is not None:
                self._persisted.clear()
            self.model, self.dimension = model, dimension

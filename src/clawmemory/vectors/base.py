"""The vector boundary: where embeddings are kept and searched, per namespace."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # numpy loads on first vector use, not at import
    import numpy as np
    import numpy.typing as npt

__all__ = ["QueueEntry", "VectorQueue", "VectorStore"]

QueueEntry = tuple[str, str, int, int]  # namespace, memory id, seq, token


class VectorStore(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    def bind(self, model: str, dimension: int) -> str | None:
        """Lock the store to this embedding model and dimension on first use. Returns None when
        the vectors are usable, or a warning explaining why vector search is disabled (the
        database holds vectors of another dimension or model; ``reindex`` rebuilds them)."""
        ...

    def upsert(
        self,
        namespace: str,
        items: Sequence[tuple[str, npt.NDArray[np.float32]]],
        *,
        queued: Mapping[str, int] | None = None,
    ) -> int:
        """Store vectors (taking their memories off the vector queue, where the store has one);
        with ``queued`` (id -> queue token) only those still queued with that token. Returns
        how many were stored."""
        ...

    def search(
        self,
        namespace: str,
        query: npt.NDArray[np.float32],
        k: int,
        *,
        allowed: Sequence[str] | None = None,
    ) -> list[tuple[str, float]]:
        """(memory id, cosine similarity) best first."""
        ...

    def similarities(
        self, namespace: str, query: npt.NDArray[np.float32], ids: Sequence[str]
    ) -> dict[str, float]:
        """Cosine similarity of each id that has a vector (for fusion and explanations)."""
        ...

    def forget(self, namespace: str, ids: Sequence[str]) -> None:
        """Drop cached vectors of deleted memories (the store deletes the durable rows)."""
        ...

    def drop_namespace(self, namespace: str) -> None:
        """Forget every cached vector of a namespace whose records were all deleted."""
        ...

    def missing(self, namespace: str, limit: int) -> list[str]:
        """Ids of memories that have no vector yet (for reindex/backfill)."""
        ...

    def count(self, namespace: str) -> int: ...

    def centred(self, namespace: str) -> bool:
        """Whether this namespace's similarities are centred cosines (ADR 0007): it holds
        ``centre_min_rows`` vectors or more and their mean is at least ``centre_min_norm``
        long (ADR 0029). Asked on every recall (the relevance floor's thresholds depend on
        it), so it must be cheap."""
        ...

    def reset(self, model: str, dimension: int) -> None:
        """Drop every vector and rebind to a new model/dimension (reindex)."""
        ...


class VectorQueue(Protocol):
    """Memories waiting for their vector, in the store's own tables (SQLite here,
    ``backends/postgres/vectors.py`` on PostgreSQL)."""

    def enqueue(self, namespace: str, ids: Sequence[str], now: float) -> list[QueueEntry]: ...

    def pending(self, namespace: str | None, limit: int, *, after: int = 0,
                max_attempts: int | None = None) -> list[QueueEntry]: ...

    def size(self, namespace: str | None) -> int: ...

    def failed(self, seqs: Sequence[int], error: str) -> None: ...

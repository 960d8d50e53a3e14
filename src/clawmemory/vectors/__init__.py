"""Vector storage and search: ``VectorStore`` (base), an in-RAM matrix index (matrix), the
SQLite/sqlite-vec store (sqlite) and the in-memory/JSON store (memory)."""

from __future__ import annotations

from clawmemory.store.base import Store
from clawmemory.vectors.base import VectorStore

__all__ = ["VectorStore", "vector_store_for"]


def vector_store_for(store: Store) -> VectorStore | None:
    """The vector store that goes with a record store, or None (none backend)."""
    from clawmemory.store.memory import MemoryStore
    from clawmemory.store.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        from clawmemory.vectors.sqlite import SQLiteVectors

        return SQLiteVectors(store) if store.vec_available else None
    if isinstance(store, MemoryStore):
        from clawmemory.vectors.memory import MemoryVectors

        return MemoryVectors(store)
    return None

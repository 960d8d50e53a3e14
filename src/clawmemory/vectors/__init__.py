"""Vector storage and search: ``VectorStore`` (base), an in-RAM matrix index (matrix), the
SQLite/sqlite-vec store (sqlite) and the in-memory/JSON store (memory)."""

from __future__ import annotations

from clawmemory.store.base import Store
from clawmemory.vectors.base import VectorStore

__all__ = ["VectorStore", "vector_store_for"]


def vector_store_for(store: Store, *, centre_min_rows: int = 50) -> VectorStore | None:
    """The vector store that goes with a record store, or None (none backend).
    ``centre_min_rows``: see ``VectorMatrix`` (0 = plain cosine)."""
    from clawmemory.store.memory import MemoryStore
    from clawmemory.store.sqlite import SQLiteStore

    if store.backend == "postgres":
        from clawmemory.store.postgres import PostgresStore
        from clawmemory.vectors.postgres import PostgresVectors

        assert isinstance(store, PostgresStore)
        return PostgresVectors(store, centre_min_rows)
    if isinstance(store, SQLiteStore):
        from clawmemory.vectors.sqlite import SQLiteVectors

        return SQLiteVectors(store, centre_min_rows) if store.vec_available else None
    if isinstance(store, MemoryStore):
        from clawmemory.vectors.memory import MemoryVectors

        return MemoryVectors(store, centre_min_rows)
    return None

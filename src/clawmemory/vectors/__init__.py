"""Vector storage and search: ``VectorStore`` (base), an in-RAM matrix index (matrix), the
SQLite/sqlite-vec store (sqlite) and the in-memory/JSON store (memory)."""

from __future__ import annotations

from clawmemory.backends.base import Store
from clawmemory.vectors.base import VectorStore

__all__ = ["VectorStore", "vector_store_for"]


def vector_store_for(store: Store, *, centre_min_rows: int = 50) -> VectorStore | None:
    """The vector store that goes with a record store, or None (none backend).
    ``centre_min_rows``: see ``VectorMatrix`` (0 = plain cosine)."""
    from clawmemory.backends.memory.store import MemoryStore
    from clawmemory.backends.sqlite.store import SQLiteStore

    if store.backend == "postgres":
        from clawmemory.backends.postgres.store import PostgresStore
        from clawmemory.backends.postgres.vectors import PostgresVectors

        assert isinstance(store, PostgresStore)
        return PostgresVectors(store, centre_min_rows)
    if isinstance(store, SQLiteStore):
        from clawmemory.backends.sqlite.vectors import SQLiteVectors

        return SQLiteVectors(store, centre_min_rows) if store.vec_available else None
    if isinstance(store, MemoryStore):
        from clawmemory.backends.memory.vectors import MemoryVectors

        return MemoryVectors(store, centre_min_rows)
    return None

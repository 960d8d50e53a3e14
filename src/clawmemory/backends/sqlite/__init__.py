"""The SQLite backend, the embedded default: one file with FTS5 keyword search, sqlite-vec
vectors, entity, history, session and API-key tables (``store.py`` says how it is written)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from clawmemory.backends.base import Backend, Clock, HistoryStore, Store, keyword_weights
from clawmemory.backends.sqlite.entities import SQLiteEntityIndex
from clawmemory.backends.sqlite.history import SQLiteHistoryStore, SQLiteLedger
from clawmemory.backends.sqlite.keys import SQLiteKeyStore
from clawmemory.backends.sqlite.queue import SQLiteVectorQueue
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.config import Settings
from clawmemory.vectors.base import VectorStore

__all__ = ["SQLiteStore", "open_store", "parts"]


def open_store(settings: Settings, *, create: bool, read_only: bool) -> Store:
    return SQLiteStore(settings.resolved_db(), busy_timeout_ms=settings.storage.busy_timeout_ms,
                       weights=keyword_weights(settings), create=create, read_only=read_only,
                       keyword_candidates=settings.storage.keyword_candidates,
                       keyword_context=settings.storage.keyword_context)


class _Rows:
    """Raw rows of the file for repair."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def rows(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        return self.store.query(sql, args)

    def set_meta(self, key: str, value: str) -> None:
        with self.store.write():
            self.store.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))


def parts(store: Store) -> Backend:
    assert isinstance(store, SQLiteStore)

    def vectors(centre_min_rows: int, centre_min_norm: float) -> VectorStore | None:
        # Imported here: the vectors module loads numpy, which a keyword-only command (and
        # every cold `clawmem` that never embeds) must not pay for.
        from clawmemory.backends.sqlite.vectors import SQLiteVectors

        # Without the sqlite-vec extension the file still works, with keyword recall only.
        return (SQLiteVectors(store, centre_min_rows, centre_min_norm) if store.vec_available
                else None)

    def history(namespace: str, clock: Clock) -> HistoryStore:
        return SQLiteHistoryStore(store, namespace, clock=clock)

    return Backend(
        name="sqlite",
        records=store,
        vectors=vectors,
        queue=SQLiteVectorQueue(store) if store.vec_available else None,
        entities=SQLiteEntityIndex(store),
        history=history,
        sessions=SQLiteLedger(store),
        keys=SQLiteKeyStore(store),
        sql=_Rows(store),
        forget_namespace=lambda namespace: None,  # every row is in the file: delete_namespace
    )

"""The PostgreSQL backend: the same contract as SQLite on a database server (pgvector for
vectors), for several replicas, many tenants and millions of memories (docs/postgres.md)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from clawmemory.backends.base import Backend, Clock, HistoryStore, Store, keyword_weights
from clawmemory.backends.postgres.entities import PostgresEntityIndex
from clawmemory.backends.postgres.history import PostgresHistoryStore, PostgresLedger
from clawmemory.backends.postgres.keys import PostgresKeyStore
from clawmemory.backends.postgres.store import PostgresOptions, PostgresStore
from clawmemory.backends.postgres.vectors import PostgresVectorQueue, PostgresVectors
from clawmemory.config import Settings
from clawmemory.errors import ConfigError
from clawmemory.vectors.base import VectorStore

__all__ = ["PostgresStore", "open_store", "parts"]


def open_store(settings: Settings, *, create: bool, read_only: bool) -> Store:
    if not isinstance(settings.db, str):
        raise ConfigError('backend "postgres" needs a postgresql:// address in db'
                          " (--db / CLAWMEM_DB)")
    options = PostgresOptions(**settings.postgres.model_dump())
    return PostgresStore(settings.db, options=options, read_only=read_only, create=create,
                         weights=keyword_weights(settings),
                         keyword_context=settings.storage.keyword_context)


class _Rows:
    """Raw rows for repair; its queries are written with SQLite's ``?`` marks."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def rows(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        return self.store.query(sql.replace("?", "%s"), args)

    def set_meta(self, key: str, value: str) -> None:
        self.store.set_meta(key, value)


def parts(store: Store) -> Backend:
    assert isinstance(store, PostgresStore)

    def vectors(centre_min_rows: int, centre_min_norm: float) -> VectorStore | None:
        return PostgresVectors(store, centre_min_rows, centre_min_norm)

    def history(namespace: str, clock: Clock) -> HistoryStore:
        return PostgresHistoryStore(store, namespace, clock=clock)

    return Backend(
        name="postgres",
        records=store,
        vectors=vectors,
        queue=PostgresVectorQueue(store),
        entities=PostgresEntityIndex(store),
        history=history,
        sessions=PostgresLedger(store),
        keys=PostgresKeyStore(store),
        sql=_Rows(store),
        forget_namespace=lambda namespace: None,  # every row is in the database
    )

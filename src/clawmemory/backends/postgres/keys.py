"""API keys in the PostgreSQL store's ``api_keys`` table (PostgreSQL migration 004): the same
statements as backends/sqlite/keys.py, with psycopg's ``%s`` marks, in the store's
transactions. Every replica of a service reads the same keys, so a key created or revoked on
one is seen by all."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.backends.sqlite.keys import SQLKeyStore

if TYPE_CHECKING:
    from clawmemory.backends.postgres.store import PostgresStore

__all__ = ["PostgresKeyStore"]


class PostgresKeyStore(SQLKeyStore):
    """The ``KeyStore`` of a ``PostgresStore``. Errors are the store's ``StorageError``."""

    def __init__(self, store: PostgresStore) -> None:
        self._pg = store

    def _write(self) -> Any:
        return self._pg.write()

    def _run(self, sql: str, args: Sequence[Any]) -> None:
        self._pg.execute(sql.replace("?", "%s"), args)

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[Sequence[Any]]:
        return builtins.list(self._pg.query(sql.replace("?", "%s"), args))

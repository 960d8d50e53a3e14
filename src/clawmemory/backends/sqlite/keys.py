"""API keys in the SQLite store's ``api_keys`` table (migration 012), sharing the store's
connection, lock and ``BEGIN IMMEDIATE`` transactions."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.backends.keys import ApiKey, Role

if TYPE_CHECKING:
    from clawmemory.backends.sqlite.store import SQLiteStore

__all__ = ["SQLKeyStore", "SQLiteKeyStore"]

_COLUMNS = "id, role, tenants, label, created_at, revoked_at"  # tenants: the namespaces


def _key(row: Sequence[Any]) -> ApiKey:
    key_id, role, namespaces, label, created_at, revoked_at = row
    return ApiKey(key_id, Role(role), tuple(json.loads(namespaces)), created_at, label,
                  revoked_at)


class SQLKeyStore:
    """A ``KeyStore`` over one SQL table (``api_keys``), written with ``?`` marks: the
    subclass runs a statement in its store's write transaction (``_run``) and reads rows
    (``_rows``). SQLite and PostgreSQL (backends/postgres/keys.py) share these statements."""

    def _run(self, sql: str, args: Sequence[Any]) -> None:
        raise NotImplementedError

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[Sequence[Any]]:
        raise NotImplementedError

    def _write(self) -> Any:
        raise NotImplementedError

    def add(self, key: ApiKey, digest: str) -> None:
        with self._write():
            self._run(
                f"INSERT INTO api_keys (digest, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (digest, key.id, key.role.value, json.dumps(list(key.namespaces)), key.label,
                 key.created_at, key.revoked_at))

    def find(self, key_id: str) -> tuple[ApiKey, str] | None:
        rows = self._rows(f"SELECT {_COLUMNS}, digest FROM api_keys WHERE id = ?", (key_id,))
        return (_key(rows[0][:-1]), str(rows[0][-1])) if rows else None

    def all(self) -> builtins.list[ApiKey]:
        return [_key(r) for r in self._rows(
            f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")]

    def revoke(self, key_id: str, at: float) -> ApiKey | None:
        with self._write():
            self._run(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (at, key_id))
        found = self.find(key_id)
        return found[0] if found else None

    def has_active(self) -> bool:
        return bool(self._rows(
            "SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1"))


class SQLiteKeyStore(SQLKeyStore):
    """The ``KeyStore`` of a ``SQLiteStore``. Errors are the store's ``StorageError``."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def _write(self) -> Any:
        return self.store.write()

    def _run(self, sql: str, args: Sequence[Any]) -> None:
        self.store.conn.execute(sql, args)

    def _rows(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[Sequence[Any]]:
        return builtins.list(self.store.query(sql, args))

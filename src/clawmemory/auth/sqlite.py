"""API keys in the SQLite store's ``api_keys`` table (migration 012), sharing the store's
connection, lock and ``BEGIN IMMEDIATE`` transactions."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.auth.base import ApiKey, Role

if TYPE_CHECKING:
    from clawmemory.store.sqlite import SQLiteStore

__all__ = ["SQLiteKeyStore"]

_COLUMNS = "id, role, tenants, label, created_at, revoked_at"  # tenants: the namespaces


def _key(row: Sequence[Any]) -> ApiKey:
    key_id, role, namespaces, label, created_at, revoked_at = row
    return ApiKey(key_id, Role(role), tuple(json.loads(namespaces)), created_at, label,
                  revoked_at)


class SQLiteKeyStore:
    """The ``KeyStore`` of a ``SQLiteStore``. Errors are the store's ``StorageError``."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    def add(self, key: ApiKey, digest: str) -> None:
        with self.store.write():
            self.store.conn.execute(
                f"INSERT INTO api_keys (digest, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (digest, key.id, key.role.value, json.dumps(list(key.namespaces)), key.label,
                 key.created_at, key.revoked_at))

    def find(self, key_id: str) -> tuple[ApiKey, str] | None:
        rows = self.store._query(f"SELECT {_COLUMNS}, digest FROM api_keys WHERE id = ?",
                                 (key_id,))
        return (_key(rows[0][:-1]), str(rows[0][-1])) if rows else None

    def all(self) -> builtins.list[ApiKey]:
        return [_key(r) for r in self.store._query(
            f"SELECT {_COLUMNS} FROM api_keys ORDER BY created_at, id")]

    def revoke(self, key_id: str, at: float) -> ApiKey | None:
        with self.store.write():
            self.store.conn.execute(
                "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                (at, key_id))
        found = self.find(key_id)
        return found[0] if found else None

    def has_active(self) -> bool:
        return bool(self.store._query(
            "SELECT 1 FROM api_keys WHERE revoked_at IS NULL LIMIT 1"))

"""Creating, checking and revoking API keys over any ``KeyStore`` (the logic every backend
shares), and finding the KeyStore of an open store."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Sequence

from clawmemory.backends.base import Store
from clawmemory.backends.keys import ApiKey, KeyStore, Role, check_namespaces
from clawmemory.backends.registry import backend_of
from clawmemory.errors import ConfigError, InvalidInputError, NotFoundError

__all__ = ["KEY_PREFIX", "Keys", "digest", "key_store_for", "keys_for"]

KEY_PREFIX = "cmk"  # "cmk_<id>_<secret>": the prefix makes a leaked key easy to recognise
_ID_BYTES = 6  # 12 hex characters: the public half
_SECRET_BYTES = 32  # 256 random bits


def digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _split(key: str) -> str | None:
    """The id part of a well-formed key, else None."""
    parts = key.split("_", 2)  # the secret (base64url) may hold "_" itself
    if len(parts) != 3 or parts[0] != KEY_PREFIX or len(parts[1]) != 2 * _ID_BYTES:
        return None
    return parts[1]


class Keys:
    """API keys of one store."""

    def __init__(self, store: KeyStore, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock

    def create(self, namespaces: Sequence[str], role: str | Role = Role.WRITE,
               label: str | None = None) -> tuple[ApiKey, str]:
        """A new key bound to ``namespaces`` (the first is its default) with ``role``.
        Returns the stored record and the key itself, which is shown only now."""
        try:
            chosen = Role(str(role).lower())
        except ValueError:
            raise InvalidInputError(f"unknown role {role!r}; one of: "
                                    f"{', '.join(r.value for r in Role)}") from None
        if label is not None and (len(label) > 200 or "\x00" in label):
            raise InvalidInputError("a key's label is at most 200 characters of text")
        key_id = secrets.token_hex(_ID_BYTES)
        secret = f"{KEY_PREFIX}_{key_id}_{secrets.token_urlsafe(_SECRET_BYTES)}"
        record = ApiKey(key_id, chosen, check_namespaces(namespaces), self.clock(), label)
        self.store.add(record, digest(secret))
        return record, secret

    def verify(self, key: str) -> ApiKey | None:
        """The active key this secret is, else None (unknown, malformed or revoked)."""
        key_id = _split(key.strip())
        found = self.store.find(key_id) if key_id else None
        if found is None:
            return None
        record, stored = found
        # Constant time: how much of a guess matched must not show in the response time.
        if not hmac.compare_digest(stored, digest(key.strip())) or not record.active:
            return None
        return record

    def list(self) -> list[ApiKey]:
        return self.store.all()

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke by id (or by the whole key); NotFoundError when no key has that id."""
        wanted = _split(key_id.strip()) or key_id.strip()
        record = self.store.revoke(wanted, self.clock())
        if record is None:
            raise NotFoundError(f"no API key with id {key_id!r} (clawmem keys list shows them)")
        return record

    def required(self) -> bool:
        return self.store.has_active()


def key_store_for(store: Store) -> KeyStore:
    """The KeyStore of an open store. ConfigError for a backend that cannot keep keys (keys
    in a process's RAM or in a JSON file another process rewrites would not protect a
    server)."""
    keys = backend_of(store).keys
    if keys is None:
        raise ConfigError(
            f"the {store.backend} backend cannot keep API keys; use the"
            " sqlite or postgres backend for a server that other machines reach (without keys"
            " a server listens on loopback only)")
    return keys


def keys_for(store: Store) -> Keys | None:
    """``Keys`` of a store, or None when its backend keeps none (then no key can exist)."""
    keys = backend_of(store).keys
    return Keys(keys) if keys is not None else None

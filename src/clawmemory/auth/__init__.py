"""API keys and tenant access for the server (ADR 0016)."""

from clawmemory.auth.keys import KEY_PREFIX, Keys, key_store_for, keys_for
from clawmemory.backends.keys import ROLE_RANK, Access, ApiKey, KeyStore, Role

__all__ = ["KEY_PREFIX", "ROLE_RANK", "Access", "ApiKey", "KeyStore", "Keys", "Role",
           "key_store_for", "keys_for"]

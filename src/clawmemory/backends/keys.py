"""API keys: the roles, the stored key record, the narrow ``KeyStore`` boundary a backend
implements, and ``Access``: what one request may do, resolved from its key.

A key is shown once, when it is created (``cmk_<id>_<secret>``); the store keeps its id (the
public half, shown by ``clawmem keys list``) and the SHA-256 digest of the whole key. The secret
is 256 random bits, so a plain digest is as strong as a slow password hash would be (those exist
for guessable passwords) and checking a key costs one indexed lookup and one constant-time
comparison.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from clawmemory.errors import AccessDeniedError, InvalidInputError
from clawmemory.validation import check_namespace

__all__ = ["ROLE_RANK", "Access", "ApiKey", "KeyStore", "Role"]


class Role(StrEnum):
    """What a key may do in its namespaces; each role includes the ones before it."""

    READ = "read"  # get, list, recall, history, links, entities, stats, export, runs
    WRITE = "write"  # + store, update, correct, confirm, reinforce, demote, forget, link, import
    ADMIN = "admin"  # + forget a whole namespace, maintenance jobs, vector backfill


ROLE_RANK = {Role.READ: 0, Role.WRITE: 1, Role.ADMIN: 2}


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One key as stored (never the secret): its public id, role and namespaces."""

    id: str
    role: Role
    namespaces: tuple[str, ...]
    created_at: float
    label: str | None = None
    revoked_at: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role.value, "namespaces": list(self.namespaces),
                "label": self.label, "created_at": self.created_at,
                "revoked_at": self.revoked_at}


@runtime_checkable
class KeyStore(Protocol):
    """Where a backend keeps API keys. ``digest`` is the hex SHA-256 of the whole key; the
    secret itself never reaches a KeyStore. Every method is one small transaction."""

    def add(self, key: ApiKey, digest: str) -> None:
        """Record a new key (its id is new: 48 random bits)."""
        ...

    def find(self, key_id: str) -> tuple[ApiKey, str] | None:
        """The key with this id and its stored digest, revoked or not; None when unknown."""
        ...

    def all(self) -> builtins.list[ApiKey]:
        """Every key, revoked ones included, oldest first."""
        ...

    def revoke(self, key_id: str, at: float) -> ApiKey | None:
        """Mark the key revoked at ``at`` (kept, for the record); None when unknown. Revoking a
        revoked key changes nothing and returns it."""
        ...

    def has_active(self) -> bool:
        """Whether any key is not revoked: then every request must carry one."""
        ...


@dataclass(frozen=True, slots=True)
class Access:
    """What one request may do. ``namespaces`` None: every namespace (a loopback server with no
    keys, used by its own user). ``default``: the namespace a request that names none works in."""

    role: Role
    namespaces: tuple[str, ...] | None
    default: str
    key_id: str | None = None

    def namespace(self, requested: str | None) -> str:
        """The namespace a request works in: the one it names, if this access covers it, else
        the default. AccessDeniedError otherwise, worded the same whether or not the namespace
        exists (so a key cannot learn which other tenants there are)."""
        chosen = (requested or "").strip() or self.default
        if self.namespaces is not None and chosen not in self.namespaces:
            raise AccessDeniedError(f"this API key has no access to namespace {chosen!r}"
                                    f" (its namespaces: {', '.join(self.namespaces)})")
        return chosen

    def require(self, role: Role, what: str) -> None:
        """AccessDeniedError unless this access has ``role`` or a higher one."""
        if ROLE_RANK[self.role] < ROLE_RANK[role]:
            raise AccessDeniedError(f"{what} needs a key with the {role.value} role; this key"
                                    f" has {self.role.value}")

    def allows(self, role: Role) -> bool:
        return ROLE_RANK[self.role] >= ROLE_RANK[role]

    @classmethod
    def of(cls, key: ApiKey) -> Access:
        return cls(key.role, key.namespaces, key.namespaces[0], key.id)


def check_namespaces(namespaces: Sequence[str]) -> tuple[str, ...]:
    """Distinct, checked namespace names, at least one."""
    names = tuple(dict.fromkeys(check_namespace(n) for n in namespaces))
    if not names:
        raise InvalidInputError("a key needs at least one namespace (--namespace NS)")
    return names

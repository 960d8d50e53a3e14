"""The JSON-file backend (000's JSON snapshot as a store): the in-memory backend, saved to one
JSON file after each write."""

from __future__ import annotations

from clawmemory.backends.base import Backend, Store, keyword_weights
from clawmemory.backends.jsonfile.store import JSONFileStore
from clawmemory.backends.memory import in_process_parts
from clawmemory.config import Settings
from clawmemory.errors import NotFoundError

__all__ = ["JSONFileStore", "open_store", "parts"]


def open_store(settings: Settings, *, create: bool, read_only: bool) -> Store:
    path = settings.resolved_db()
    if not create and not path.exists():
        raise NotFoundError(f"no clawmemory store at {path} yet (nothing has been"
                            " stored there; `clawmem add` creates it)")
    return JSONFileStore(path, weights=keyword_weights(settings),
                         keyword_context=settings.storage.keyword_context)


def parts(store: Store) -> Backend:
    # Keys in a file another process rewrites would not protect a server: none here either.
    assert isinstance(store, JSONFileStore)
    return in_process_parts(store, "json")

"""Pick the storage backend named in settings (a closed set), falling back to ``none`` with a
warning when a backend cannot be loaded (000: memory degrades, the agent keeps working)."""

from __future__ import annotations

import logging

from clawmemory import private
from clawmemory.config import Settings, default_home
from clawmemory.errors import ConfigError, NotFoundError
from clawmemory.store.base import Store

__all__ = ["BACKENDS", "open_store"]

log = logging.getLogger("clawmemory")
BACKENDS = ("sqlite", "memory", "json", "none")


def open_store(settings: Settings, *, create: bool = True, read_only: bool = False) -> Store:
    """The backend named in settings. ``create=False``: a store that does not exist yet is a
    NotFoundError instead of a new, empty one. ``read_only``: nothing is written (SQLite opens
    the file read-only; recall then leaves access counts as they are)."""
    name = str(settings.backend).lower()
    if settings.db is None and name in ("sqlite", "json") and default_home().exists():
        private.warn_if_shared(default_home())  # it holds every memory of this user
    r = settings.recall
    weights = (r.weight_key, r.weight_content, r.weight_tags, r.weight_source)
    try:
        if name == "sqlite":
            from clawmemory.store.sqlite import SQLiteStore

            return SQLiteStore(settings.resolved_db(),
                               busy_timeout_ms=settings.storage.busy_timeout_ms, weights=weights,
                               create=create, read_only=read_only)
        if name == "memory":
            from clawmemory.store.memory import MemoryStore

            return MemoryStore(weights=weights)
        if name == "json":
            from clawmemory.store.jsonfile import JSONFileStore

            path = settings.resolved_db()
            if not create and not path.exists():
                raise NotFoundError(f"no clawmemory store at {path} yet (nothing has been"
                                    " stored there; `clawmem add` creates it)")
            return JSONFileStore(path, weights=weights)
        if name == "none":
            from clawmemory.store.none import NoneStore

            return NoneStore()
    except (ImportError, ConfigError) as exc:
        log.warning("memory backend %r is unavailable (%s); memory is disabled (backend none)",
                    name, exc)
    else:
        log.warning("unknown memory backend %r (expected one of %s); memory is disabled"
                    " (backend none)", name, ", ".join(BACKENDS))
    from clawmemory.store.none import NoneStore

    return NoneStore()

"""Pick the storage backend named in settings (a closed set), falling back to ``none`` with a
warning when a backend cannot be loaded (000: memory degrades, the agent keeps working)."""

from __future__ import annotations

import logging

from clawmemory.config import Settings
from clawmemory.errors import ConfigError
from clawmemory.store.base import Store

__all__ = ["BACKENDS", "open_store"]

log = logging.getLogger("clawmemory")
BACKENDS = ("sqlite", "memory", "json", "none")


def open_store(settings: Settings) -> Store:
    name = str(settings.backend).lower()
    r = settings.recall
    weights = (r.weight_key, r.weight_content, r.weight_tags, r.weight_source)
    try:
        if name == "sqlite":
            from clawmemory.store.sqlite import SQLiteStore

            return SQLiteStore(settings.resolved_db(),
                               busy_timeout_ms=settings.storage.busy_timeout_ms, weights=weights)
        if name == "memory":
            from clawmemory.store.memory import MemoryStore

            return MemoryStore(weights=weights)
        if name == "json":
            from clawmemory.store.jsonfile import JSONFileStore

            return JSONFileStore(settings.resolved_db(), weights=weights)
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

"""Pick the storage backend named in settings (a closed set), falling back to ``none`` with a
warning when a backend cannot be loaded (000: memory degrades, the agent keeps working). An
unknown name is a ConfigError, as in ``Settings`` and on the command line: a typo is not an
outage to degrade through."""

from __future__ import annotations

import logging
import re
from pathlib import Path

from clawmemory import private
from clawmemory.backends.base import Store
from clawmemory.config import URL_SCHEME, Backend, Settings, check_backend, default_home
from clawmemory.errors import ConfigError, NotFoundError

__all__ = ["BACKENDS", "open_store"]

log = logging.getLogger("clawmemory")
BACKENDS = ("sqlite", "memory", "json", "postgres", "none")
# A URL that went through Path() lost one slash of its "//": "postgresql:/host/db".
_FOLDED_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")


def open_store(settings: Settings, *, create: bool = True, read_only: bool = False) -> Store:
    """The backend named in settings. ``create=False``: a store that does not exist yet is a
    NotFoundError instead of a new, empty one. ``read_only``: nothing is written (SQLite opens
    the file read-only; recall then leaves access counts as they are)."""
    try:  # again here: settings.model_copy(update=...) skips the Settings validators
        name = check_backend(settings.backend)
    except ValueError as exc:
        raise ConfigError(f"invalid setting backend: {exc}") from None
    if _is_address(settings.db) or name == Backend.POSTGRES.value:
        # An address the user named: never a fallback to "none", never a file named after it.
        return _open_postgres(settings, create=create, read_only=read_only)
    if settings.db is None and name in ("sqlite", "json") and default_home().exists():
        private.warn_if_shared(default_home())  # it holds every memory of this user
    r = settings.recall
    weights = (r.weight_key, r.weight_content, r.weight_tags, r.weight_source)
    try:
        if name == "sqlite":
            from clawmemory.backends.sqlite.store import SQLiteStore

            return SQLiteStore(settings.resolved_db(),
                               busy_timeout_ms=settings.storage.busy_timeout_ms, weights=weights,
                               create=create, read_only=read_only)
        if name == "memory":
            from clawmemory.backends.memory.store import MemoryStore

            return MemoryStore(weights=weights)
        if name == "json":
            from clawmemory.backends.jsonfile.store import JSONFileStore

            path = settings.resolved_db()
            if not create and not path.exists():
                raise NotFoundError(f"no clawmemory store at {path} yet (nothing has been"
                                    " stored there; `clawmem add` creates it)")
            return JSONFileStore(path, weights=weights)
        if name == "none":
            from clawmemory.backends.none.store import NoneStore

            return NoneStore()
    except (ImportError, ConfigError) as exc:
        log.warning("memory backend %r is unavailable (%s); memory is disabled (backend none)",
                    name, exc)
    from clawmemory.backends.none.store import NoneStore

    return NoneStore()


def _is_address(db: object) -> bool:
    """Whether ``db`` is a database address rather than a file (ConfigError for an address
    no backend can use, or one folded by ``Path``)."""
    if isinstance(db, Path) and _FOLDED_URL.match(str(db)):
        raise ConfigError(f"{db} looks like an address that was turned into a file path (its"
                          " '//' became '/'); pass the address as text")
    if not isinstance(db, str):
        return False
    if not URL_SCHEME.match(db):
        return False
    if not db.lower().startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{db.split('://')[0]}:// addresses are not supported; give a file"
                          " path or a postgresql:// address")
    return True


def _open_postgres(settings: Settings, *, create: bool, read_only: bool) -> Store:
    if not _is_address(settings.db):
        raise ConfigError('backend "postgres" needs a postgresql:// address in db'
                          " (--db / CLAWMEM_DB)")
    from clawmemory.backends.postgres.store import PostgresOptions, PostgresStore

    r = settings.recall
    options = PostgresOptions(**settings.postgres.model_dump())
    return PostgresStore(str(settings.db), options=options, read_only=read_only, create=create,
                         weights=(r.weight_key, r.weight_content, r.weight_tags, r.weight_source))

"""The registry of backends: one line per backend package, each exporting ``open_store`` and
``parts`` (its ``Backend`` bundle). Adding a backend is one package and one line in
``PACKAGES``; the contract suite runs against every name here.

Opening picks the backend named in settings (a closed set), falling back to ``none`` with a
warning when a backend cannot be loaded (000: memory degrades, the agent keeps working). An
unknown name is a ConfigError, as in ``Settings`` and on the command line: a typo is not an
outage to degrade through."""

from __future__ import annotations

import importlib
import logging
import re
import threading
import weakref
from pathlib import Path
from typing import Protocol, cast

from clawmemory import private
from clawmemory.backends.base import Backend, Store
from clawmemory.config import URL_SCHEME, Settings, check_backend
from clawmemory.config import Backend as BackendName
from clawmemory.errors import ConfigError

__all__ = ["BACKENDS", "PACKAGES", "BackendPackage", "backend_of", "no_keys_before_opening",
           "open_store"]

log = logging.getLogger("clawmemory")
# The backend packages, by the name settings use. Each is imported only when a store of its
# kind is opened (PostgreSQL's needs psycopg).
PACKAGES: dict[str, str] = {
    "sqlite": "clawmemory.backends.sqlite",
    "memory": "clawmemory.backends.memory",
    "json": "clawmemory.backends.jsonfile",
    "postgres": "clawmemory.backends.postgres",
    "none": "clawmemory.backends.none",
}
BACKENDS = tuple(PACKAGES)
# A URL that went through Path() lost one slash of its "//": "postgresql:/host/db".
_FOLDED_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:/")
_BUNDLES: weakref.WeakKeyDictionary[Store, Backend] = weakref.WeakKeyDictionary()
_BUNDLES_LOCK = threading.Lock()


class BackendPackage(Protocol):
    """What each backend package exports."""

    def open_store(self, settings: Settings, *, create: bool, read_only: bool) -> Store: ...

    def parts(self, store: Store) -> Backend: ...


def package(name: str) -> BackendPackage:
    return cast(BackendPackage, importlib.import_module(PACKAGES[name]))


def backend_of(store: Store) -> Backend:
    """The parts of an open store, built once per store object (so what a backend keeps in
    this process, such as the in-memory backend's entity index, is shared by every view)."""
    with _BUNDLES_LOCK:
        found = _BUNDLES.get(store)
        if found is None:
            found = _BUNDLES[store] = package(store.backend).parts(store)
        return found


def no_keys_before_opening(settings: Settings) -> str | None:
    """Why the store ``settings`` name cannot hold an API key, known without opening it (a
    backend that keeps none, a file not created yet); None when only opening it can tell."""
    if settings.backend not in ("sqlite", "postgres"):
        return f"the {settings.backend} backend cannot keep API keys"
    if settings.backend == "sqlite" and not settings.resolved_db().exists():
        return "no API key exists (there is no database yet)"
    return None


def open_store(settings: Settings, *, create: bool = True, read_only: bool = False) -> Store:
    """The backend named in settings. ``create=False``: a store that does not exist yet is a
    NotFoundError instead of a new, empty one. ``read_only``: nothing is written (SQLite opens
    the file read-only; recall then leaves access counts as they are)."""
    try:  # again here: settings.model_copy(update=...) skips the Settings validators
        name = check_backend(settings.backend)
    except ValueError as exc:
        raise ConfigError(f"invalid setting backend: {exc}") from None
    if _is_address(settings.db) or name == BackendName.POSTGRES.value:
        # An address the user named: never a fallback to "none", never a file named after it.
        if not _is_address(settings.db):
            raise ConfigError('backend "postgres" needs a postgresql:// address in db'
                              " (--db / CLAWMEM_DB)")
        return package("postgres").open_store(settings, create=create, read_only=read_only)
    if settings.db is None and name in ("sqlite", "json") and settings.home_dir().exists():
        private.warn_if_shared(settings.home_dir())  # it holds every memory of this user
    try:
        return package(name).open_store(settings, create=create, read_only=read_only)
    except (ImportError, ConfigError) as exc:
        log.warning("memory backend %r is unavailable (%s); memory is disabled (backend none)",
                    name, exc)
    return package("none").open_store(settings, create=create, read_only=read_only)


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

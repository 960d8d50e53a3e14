"""The Markdown notes' write-through (002 file store): every write and removal is copied to a
folder of notes, one folder per namespace. The notes themselves are written (and read back by
``clawmem sync``) by the portability layer's ``MarkdownMirror``, which the composition root
passes in as ``MirrorFactory``: the core only knows the two operations it calls."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol

from clawmemory.config import Settings
from clawmemory.errors import ClawMemoryError
from clawmemory.model import MemoryRecord

__all__ = ["MirrorFactory", "MirrorNotes", "Mirrors"]

log = logging.getLogger("clawmemory")


class MirrorNotes(Protocol):
    """One namespace's folder of notes (``portability.markdown.MarkdownMirror``)."""

    def apply(self, written: Sequence[MemoryRecord],
              removed: Sequence[MemoryRecord] = (),
              retired: Sequence[MemoryRecord] = ()) -> object:
        """Write through one change: the notes of ``written`` records are written (a
        correction's new version takes over its predecessor's note), those of ``removed``
        ones (forgotten) deleted, those of ``retired`` ones (archived or purged by the
        lifecycle) deleted unless they hold edits no sync has read."""
        ...

    def sync(self, records: Iterable[MemoryRecord]) -> int:
        """Make the folder hold the notes of exactly ``records``."""
        ...


MirrorFactory = Callable[[Path], MirrorNotes]
OTHERS = ".namespaces"  # with storage.mirror_flat: the other namespaces' folders


class Mirrors:
    """The mirror of each namespace, when ``storage.mirror_dir`` is set (built on first use)."""

    def __init__(self, settings: Settings, factory: MirrorFactory | None) -> None:
        root = settings.storage.mirror_dir
        self._root = Path(root).expanduser() if root is not None and factory else None
        self._flat = settings.storage.mirror_flat
        self._home = settings.namespace
        self._factory = factory
        self._mirrors: dict[str, MirrorNotes] = {}
        self._lock = threading.Lock()

    @property
    def root(self) -> Path | None:
        """The folder that holds a folder per namespace; None when no mirror is configured."""
        return self._root

    def folder(self, namespace: str) -> Path | None:
        """Where the namespace's notes lie: a folder per namespace (ids are unique only within
        one), or with ``storage.mirror_flat`` the opened namespace's directly in the root and
        the others' under its hidden ``.namespaces`` folder (which the root's scan skips)."""
        if self._root is None:
            return None
        if not self._flat:
            return self._root / namespace
        return self._root if namespace == self._home else self._root / OTHERS / namespace

    def namespaces(self) -> list[str]:
        """The names of the namespace folders that exist (the opened one's, when flat)."""
        if self._root is None:
            return []
        base = self._root / OTHERS if self._flat else self._root
        found = {self._home} if self._flat else set()
        if base.is_dir():
            found |= {f.name for f in base.iterdir() if f.is_dir() and not f.name.startswith(".")}
        return sorted(found)

    def of(self, namespace: str) -> MirrorNotes | None:
        """The namespace's mirror, or None when no mirror is configured."""
        folder = self.folder(namespace)
        if folder is None or self._factory is None:
            return None
        with self._lock:
            if namespace not in self._mirrors:
                self._mirrors[namespace] = self._factory(folder)
            return self._mirrors[namespace]

    def write_through(
        self,
        namespace: str,
        written: Sequence[MemoryRecord] = (),
        removed: Sequence[MemoryRecord] = (),
        retired: Sequence[MemoryRecord] = (),
    ) -> None:
        """Copy changes to the namespace's mirror, if one is configured. The database is the
        source of truth: a failed mirror write is logged, not raised."""
        mirror = self.of(namespace)
        if mirror is None:
            return
        if not written and not removed and not retired:
            return
        try:
            mirror.apply(written, removed, retired)
        except ClawMemoryError as exc:
            log.warning("markdown mirror: %s (`clawmem sync` writes what is missing)", exc)

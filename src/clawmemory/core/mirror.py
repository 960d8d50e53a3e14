"""The Markdown mirror's write-through (002 file store): every write and removal is copied to a
folder of notes, one folder per namespace. The notes themselves are written by the portability
layer's ``MarkdownMirror``, which the composition root passes in as ``MirrorFactory``: the core
only knows the three operations it calls."""

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

    def write(self, record: MemoryRecord) -> object: ...

    def remove(self, record: MemoryRecord) -> object: ...

    def sync(self, records: Iterable[MemoryRecord]) -> int: ...


MirrorFactory = Callable[[Path], MirrorNotes]


class Mirrors:
    """The mirror of each namespace, when ``storage.mirror_dir`` is set (built on first use)."""

    def __init__(self, settings: Settings, factory: MirrorFactory | None) -> None:
        root = settings.storage.mirror_dir
        self._root = Path(root).expanduser() if root is not None and factory else None
        self._factory = factory
        self._mirrors: dict[str, MirrorNotes] = {}
        self._lock = threading.Lock()

    def of(self, namespace: str) -> MirrorNotes | None:
        """The namespace's mirror, or None when no mirror is configured."""
        if self._root is None or self._factory is None:
            return None
        with self._lock:
            if namespace not in self._mirrors:
                # A folder per namespace: ids are unique only within one.
                self._mirrors[namespace] = self._factory(self._root / namespace)
            return self._mirrors[namespace]

    def write_through(
        self,
        namespace: str,
        written: Sequence[MemoryRecord] = (),
        removed: Sequence[MemoryRecord] = (),
    ) -> None:
        """Copy changes to the namespace's mirror, if one is configured. The database is the
        source of truth: a failed mirror write is logged, not raised."""
        mirror = self.of(namespace)
        if mirror is None:
            return
        try:
            for r in written:
                mirror.write(r)
            for r in removed:
                mirror.remove(r)
        except ClawMemoryError as exc:
            log.warning("markdown mirror: %s (`clawmem export --format markdown` rebuilds it)", exc)

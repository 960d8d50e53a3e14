"""Markdown out: the 002 (DevClaw) file store, as a one-off export and as a live mirror.

Both write one note per memory under a folder per kind::

    <out>/fact/2024-01-15-stripe-api-key.md                      (export)
    <out>/fact/2024-01-15-stripe-api-key.3f2a9c0d1e4b5a67.md     (mirror: + id, stable name)

with DevClaw's front matter (``category``, ``created_at``, ``keywords``) plus the clawmemory
fields that differ from their defaults (``id`` always), so ``read_devclaw_md`` reads either tree
back with ids, keys, times, scores and links intact. Content is the note's body (surrounding
whitespace is not kept).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawmemory import private
from clawmemory.backends.base import Link
from clawmemory.errors import ClawMemoryError, InvalidInputError, StorageError
from clawmemory.model import Filter, MemoryRecord, kind_policy
from clawmemory.portability._common import Progress, iso, tick
from clawmemory.portability.frontmatter import dump_front_matter, split_front_matter

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["MarkdownMirror", "export_markdown", "mirror_all", "note_slug", "render_note"]

_PAGE = 5000
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_MIRROR_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.([A-Za-z0-9_-]+)\.md$")


def note_slug(record: MemoryRecord, limit: int = 48) -> str:
    """The readable part of a file name: the key, else the first words of the content, as
    lowercase ASCII words joined by hyphens."""
    ascii_text = unicodedata.normalize("NFKD", record.key or record.content)
    ascii_text = ascii_text.encode("ascii", "ignore").decode("ascii").lower()
    words = re.findall(r"[a-z0-9]+", ascii_text)
    slug = ""
    for word in words[:8]:
        candidate = f"{slug}-{word}" if slug else word
        if len(candidate) > limit:
            break
        slug = candidate
    return slug or (words[0][:limit] if words else "memory")


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def note_fields(record: MemoryRecord, links: Sequence[str] = ()) -> dict[str, Any]:
    """Front matter of one note: DevClaw's three fields, then what clawmemory needs to restore
    the record, each only when it is not the default (so hand-written notes look the same)."""
    r = record
    return {
        "id": r.id,
        "category": r.kind,
        "created_at": iso(r.created_at),
        "keywords": list(r.tags),
        "key": r.key,
        "source": r.source,
        "source_role": r.source_role,
        "session_id": r.session_id,
        "event_time": None if r.event_time is None else iso(r.event_time),
        "updated_at": None if r.updated_at in (0.0, r.created_at) else iso(r.updated_at),
        "score": r.score or None,
        "confidence": None if r.confidence == 1.0 else r.confidence,
        "decay_rate": None if r.decay_rate == kind_policy(r.kind).decay_rate else r.decay_rate,
        "valid_until": None if r.valid_until is None else iso(r.valid_until),
        "supersedes": r.supersedes,
        "source_ids": list(r.source_ids) or None,
        "metadata": dict(r.metadata) or None,
        "links": list(links) or None,
    }


def render_note(record: MemoryRecord, links: Sequence[str] = ()) -> str:
    return dump_front_matter(note_fields(record, links)) + "\n" + record.content.strip() + "\n"


def _all_records(mem: LocalMemory) -> list[MemoryRecord]:
    """Every memory of the namespace, invalidated ones included (as the JSON export does)."""
    records: list[MemoryRecord] = []
    flt = Filter(include_invalid=True)
    while batch := mem.store_backend.list(mem.namespace, flt, limit=_PAGE, offset=len(records),
                                          order="oldest"):
        records.extend(batch)
    return records


def _write_atomic(target: Path, text: str) -> None:
    """Write via a temporary file and rename, so a reader (or a crash) never sees half a note.
    Private (0600 notes in 0700 folders): a note is the memory itself. No fsync: the database
    is the source of truth and the mirror is rebuilt from it."""
    private.atomic_write(target, text.encode("utf-8"), fsync=False)


def export_markdown(
    mem: LocalMemory, out_dir: str | Path, *, progress: Progress | None = None
) -> int:
    """Write every memory of ``mem``'s namespace as a 002 Markdown tree under ``out_dir`` (which
    must not exist or be empty: an export never overwrites notes). Returns the number written."""
    root = Path(out_dir)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InvalidInputError(f"{root} is not an empty directory: export into a new one")
    records = _all_records(mem)
    links: dict[str, list[Link]] = {}
    for start in range(0, len(records), 1000):  # one query per page: SQL has a variable limit
        page = [r.id for r in records[start:start + 1000]]
        links.update(mem.store_backend.links(mem.namespace, page))
    used: set[str] = set()
    try:
        for done, record in enumerate(records, 1):
            base = f"{record.kind}/{_day(record.created_at)}-{note_slug(record)}"
            name, n = f"{base}.md", 1
            while name in used:  # the same day and words: number the later ones
                n += 1
                name = f"{base}-{n}.md"
            used.add(name)
            others = [lk.other_id for lk in links.get(record.id, [])]
            _write_atomic(root / name, render_note(record, others))
            tick(progress, done, len(records))
    except OSError as exc:
        raise InvalidInputError(f"cannot write to {root}: {exc.strerror or exc}") from exc
    return len(records)


class MarkdownMirror:
    """A human-readable copy of the store that is kept up to date write by write.

    Each memory is one note at ``<out>/<kind>/<YYYY-MM-DD>-<slug>.<id>.md`` (a long or unusual
    id is replaced by 12 hex of its hash). The name is stable while the memory's kind, date and
    slug are; when one changes, ``write`` moves the note. Links are not mirrored.

    One process should own a mirror folder: the id → file index is built once, lazily.
    ``mirror_all`` rebuilds a folder from scratch and removes notes of deleted memories.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.root = Path(out_dir)
        self._index: dict[str, Path] | None = None

    @staticmethod
    def tag(memory_id: str) -> str:
        if _SAFE_ID.match(memory_id):
            return memory_id
        return hashlib.sha256(memory_id.encode("utf-8")).hexdigest()[:12]

    def path_for(self, record: MemoryRecord) -> Path:
        name = f"{_day(record.created_at)}-{note_slug(record)}.{self.tag(record.id)}.md"
        return self.root / record.kind / name

    def write(self, record: MemoryRecord) -> Path:
        """Write (or rewrite) the note of ``record``; returns its path."""
        target = self.path_for(record)
        index = self._files()
        old = index.get(self.tag(record.id))
        try:
            _write_atomic(target, render_note(record))
            if old is not None and old != target and _note_id(old) == record.id:
                old.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"markdown mirror: cannot write {target}: {exc}") from exc
        index[self.tag(record.id)] = target
        return target

    def write_many(self, records: Iterable[MemoryRecord]) -> int:
        count = 0
        for record in records:
            self.write(record)
            count += 1
        return count

    def remove(self, record: MemoryRecord) -> bool:
        """Delete the note of ``record``; False if it had none."""
        return self.remove_id(record.id)

    def remove_id(self, memory_id: str) -> bool:
        path = self._files().pop(self.tag(memory_id), None)
        if path is None or not path.is_file() or _note_id(path) not in (memory_id, None):
            return False
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise StorageError(f"markdown mirror: cannot remove {path}: {exc}") from exc
        return True

    def sync(self, records: Iterable[MemoryRecord]) -> int:
        """Make the folder hold exactly ``records``: write each, remove every other note."""
        keep = set()
        count = 0
        for record in records:
            keep.add(self.write(record))
            count += 1
        for path in list(self._scan()):
            if path not in keep:
                path.unlink(missing_ok=True)
        self._index = None
        return count

    def _files(self) -> dict[str, Path]:
        if self._index is None:
            self._index = {}
            for path in self._scan():
                m = _MIRROR_NAME.match(path.name)
                if m:
                    self._index[m.group(1)] = path
        return self._index

    def _scan(self) -> Iterator[Path]:
        """The mirror's notes (names this class writes; anything else in the folder is left)."""
        if not self.root.is_dir():
            return
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            yield from sorted(p for p in folder.glob("*.md") if _MIRROR_NAME.match(p.name))


def _note_id(path: Path) -> str | None:
    """The ``id`` in a note's front matter (None if unreadable): checked before a note is
    deleted, so a hash-tag collision can never remove another memory's note."""
    try:
        fm = split_front_matter(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, ClawMemoryError):
        return None
    value = fm.fields.get("id")
    return value if isinstance(value, str) else None


def mirror_all(mem: LocalMemory, out_dir: str | Path) -> int:
    """Rebuild a mirror folder from every memory of ``mem``'s namespace (invalidated ones
    included); notes of memories that no longer exist are removed. Returns the count written."""
    return MarkdownMirror(out_dir).sync(_all_records(mem))

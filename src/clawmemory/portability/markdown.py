"""Markdown out: the 002 (DevClaw) file store, as a one-off export and as a notes folder that
the engine writes through to and reads back (``clawmem sync``, ``notes.py``).

Both write one note per memory under a folder per kind, named by its day and words::

    <out>/fact/2024-01-15-stripe-api-key.md
    <out>/fact/2024-01-15-stripe-api-key-2.md     (the same day and words again)

with DevClaw's front matter (``category``, ``created_at``, ``keywords``) plus the clawmemory
fields that differ from their defaults (``id`` always; in the notes folder also ``hash``: the
note's text as last written or synced, which tells an edit apart), so ``read_devclaw_md`` reads
either tree back with ids, keys, times, scores and links intact. Content is the note's body
(surrounding whitespace is not kept).

The notes folder (``MarkdownMirror``, ADR 0023) picks a note's name once, when its memory is
first written, and keeps it: an edit of the text, a correction or a change of kind never moves
the file; only the user does, and the id in the front matter follows the note wherever it goes.
Which note holds which memory, and the hash each had when last synced, is kept next to the
notes in ``.clawmemory-notes.json`` (ids, hashes, paths and file times: never content).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clawmemory import private
from clawmemory.backends.base import Link
from clawmemory.errors import ClawMemoryError, InvalidInputError, StorageError
from clawmemory.model import Filter, MemoryRecord, kind_policy
from clawmemory.portability._common import Progress, iso, tick
from clawmemory.portability.devclaw import read_note
from clawmemory.portability.frontmatter import dump_front_matter, split_front_matter

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["STATE_FILE", "MarkdownMirror", "NoteEntry", "export_markdown", "mirror_all",
           "note_files", "note_hash", "note_slug", "render_note"]

log = logging.getLogger("clawmemory")

_PAGE = 5000
STATE_FILE = ".clawmemory-notes.json"
_STATE_FORMAT = "clawmemory.notes/1"


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


def note_hash(record: MemoryRecord) -> str:
    """The fingerprint of what a note lets its reader change (body, category, keywords, key,
    metadata): equal for a record and the note written from it, different once either side
    changed one of them. 16 hex of a SHA-256: it names no word of the text."""
    data = [record.content.strip(), record.kind, record.key, list(record.tags),
            dict(record.metadata)]
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def note_fields(record: MemoryRecord, links: Sequence[str] = (),
                conflict: str | None = None, *, hashed: bool = False) -> dict[str, Any]:
    """Front matter of one note: DevClaw's three fields, then what clawmemory needs to restore
    the record, each only when it is not the default (so hand-written notes look the same),
    then, in the notes folder (``hashed``), ``hash`` (``note_hash``). ``conflict``: a line
    saying that a sync kept two versions."""
    r = record
    return {
        "id": r.id,
        "conflict": conflict,
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
        "hash": note_hash(r) if hashed else None,
    }


def render_note(record: MemoryRecord, links: Sequence[str] = (),
                conflict: str | None = None, *, hashed: bool = False) -> str:
    """A note's text (the export's, or with ``hashed`` the notes folder's)."""
    return (dump_front_matter(note_fields(record, links, conflict, hashed=hashed)) + "\n"
            + record.content.strip() + "\n")


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


@dataclass
class NoteEntry:
    """Where one memory's note is (``path``, relative to the folder, with ``/``), the
    ``note_hash`` it had when last written or synced, and the file's time and size then (a
    file whose time and size are unchanged is not read again)."""

    path: str
    hash: str
    mtime_ns: int = 0
    size: int = -1

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "hash": self.hash, "mtime_ns": self.mtime_ns,
                "size": self.size}

    def unchanged(self, stamp: tuple[int, int] | None) -> bool:
        return stamp == (self.mtime_ns, self.size)


def note_files(root: Path) -> list[Path]:
    """Every note under ``root``: ``*.md`` files, hidden ones and those in hidden folders left
    out (the state file, an editor's swap files, ``.obsidian/``), sorted."""
    if not root.is_dir():
        return []
    return sorted(
        p for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts) and p.is_file()
    )


def file_stamp(path: Path) -> tuple[int, int] | None:
    """A file's modification time (ns) and size; None when it is gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _state_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def read_hash(path: Path) -> str | None:
    """The ``note_hash`` of what a note on disk holds; None when it cannot be read as a note
    (a note the user broke is never overwritten: it counts as edited)."""
    try:
        note = read_note(path, path.name, namespace="default", now=0.0, max_chars=2**31,
                         default_kind="fact")
    except (ClawMemoryError, OSError, UnicodeDecodeError):
        return None
    return note_hash(note.record)


class MarkdownMirror:
    """One namespace's folder of notes, written through on every change and read back by
    ``clawmem sync`` (``portability/notes.py``; ADR 0023).

    A memory's note is ``<out>/<kind>/<YYYY-MM-DD>-<slug>.md`` (``-2``, ``-3``, ... when that
    name is taken), chosen when its memory is first written and kept from then on: a
    correction's new version takes over its predecessor's note, and only the user moves a note
    (the id in its front matter says which memory it holds). The folder shows the live set: an
    invalidated version without a successor, an archived or a forgotten memory has no note.

    A write never overwrites a note with edits no sync has read yet, nor recreates a note the
    user deleted or moved since: the next sync decides (a conflict, a forget, a rename). The
    state file (``.clawmemory-notes.json``) keeps, per memory id, its note's path, the hash
    last synced and the file's time and size; it is read again when another process changed
    it. One lock serialises the writes and syncs of this process.
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.root = Path(out_dir)
        self.lock = threading.RLock()
        self._entries: dict[str, NoteEntry] | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._claimed: str | None = None
        self._settled = False  # a sync has looked at every note: no need to search for ids
        # id -> the ``conflict`` line the next rendering of that memory's note carries
        self.conflicts: dict[str, str] = {}

    @property
    def state_path(self) -> Path:
        return self.root / STATE_FILE

    def relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # --- the state -----------------------------------------------------------------------------
    def entries(self) -> dict[str, NoteEntry]:
        """Memory id -> its note, as last written or synced."""
        stamp = _state_stamp(self.state_path)
        if self._entries is None or stamp != self._stamp:
            self._entries = self._load()
            self._stamp = stamp
        return self._entries

    def _load(self) -> dict[str, NoteEntry]:
        try:
            data = json.loads(self.state_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return self._rebuild()
        except (OSError, ValueError) as exc:
            log.warning("notes: %s cannot be read (%s); rebuilt from the notes' front matter",
                        self.state_path, exc)
            return self._rebuild()
        notes = data.get("notes") if isinstance(data, dict) else None
        if not isinstance(notes, dict) or data.get("format") != _STATE_FORMAT:
            log.warning("notes: %s is not a notes state file; rebuilt from the notes' front"
                        " matter", self.state_path)
            return self._rebuild()
        entries: dict[str, NoteEntry] = {}
        for mid, e in notes.items():
            try:
                entries[str(mid)] = NoteEntry(str(e["path"]), str(e["hash"]),
                                              int(e.get("mtime_ns", 0)), int(e.get("size", -1)))
            except (KeyError, TypeError, ValueError):
                continue  # one bad entry: its note is found again by its id
        return entries

    def _rebuild(self) -> dict[str, NoteEntry]:
        """No state file (a folder copied from elsewhere, the mirror of an older version whose
        names end in the id): each note's front matter says which memory it holds and its
        ``hash`` what it held when written. Times are left unknown, so the next sync reads
        every note."""
        entries: dict[str, NoteEntry] = {}
        for path in note_files(self.root):
            fm = _front(path)
            mid = fm.text("id") if fm is not None else None
            if not isinstance(mid, str) or not mid or mid in entries:
                continue
            stored = fm.fields.get("hash") if fm is not None else None
            known = stored if isinstance(stored, str) else read_hash(path)
            entries[mid] = NoteEntry(self.relative(path), known or "")
        return entries

    def save(self) -> None:
        """Write the state file (ids, hashes, paths, times: never content); none at all when no
        note is tracked."""
        entries = self._entries if self._entries is not None else {}
        if not entries:
            self.state_path.unlink(missing_ok=True)
            self._stamp = None
            return
        data = {"format": _STATE_FORMAT,
                "notes": {mid: e.to_json() for mid, e in sorted(entries.items())}}
        private.atomic_write(self.state_path, json.dumps(data, indent=1).encode("utf-8"),
                             fsync=False)
        self._stamp = _state_stamp(self.state_path)

    def track(self, memory_id: str, path: Path, hash_: str) -> None:
        """Record that ``path`` holds ``memory_id`` as synced now, with this hash."""
        with self.lock:
            self.entries()[memory_id] = self._entry(self.relative(path), hash_)

    def untrack(self, memory_id: str) -> None:
        with self.lock:
            self.entries().pop(memory_id, None)

    def _entry(self, rel: str, hash_: str) -> NoteEntry:
        stamp = file_stamp(self.root / rel) or (0, -1)
        return NoteEntry(rel, hash_, *stamp)

    # --- writing -------------------------------------------------------------------------------
    def path_for(self, record: MemoryRecord) -> Path:
        """Where the note of ``record`` is, or would be written."""
        with self.lock:
            entries = self.entries()
            entry = entries.get(record.id) or entries.get(record.supersedes or "")
            return self.root / (entry.path if entry else self._free_name(record))

    def _free_name(self, record: MemoryRecord) -> str:
        taken = {e.path for e in self.entries().values()}
        base = f"{record.kind}/{_day(record.created_at)}-{note_slug(record)}"
        name, n = f"{base}.md", 1
        while name in taken or (self.root / name).exists():  # the same day and words
            n += 1
            name = f"{base}-{n}.md"
        return name

    @contextmanager
    def adopting(self, path: Path) -> Iterator[None]:
        """The next new note written inside the block is ``path`` (a note the user created:
        its new memory keeps the file)."""
        with self.lock:
            self._claimed = self.relative(path)
            try:
                yield
            finally:
                self._claimed = None

    @contextmanager
    def settled(self) -> Iterator[None]:
        """Inside the block, removing a memory's note never searches the folder for it: the
        caller (a sync) has just read every note, so an untracked one holds no tracked id."""
        with self.lock:
            self._settled = True
            try:
                yield
            finally:
                self._settled = False

    def write(self, record: MemoryRecord) -> Path | None:
        """Write (or rewrite) the note of ``record``; returns its path, or None when the note
        was left as it is (see the class)."""
        with self.lock:
            try:
                return self._write(record)
            finally:
                self.save()

    def write_many(self, records: Iterable[MemoryRecord]) -> int:
        batch = list(records)
        self.apply(batch)
        return len(batch)

    def apply(self, written: Sequence[MemoryRecord],
              removed: Sequence[MemoryRecord] = (),
              retired: Sequence[MemoryRecord] = ()) -> None:
        """Write through one change of the store: ``written`` records (a correction's retired
        version hands its note to the new one), ``removed`` ones (forgotten: their notes go)
        and ``retired`` ones (archived: their notes go unless edited since the last sync)."""
        with self.lock:
            try:
                successors = {r.supersedes for r in written if r.is_valid and r.supersedes}
                for record in written:
                    if record.is_valid:
                        self._write(record)
                    elif record.id not in successors:
                        self._retire(record.id)
                if removed:
                    self._remove_ids({r.id for r in removed})
                for record in retired:
                    self._retire(record.id)
            finally:
                self.save()

    def _write(self, record: MemoryRecord) -> Path | None:
        if not record.is_valid:
            self._retire(record.id)
            return None
        entries = self.entries()
        entry = entries.get(record.id)
        if entry is None and record.supersedes and record.supersedes in entries:
            entry = entries.pop(record.supersedes)  # the new version takes over the note
            entries[record.id] = entry
        if entry is None:
            rel, self._claimed = self._claimed or self._free_name(record), None
        else:
            rel = entry.path
            if not (self.root / rel).is_file() or self._edited(entry):
                return None  # deleted, moved or edited since: the next sync decides
        target = self.root / rel
        try:
            _write_atomic(target, render_note(
                record, conflict=self.conflicts.pop(record.id, None), hashed=True))
        except (StorageError, OSError) as exc:
            raise StorageError(f"markdown mirror: cannot write {target}: {exc}") from exc
        entries[record.id] = self._entry(rel, note_hash(record))
        return target

    def _edited(self, entry: NoteEntry) -> bool:
        """Whether the note holds something no sync has read (unreadable counts as edited)."""
        path = self.root / entry.path
        if entry.unchanged(file_stamp(path)):
            return False
        return read_hash(path) != entry.hash

    def _retire(self, memory_id: str) -> None:
        """An invalidated version with no successor: its note goes, unless it has edits."""
        entry = self.entries().get(memory_id)
        if entry is None:
            return
        path = self.root / entry.path
        if path.is_file() and self._edited(entry):
            return
        self._remove_ids({memory_id})

    # --- removing ------------------------------------------------------------------------------
    def remove(self, record: MemoryRecord) -> bool:
        """Delete the note of ``record``; False if it had none."""
        return self.remove_id(record.id)

    def remove_id(self, memory_id: str) -> bool:
        with self.lock:
            try:
                return self._remove_ids({memory_id}) > 0
            finally:
                self.save()

    def _remove_ids(self, ids: set[str]) -> int:
        """Delete the notes of these memories, wherever the user moved them, edited or not
        (forget and archiving take the memory's note with them). The bytes are overwritten
        before the file goes (``private.scrub_file``). Returns how many notes went."""
        entries = self.entries()
        found: list[tuple[str, Path]] = []
        for mid in sorted(ids):
            entry = entries.pop(mid, None)
            if entry is not None:
                found.append((mid, self.root / entry.path))
        count = 0
        missing = set(ids)
        for mid, path in found:
            if path.is_file() and _note_id(path) in (mid, None):
                _scrub(path)
                count += 1
                missing.discard(mid)
        if missing and not self._settled:  # moved since, or never tracked: look for the id
            tracked = {e.path for e in entries.values()}
            for path in note_files(self.root):
                if self.relative(path) not in tracked and _note_id(path) in missing:
                    _scrub(path)
                    count += 1
        return count

    def sync(self, records: Iterable[MemoryRecord]) -> int:
        """Make the folder hold the notes of exactly ``records``: write each, delete every
        other note that names a memory (notes without an ``id`` are the user's: left)."""
        with self.lock:
            try:
                keep: set[str] = set()
                for record in records:
                    self._write(record)
                    keep.add(record.id)
                stale = set(self.entries()) - keep
                for path in note_files(self.root):
                    mid = _note_id(path)
                    if mid is not None and mid not in keep:
                        stale.add(mid)
                self._remove_ids(stale)
                return len(keep)
            finally:
                self.save()


def _scrub(path: Path) -> None:
    try:
        private.scrub_file(path)
    except StorageError as exc:
        raise StorageError(f"markdown mirror: cannot remove {path}: {exc}") from exc


def _front(path: Path) -> Any:
    """A note's parsed front matter, None when it cannot be read."""
    try:
        return split_front_matter(path.read_text(encoding="utf-8"), str(path))
    except (OSError, UnicodeDecodeError, ClawMemoryError):
        return None


def _note_id(path: Path) -> str | None:
    """The ``id`` in a note's front matter (None if unreadable or absent): checked before a
    note is deleted, so a note the user put in its place is never removed."""
    fm = _front(path)
    value = fm.text("id") if fm is not None else None
    return value if isinstance(value, str) and value else None


def mirror_all(mem: LocalMemory, out_dir: str | Path) -> int:
    """Rebuild a notes folder from the live memories of ``mem``'s namespace (a corrected
    memory's earlier versions are in its history, not in the folder); notes of memories that
    are not among them are removed, notes with unsynced edits are kept. Returns the count
    written."""
    return MarkdownMirror(out_dir).sync(r for r in _all_records(mem) if r.is_valid)

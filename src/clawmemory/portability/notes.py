"""Markdown notes a user can edit: reading a namespace's notes folder back into the store
(``clawmem sync``, ``Memory.sync_notes``, and the watcher ``clawmem serve`` and ``clawmem mcp``
run; ADR 0023).

The folder is the one ``storage.mirror_dir`` names (a folder per namespace), written through by
``MarkdownMirror`` on every change of the store. A sync reads it back:

- an edited note becomes a new version of its memory through ``correct`` (the text changed) or
  an in-place ``update`` (only the category, keywords, key or metadata changed), so
  ``history`` keeps the earlier text;
- a note without an ``id`` becomes a new memory (``store``), and its id is written into it;
- a moved or renamed note is followed (the ``id`` in its front matter says which memory it
  holds); a copy of a note becomes a memory of its own;
- a deleted note forgets its memory (``forget``: every version, every byte);
- ``[[wikilinks]]`` to another note (by file name, its words or a memory's key) become links
  of origin ``wikilink``; a wikilink removed from both notes drops the link;
- when both the note and the store changed since the last sync, both versions stay in the
  chain: the store's as it is, the note's as the newest; the report and the note say so;
- a note that cannot be read is reported and left as it is.

What was last synced (the ``hash`` per memory) is kept in the front matter and in the
folder's state file (``markdown.STATE_FILE``); every write goes through the façade's
operations, so the write path, the version chain, forget and provenance apply as to any write.
"""

from __future__ import annotations

import logging
import re
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from clawmemory.api import UNSET, NoteChange, NotesReport
from clawmemory.errors import ClawMemoryError, ImportFormatError, InvalidInputError
from clawmemory.model import Filter, Kind, MemoryRecord
from clawmemory.portability._common import Progress, tick
from clawmemory.portability.devclaw import Note, read_note
from clawmemory.portability.markdown import (
    MarkdownMirror,
    NoteEntry,
    file_stamp,
    note_files,
    note_hash,
)
from clawmemory.validation import check_namespace

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["ORIGIN", "SOURCE", "NotesWatcher", "notes_mirror", "sync_notes", "wikilinks"]

log = logging.getLogger("clawmemory")

ORIGIN = "wikilink"  # the origin of links made from [[wikilinks]]
SOURCE = "notes"  # the source of memories created from new notes
_PAGE = 5000
# [[target]], [[target|shown text]], [[target#heading]]
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}-(.+)$")


def wikilinks(text: str) -> list[str]:
    """The targets of the ``[[wikilinks]]`` in a note's text, in order, without repeats."""
    seen: dict[str, None] = {}
    for m in _WIKILINK.finditer(text):
        target = m.group(1).strip()
        if target:
            seen.setdefault(target, None)
    return list(seen)


def _words(text: str) -> str:
    """Lowercase ASCII words joined by hyphens: how a name and a link are compared."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return "-".join(re.findall(r"[a-z0-9]+", ascii_text.lower()))


def notes_mirror(mem: LocalMemory) -> MarkdownMirror:
    """The notes folder of ``mem``'s namespace; InvalidInputError when none is configured."""
    mirror = mem.parts.shared.mirrors.of(mem.namespace)
    if not isinstance(mirror, MarkdownMirror):
        raise InvalidInputError("no notes folder: set storage.mirror_dir (CLAWMEM_STORAGE__"
                                "MIRROR_DIR) to the folder that holds a folder per namespace")
    return mirror


def sync_notes(mem: LocalMemory, *, full: bool = True,
               progress: Progress | None = None) -> NotesReport:
    """Read the namespace's notes folder back into the store (the module's rules). ``full``:
    read every note; otherwise only notes whose time or size changed since they were last
    written or synced, and no store-side check of the others (the watcher's cheap pass).
    ``progress(done, total)`` over the notes."""
    mirror = notes_mirror(mem)
    with mirror.lock:
        return _Sync(mem, mirror, full, progress).run()


@dataclass
class _Read:
    """One note read in this sync."""

    path: Path
    rel: str
    note: Note
    id: str | None  # the id in its front matter


@dataclass
class _Sync:
    mem: LocalMemory
    mirror: MarkdownMirror
    full: bool
    progress: Progress | None
    out: dict[str, list[NoteChange]] = field(
        default_factory=lambda: {name: [] for name in NotesReport.LISTS})
    seen: set[str] = field(default_factory=set)  # memory ids a note holds (read or not)
    processed: list[tuple[_Read, str]] = field(default_factory=list)  # note, its memory now

    @property
    def ns(self) -> str:
        return self.mem.namespace

    def note(self, what: str, rel: str, mid: str = "", detail: str = "") -> None:
        self.out[what].append(NoteChange(rel, mid, detail))

    def run(self) -> NotesReport:
        entries = self.mirror.entries()
        reads = self.read_all(entries)
        owners = self.owners(reads, entries)
        for read in reads:
            try:
                if read.id is not None and owners.get(read.id) is read:
                    self.existing(read)
                else:
                    self.create(read)
            except ClawMemoryError as exc:
                self.note("skipped", read.rel, read.id or "", str(exc))
                if read.id:
                    self.seen.add(read.id)
        with self.mirror.settled():  # every note was looked at: no need to search for ids
            self.deleted()
        if self.full:
            self.missing()
        self.links()
        self.mirror.save()
        return NotesReport(self.ns, str(self.mirror.root),
                           **{name: tuple(items) for name, items in self.out.items()})

    # --- reading -------------------------------------------------------------------------------
    def read_all(self, entries: dict[str, NoteEntry]) -> list[_Read]:
        """Every note that needs reading (all of them in a full sync), parsed. A note that
        cannot be read is skipped, and the memory it held counts as still having a note."""
        by_path = {e.path: mid for mid, e in entries.items()}
        files = note_files(self.mirror.root)
        cfg = self.mem.settings.storage
        reads = []
        for done, path in enumerate(files, 1):
            rel = self.mirror.relative(path)
            owner = by_path.get(rel)
            if not self.full and owner is not None and entries[owner].unchanged(file_stamp(path)):
                self.seen.add(owner)
            else:
                try:
                    note = read_note(path, rel, namespace=self.ns, now=self.mem.clock(),
                                     max_chars=cfg.max_content_chars, default_kind="fact")
                except ImportFormatError as exc:
                    where = f"line {exc.line}: " if exc.line is not None else ""
                    self.note("skipped", rel, owner or "", where + exc.reason)
                    if owner is not None:
                        self.seen.add(owner)
                else:
                    mid = note.front.text("id") if "id" in note.front.fields else None
                    reads.append(_Read(path, rel, note, mid if isinstance(mid, str) and mid
                                       else None))
            tick(self.progress, done, len(files))
        return reads

    @staticmethod
    def owners(reads: list[_Read], entries: dict[str, NoteEntry]) -> dict[str, _Read]:
        """The note that holds each id: the one at the tracked path, else the first by name;
        any other note with the same id is a copy (a new memory)."""
        owners: dict[str, _Read] = {}
        for read in reads:
            if read.id is None:
                continue
            tracked = entries.get(read.id)
            current = owners.get(read.id)
            if current is None or (tracked is not None and read.rel == tracked.path
                                   and current.rel != tracked.path):
                owners[read.id] = read
        return owners

    # --- notes that name a memory --------------------------------------------------------------
    def existing(self, read: _Read) -> None:
        mid = read.id or ""
        store = self.mem.store_backend
        entry = self.mirror.entries().get(mid)
        record = store.get(self.ns, mid)
        if record is None or record.id != mid:
            archived = store.find_archived(self.ns, mid)
            self.seen.add(mid)
            if archived is not None and archived.id == mid:
                raise InvalidInputError(f"memory {mid} is archived: `clawmem restore {mid}`"
                                        " brings it back, the next sync then reads the note")
            if entry is not None:
                raise InvalidInputError(f"memory {mid} no longer exists (it was forgotten):"
                                        " delete the note, or remove its id line to store it"
                                        " again")
            self.create(read)  # a note from another store's folder: a memory of its own
            return
        stored = read.note.front.fields.get("hash")
        last = entry.hash if entry is not None else stored if isinstance(stored, str) else None
        in_file = note_hash(read.note.record)
        head = self.head(record)
        if head is None:  # invalidated in the store (maintenance), with no newer version
            self.retired(read, record, edited=in_file != (last or note_hash(record)))
            return
        self.seen.update({mid, head.id})
        in_store = note_hash(head)
        if last is None:
            last = in_store  # nothing known about the last sync: the file's changes are edits
        if entry is not None and entry.path != read.rel:
            self.note("renamed", read.rel, head.id, entry.path)
        file_changed, store_changed = in_file != last, in_store != last or head.id != mid
        if head.id != mid:
            self.mirror.untrack(mid)
        if not file_changed:
            self.mirror.track(head.id, read.path, last)
            if store_changed:  # the store moved on and the note did not: write it out
                self.mirror.write(head)
                self.note("written", read.rel, head.id, "the store's version was newer")
            self.processed.append((read, head.id))
            return
        conflict = store_changed and in_file != in_store
        self.check_key(read.note.record, head)
        self.mirror.track(head.id, read.path, in_file)  # the note is what was synced now
        new = self.apply(head, read.note.record)
        self.seen.add(new.id)
        if conflict:
            line = (f"both this note and the store changed since the last sync: the store's"
                    f" version ({head.id}) is kept in the history (clawmem history {new.id}),"
                    " this note's text is the current version. Delete this line when done.")
            self.mirror.conflicts[new.id] = line
            self.mirror.write(new)
            self.note("conflicts", read.rel, new.id, f"the store's version {head.id} is kept in"
                      " the history; the note's is the current version")
        else:
            how = (f"new version of {head.id}" if new.id != head.id
                   else "front matter changed in place")
            self.note("updated", read.rel, new.id, how)
        self.processed.append((read, new.id))

    def retired(self, read: _Read, record: MemoryRecord, *, edited: bool) -> None:
        """The note of a memory the store invalidated with no newer version: removed (the
        folder shows the live set) unless it has edits, which are reported and kept."""
        self.seen.add(record.id)
        if edited:
            raise InvalidInputError(f"memory {record.id} was invalidated and has no current"
                                    " version: remove the note's id line to store the note"
                                    " again")
        self.mirror.track(record.id, read.path, note_hash(read.note.record))
        self.mirror.remove_id(record.id)
        self.note("written", read.rel, record.id, "invalidated in the store: the note was"
                  f" removed (clawmem history {record.id} shows it)")

    def head(self, record: MemoryRecord) -> MemoryRecord | None:
        """The current version of a memory: itself while valid, else the newest live version
        of its chain (None when every version was invalidated)."""
        if record.is_valid:
            return record
        chain = self.mem.store_backend.chain(self.ns, record.id)
        live = [r for r, archived in chain if not archived and r.is_valid]
        return live[-1] if live else None

    def check_key(self, parsed: MemoryRecord, head: MemoryRecord | None) -> None:
        """Refuse a key another memory holds, before anything is written."""
        if not parsed.key or (head is not None and parsed.key == head.key):
            return
        clash = self.mem.store_backend.get(self.ns, parsed.key)
        if clash is not None and (head is None or clash.id != head.id):
            raise InvalidInputError(f"key {parsed.key!r} is already used by memory {clash.id}:"
                                    " change or remove the key in this note")

    def apply(self, head: MemoryRecord, parsed: MemoryRecord) -> MemoryRecord:
        """The note's version of the memory, through the façade: ``correct`` when the text
        changed (a new version), then ``update`` for the front matter's fields."""
        new = head
        if parsed.content.strip() != head.content.strip():
            new = self.mem.correct(head.id, parsed.content, tags=list(parsed.tags))
            self.carry_links(head.id, new.id)
        kind_changed, key_changed = parsed.kind != new.kind, parsed.key != new.key
        tags_changed = parsed.tags != new.tags
        meta_changed = dict(parsed.metadata) != dict(new.metadata)
        if kind_changed or key_changed or tags_changed or meta_changed:
            new = self.mem.update(
                new.id, kind=cast("Kind", parsed.kind) if kind_changed else None,
                key=parsed.key if key_changed else UNSET,
                tags=list(parsed.tags) if tags_changed else None,
                metadata=dict(parsed.metadata) if meta_changed else None)
        return new

    def carry_links(self, old: str, new: str) -> None:
        """A new version takes over the wikilinks of the one it replaces: other notes link to
        the memory, whichever version is current (other links stay where they are)."""
        live = self.mirror.entries()
        for link in self.mem.store_backend.links(self.ns, [old]).get(old, []):
            if link.origin == ORIGIN:
                if link.other_id in live:
                    self.mem.link(new, link.other_id, strength=link.strength, origin=ORIGIN)
                self.mem.unlink(old, link.other_id)

    # --- new notes -----------------------------------------------------------------------------
    def create(self, read: _Read) -> None:
        """A note with no id (or a copy, or a note from another store): a new memory, whose id
        the write-through writes into the same file."""
        r = read.note.record
        self.check_key(r, None)
        with self.mirror.adopting(read.path):
            mid = self.mem.store(
                r.content, key=r.key, kind=cast("Kind", r.kind), tags=list(r.tags),
                metadata=dict(r.metadata) or None, session_id=r.session_id,
                event_time=r.event_time, source=r.source or SOURCE,
                source_role=r.source_role)
        self.seen.add(mid)
        entry = self.mirror.entries().get(mid)
        if entry is None or entry.path != read.rel:
            self.note("skipped", read.rel, mid, "stored, but its id could not be written into"
                      " the note (see the log): add 'id: " + mid + "' to its front matter")
        self.note("created", read.rel, mid)
        self.processed.append((read, mid))

    # --- what has no note (any more) -----------------------------------------------------------
    def deleted(self) -> None:
        """Memories whose note is gone (deleted by the user): forgotten."""
        store = self.mem.store_backend
        for mid, entry in sorted(self.mirror.entries().items()):
            if mid in self.seen:
                continue
            record = store.get(self.ns, mid)
            if record is None or record.id != mid:
                self.mirror.untrack(mid)  # forgotten or archived meanwhile: nothing to do
                continue
            self.mem.forget(mid)
            self.mirror.untrack(mid)
            self.note("forgotten", entry.path, mid, "the note was deleted")

    def missing(self) -> None:
        """Live memories without a note (stored before the folder was set, or a write that
        failed): written."""
        store = self.mem.store_backend
        entries = self.mirror.entries()
        offset = 0
        while batch := store.list(self.ns, Filter(), limit=_PAGE, offset=offset,
                                  order="oldest"):
            offset += len(batch)
            for record in batch:
                if record.id not in entries and record.id not in self.seen:
                    path = self.mirror.write(record)
                    if path is not None:
                        self.note("written", self.mirror.relative(path), record.id,
                                  "the memory had no note")

    # --- wikilinks -----------------------------------------------------------------------------
    def links(self) -> None:
        """Links for the ``[[wikilinks]]`` of every note read: made where missing, and a link of
        origin ``wikilink`` that neither note names any more is dropped."""
        if not self.processed:
            return
        names = self.names()
        store = self.mem.store_backend
        for read, mid in self.processed:
            targets: set[str] = set()
            for target in wikilinks(read.note.record.content):
                found = self.resolve(target, names)
                if isinstance(found, str):
                    if found != mid:
                        targets.add(found)
                else:
                    self.note("skipped", read.rel, mid, f"wikilink [[{target}]]: {found[0]}")
            current = store.links(self.ns, [mid]).get(mid, [])
            linked = {lk.other_id for lk in current}
            for other in sorted(targets - linked):
                if self.mem.link(mid, other, origin=ORIGIN):
                    self.note("linked", read.rel, mid, other)
            live = self.mirror.entries()  # a link to an earlier version is its history: kept
            for lk in current:
                if (lk.origin == ORIGIN and lk.other_id not in targets and lk.other_id in live
                        and not self.links_back(lk.other_id, mid, names)):
                    self.mem.unlink(mid, lk.other_id)
                    self.note("unlinked", read.rel, mid, lk.other_id)

    def names(self) -> dict[str, set[str]]:
        """What a wikilink may name, to the memories it names: each note's file name (its stem)
        and its words with and without the date."""
        names: dict[str, set[str]] = {}
        for mid, entry in self.mirror.entries().items():
            stem = Path(entry.path).stem
            keys = {stem.lower(), _words(stem)}
            dated = _DATED.match(stem)
            if dated:
                keys.add(_words(dated.group(1)))
            for key in keys - {""}:
                names.setdefault(key, set()).add(mid)
        return names

    def resolve(self, target: str, names: dict[str, set[str]]) -> str | tuple[str]:
        """The memory a wikilink names (file name, then its words, then a key or id), or why
        none."""
        for key in (target.lower(), _words(target)):
            found = names.get(key, set())
            if len(found) == 1:
                return next(iter(found))
            if len(found) > 1:
                return (f"{len(found)} notes have this name; link to the file name",)
        record = self.mem.store_backend.get(self.ns, target)
        head = self.head(record) if record is not None else None
        if head is not None:
            return head.id
        return ("no note has this name and no memory this key",)

    def links_back(self, other: str, mid: str, names: dict[str, set[str]]) -> bool:
        """Whether the note of ``other`` links to ``mid`` (a link is both ways: it stays
        while either note names the other)."""
        entry = self.mirror.entries().get(other)
        if entry is None:
            return False
        try:
            text = read_note(self.mirror.root / entry.path, entry.path, namespace=self.ns,
                             now=0.0, max_chars=2**31, default_kind="fact").record.content
        except (ClawMemoryError, OSError):
            return True  # unreadable: keep what it may still say
        return any(self.resolve(t, names) == mid for t in wikilinks(text))


# --- the watcher ---------------------------------------------------------------------------------
class NotesWatcher:
    """Keeps the notes folders of a served store synced: a thread that polls the modification
    times and sizes of the notes (every ``interval`` seconds) and syncs a namespace's folder
    when one changed, appeared or went. The first pass syncs every folder in full (edits made
    while nothing ran). ``stop()`` ends the thread; a failed sync is logged, never raised."""

    def __init__(self, mem: LocalMemory, *, interval: float = 0.5) -> None:
        root = mem.parts.shared.mirrors.root
        if root is None:
            raise InvalidInputError("no notes folder: storage.mirror_dir is not set")
        self.mem = mem
        self.root = root
        self.interval = interval
        self.syncs = 0  # how many syncs ran (tests and logs)
        self._seen: dict[str, dict[str, tuple[int, int] | None]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> NotesWatcher:
        self._thread = threading.Thread(target=self._run, name="clawmemory-notes", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def namespaces(self) -> list[str]:
        """The served namespace and every other namespace that has a folder."""
        found = {self.mem.namespace}
        for name in self.mem.parts.shared.mirrors.namespaces():
            try:
                found.add(check_namespace(name))
            except ClawMemoryError:
                continue
        return sorted(found)

    def poll(self, *, full: bool = False) -> list[NotesReport]:
        """One pass: sync each namespace whose notes changed (all of them with ``full``)."""
        reports = []
        mirrors = self.mem.parts.shared.mirrors
        for ns in self.namespaces():
            folder = mirrors.folder(ns) or self.root / ns
            before = self._seen.get(ns)
            if not full and before is not None and before == self._stamps(folder):
                continue
            view = self.mem if ns == self.mem.namespace else self.mem.with_namespace(ns)
            try:
                report = sync_notes(view, full=full)
            except ClawMemoryError as exc:
                log.warning("notes: sync of %s failed: %s", folder, exc)
                continue
            finally:
                self._seen[ns] = self._stamps(folder)
            self.syncs += 1
            if report.changed:
                log.info("%s", report.summary())
            for item in (*report.conflicts, *report.skipped):
                log.warning("notes: %s: %s", folder / item.path, item.detail)
            reports.append(report)
        return reports

    @staticmethod
    def _stamps(folder: Path) -> dict[str, tuple[int, int] | None]:
        return {p.relative_to(folder).as_posix(): file_stamp(p) for p in note_files(folder)}

    def _run(self) -> None:
        full = True
        while not self._stop.is_set():
            try:
                self.poll(full=full)
                full = False
            except Exception:  # a watcher must outlive any one failure; it is logged
                log.exception("notes: the watcher's pass failed")
            self._stop.wait(self.interval)

    @contextmanager
    def running(self) -> Iterator[NotesWatcher]:
        """Start, and stop on leaving the block."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

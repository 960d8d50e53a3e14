"""Moving memories in and out: one reader per specification's storage format, the Markdown
export, and the optional Markdown mirror.

Every reader has the same shape, ``read_<format>(path, *, namespace, now, max_chars,
progress=None) -> ParsedSnapshot``, validates the whole source before it returns (a source
that is not the expected format raises ``ImportFormatError`` naming the file and the line or
table row; an item that cannot be used — a note in a folder, a message of an export — is
skipped with its reason in ``ParsedSnapshot.skipped``), and ends in ``Memory.import_records``
— the one all-or-nothing write path that skips ids already present::

    from clawmemory.portability import read_source

    parsed = read_source("openclaw", "~/openclaw", namespace=mem.namespace, now=mem.clock(),
                         max_chars=mem.settings.storage.max_content_chars)
    report = mem.import_records(parsed)

The formats and their field mappings are documented in docs/portability.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from clawmemory.errors import InvalidInputError
from clawmemory.portability._common import Progress
from clawmemory.portability.chatgpt import read_chatgpt
from clawmemory.portability.claude import read_claude
from clawmemory.portability.devclaw import read_devclaw_db, read_devclaw_md
from clawmemory.portability.koshi import read_koshi_db
from clawmemory.portability.markdown import MarkdownMirror, export_markdown, mirror_all
from clawmemory.portability.mem0 import read_mem0
from clawmemory.portability.openclaw import read_openclaw
from clawmemory.portability.ptrclaw import read_ptrclaw_db, read_ptrclaw_json
from clawmemory.portability.sandbox import read_sandbox_db
from clawmemory.portability.sclaw import read_sclaw_db
from clawmemory.snapshot import ParsedSnapshot

__all__ = [
    "SOURCES",
    "SOURCE_ALIASES",
    "MarkdownMirror",
    "Progress",
    "Reader",
    "SourceFormat",
    "export_markdown",
    "mirror_all",
    "read_chatgpt",
    "read_claude",
    "read_devclaw_db",
    "read_devclaw_md",
    "read_koshi_db",
    "read_mem0",
    "read_openclaw",
    "read_ptrclaw_db",
    "read_ptrclaw_json",
    "read_sandbox_db",
    "read_sclaw_db",
    "read_source",
    "source_format",
]


class Reader(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    def __call__(self, path: str | Path, *, namespace: str, now: float, max_chars: int,
                 progress: Progress | None = None) -> ParsedSnapshot: ...


@dataclass(frozen=True)
class SourceFormat:
    """One importable format: its ``--from`` name, what it is (in words a user knows), what
    the path must be, its reader, the extra keyword options the reader accepts, and the older
    names still accepted for it."""

    name: str
    spec: str
    path: str
    reader: Reader
    options: frozenset[str] = frozenset()
    aliases: tuple[str, ...] = ()


_SQLITE_HEADER = b"SQLite format 3\x00"


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:  # a folder or a missing file: the other reader names the problem
        return False


def _sqlite_or(database: Reader, other: Reader) -> Reader:
    """One name for an agent whose memory is either a SQLite file or something else (a JSON
    snapshot, a folder of notes): the file's first bytes say which reader gets it."""

    def read(path: str | Path, *, namespace: str, now: float, max_chars: int,
             progress: Progress | None = None) -> ParsedSnapshot:
        reader = database if _is_sqlite(Path(path)) else other
        return reader(path, namespace=namespace, now=now, max_chars=max_chars,
                      progress=progress)

    return read


SOURCES: Mapping[str, SourceFormat] = {
    s.name: s
    for s in (
        SourceFormat("json", "a clawmemory or PtrClaw JSON snapshot (clawmem export)",
                     "a .json file (or - for stdin)", read_ptrclaw_json,
                     aliases=("ptrclaw-json",)),
        SourceFormat("ptrclaw", "PtrClaw's SQLite memory database, or its JSON snapshot",
                     "its SQLite file or the .json snapshot",
                     _sqlite_or(read_ptrclaw_db, read_ptrclaw_json),
                     aliases=("ptrclaw-sqlite",)),
        SourceFormat("devclaw", "DevClaw's Markdown notes, or its SQLite store",
                     "the data/memory folder, one note, or its memory.db",
                     _sqlite_or(read_devclaw_db, read_devclaw_md),
                     aliases=("devclaw-md", "devclaw-db")),
        SourceFormat("openclaw", "OpenClaw's MEMORY.md and memory/*.md",
                     "the workspace folder, its memory folder or one file",
                     read_openclaw),
        SourceFormat("sclaw", "sclaw's SQLite history and facts", "its memory.db",
                     read_sclaw_db, frozenset({"include_messages"}), aliases=("sclaw-db",)),
        SourceFormat("sandbox", "the sandbox assistant's SQLite memory store", "its memory.db",
                     read_sandbox_db, aliases=("sandbox-db",)),
        SourceFormat("koshi", "Koshi's own SQLite database (memories, archive, links)",
                     "its SQLite file", read_koshi_db),
        SourceFormat("mem0", "mem0 memories: Memory.get_all() output saved as JSON, or its"
                     " local history.db", "the .json file, history.db or the folder holding it",
                     read_mem0),
        SourceFormat("chatgpt", "ChatGPT data export (conversations become sessions, messages"
                     " episodes)", "conversations.json, the export folder or its .zip",
                     read_chatgpt),
        SourceFormat("claude", "Claude data export (conversations become sessions, messages"
                     " episodes)", "conversations.json, the export folder or its .zip",
                     read_claude),
    )
}

# The names of earlier releases, still accepted: old name -> the format's name.
SOURCE_ALIASES: Mapping[str, str] = {
    alias: s.name for s in SOURCES.values() for alias in s.aliases}

# An old name keeps its exact reader (``devclaw-db`` reads only a database, as it always did);
# the plain names ``ptrclaw`` and ``devclaw`` tell the two apart by the file.
_OLD_READERS: Mapping[str, Reader] = {
    "ptrclaw-json": read_ptrclaw_json, "ptrclaw-sqlite": read_ptrclaw_db,
    "devclaw-md": read_devclaw_md, "devclaw-db": read_devclaw_db,
    "sclaw-db": read_sclaw_db, "sandbox-db": read_sandbox_db,
}
_OLD_FORMATS: Mapping[str, SourceFormat] = {
    old: SourceFormat(old, SOURCES[new].spec, SOURCES[new].path, _OLD_READERS[old],
                      SOURCES[new].options)
    for old, new in SOURCE_ALIASES.items()}


def source_format(name: str) -> SourceFormat:
    """The format called ``name``, or by an older name (any case)."""
    key = name.strip().lower()
    fmt = SOURCES.get(key) or _OLD_FORMATS.get(key)
    if fmt is None:
        raise InvalidInputError(f"unknown import format {name!r} (expected one of:"
                                f" {', '.join(SOURCES)})")
    return fmt


def read_source(
    name: str,
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
    **options: Any,
) -> ParsedSnapshot:
    """Read ``path`` as the format ``name`` (a key of ``SOURCES`` or an older alias)."""
    fmt = source_format(name)
    unknown = set(options) - fmt.options
    if unknown:
        raise InvalidInputError(f"{fmt.name} does not take {', '.join(sorted(unknown))}")
    reader: Any = fmt.reader  # the options were checked against the format just above
    result: ParsedSnapshot = reader(Path(path).expanduser(), namespace=namespace, now=now,
                                    max_chars=max_chars, progress=progress, **options)
    return result

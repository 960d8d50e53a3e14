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
]


class Reader(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    def __call__(self, path: str | Path, *, namespace: str, now: float, max_chars: int,
                 progress: Progress | None = None) -> ParsedSnapshot: ...


@dataclass(frozen=True)
class SourceFormat:
    """One importable format: its ``--from`` name, the specification it comes from, what the
    path must be, and the extra keyword options its reader accepts."""

    name: str
    spec: str
    path: str
    reader: Reader
    options: frozenset[str] = frozenset()


SOURCES: Mapping[str, SourceFormat] = {
    s.name: s
    for s in (
        SourceFormat("ptrclaw-json", "000 PtrClaw or clawmemory JSON snapshot",
                     "a .json file (or - for stdin)", read_ptrclaw_json),
        SourceFormat("ptrclaw-sqlite", "000 PtrClaw SQLite memory database",
                     "its SQLite file", read_ptrclaw_db),
        SourceFormat("devclaw-md", "002 DevClaw Markdown notes",
                     "the data/memory folder or one note", read_devclaw_md),
        SourceFormat("devclaw-db", "002 DevClaw SQLite store", "its memory.db",
                     read_devclaw_db),
        SourceFormat("openclaw", "003 OpenClaw MEMORY.md + memory/*.md",
                     "the workspace folder, its memory folder or one file",
                     read_openclaw),
        SourceFormat("sclaw-db", "001 sclaw SQLite history and facts", "its memory.db",
                     read_sclaw_db, frozenset({"include_messages"})),
        SourceFormat("sandbox-db", "004 sandbox assistant SQLite store", "its memory.db",
                     read_sandbox_db),
        SourceFormat("koshi", "003 Koshi's own SQLite database (memories, archive, links)",
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
    """Read ``path`` as the format ``name`` (a key of ``SOURCES``)."""
    fmt = SOURCES.get(name)
    if fmt is None:
        raise InvalidInputError(f"unknown import format {name!r} (expected one of:"
                                f" {', '.join(SOURCES)})")
    unknown = set(options) - fmt.options
    if unknown:
        raise InvalidInputError(f"{name} does not take {', '.join(sorted(unknown))}")
    reader: Any = fmt.reader  # the options were checked against the format just above
    result: ParsedSnapshot = reader(Path(path).expanduser(), namespace=namespace, now=now,
                                    max_chars=max_chars, progress=progress, **options)
    return result

"""000 PtrClaw: JSON snapshots (both shapes, and clawmemory's own export) and the SQLite store.

The JSON parsing is ``clawmemory.snapshot.parse_snapshot``; ``read_ptrclaw_json`` only reads
the file so that a file that is not UTF-8 is reported at its line like every other format.

The SQLite store (000 ``SqliteMemory``)::

    memories(id TEXT PRIMARY KEY, key TEXT UNIQUE NOT NULL, content TEXT NOT NULL,
             category TEXT NOT NULL, timestamp INTEGER NOT NULL, session_id TEXT NOT NULL,
             embedding BLOB, last_accessed INTEGER)
    memory_links(from_key TEXT NOT NULL, to_key TEXT NOT NULL, PRIMARY KEY (from_key, to_key))

maps row for row the way a snapshot entry does (``snapshot.entry_record``): id and key kept,
category core/knowledge/conversation -> kind core/fact/conversation, timestamp -> created_at,
session_id ("" = none), last_accessed (0 or NULL = never). ``memory_links`` holds both
directions of each link; it becomes one undirected link (strength 1, origin manual); a link
naming a key that is not in the table is skipped and said so. Embeddings are recomputed.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from clawmemory.errors import ImportFormatError
from clawmemory.portability._common import (
    Progress,
    SQLiteSource,
    located,
    read_text,
    row_label,
    text,
    tick,
)
from clawmemory.snapshot import ParsedSnapshot, Skip, entry_record, parse_snapshot

__all__ = ["read_ptrclaw_db", "read_ptrclaw_json"]

_COLUMNS = ("id", "key", "content", "category", "timestamp")
_OPTIONAL = ("session_id", "last_accessed")


def read_ptrclaw_json(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a JSON snapshot file; every entry is validated before anything is returned."""
    file = Path(path)
    if file.is_dir():
        raise ImportFormatError("cannot read: is a directory (expected a .json file)",
                                path=str(file))
    parsed = parse_snapshot(read_text(file), namespace=namespace, now=now, max_chars=max_chars,
                            source=str(file), legacy_provenance=True)
    tick(progress, len(parsed.records), len(parsed.records))
    return parsed


def read_ptrclaw_db(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a 000 SQLite memory database read-only; every row is validated before anything
    is returned (a bad row is an error naming its table and row)."""
    file = Path(path)
    parsed = ParsedSnapshot()
    with SQLiteSource(file) as db:
        cols = db.columns("memories", _COLUMNS)
        wanted = [*_COLUMNS, *(c for c in _OPTIONAL if c in cols)]
        has_links = "memory_links" in db.tables
        if has_links:
            db.columns("memory_links", ("from_key", "to_key"))
        total = db.count("memories") + (db.count("memory_links") if has_links else 0)
        by_key: dict[str, str] = {}
        sql = f"SELECT {', '.join(wanted)} FROM memories ORDER BY rowid"
        for n, row in enumerate(db.rows(sql), 1):
            with located(file, row=partial(row_label, "memories", n, row["id"])):
                record = entry_record(_entry(row), namespace=namespace, now=now,
                                      max_chars=max_chars)
            parsed.records.append(record)
            if record.key:
                by_key[record.key] = record.id
            tick(progress, n, total)
        if has_links:
            _links(db, by_key, parsed, done=len(parsed.records), total=total, progress=progress)
    return parsed


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the snapshot entry 000 would have exported for it."""
    entry = {name: text(row[name], name) for name in ("id", "key", "content", "category")}
    entry["timestamp"] = row["timestamp"]
    entry["session_id"] = text(row.get("session_id"), "session_id")
    entry["last_accessed"] = row.get("last_accessed")
    return entry


def _links(db: SQLiteSource, by_key: dict[str, str], parsed: ParsedSnapshot, *, done: int,
           total: int, progress: Progress | None) -> None:
    pairs: set[tuple[str, str]] = set()
    sql = "SELECT from_key, to_key FROM memory_links ORDER BY rowid"
    for n, row in enumerate(db.rows(sql), 1):
        with located(db.path, row=partial(row_label, "memory_links", n, None)):
            a, b = text(row["from_key"], "from_key"), text(row["to_key"], "to_key")
        ids = (by_key.get(a or ""), by_key.get(b or ""))
        if ids[0] is None or ids[1] is None:
            parsed.skipped.append(Skip("link to a key that is not in memories",
                                       f"{db.path}: memory_links {a!r} -> {b!r}"))
        elif ids[0] != ids[1]:
            lo, hi = sorted((ids[0], ids[1]))
            pairs.add((lo, hi))
        tick(progress, done + n, total)
    parsed.links.extend((a, b, 1.0, "manual") for a, b in sorted(pairs))

"""003 Koshi: its own SQLite database (not the OpenClaw files it migrates from; that is
``openclaw``).

::

    memories(id INTEGER PRIMARY KEY, content TEXT NOT NULL, source TEXT, tags TEXT,
             created_at DATETIME, last_hit_at DATETIME, score INTEGER, session_id TEXT,
             narrative_id INTEGER, task_id INTEGER)
    memories_archive(...the same columns..., [archived_at])      -- size-based pruning
    memory_links(memory_id, related_id, strength REAL)            -- v2 co-recall links

Row for row: the integer id becomes the memory's id (as text: ``[id:12]`` stays 12), content,
``source`` (the provenance tag) kept, tags comma-separated (or a JSON array), created_at ->
created_at and updated_at, last_hit_at -> last_accessed, score -> score (the reinforcement 003
ranks by), session_id kept; narrative_id and task_id go to the memory's ``narrative_id`` and
``task_id`` (their integers as decimal text, ADR 0024). Every row is a ``fact`` (003 has one
kind of memory). Archived rows are imported into the archive with the
time Koshi archived them (``archived_at``, else the import time), so they stay out of recall
but searchable with ``recall --archive`` and restorable. Links keep their strength with origin
``co-recall``. ``memories_fts`` is ignored (rebuilt here). Only ``memories`` is required.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from clawmemory.errors import InvalidInputError
from clawmemory.model import KINDS, MemoryRecord
from clawmemory.portability._common import (
    Progress,
    SQLiteSource,
    json_list,
    located,
    number,
    parse_time,
    row_label,
    text,
    tick,
)
from clawmemory.snapshot import ParsedSnapshot, Skip
from clawmemory.validation import check_content, check_provenance_id, check_tags

__all__ = ["read_koshi_db"]

_REQUIRED = ("id", "content", "created_at")
_MAX_INT = 2.0**53


def read_koshi_db(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a Koshi memory database read-only: live memories, the archive and links (both
    optional). Every row is validated before anything is returned."""
    file = Path(path)
    parsed = ParsedSnapshot()
    with SQLiteSource(file) as db:
        db.columns("memories", _REQUIRED)
        tables = [t for t in ("memories", "memories_archive") if t in db.tables]
        if "memories_archive" in tables:
            db.columns("memories_archive", ("id", "content"))
        has_links = "memory_links" in db.tables
        if has_links:
            db.columns("memory_links", ("memory_id", "related_id"))
        total = sum(db.count(t) for t in tables) + (db.count("memory_links") if has_links else 0)
        done = 0
        for table in tables:
            for n, row in enumerate(db.rows(f"SELECT * FROM {table} ORDER BY rowid"), 1):
                with located(file, row=partial(row_label, table, n, row.get("id"))):
                    record = _record(row, namespace, now, max_chars)
                    if table == "memories_archive":
                        at = parse_time(row.get("archived_at"), "archived_at")
                        parsed.archived[record.id] = at if at is not None else now
                parsed.records.append(record)
                done += 1
                tick(progress, done, total)
        if has_links:
            _links(db, {r.id for r in parsed.records}, parsed, done, total, progress)
    return parsed


def _record(row: dict[str, Any], namespace: str, now: float, max_chars: int) -> MemoryRecord:
    rid = row["id"]
    if isinstance(rid, bytes):
        rid = text(rid, "id")
    if rid is None or not str(rid).strip():
        raise InvalidInputError("id is empty")
    created = parse_time(row.get("created_at"), "created_at") or now
    score = row.get("score")
    return MemoryRecord(
        id=str(rid).strip(),
        content=check_content(text(row["content"], "content"), max_chars),
        namespace=namespace,
        kind="fact",
        tags=check_tags(json_list(text(row.get("tags"), "tags"), "tags", commas=True)),
        source=text(row.get("source"), "source") or None,
        session_id=text(row.get("session_id"), "session_id") or None,
        narrative_id=_provenance_id(row.get("narrative_id"), "narrative_id"),
        task_id=_provenance_id(row.get("task_id"), "task_id"),
        created_at=created,
        updated_at=created,
        last_accessed=parse_time(row.get("last_hit_at"), "last_hit_at"),
        score=0 if score is None else int(number(score, "score", lower=-_MAX_INT,
                                                 upper=_MAX_INT)),
        decay_rate=KINDS["fact"].decay_rate,
    )


def _provenance_id(value: Any, column: str) -> str | None:
    """An INTEGER id column as text; SQLite's loose typing may hand over a real with an integer
    value (7.0) or text, which are kept as they read."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bytes):
        value = text(value, column)
    return check_provenance_id(value, column)


def _links(db: SQLiteSource, ids: set[str], parsed: ParsedSnapshot, done: int, total: int,
           progress: Progress | None) -> None:
    cols = db.columns("memory_links", ("memory_id", "related_id"))
    strength = ", strength" if "strength" in cols else ""
    pairs: dict[tuple[str, str], float] = {}
    sql = f"SELECT memory_id, related_id{strength} FROM memory_links ORDER BY rowid"
    for n, row in enumerate(db.rows(sql), 1):
        with located(db.path, row=partial(row_label, "memory_links", n, None)):
            a, b = (str(text(row[c], c) if isinstance(row[c], bytes) else row[c])
                    for c in ("memory_id", "related_id"))
            weight = number(row.get("strength", 1.0) if row.get("strength") is not None
                            else 1.0, "strength")
        if a not in ids or b not in ids:
            parsed.skipped.append(Skip("link to a memory that is not in the database",
                                       f"{db.path}: memory_links {a} -> {b}"))
        elif a != b:
            key = (min(a, b), max(a, b))
            pairs[key] = max(pairs.get(key, 0.0), weight)
        tick(progress, done + n, total)
    parsed.links.extend((a, b, w, "co-recall") for (a, b), w in sorted(pairs.items()))

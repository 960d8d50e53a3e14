"""004 "sandbox extensions" assistant: its SQLite ``memory.db``.

``memories`` rows map field for field (ids kept): kind (episode | fact | reflection), content,
session_id, event_time, created_at, valid_until, confidence, access_count, last_accessed,
decay_rate, source_ids (JSON), source_role, tags (JSON); ``attributes`` (JSON) → metadata, and
an ``attributes.supersedes`` (set by 004's resolve_conflict) also fills ``supersedes``.

- ``entities`` + ``memory_entities``: a memory is linked to its entities with 004's types
  (``ParsedSnapshot.entities``: "Bob" stays a person, "Project Alpha" a project, where the
  extractor alone would make them ``other``; a type this engine lacks becomes ``other``), and
  their canonical names are kept as ``metadata["entities"]`` (sorted). Entity rows themselves
  (aliases, summaries, counts) are not copied: linking builds them.
- ``sessions_consolidations``: kept as ``metadata["session_consolidated_at"]`` (epoch seconds) on
  every memory of a session 004 had already consolidated, so a consolidator here need not extract
  the same facts again; pending sessions leave no trace.
- ``vec_memories``, ``memory_metadata`` and the ``embedding`` column are ignored: vectors are
  recomputed by this engine's embedder (the dimensions rarely match).

Decay: 004 decays only facts; an episode's stored ``decay_rate`` (0.1 by column default) is never
applied there, so kinds that never decay here (episode, reflection) get 0.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

from clawmemory.errors import InvalidInputError
from clawmemory.model import MemoryRecord, kind_policy, normalize_kind
from clawmemory.portability._common import (
    Progress,
    SQLiteSource,
    json_list,
    json_object,
    located,
    number,
    parse_time,
    row_label,
    text,
    tick,
)
from clawmemory.snapshot import ParsedSnapshot
from clawmemory.validation import check_content, check_metadata, check_tags

__all__ = ["read_sandbox_db"]

_REQUIRED = ("id", "kind", "content", "created_at")
_MAX_INT = 2.0**53


def read_sandbox_db(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a 004 ``memory.db`` read-only; every row is validated before anything is
    returned."""
    file = Path(path)
    parsed = ParsedSnapshot()
    with SQLiteSource(file) as db:
        db.columns("memories", _REQUIRED)
        entities = _entities(db)
        consolidated = _consolidated(db)
        total = db.count("memories")
        for n, row in enumerate(db.rows("SELECT * FROM memories ORDER BY rowid"), 1):
            with located(file, row=partial(row_label, "memories", n, row.get("id"))):
                record = _record(row, namespace, now, max_chars)
                meta = dict(record.metadata)
                if typed := entities.get(record.id):
                    meta["entities"] = [name for name, _ in typed]
                    parsed.entities[record.id] = tuple(typed)
                if record.session_id in consolidated:
                    meta["session_consolidated_at"] = consolidated[record.session_id]
                parsed.records.append(record.evolve(metadata=check_metadata(meta)))
            tick(progress, n, total)
    return parsed


def _entities(db: SQLiteSource) -> dict[str, list[tuple[str, str]]]:
    """memory id → (canonical name, type) of its entities, sorted by name. Both tables are
    optional (an older database), but when present they must have the 004 columns; ``type``
    is optional (``other`` without it)."""
    if "memory_entities" not in db.tables or "entities" not in db.tables:
        return {}
    db.columns("memory_entities", ("memory_id", "entity_id"))
    typed = "type" in db.columns("entities", ("id", "canonical_name"))
    found: dict[str, dict[str, str]] = defaultdict(dict)
    sql = ("SELECT me.memory_id AS memory_id, e.canonical_name AS name,"
           f" {'e.type' if typed else 'NULL'} AS type FROM memory_entities me"
           " JOIN entities e ON e.id = me.entity_id")
    for n, row in enumerate(db.rows(sql), 1):
        with located(db.path, row=row_label("memory_entities", n, row["memory_id"])):
            mid, name = text(row["memory_id"], "memory_id"), text(row["name"], "canonical_name")
            kind = text(row["type"], "type") or "other"
        if mid and name and name.strip():
            found[mid].setdefault(name.strip(), kind)
    return {mid: sorted(names.items()) for mid, names in found.items()}


def _consolidated(db: SQLiteSource) -> dict[str | None, float]:
    """session id → when 004 consolidated it (done sessions only)."""
    if "sessions_consolidations" not in db.tables:
        return {}
    db.columns("sessions_consolidations", ("session_id", "consolidated_at"))
    done: dict[str | None, float] = {}
    sql = "SELECT session_id, consolidated_at FROM sessions_consolidations"
    for n, row in enumerate(db.rows(sql), 1):
        with located(db.path, row=row_label("sessions_consolidations", n, row["session_id"])):
            when = parse_time(row["consolidated_at"], "consolidated_at")
            if when is not None:
                done[text(row["session_id"], "session_id")] = when
    return done


def _record(row: dict[str, Any], namespace: str, now: float, max_chars: int) -> MemoryRecord:
    rid = text(row["id"], "id")
    if not rid or not rid.strip():
        raise InvalidInputError("id is empty")
    kind = normalize_kind(text(row["kind"], "kind") or "")
    created = parse_time(row["created_at"], "created_at") or now
    meta = json_object(text(row.get("attributes"), "attributes"), "attributes")
    supersedes = meta.get("supersedes")
    policy_rate = kind_policy(kind).decay_rate
    return MemoryRecord(
        id=rid,
        content=check_content(text(row["content"], "content"), max_chars),
        namespace=namespace,
        kind=kind,
        tags=check_tags(json_list(text(row.get("tags"), "tags"), "tags")),
        metadata=check_metadata(meta),
        source_role=text(row.get("source_role"), "source_role") or None,
        source_ids=tuple(json_list(text(row.get("source_ids"), "source_ids"), "source_ids")),
        session_id=text(row.get("session_id"), "session_id") or None,
        created_at=created,
        event_time=parse_time(row.get("event_time"), "event_time"),
        updated_at=created,
        last_accessed=parse_time(row.get("last_accessed"), "last_accessed"),
        access_count=int(_opt_number(row, "access_count", 0, upper=_MAX_INT)),
        confidence=_opt_number(row, "confidence", 1.0, upper=1.0),
        decay_rate=_opt_number(row, "decay_rate", policy_rate) if policy_rate else 0.0,
        valid_until=parse_time(row.get("valid_until"), "valid_until"),
        supersedes=str(supersedes) if isinstance(supersedes, str | int) and supersedes else None,
    )


def _opt_number(row: dict[str, Any], name: str, default: float, *,
                upper: float = float("inf")) -> float:
    value = row.get(name)
    return default if value is None else number(value, name, upper=upper)

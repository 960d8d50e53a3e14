"""SQL text and row conversion shared by the SQLite store's modules: the column list, record
rows to and from ``MemoryRecord``, and the WHERE clause of a ``Filter``."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from clawmemory.backends.base import RankInfo, TextHit, time_sql
from clawmemory.model import Filter, MemoryRecord, meta_equal, searchable_text

__all__ = [
    "COLUMNS", "INSERT", "ORDER_SQL", "RANK_COLUMNS", "RANK_SELECT", "SELECT", "UPDATE",
    "chunks", "filter_sql", "fts_query", "lower_text", "meta_eq_json", "rank_hit", "record_values",
    "row_to_record", "searchable_row",
]

T = TypeVar("T")

COLUMNS = (
    "id", "namespace", "key", "kind", "content", "tags", "metadata", "source", "source_role",
    "source_ids", "session_id", "created_at", "event_time", "updated_at", "last_accessed",
    "access_count", "score", "confidence", "decay_rate", "valid_until", "supersedes",
    "stored_at", "narrative_id", "task_id",
)
SELECT = ", ".join(f"m.{c}" for c in COLUMNS)
INSERT = (
    f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
)
UPDATE = (
    "UPDATE memories SET "
    + ", ".join(f"{c} = ?" for c in COLUMNS if c != "id")
    + " WHERE namespace = ? AND id = ?"
)
RANK_SELECT = (
    "m.id, m.score, m.created_at, m.last_accessed, m.confidence, m.updated_at, m.stored_at,"
    " m.session_id, m.source_role"
)
RANK_COLUMNS = 9  # RANK_SELECT's columns: RankInfo's fields, in its order
ORDER_SQL = {
    "newest": "m.created_at DESC, m.seq DESC",
    "oldest": "m.created_at ASC, m.seq ASC",
    "score": "m.score DESC, m.created_at DESC",
    "accessed": "COALESCE(m.last_accessed, m.created_at) DESC",
}
def lower_text(value: Any) -> Any:
    return value.lower() if isinstance(value, str) else value


def meta_eq_json(actual_json: Any, wanted_json: str) -> bool:
    actual = None if actual_json is None else json.loads(actual_json)
    return meta_equal(actual, json.loads(wanted_json))


def row_to_record(row: Sequence[Any]) -> MemoryRecord:
    (id_, ns, key, kind, content, tags, metadata, source, source_role, source_ids, session_id,
     created_at, event_time, updated_at, last_accessed, access_count, score, confidence,
     decay_rate, valid_until, supersedes, stored_at, narrative_id, task_id) = row[: len(COLUMNS)]
    return MemoryRecord(
        id=id_, namespace=ns, key=key, kind=kind, content=content,
        # Most rows hold no tags, metadata or sources: skip the JSON parser for those.
        tags=tuple(json.loads(tags)) if tags != "[]" else (),
        metadata=json.loads(metadata) if metadata != "{}" else {}, source=source,
        source_role=source_role,
        source_ids=tuple(json.loads(source_ids)) if source_ids != "[]" else (),
        session_id=session_id, created_at=created_at, event_time=event_time,
        updated_at=updated_at, last_accessed=last_accessed, access_count=access_count,
        score=score, confidence=confidence, decay_rate=decay_rate, valid_until=valid_until,
        supersedes=supersedes, stored_at=stored_at, narrative_id=narrative_id, task_id=task_id,
    )


def rank_hit(row: Sequence[Any]) -> TextHit:
    """A keyword hit from ``RANK_SELECT``'s columns, the relevance and (optionally) the
    searchable text."""
    n = RANK_COLUMNS
    return TextHit(RankInfo(*row[:n]), float(row[n]), row[n + 1] if len(row) > n + 1 else None)


def searchable_row(key: str | None, content: str, tags: str, source: str | None) -> str:
    """``model.searchable_text`` of a row's columns (``tags``: its JSON)."""
    return searchable_text(key, content, tuple(json.loads(tags)) if tags != "[]" else (), source)


def record_values(r: MemoryRecord) -> builtins.list[Any]:
    return [
        r.id, r.namespace, r.key, r.kind, r.content,
        json.dumps(list(r.tags), ensure_ascii=False),
        json.dumps(dict(r.metadata), ensure_ascii=False, sort_keys=True),
        r.source, r.source_role, json.dumps(list(r.source_ids)), r.session_id, r.created_at,
        r.event_time, r.updated_at, r.last_accessed, r.access_count, r.score, r.confidence,
        r.decay_rate, r.valid_until, r.supersedes, r.stored_at, r.narrative_id, r.task_id,
    ]


def filter_sql(namespace: str, flt: Filter, alias: str = "m") -> tuple[str, builtins.list[Any]]:
    """WHERE clause (without the keyword) and bindings for a Filter: ``Filter.matches`` in SQL,
    condition by condition (backends/postgres/sql.py mirrors this function; the time and validity
    conditions are ``base.time_sql``, shared by both)."""
    a = alias
    where = [f"{a}.namespace = ?"]
    args: builtins.list[Any] = [namespace]
    if flt.kinds:
        where.append(f"{a}.kind IN ({', '.join('?' * len(flt.kinds))})")
        args.extend(flt.kinds)
    for tag in flt.tags:
        where.append(f"EXISTS (SELECT 1 FROM json_each({a}.tags) WHERE value = ?)")
        args.append(tag)
    if flt.session_id is not None:
        where.append(f"{a}.session_id = ?")
        args.append(flt.session_id)
    if flt.exclude_session_id is not None:
        where.append(f"{a}.session_id IS NOT ?")
        args.append(flt.exclude_session_id)
    if flt.narrative_id is not None:
        where.append(f"{a}.narrative_id = ?")
        args.append(flt.narrative_id)
    if flt.task_id is not None:
        where.append(f"{a}.task_id = ?")
        args.append(flt.task_id)
    for k, v in flt.metadata.items():
        sql, sql_args = _meta_sql(a, str(k), v)
        where.append(sql)
        args.extend(sql_args)
    if flt.source is not None:
        where.append(f"{a}.source = ?")
        args.append(flt.source)
    if flt.created_after is not None:
        where.append(f"{a}.created_at >= ?")
        args.append(flt.created_after)
    if flt.created_before is not None:
        where.append(f"{a}.created_at < ?")
        args.append(flt.created_before)
    more, more_args = time_sql(a, flt, "?")
    where.extend(more)
    args.extend(more_args)
    return " AND ".join(where), args


def _meta_sql(a: str, key: str, wanted: Any) -> tuple[str, builtins.list[Any]]:
    """SQL for ``meta_equal(metadata[key], wanted)``, the definition every backend shares.

    SQL reproduces it exactly for stored text, integers (compared as their JSON digits, since
    json_extract turns integers beyond 64 bits into reals) and booleans. SQLite renders floats
    differently from Python (1.0e+20 vs 1e+20), and containers compare as canonical JSON, so
    those rows are checked by calling the Python definition itself."""
    # The label is a JSON string: a backslash must be escaped too, or '\\' is a bad path.
    path = '$."' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    text, py = str(wanted), f"clawmem_meta_eq({a}.metadata -> ?, ?)"
    wanted_json = json.dumps(wanted, default=str)
    if isinstance(wanted, dict | list | tuple):  # a container only ever equals a container
        return f"json_type({a}.metadata, ?) IN ('object', 'array') AND {py}", [
            path, path, wanted_json]
    text_case = py if isinstance(wanted, bool) else f"json_extract({a}.metadata, ?) = ?"
    sql = (
        f"json_type({a}.metadata, ?) IS NOT NULL AND CASE json_type({a}.metadata, ?)"
        f" WHEN 'text' THEN {text_case}"
        f" WHEN 'integer' THEN ({a}.metadata -> ?) = ?"
        f" WHEN 'true' THEN 'true' = ? WHEN 'false' THEN 'false' = ? WHEN 'null' THEN 0"
        f" ELSE {py} END"
    )
    text_args = [path, wanted_json] if isinstance(wanted, bool) else [path, text]
    return sql, [path, path, *text_args, path, text, text.lower(), text.lower(), path,
                 wanted_json]


def chunks(ids: Sequence[T], size: int = 5000) -> builtins.list[Sequence[T]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def fts_query(terms: Sequence[str]) -> str:
    """Each term quoted for literal matching and OR-joined (003)."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)

"""SQL text and value conversion shared by the PostgreSQL store's modules: the column list,
records to and from rows, the WHERE clause of a ``Filter``, and the text the full-text index
is built from.

Full text: SQLite's FTS5 tokenizer (``unicode61 remove_diacritics 2``) splits on everything
that is not a letter or digit and drops accents; PostgreSQL's parser keeps e-mail addresses,
URLs, paths and hyphenated words whole. So the store folds text the FTS5 way here, in Python,
and PostgreSQL only stems the words it is given (the ``clawmem`` text search configuration,
migration 001): "user@example.com" is found by "example" on both backends.
"""

from __future__ import annotations

import builtins
import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from clawmemory.backends.base import RankInfo, TextHit, time_sql
from clawmemory.model import Filter, MemoryRecord

__all__ = [
    "COLUMNS", "FILL_CONTEXT", "FTS_EXPR", "INSERT", "INSERT_IN_CONTEXT", "INSERT_MANY",
    "ORDER_SQL", "RANK_COLUMNS", "RANK_SELECT", "SELECT", "UPDATE",
    "canonical_json", "filter_sql", "fold", "fts_args", "many_values", "meta_cmp", "rank_hit",
    "record_values", "row_to_record",
]

COLUMNS = (
    "id", "namespace", "key", "kind", "content", "tags", "metadata", "source", "source_role",
    "source_ids", "session_id", "created_at", "event_time", "updated_at", "last_accessed",
    "access_count", "score", "confidence", "decay_rate", "valid_until", "supersedes",
    "stored_at", "narrative_id", "task_id",
)
SELECT = ", ".join(f"m.{c}" for c in COLUMNS)
# key A, tags B, content C, source D: ts_rank's weight array is {D, C, B, A}.
FTS_EXPR = (
    "setweight(to_tsvector('clawmem', %s), 'A') || setweight(to_tsvector('clawmem', %s), 'B')"
    " || setweight(to_tsvector('clawmem', %s), 'C') || setweight(to_tsvector('clawmem', %s),"
    " 'D')"
)
_MARKS = ", ".join(["%s"] * len(COLUMNS))
INSERT = (
    f"INSERT INTO memories ({', '.join(COLUMNS)}, meta_cmp, fts) VALUES ({_MARKS}, %s,"
    f" {FTS_EXPR})"
)
# A new turn with its keyword context (migration 008): the tails of the turns before it, the
# newest of its session (seq < the largest bigint).
INSERT_IN_CONTEXT = (
    f"INSERT INTO memories ({', '.join(COLUMNS)}, meta_cmp, fts, keyword_context, fts_context)"
    f" SELECT {_MARKS}, %s, {FTS_EXPR}, c.ctx, to_tsvector('clawmem', c.ctx) FROM (SELECT"
    " clawmem_turn_context(%s, %s, 9223372036854775807) AS ctx) c"
)
# The turns of a batch written in one statement (INSERT_MANY), given their context afterwards:
# a statement does not see its own rows.
FILL_CONTEXT = (
    "UPDATE memories m SET keyword_context = c.ctx, fts_context = to_tsvector('clawmem', c.ctx)"
    " FROM (SELECT seq, clawmem_turn_context(namespace, session_id, seq) AS ctx FROM memories"
    " WHERE namespace = %s AND id = ANY(%s) AND kind = 'episode' AND session_id IS NOT NULL"
    " AND key IS NULL) c WHERE m.seq = c.seq AND c.ctx <> ''"
)
UPDATE = (
    "UPDATE memories SET "
    + ", ".join(f"{c} = %s" for c in COLUMNS if c != "id")
    + f", meta_cmp = %s, fts = {FTS_EXPR} WHERE namespace = %s AND id = %s"
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
_SEPARATORS = re.compile(r"[\W_]+")


def fold(text: str | None) -> str:
    """Text as FTS5's unicode61 tokenizer sees it: accents removed, every run of characters
    that are not letters or digits one space."""
    if not text:
        return ""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _SEPARATORS.sub(" ", plain).strip()


def fts_args(key: str | None, tags: Sequence[str], content: str, source: str | None) -> list[str]:
    """The four arguments of ``FTS_EXPR``."""
    return [fold(key), fold(" ".join(tags)), fold(content), fold(source)]


def canonical_json(value: Any) -> str:
    """As ``model._canonical_json``: containers compare as their sorted JSON."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def meta_cmp(metadata: Mapping[str, Any]) -> dict[str, list[str]]:
    """Each metadata value as ``model.meta_equal`` compares it: [kind, text, lower text] with
    kind n (null: equals nothing), c (container: its canonical JSON), b (boolean) or s (any
    other scalar: Python's ``str``). Computed in Python at write time, so SQL compares plain
    text and gets exactly the Python answer."""
    out: dict[str, list[str]] = {}
    for k, v in metadata.items():
        if v is None:
            out[str(k)] = ["n", "", ""]
        elif isinstance(v, dict | list | tuple):
            out[str(k)] = ["c", canonical_json(v), ""]
        else:
            text = str(v)
            out[str(k)] = ["b" if isinstance(v, bool) else "s", text, text.lower()]
    return out


def row_to_record(row: Sequence[Any]) -> MemoryRecord:
    (id_, ns, key, kind, content, tags, metadata, source, source_role, source_ids, session_id,
     created_at, event_time, updated_at, last_accessed, access_count, score, confidence,
     decay_rate, valid_until, supersedes, stored_at, narrative_id, task_id) = row[: len(COLUMNS)]
    return MemoryRecord(
        id=id_, namespace=ns, key=key, kind=kind, content=content, tags=tuple(tags),
        metadata=json.loads(metadata), source=source, source_role=source_role,
        source_ids=tuple(source_ids), session_id=session_id, created_at=created_at,
        event_time=event_time, updated_at=updated_at, last_accessed=last_accessed,
        access_count=int(access_count), score=int(score), confidence=confidence,
        decay_rate=decay_rate, valid_until=valid_until, supersedes=supersedes,
        stored_at=stored_at, narrative_id=narrative_id, task_id=task_id,
    )


def rank_hit(row: Sequence[Any]) -> TextHit:
    id_, score, created, accessed, confidence, updated, stored, session, role = row[:RANK_COLUMNS]
    return TextHit(RankInfo(id_, int(score), created, accessed, confidence, updated, stored,
                            session, role), float(row[RANK_COLUMNS]))


def record_values(r: MemoryRecord) -> builtins.list[Any]:
    """Values for ``INSERT`` (and, without the id, ``UPDATE``): the columns, meta_cmp, and the
    full-text arguments."""
    from psycopg.types.json import Jsonb

    return [
        r.id, r.namespace, r.key, r.kind, r.content, Jsonb(list(r.tags)),
        json.dumps(dict(r.metadata), ensure_ascii=False, sort_keys=True),
        r.source, r.source_role, Jsonb(list(r.source_ids)), r.session_id, r.created_at,
        r.event_time, r.updated_at, r.last_accessed, r.access_count, r.score, r.confidence,
        r.decay_rate, r.valid_until, r.supersedes, r.stored_at, r.narrative_id, r.task_id,
        Jsonb(meta_cmp(r.metadata)),
        *fts_args(r.key, r.tags, r.content, r.source),
    ]


_TYPES = ("text", "text", "text", "text", "text", "jsonb", "text", "text", "text", "jsonb",
          "text", "float8", "float8", "float8", "float8", "int8", "int8", "float8", "float8",
          "float8", "text", "float8", "text", "text")
# Many records in one statement: one array per column, unnested (a batch of 5,000 rows costs
# one statement instead of 5,000).
INSERT_MANY = (
    f"INSERT INTO memories ({', '.join(COLUMNS)}, meta_cmp, fts) SELECT "
    + ", ".join(f"u.c{i}::{t}" if t == "jsonb" else f"u.c{i}" for i, t in enumerate(_TYPES))
    + f", u.c{len(_TYPES)}::jsonb, "
    + FTS_EXPR.replace("%s", "{}").format(*(f"u.f{i}" for i in range(4)))
    + " FROM unnest("
    + ", ".join(f"%s::{'text' if t == 'jsonb' else t}[]" for t in (*_TYPES, "jsonb"))
    + ", %s::text[], %s::text[], %s::text[], %s::text[]) AS u("
    + ", ".join(f"c{i}" for i in range(len(_TYPES) + 1)) + ", f0, f1, f2, f3)"
)


def many_values(records: Sequence[MemoryRecord]) -> builtins.list[builtins.list[Any]]:
    """The column arrays of ``INSERT_MANY``."""
    rows = []
    for r in records:
        rows.append([
            r.id, r.namespace, r.key, r.kind, r.content,
            json.dumps(list(r.tags), ensure_ascii=False),
            json.dumps(dict(r.metadata), ensure_ascii=False, sort_keys=True),
            r.source, r.source_role, json.dumps(list(r.source_ids)), r.session_id, r.created_at,
            r.event_time, r.updated_at, r.last_accessed, r.access_count, r.score, r.confidence,
            r.decay_rate, r.valid_until, r.supersedes, r.stored_at, r.narrative_id, r.task_id,
            json.dumps(meta_cmp(r.metadata), ensure_ascii=False),
            *fts_args(r.key, r.tags, r.content, r.source),
        ])
    return [builtins.list(col) for col in zip(*rows, strict=True)]


def filter_sql(namespace: str, flt: Filter, alias: str = "m") -> tuple[str, builtins.list[Any]]:
    """WHERE clause (without the keyword) and bindings for a Filter."""
    from psycopg.types.json import Jsonb

    a = alias
    where = [f"{a}.namespace = %s"]
    args: builtins.list[Any] = [namespace]
    if flt.kinds:
        where.append(f"{a}.kind = ANY(%s)")
        args.append(list(flt.kinds))
    if flt.tags:
        where.append(f"{a}.tags @> %s")
        args.append(Jsonb(list(flt.tags)))
    if flt.session_id is not None:
        where.append(f"{a}.session_id = %s")
        args.append(flt.session_id)
    if flt.exclude_session_id is not None:
        where.append(f"{a}.session_id IS DISTINCT FROM %s")
        args.append(flt.exclude_session_id)
    if flt.narrative_id is not None:
        where.append(f"{a}.narrative_id = %s")
        args.append(flt.narrative_id)
    if flt.task_id is not None:
        where.append(f"{a}.task_id = %s")
        args.append(flt.task_id)
    for k, v in flt.metadata.items():
        sql, sql_args = _meta_sql(a, str(k), v)
        where.append(sql)
        args.extend(sql_args)
    if flt.source is not None:
        where.append(f"{a}.source = %s")
        args.append(flt.source)
    if flt.created_after is not None:
        where.append(f"{a}.created_at >= %s")
        args.append(flt.created_after)
    if flt.created_before is not None:
        where.append(f"{a}.created_at < %s")
        args.append(flt.created_before)
    more, more_args = time_sql(a, flt, "%s")
    where.extend(more)
    args.extend(more_args)
    return " AND ".join(where), args


def _meta_sql(a: str, key: str, wanted: Any) -> tuple[str, builtins.list[Any]]:
    """SQL for ``meta_equal(metadata[key], wanted)`` over the ``meta_cmp`` column."""
    v = f"({a}.meta_cmp -> %s)"
    if isinstance(wanted, dict | list | tuple):
        return f"({v} ->> 0 = 'c' AND {v} ->> 1 = %s)", [key, key, canonical_json(wanted)]
    text = str(wanted)
    if isinstance(wanted, bool):
        return f"({v} ->> 0 IN ('s', 'b') AND {v} ->> 2 = %s)", [key, key, text.lower()]
    return (f"(({v} ->> 0 = 's' AND {v} ->> 1 = %s) OR ({v} ->> 0 = 'b' AND {v} ->> 2 = %s))",
            [key, key, text, key, key, text.lower()])


class PostgresOptions:
    """Connection settings (``[postgres]`` in the config, docs/configuration.md)."""

    def __init__(self, **values: Any) -> None:
        self.pool_min_size: int = values.get("pool_min_size", 1)
        self.pool_max_size: int = values.get("pool_max_size", 10)
        self.connect_timeout_s: float = values.get("connect_timeout_s", 10.0)
        self.pool_timeout_s: float = values.get("pool_timeout_s", 30.0)
        self.statement_timeout_ms: int = values.get("statement_timeout_ms", 0)
        self.hnsw_m: int = values.get("hnsw_m", 16)
        self.hnsw_ef_construction: int = values.get("hnsw_ef_construction", 64)
        self.hnsw_ef_search: int = values.get("hnsw_ef_search", 100)
        self.exact_search_rows: int = values.get("exact_search_rows", 5_000)
        self.keyword_candidates: int = values.get("keyword_candidates", 5_000)

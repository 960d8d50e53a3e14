"""Copying a whole store between backends (``clawmem copy``): SQLite to PostgreSQL and back.

Everything moves, every namespace: records (ids, times, scores, provenance kept), the archive,
links, entities with their links to memories, conversation history and summaries, the session
ledger, maintenance runs, vectors (with the model and dimension they were made with) and the
vector queue. Records go through the ``Store`` protocol (each backend builds its own full-text
index and provenance rows); the other tables are read and written row by row with the same
columns on both sides. The destination must be empty. Afterwards every count is compared.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import numpy as np

from clawmemory.backends.base import Store
from clawmemory.backends.postgres.sql import FTS_EXPR, fts_args
from clawmemory.backends.registry import backend_of
from clawmemory.entities.base import alias_key
from clawmemory.errors import ConfigError, InvalidInputError
from clawmemory.model import Filter

__all__ = ["COUNTED", "copy_store", "counts"]

BATCH = 2000
# Tables copied as rows: name -> columns (the same on both backends).
TABLES: dict[str, tuple[str, ...]] = {
    "entities": ("id", "namespace", "canonical_name", "norm_name", "type", "aliases", "summary",
                 "mention_count", "protected", "created_at", "updated_at"),
    "memory_entities": ("namespace", "memory_id", "entity_id"),
    "messages": ("namespace", "session_id", "seq", "role", "content", "tool_calls", "metadata",
                 "created_at", "tool_call_id", "name"),
    "summaries": ("namespace", "session_id", "summary", "updated_at", "covers"),
    "sessions": ("namespace", "session_id", "first_seen_at", "consolidated_at"),
    "maintenance_runs": ("namespace", "job", "started_at", "finished_at", "outcome", "counts",
                         "message"),
    "links": ("namespace", "a_id", "b_id", "strength", "origin", "created_at", "updated_at"),
}
# Row order to keep: link order of memory_entities (SQLite's rowid, PostgreSQL's ``linked``).
ORDER = {"memory_entities": {"sqlite": "rowid", "postgres": "linked"},
         "messages": {"sqlite": "session_id, seq", "postgres": "session_id, seq"},
         "maintenance_runs": {"sqlite": "id", "postgres": "id"}}
COUNTED = ("memories", "archived", "links", "entities", "memory_entities", "messages",
           "summaries", "sessions", "maintenance_runs", "vectors", "queued")
Progress = Callable[[int], None]


def _mark(store: Store) -> str:
    return "%s" if store.backend == "postgres" else "?"


def _rows(store: Any, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    return list(store.query(sql.replace("?", _mark(store)), args))


def _check(store: Store) -> Any:
    if store.backend not in ("sqlite", "postgres"):
        raise InvalidInputError(f"clawmem copy works between SQLite files and PostgreSQL"
                                f" databases, not the {store.backend} backend")
    return store


def counts(store: Store, namespace: str) -> dict[str, int]:
    """How many of each thing the namespace holds (what ``copy_store`` compares)."""
    s = _check(store)
    out = {"memories": store.count(namespace, Filter(include_invalid=True)),
           "archived": store.archive_count(namespace)}
    for table in TABLES:
        out[table] = int(_rows(s, f"SELECT COUNT(*) FROM {table} WHERE namespace = ?",
                               (namespace,))[0][0])
    has_vec = _vector_meta(s) is not None
    out["vectors"] = int(_rows(s, "SELECT COUNT(*) FROM vec_memories v JOIN memories m ON"
                               " m.seq = v.seq WHERE m.namespace = ?", (namespace,))[0][0]
                         ) if has_vec else 0
    out["queued"] = int(_rows(s, "SELECT COUNT(*) FROM vector_queue WHERE namespace = ?",
                              (namespace,))[0][0])
    return {k: out[k] for k in COUNTED}


def _vector_meta(store: Any) -> tuple[str, int] | None:
    rows = dict(_rows(store, "SELECT key, value FROM meta WHERE key IN ('embedding_model',"
                             " 'embedding_dimension')"))
    if "embedding_dimension" not in rows:
        return None
    return str(rows.get("embedding_model", "")), int(rows["embedding_dimension"])


def copy_store(src: Store, dst: Store, progress: Progress | None = None) -> dict[str, Any]:
    """Copy everything from ``src`` into the empty ``dst``; returns the counts per namespace
    (equal on both sides, else InvalidInputError naming the first difference)."""
    _check(src), _check(dst)
    if dst.namespaces() or _rows(dst, "SELECT 1 FROM memories_archive LIMIT 1"):
        raise InvalidInputError("the destination already holds memories; copy into an empty"
                                " store")
    spaces = sorted(set(src.namespaces()) | {str(r[0]) for r in _rows(
        src, "SELECT DISTINCT namespace FROM memories_archive")})
    meta = _vector_meta(src)
    vectors = _bind_vectors(dst, meta) if meta else None
    tick = progress or (lambda n: None)
    for ns in spaces:
        _copy_records(src, dst, ns, tick)
        _copy_archive(src, dst, ns)
        for table in TABLES:
            _copy_table(src, dst, table, ns)
        if vectors is not None:
            _copy_vectors(src, dst, vectors, ns)
        _copy_queue(src, dst, ns)
    _copy_keys(src, dst)
    report = {}
    for ns in spaces:
        before, after = counts(src, ns), counts(dst, ns)
        if before != after:
            wrong = next(k for k in COUNTED if before[k] != after[k])
            raise InvalidInputError(f"copy incomplete: namespace {ns!r} has {before[wrong]}"
                                    f" {wrong} in the source but {after[wrong]} in the"
                                    " destination")
        report[ns] = after
    return report


def _copy_keys(src: Store, dst: Store) -> None:
    """The service's API keys (digests, roles, namespaces, revocations): a copied store keeps
    answering the same clients, and a revoked key stays revoked."""
    have, into = backend_of(src).keys, backend_of(dst).keys
    if have is None or into is None:
        raise ConfigError(f"API keys cannot be copied from the {src.backend} backend to the"
                          f" {dst.backend} backend")
    for key in have.all():
        found = have.find(key.id)
        if found is not None and into.find(key.id) is None:
            into.add(found[0], found[1])


def _pages(src: Store, ns: str) -> Iterator[list[Any]]:
    offset = 0
    while page := src.list(ns, Filter(include_invalid=True), limit=BATCH, offset=offset,
                           order="oldest"):
        yield page
        offset += len(page)


def _copy_records(src: Store, dst: Store, ns: str, tick: Progress) -> None:
    bulk: Callable[[], AbstractContextManager[None]] = getattr(dst, "bulk_load", nullcontext)
    with bulk():
        for page in _pages(src, ns):
            dst.put_many(page, skip_existing_keys=False)
            tick(len(page))


def _copy_archive(src: Store, dst: Any, ns: str) -> None:
    offset = 0
    while entries := src.archive_list(ns, limit=BATCH, offset=offset):
        offset += len(entries)
        with dst.write():
            for e in entries:
                _put_archived(dst, ns, e.record, e.archived_at)


def _put_archived(dst: Any, ns: str, r: Any, at: float) -> None:
    record = json.dumps(r.to_dict(), ensure_ascii=False)
    if dst.backend == "postgres":
        from psycopg.types.json import Jsonb

        dst.execute(
            "INSERT INTO memories_archive (id, namespace, record, key, supersedes, source_ids,"
            f" created_at, archived_at, fts) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, {FTS_EXPR})",
            (r.id, ns, record, r.key, r.supersedes, Jsonb(list(r.source_ids)), r.created_at,
             at, *fts_args(r.key, r.tags, r.content, r.source)))
    else:
        dst.conn.execute(
            "INSERT INTO memories_archive (id, namespace, record, key, content, tags, source,"
            " archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (r.id, ns, record, r.key, r.content, json.dumps(list(r.tags), ensure_ascii=False),
             r.source, at))


def _convert(dst: Store, table: str, cols: Sequence[str], row: Sequence[Any]) -> list[Any]:
    """A row in the destination's types (JSON text vs jsonb, integer vs boolean)."""
    values = dict(zip(cols, row, strict=True))
    if table == "entities":
        aliases = values["aliases"]
        aliases = json.loads(aliases) if isinstance(aliases, str) else list(aliases or [])
        if dst.backend == "postgres":
            from psycopg.types.json import Jsonb

            values["aliases"] = Jsonb(aliases)
            values["protected"] = bool(values["protected"])
            values["alias_keys"] = [alias_key(a) for a in aliases]
        else:
            values["aliases"] = json.dumps(aliases, ensure_ascii=False)
            values["protected"] = int(bool(values["protected"]))
    return list(values.values())


def _copy_table(src: Store, dst: Any, table: str, ns: str) -> None:
    cols = TABLES[table]
    order = ORDER.get(table, {}).get(src.backend, cols[0])
    rows = _rows(src, f"SELECT {', '.join(cols)} FROM {table} WHERE namespace = ? ORDER BY"
                      f" {order}", (ns,))
    if not rows:
        return
    out_cols = [*cols, "alias_keys"] if table == "entities" and dst.backend == "postgres" else cols
    mark = _mark(dst)
    sql = (f"INSERT INTO {table} ({', '.join(out_cols)}) VALUES"
           f" ({', '.join([mark] * len(out_cols))})")
    with dst.write():
        for row in rows:
            values = _convert(dst, table, cols, row)
            dst.execute(sql, values) if dst.backend == "postgres" else dst.conn.execute(
                sql, values)


def _bind_vectors(dst: Store, meta: tuple[str, int]) -> Any:
    make = backend_of(dst).vectors
    vectors = make(0, 0.0) if make is not None else None  # copying: no centring
    if vectors is None:
        raise InvalidInputError(f"the destination ({dst.backend}) cannot store vectors")
    problem = vectors.bind(*meta)
    if problem:
        raise InvalidInputError(problem)
    return vectors


def _copy_vectors(src: Store, dst: Store, vectors: Any, ns: str) -> None:
    after = 0
    bulk: Callable[[], AbstractContextManager[None]] = getattr(dst, "bulk_load", nullcontext)
    with bulk():
        while rows := _rows(src, "SELECT v.seq, m.id, v.embedding FROM vec_memories v JOIN"
                                 " memories m ON m.seq = v.seq WHERE m.namespace = ? AND"
                                 f" v.seq > ? ORDER BY v.seq LIMIT {BATCH}", (ns, after)):
            after = int(rows[-1][0])
            items = [(str(mid), _vector(blob)) for _, mid, blob in rows]
            vectors.upsert(ns, items)


def _vector(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return np.frombuffer(bytes(value), dtype=np.float32)
    return np.asarray(value.to_numpy() if hasattr(value, "to_numpy") else value, np.float32)


def _copy_queue(src: Store, dst: Store, ns: str) -> None:
    waiting = [str(r[0]) for r in _rows(src, "SELECT m.id FROM vector_queue q JOIN memories m"
                                             " ON m.seq = q.seq WHERE q.namespace = ?", (ns,))]
    if not waiting:
        return
    queue = backend_of(dst).queue
    if queue is not None:
        queue.enqueue(ns, waiting, time.time())

"""The PostgreSQL store's deletes, archive (003), correction chains, provenance and maintenance
runs: the methods of ``PostgresStore`` that move or remove records (a mixin).

Forget removes the rows: the memory, its links, entity links, orphaned entities, its vector
and queue row (foreign keys, ON DELETE CASCADE), its provenance rows (trigger) and its archived
copy, and marks a purge pending: the next ``repair`` maintenance run rewrites the tables and
retires the write-ahead log that still hold the bytes (``postgres_purge``, docs/postgres.md).
"""

from __future__ import annotations

import builtins
import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import ArchiveEntry, RunRecord, Version, order_versions
from clawmemory.backends.postgres import purge
from clawmemory.backends.postgres.sql import (
    FTS_EXPR,
    INSERT,
    SELECT,
    fts_args,
    record_values,
)
from clawmemory.model import MemoryRecord

__all__ = ["LifecycleMixin"]

# Tables whose rows name a namespace, in the order delete_namespace empties them.
_TENANT_TABLES = ("links", "memory_entities", "entities", "messages", "summaries", "sessions",
                  "memories_archive", "maintenance_runs", "memory_sources", "vector_queue")


def _archived(text: str) -> MemoryRecord:
    return MemoryRecord.from_dict(json.loads(text))


class LifecycleMixin:
    if TYPE_CHECKING:
        from contextlib import AbstractContextManager

        def write(self) -> AbstractContextManager[None]: ...
        def execute(self, sql: str, args: Sequence[Any] = ()) -> Any: ...
        def lock_namespace(self, namespace: str) -> None: ...
        def current_tx(self) -> Any: ...
        def meta(self, key: str) -> str | None: ...
        def connection(self) -> AbstractContextManager[Any]: ...
        def query(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[
            tuple[Any, ...]]: ...
        def _records(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[
            MemoryRecord]: ...
        def replace_in_place(self, record: MemoryRecord) -> None: ...
        def key_holder(self, namespace: str, key: str) -> MemoryRecord | None: ...
        def get_many(self, namespace: str, ids: Sequence[str]) -> builtins.list[
            MemoryRecord]: ...

    def _has_vectors(self) -> bool:
        return bool(self.query("SELECT to_regclass('vec_memories') IS NOT NULL")[0][0])

    def _drop_vectors_and_entities(self, ns: str, ids: Sequence[str]) -> None:
        """Inside a write: delete the vectors and entity links of these records."""
        ids = builtins.list(ids)
        if self._has_vectors():
            self.execute("DELETE FROM vec_memories WHERE seq IN (SELECT seq FROM memories WHERE"
                         " namespace = %s AND id = ANY(%s))", (ns, ids))
        touched = [r[0] for r in self.execute(
            "DELETE FROM memory_entities WHERE namespace = %s AND memory_id = ANY(%s)"
            " RETURNING entity_id", (ns, ids)).fetchall()]
        if touched:
            # An entity nobody mentions any more is text of the dropped memory; the others are
            # mentioned by that many fewer memories (entity ranking weighs 1/mention_count).
            dropped = Counter(touched)
            self.execute("DELETE FROM entities e WHERE e.id = ANY(%s) AND NOT EXISTS (SELECT 1"
                         " FROM memory_entities me WHERE me.entity_id = e.id)",
                         (builtins.list(dropped),))
            self.execute("UPDATE entities e SET mention_count = greatest(e.mention_count - d.n,"
                         " 1) FROM unnest(%s::text[], %s::bigint[]) AS d(id, n) WHERE e.id = d.id",
                         (builtins.list(dropped), builtins.list(dropped.values())))

    def _delete_ids(self, ns: str, ids: Sequence[str]) -> int:
        self._drop_vectors_and_entities(ns, ids)
        wanted = builtins.list(ids)
        for end in ("a_id", "b_id"):
            self.execute(f"DELETE FROM links WHERE namespace = %s AND {end} = ANY(%s)",
                         (ns, wanted))
        return int(self.execute("DELETE FROM memories WHERE namespace = %s AND id = ANY(%s)",
                                (ns, wanted)).rowcount)

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        wanted = builtins.list(dict.fromkeys(ids))
        with self.write():
            self.lock_namespace(namespace)
            owned = [r[0] for r in self.query(
                "SELECT id FROM memories WHERE namespace = %s AND id = ANY(%s)",
                (namespace, wanted))]
            removed = self._delete_ids(namespace, owned) if owned else 0
            removed += int(self.execute(
                "DELETE FROM memories_archive WHERE namespace = %s AND id = ANY(%s)",
                (namespace, wanted)).rowcount)
            if removed:
                purge.mark_pending(self)
        return removed

    def delete_namespace(self, namespace: str) -> int:
        with self.write():
            self.lock_namespace(namespace)
            self._drop_vectors_and_entities(namespace, [r[0] for r in self.query(
                "SELECT id FROM memories WHERE namespace = %s", (namespace,))])
            removed = int(self.execute("DELETE FROM memories WHERE namespace = %s",
                                       (namespace,)).rowcount)
            for table in _TENANT_TABLES:
                self.execute(f"DELETE FROM {table} WHERE namespace = %s", (namespace,))
            if self._has_vectors():
                self.execute("DELETE FROM vector_centres WHERE namespace = %s", (namespace,))
            self.execute("DELETE FROM tenant_roles WHERE namespace = %s", (namespace,))
            purge.mark_pending(self)
            return removed

    def find_archived(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        rows = self.query(
            "SELECT record FROM memories_archive WHERE namespace = %s AND (id = %s OR key = %s)"
            " ORDER BY id = %s DESC, seq DESC LIMIT 1", (namespace, id_or_key, id_or_key,
                                                         id_or_key))
        return _archived(rows[0][0]) if rows else None

    def chain(self, namespace: str, id_: str) -> builtins.list[Version]:
        found: dict[str, Version] = {}
        asked: set[str] = set()
        frontier = [id_]
        while frontier:
            live = self._records(
                f"SELECT {SELECT} FROM memories m WHERE m.namespace = %s AND m.id = ANY(%s)"
                f" UNION ALL SELECT {SELECT} FROM memories m WHERE m.namespace = %s AND"
                " m.supersedes = ANY(%s)", (namespace, frontier, namespace, frontier))
            archived = [_archived(r[0]) for r in self.query(
                "SELECT record FROM memories_archive WHERE namespace = %s AND (id = ANY(%s)"
                " OR supersedes = ANY(%s))", (namespace, frontier, frontier))]
            asked.update(frontier)
            for r, in_archive in [(r, False) for r in live] + [(r, True) for r in archived]:
                found.setdefault(r.id, (r, in_archive))
            ends = {i for r, _ in found.values() for i in (r.id, r.supersedes) if i}
            frontier = sorted(ends - asked)[:500]
        return order_versions(builtins.list(found.values()))

    def derived(self, namespace: str, source_ids: Sequence[str]) -> builtins.list[Version]:
        rows = self.query(
            "SELECT DISTINCT memory_id, archived FROM memory_sources WHERE namespace = %s AND"
            " source_id = ANY(%s)", (namespace, builtins.list(dict.fromkeys(source_ids))))
        live = sorted(str(m) for m, a in rows if not a)
        archived = sorted(str(m) for m, a in rows if a)
        found: builtins.list[Version] = [(r, False) for r in self.get_many(namespace, live)]
        found += [(_archived(r[0]), True) for r in self.query(
            "SELECT record FROM memories_archive WHERE namespace = %s AND id = ANY(%s)"
            " ORDER BY id", (namespace, archived))] if archived else []
        return found

    def replace_many(self, records: Sequence[MemoryRecord]) -> None:
        with self.write():
            for ns in sorted({r.namespace for r in records}):
                self.lock_namespace(ns)
            for r in records:
                self.replace_in_place(r)

    def drop_derived(self, namespace: str, ids: Sequence[str]) -> None:
        with self.write():
            self.lock_namespace(namespace)
            self._drop_vectors_and_entities(namespace, ids)

    def archive(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        with self.write():
            self.lock_namespace(namespace)
            records = self._records(f"SELECT {SELECT} FROM memories m WHERE m.namespace = %s"
                                    " AND m.id = ANY(%s)", (namespace, builtins.list(ids)))
            moved = [r.id for r in records]
            if not moved:
                return 0
            self.execute("DELETE FROM memories_archive WHERE namespace = %s AND id = ANY(%s)",
                         (namespace, moved))
            from psycopg.types.json import Jsonb

            self.current_tx().cursor().executemany(
                "INSERT INTO memories_archive (id, namespace, record, key, supersedes,"
                f" source_ids, created_at, archived_at, fts) VALUES (%s, %s, %s, %s, %s, %s,"
                f" %s, %s, {FTS_EXPR})",
                [(r.id, namespace, json.dumps(r.to_dict(), ensure_ascii=False), r.key,
                  r.supersedes, Jsonb(builtins.list(r.source_ids)), r.created_at, at,
                  *fts_args(r.key, r.tags, r.content, r.source)) for r in records])
            self._delete_ids(namespace, moved)
        return len(moved)

    def archive_count(self, namespace: str) -> int:
        return int(self.query("SELECT COUNT(*) FROM memories_archive WHERE namespace = %s",
                               (namespace,))[0][0])

    def archive_list(
        self, namespace: str, *, limit: int, offset: int = 0
    ) -> builtins.list[ArchiveEntry]:
        rows = self.query(
            "SELECT record, archived_at FROM memories_archive WHERE namespace = %s ORDER BY"
            " archived_at DESC, created_at DESC, id LIMIT %s OFFSET %s",
            (namespace, limit, offset))
        return [ArchiveEntry(_archived(r), at) for r, at in rows]

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None:
        with self.write():
            self.lock_namespace(namespace)
            rows = self.execute("DELETE FROM memories_archive WHERE namespace = %s AND id = %s"
                                " RETURNING record", (namespace, id_)).fetchall()
            if not rows:
                return None
            record = _archived(rows[0][0])
            if record.key and self.key_holder(namespace, record.key) is not None:
                record = record.evolve(key=None)  # the live memory owns the key now
            self.execute(INSERT, record_values(record))
            return record

    def live_size_bytes(self) -> int | None:
        rows = self.query(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c WHERE"
            " c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND"
            " c.relname NOT IN ('memories_archive', 'maintenance_runs')")
        return int(rows[0][0])

    def record_run(
        self,
        namespace: str,
        job: str,
        started_at: float,
        finished_at: float,
        outcome: str,
        counts: dict[str, int],
        message: str,
    ) -> RunRecord:
        with self.write():
            run_id = int(self.execute(
                "INSERT INTO maintenance_runs (namespace, job, started_at, finished_at, outcome,"
                " counts, message) VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING id",
                (namespace, job, started_at, finished_at, outcome,
                 json.dumps(counts, sort_keys=True), message)).fetchone()[0])
        return RunRecord(run_id, namespace, job, started_at, finished_at, outcome, dict(counts),
                         message)

    def runs(
        self, namespace: str, limit: int, *, job: str | None = None
    ) -> builtins.list[RunRecord]:
        rows = self.query(
            "SELECT id, namespace, job, started_at, finished_at, outcome, counts, message FROM"
            " maintenance_runs WHERE namespace = %s AND (%s::text IS NULL OR job = %s)"
            " ORDER BY started_at DESC, id DESC LIMIT %s", (namespace, job, job, limit))
        return [RunRecord(int(i), ns, j, s, f if f is not None else s, o or "failed",
                          json.loads(cnt or "{}"), m or "")
                for i, ns, j, s, f, o, cnt, m in rows]

    def purge_pending(self) -> bool:
        """Whether something was deleted since the last completed purge."""
        return purge.pending(self)

    def purge_forgotten(self) -> dict[str, int]:
        """If something was deleted since the last purge: rewrite the tables that held it and
        retire the WAL that logged it (``postgres_purge``; the ``repair`` maintenance job)."""
        return purge.purge(self)

    def vacuum(self) -> None:
        """VACUUM every table: dead row versions of deleted memories become free space (their
        bytes stay in the data files until PostgreSQL reuses the space; docs/postgres.md)."""
        self.query("VACUUM (ANALYZE)")

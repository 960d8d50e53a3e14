"""PostgreSQL backend: the same contract as SQLite on a database server, for several replicas,
millions of memories and many tenants (ADR 0015, docs/postgres.md).

psycopg 3 with a connection pool (psycopg_pool). Reads borrow a pooled connection in autocommit
mode; writes run in ``write()``, one transaction on one connection that every call of the same
thread joins (re-entrant, like ``SQLiteStore.write``). SQLite serialises writers with one file
lock, and the write path relies on it (finding a session's previous turn, then linking to it;
create-or-get of an entity or a key). Here every write transaction takes a transaction-level
advisory lock on its namespace instead (``Memory``'s write transactions at their start, before
they read what they will build on: ``lock_namespace``): writers of one tenant take turns,
tenants write in parallel, readers never wait.

Full-text search uses a ``tsvector`` per memory with a GIN index (``postgres_search.py``),
vectors live in pgvector (``backends/postgres/vectors.py``), migrations in ``postgres_schema.py``.
"""

from __future__ import annotations

import builtins
import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from clawmemory.backends.base import Link, StoreStats, is_turn, upsert
from clawmemory.backends.postgres import schema
from clawmemory.backends.postgres.lifecycle import LifecycleMixin
from clawmemory.backends.postgres.search import SearchMixin
from clawmemory.backends.postgres.sql import (
    FILL_CONTEXT,
    INSERT,
    INSERT_IN_CONTEXT,
    INSERT_MANY,
    ORDER_SQL,
    SELECT,
    UPDATE,
    PostgresOptions,
    filter_sql,
    many_values,
    record_values,
    row_to_record,
)
from clawmemory.errors import ConfigError, StorageError
from clawmemory.model import Filter, MemoryRecord

__all__ = ["PostgresOptions", "PostgresStore", "is_postgres_url", "redact"]

log = logging.getLogger("clawmemory")
_URL = re.compile(r"^postgres(ql)?://", re.IGNORECASE)


def is_postgres_url(value: object) -> bool:
    return isinstance(value, str) and bool(_URL.match(value))


def redact(url: str) -> str:
    """The address without its password, for messages and logs."""
    return re.sub(r"^(\w+://[^:/@]*):[^@]*@", r"\1:***@", url)


def _driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ConfigError("the PostgreSQL backend needs psycopg, psycopg_pool and pgvector:"
                          " pip install 'clawmemory[postgres]'") from exc
    return psycopg, psycopg_pool


def _connection_params(url: str, o: PostgresOptions) -> dict[str, Any]:
    """libpq parameters added to the address: the connect timeout unless the address sets
    one, and the statement timeout appended to any ``options`` it gives (a search_path)."""
    from psycopg.conninfo import conninfo_to_dict

    given = conninfo_to_dict(url)
    params: dict[str, Any] = {}
    if "connect_timeout" not in given:
        params["connect_timeout"] = max(1, round(o.connect_timeout_s))
    if o.statement_timeout_ms:
        params["options"] = " ".join(filter(None, (
            str(given.get("options") or ""), f"-c statement_timeout={o.statement_timeout_ms}")))
    return params


class PostgresStore(SearchMixin, LifecycleMixin):
    """A clawmemory schema in a PostgreSQL database. Safe to share between threads; any number
    of processes (service replicas) may use the same database at once."""

    backend = "postgres"

    def __init__(
        self,
        url: str,
        *,
        options: PostgresOptions | None = None,
        weights: tuple[float, float, float, float, float] = (2.0, 1.0, 1.5, 0.5, 0.3),
        read_only: bool = False,
        create: bool = True,
        keyword_context: bool = True,
    ) -> None:
        psycopg, pool_mod = _driver()
        self.url = url
        self.path = redact(url)  # what messages and stats show
        self.options = options or PostgresOptions()
        self.read_only = read_only
        self._weights = weights
        self._context = keyword_context  # index turns with the words before them (ADR 0036)
        self._error = psycopg.Error
        self._local = threading.local()
        self._term_counts: dict[str, tuple[int, int]] = {}
        self._ns_counts: dict[str, tuple[int, float]] = {}
        o = self.options
        params = _connection_params(url, o)
        try:
            with psycopg.connect(url, autocommit=True, **params) as conn:
                self._version = schema.migrate(conn, self.path, read_only=read_only,
                                               create=create)
        except psycopg.Error as exc:
            raise StorageError(f"cannot open PostgreSQL database {self.path}: {exc}") from exc
        self._pool = pool_mod.ConnectionPool(
            url, min_size=o.pool_min_size, max_size=o.pool_max_size, timeout=o.pool_timeout_s,
            kwargs={"autocommit": True, **params}, configure=self._configure, open=False,
            name="clawmemory")
        try:
            self._pool.open(wait=True, timeout=o.connect_timeout_s)
        except Exception as exc:
            self._pool.close()
            raise StorageError(f"cannot connect to {self.path}: {exc}") from exc

    @staticmethod
    def _configure(conn: Any) -> None:
        from pgvector.psycopg import register_vector

        register_vector(conn)

    def schema_version(self) -> int:
        return self._version

    @property
    def closed(self) -> bool:
        return bool(self._pool.closed)

    def close(self) -> None:
        self._pool.close()

    # --- transactions --------------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[None]:
        """One transaction on one pooled connection; calls of this thread inside it join it
        (re-entrant). Rolled back on any error; database errors become StorageError."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        if self.read_only:
            raise StorageError(f"{self.path} is open read-only")
        try:
            with self._pool.connection() as conn, conn.transaction():
                self._local.conn, self._local.locked = conn, set()
                try:
                    yield
                finally:
                    self._local.conn = None
        except self._error as exc:
            raise StorageError(f"{self.path}: {exc}") from exc

    def lock_namespace(self, namespace: str) -> None:
        """Inside ``write()``: make this transaction the namespace's only writer until it ends.
        A caller that reads before it writes takes it first (the engine's write transaction):
        the store's own methods take it only at their first write, after such a read."""
        locked: set[str] = self._local.locked
        if namespace not in locked:
            key = int.from_bytes(hashlib.blake2b(namespace.encode(), digest_size=4).digest(),
                                 "big", signed=True)
            self._local.conn.execute("SELECT pg_advisory_xact_lock(%s, %s)",
                                     (schema.ADVISORY_CLASS, key))
            locked.add(namespace)

    def current_tx(self) -> Any:
        """The current transaction's connection (inside ``write()`` only)."""
        return self._local.conn

    def execute(self, sql: str, args: Sequence[Any] | dict[str, Any] = ()) -> Any:
        """Run one statement inside ``write()``; returns the cursor."""
        return self._local.conn.execute(sql, args)

    def query(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        """Rows of a read: in this thread's transaction if there is one, else on a pooled
        connection."""
        conn = getattr(self._local, "conn", None)
        try:
            if conn is not None:
                return builtins.list(conn.execute(sql, args).fetchall())
            with self._pool.connection() as pooled:
                return builtins.list(pooled.execute(sql, args).fetchall())
        except self._error as exc:
            raise StorageError(f"{self.path}: {exc}") from exc

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection for several statements (the vector search's settings)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        try:
            with self._pool.connection() as pooled:
                yield pooled
        except self._error as exc:
            raise StorageError(f"{self.path}: {exc}") from exc

    def _records(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[MemoryRecord]:
        return [row_to_record(r) for r in self.query(sql, args)]

    # --- records -------------------------------------------------------------------------------
    def key_holder(self, namespace: str, key: str) -> MemoryRecord | None:
        rows = self._records(
            f"SELECT {SELECT} FROM memories m WHERE m.namespace = %s AND m.key = %s",
            (namespace, key))
        return rows[0] if rows else None

    def insert_new(self, record: MemoryRecord) -> None:
        if self._context and is_turn(record):
            self.execute(INSERT_IN_CONTEXT, [*record_values(record), record.namespace,
                                             record.session_id])
        else:
            self.execute(INSERT, record_values(record))

    def _upsert(self, record: MemoryRecord, skip_existing: bool) -> tuple[MemoryRecord, bool]:
        return upsert(self, record, skip_existing)

    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        with self.write():
            self.lock_namespace(record.namespace)
            return self._upsert(record, skip_existing=False)

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        if not records:
            return []
        now = time.time()
        ns = records[0].namespace
        with self.write():
            self.lock_namespace(ns)
            keyed = [r for r in records if r.key]
            if keyed or len(records) < 50:
                results = [self._upsert(r, skip_existing_keys) for r in records]
            else:  # a batch without keys: one statement, no key look-ups
                self.execute(INSERT_MANY, many_values(records))
                turns = [r.id for r in records if is_turn(r)] if self._context else []
                if turns:
                    self.execute(FILL_CONTEXT, [records[0].namespace, turns])
                results = [(r, True) for r in records]
            stored_id = {r.id: res.id for r, (res, _) in zip(records, results, strict=True)}
            pairs = []
            for a, b, strength, origin in links:
                lo, hi = sorted((stored_id.get(a, a), stored_id.get(b, b)))
                if lo != hi:
                    pairs.append((lo, hi, strength, origin))
            if pairs:
                # A snapshot may name an end that is in neither the batch nor the store.
                self.current_tx().cursor().executemany(
                    "INSERT INTO links SELECT %s, %s, %s, %s, %s, %s, %s WHERE (SELECT COUNT(*)"
                    " FROM memories WHERE namespace = %s AND id IN (%s, %s)) = 2"
                    " ON CONFLICT (namespace, a_id, b_id) DO UPDATE"
                    " SET strength = greatest(links.strength, excluded.strength)",
                    [(ns, lo, hi, s, o, now, now, ns, lo, hi) for lo, hi, s, o in pairs])
        return results

    def get(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        rows = self._records(
            f"SELECT {SELECT} FROM memories m WHERE m.namespace = %s AND (m.id = %s OR"
            " m.key = %s) ORDER BY m.id = %s DESC LIMIT 1",
            (namespace, id_or_key, id_or_key, id_or_key))
        return rows[0] if rows else None

    def get_many(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        found = self._records(f"SELECT {SELECT} FROM memories m WHERE m.namespace = %s AND"
                              " m.id = ANY(%s)", (namespace, builtins.list(ids)))
        order = {i: n for n, i in enumerate(ids)}
        return sorted(found, key=lambda r: order[r.id])

    def replace_in_place(self, record: MemoryRecord) -> None:
        values = record_values(record)
        self.execute(UPDATE, [*values[1:], record.namespace, record.id])

    def replace(self, record: MemoryRecord) -> None:
        with self.write():
            self.lock_namespace(record.namespace)
            self.replace_in_place(record)

    def supersede(self, retired: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        with self.write():
            self.lock_namespace(new.namespace)
            self.replace_in_place(retired)
            return self._upsert(new, skip_existing=False)[0]

    def list(
        self, namespace: str, flt: Filter, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> builtins.list[MemoryRecord]:
        where, args = filter_sql(namespace, flt)
        return self._records(
            f"SELECT {SELECT} FROM memories m WHERE {where} ORDER BY {ORDER_SQL[order]}"
            " LIMIT %s OFFSET %s", [*args, limit, offset])

    def count(self, namespace: str, flt: Filter) -> int:
        where, args = filter_sql(namespace, flt)
        return int(self.query(f"SELECT COUNT(*) FROM memories m WHERE {where}", args)[0][0])

    def touch(self, namespace: str, ids: Sequence[str], now: float) -> None:
        self.touch_many([(namespace, ids, now)])

    def touch_many(self, events: Sequence[tuple[str, Sequence[str], float]]) -> None:
        """Several recalls' access bookkeeping (``search/access.py`` replays a burst of them)
        in one statement: each memory's count grows by the number of recalls that returned it
        and its last access becomes the last of theirs, as touches one by one would leave it.

        Deadlock-free: the namespaces' writer locks first (in name order), then the rows in
        (namespace, id) order. One UPDATE per recall in a transaction locked rows in an order
        that differed between processes flushing at once, and every memory writer holds the
        namespace lock while it locks rows in its own order."""
        wanted: dict[tuple[str, str], tuple[int, float]] = {}
        for namespace, ids, now in events:
            for id_ in dict.fromkeys(ids):
                n = wanted.get((namespace, id_), (0, now))[0]
                wanted[namespace, id_] = (n + 1, now)
        if not wanted or self.read_only:
            return
        keys = sorted(wanted)
        with self.write():
            for namespace in sorted({ns for ns, _ in keys}):
                self.lock_namespace(namespace)
            self.execute(
                "WITH t AS (SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[],"
                " %s::float8[]) AS t(namespace, id, n, at)), locked AS (SELECT m.seq, t.n, t.at"
                " FROM memories m JOIN t ON m.namespace = t.namespace AND m.id = t.id"
                " ORDER BY m.namespace, m.id FOR NO KEY UPDATE OF m)"
                " UPDATE memories m SET last_accessed = locked.at,"
                " access_count = m.access_count + locked.n FROM locked WHERE m.seq = locked.seq",
                ([k[0] for k in keys], [k[1] for k in keys], [wanted[k][0] for k in keys],
                 [wanted[k][1] for k in keys]))

    # --- graph ---------------------------------------------------------------------------------
    def _both_exist(self, namespace: str, a: str, b: str) -> bool:
        rows = self.execute("SELECT COUNT(*) FROM memories WHERE namespace = %s AND id IN"
                            " (%s, %s)", (namespace, a, b)).fetchall()
        return int(rows[0][0]) == 2

    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str,
             accumulate: bool = True) -> bool:
        if a == b:
            return False
        lo, hi = sorted((a, b))
        now = time.time()
        with self.write():
            self.lock_namespace(namespace)
            if not self._both_exist(namespace, lo, hi):
                return False
            grown = "links.strength + excluded.strength" if accumulate else (
                "greatest(links.strength, excluded.strength)")
            self.execute(
                "INSERT INTO links VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (namespace, a_id, b_id) DO UPDATE"
                f" SET strength = {grown}, updated_at = excluded.updated_at",
                (namespace, lo, hi, strength, origin, now, now))
        return True

    def unlink(self, namespace: str, a: str, b: str) -> bool:
        lo, hi = sorted((a, b))
        with self.write():
            self.lock_namespace(namespace)
            cur = self.execute("DELETE FROM links WHERE namespace = %s AND a_id = %s AND"
                               " b_id = %s", (namespace, lo, hi))
            return bool(cur.rowcount)

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, builtins.list[Link]]:
        out: dict[str, builtins.list[Link]] = {i: [] for i in ids}
        if not ids:
            return out
        wanted = builtins.list(ids)
        rows = self.query(
            "SELECT a_id, b_id, strength, origin FROM links WHERE namespace = %s AND"
            " a_id = ANY(%s) UNION SELECT a_id, b_id, strength, origin FROM links WHERE"
            " namespace = %s AND b_id = ANY(%s) ORDER BY strength DESC",
            (namespace, wanted, namespace, wanted))
        for a, b, strength, origin in rows:
            if a in out:
                out[a].append(Link(b, strength, origin))
            if b in out:
                out[b].append(Link(a, strength, origin))
        return out

    # --- housekeeping --------------------------------------------------------------------------
    def namespaces(self) -> builtins.list[str]:
        return [r[0] for r in self.query("SELECT DISTINCT namespace FROM memories ORDER BY 1")]

    def stats(self, namespace: str) -> StoreStats:
        by_kind = dict(self.query(
            "SELECT kind, COUNT(*) FROM memories WHERE namespace = %s AND valid_until IS NULL"
            " GROUP BY kind ORDER BY kind", (namespace,)))
        total, invalid, newest, oldest = self.query(
            "SELECT COUNT(*), COUNT(valid_until), MAX(created_at), MIN(created_at) FROM"
            " memories WHERE namespace = %s", (namespace,))[0]
        links = self.query("SELECT COUNT(*) FROM links WHERE namespace = %s", (namespace,))[0][0]
        size = self.query("SELECT pg_total_relation_size('memories')")[0][0]
        return StoreStats(
            backend=self.backend, total=int(total) - int(invalid),
            by_kind={k: int(v) for k, v in by_kind.items()}, invalidated=int(invalid),
            links=int(links), newest=newest, oldest=oldest, size_bytes=int(size),
            path=self.path)

    def namespace_size(self, namespace: str, max_age_s: float = 10.0) -> int:
        """How many memories the namespace holds, remembered for ``max_age_s``: thresholds
        (common entities) need the size, and counting a million rows takes tens of ms."""
        known = self._ns_counts.get(namespace)
        if known is not None and time.monotonic() - known[1] < max_age_s:
            return known[0]
        n = int(self.query("SELECT COUNT(*) FROM memories WHERE namespace = %s",
                            (namespace,))[0][0])
        self._ns_counts[namespace] = (n, time.monotonic())
        return n

    def meta(self, key: str) -> str | None:
        rows = self.query("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.write():
            self.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET"
                         " value = excluded.value", (key, value))

    @contextmanager
    def bulk_load(self, maintenance_work_mem: str = "2GB") -> Iterator[None]:
        """Load many vectors without keeping the HNSW index up to date row by row: the index
        is dropped, then built once afterwards (much faster for a large import; searches in
        between are exact scans). ``clawmem copy`` and the benchmark use it."""
        if not self._has_vectors():
            yield
            return
        with self.write():
            self.execute("DROP INDEX IF EXISTS vec_memories_hnsw")
        try:
            yield
        finally:
            with self.connection() as conn:
                conn.execute("SELECT set_config('maintenance_work_mem', %s, false)",
                             (maintenance_work_mem,))
                try:
                    schema.create_hnsw_index(conn, self.options.hnsw_m,
                                             self.options.hnsw_ef_construction)
                finally:
                    conn.execute("RESET maintenance_work_mem")
                # Fresh statistics for the planner and for keyword search's common words,
                # without waiting for autovacuum to notice the load.
                conn.execute("ANALYZE memories, vec_memories")

    def bind_tenant_role(self, role: str, namespace: str) -> None:
        """Let the PostgreSQL role ``role`` see (only) ``namespace``'s rows: the row-level
        security policies of migration 002 (the role also needs table privileges)."""
        with self.write():
            self.execute("INSERT INTO tenant_roles VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         (role, namespace))

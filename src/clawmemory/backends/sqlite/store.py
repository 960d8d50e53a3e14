"""SQLite backend: one file, FTS5 for keyword search, sqlite-vec loaded for vectors.

apsw is used instead of the stdlib module because the stdlib build on common Pythons cannot
load extensions (sqlite-vec). Writes run in ``BEGIN IMMEDIATE`` transactions so a writer takes
the lock up front (no deadlocking lock upgrades between processes); ``busy_timeout`` makes
SQLite wait for the lock, and a bounded retry on top absorbs the rare busy error that SQLite
reports without waiting (e.g. while another process switches the file to WAL).
"""

from __future__ import annotations

import builtins
import importlib.util
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from clawmemory import private
from clawmemory.backends.base import (
    SUBSTRING_SCAN_ROWS,
    ArchiveEntry,
    Link,
    RankInfo,
    RunRecord,
    StoreStats,
    TextHit,
    Version,
    is_turn,
    order_versions,
    upsert,
)
from clawmemory.backends.sqlite import schema
from clawmemory.backends.sqlite.context import INSERT_IN_CONTEXT
from clawmemory.backends.sqlite.keyword import KeywordSearch
from clawmemory.backends.sqlite.readers import ReaderPool
from clawmemory.backends.sqlite.sql import (
    INSERT,
    ORDER_SQL,
    RANK_COLUMNS,
    RANK_SELECT,
    SELECT,
    UPDATE,
    chunks,
    filter_sql,
    fts_query,
    lower_text,
    meta_eq_json,
    rank_hit,
    record_values,
    row_to_record,
)
from clawmemory.errors import ConfigError, StorageError
from clawmemory.model import Filter, MemoryRecord

__all__ = ["SQLiteStore", "filter_sql", "fts_query"]

log = logging.getLogger("clawmemory")

T = TypeVar("T")

MAX_BUSY_WAIT_S = 60.0


def _apsw() -> Any:
    try:
        import apsw
    except ImportError as exc:  # pragma: no cover - apsw is a core dependency
        raise ConfigError("the SQLite backend needs apsw: pip install apsw") from exc
    return apsw


def _vec_extension() -> str:
    """sqlite-vec's loadable extension, found without importing the package: its __init__
    imports numpy (0.1 s), which commands that never touch a vector need not pay."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is not None and spec.origin is not None:
        folder = Path(spec.origin).parent
        if any(folder.glob("vec0.*")):
            return str(folder / "vec0")
    import sqlite_vec

    return str(sqlite_vec.loadable_path())


def _functions_and_vectors(c: Any, *, vectors: bool = True) -> None:
    """Our SQL functions on connection ``c``, and sqlite-vec when ``vectors`` (raises when the
    extension cannot load)."""
    # SQLite's lower() folds ASCII only; the substring fallback needs Python's Unicode one.
    c.create_scalar_function("clawmem_lower", lower_text, 1, deterministic=True)
    c.create_scalar_function("clawmem_meta_eq", meta_eq_json, 2, deterministic=True)
    if vectors:
        c.enable_load_extension(True)
        c.load_extension(_vec_extension())
        c.enable_load_extension(False)


class SQLiteStore:
    """The embedded default backend. Safe to share between threads; many processes may open the
    same file at once."""

    backend = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 5000,
        weights: tuple[float, float, float, float, float] = (2.0, 1.0, 1.5, 0.5, 0.3),
        create: bool = True,
        read_only: bool = False,
        keyword_candidates: int = 5000,
        keyword_context: bool = True,
    ) -> None:
        """Open the store at ``path``. ``create=False``: a missing or empty file is an error
        instead of a new store (read-only commands never create one). ``read_only``: open the
        file for reading only; a file the OS will not let us write is opened that way too.
        ``keyword_candidates``: at most this many rows ranked per keyword search once more
        match (keyword.py). ``keyword_context``: index each new dialogue turn with the words
        of the turns before it (context.py)."""
        apsw = _apsw()
        self.path = Path(path)
        self._busy = (apsw.BusyError, apsw.LockedError)
        self._error = apsw.Error
        self._weights = weights
        self._context = keyword_context
        self._lock = threading.RLock()
        self._depth = 0  # nesting of write() in the thread holding the lock
        self._writer: int | None = None  # the thread inside write(): it reads its own writes
        self._readers: ReaderPool | None = None
        self._closed = False
        self._scrub = False  # a write transaction removed text: checkpoint after it commits
        self._keywords = KeywordSearch(self.query, weights, keyword_candidates)
        self.vec_available = False
        in_memory = str(path) == ":memory:"
        if not in_memory:
            private.prepare_database_file(self.path, create=create and not read_only)
        flags = apsw.SQLITE_OPEN_READONLY if read_only else (
            apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE)
        try:
            self.conn = apsw.Connection(str(path), flags=flags)
        except apsw.Error as exc:
            raise StorageError(f"cannot open database {path}: {exc}") from exc
        self.conn.setbusytimeout(busy_timeout_ms)
        try:
            # Before anything is written: a file that is not a clawmemory store stays untouched.
            self._retry(lambda: schema.check_ownership(self, (apsw.NotADBError,
                                                                apsw.CorruptError)))
            self.read_only = bool(self.conn.readonly("main"))
            if not in_memory:
                private.warn_if_shared(self.path)
            self._retry(self._configure)
            self._retry(self._upgrade)
        except BaseException:
            self.conn.close()
            raise
        if not in_memory and not self.read_only:  # WAL: readers run beside the writer
            self._readers = ReaderPool(lambda: self._reader(apsw, busy_timeout_ms))

    # --- connection set-up ---------------------------------------------------------------------
    def _configure(self) -> None:
        c = self.conn
        if str(self.path) != ":memory:" and not self.read_only:
            mode = c.execute("PRAGMA journal_mode=WAL").fetchall()[0][0]
            if str(mode).lower() != "wal":
                raise StorageError(f"could not switch {self.path} to WAL (got {mode})")
        c.execute("PRAGMA synchronous=NORMAL")
        c.execute("PRAGMA temp_store=MEMORY")
        c.execute("PRAGMA foreign_keys=ON")
        # Forget means gone from the bytes: freed pages and cells are zeroed, not left in the
        # file's free space (FTS5 gets its own 'secure-delete' option in migration 005).
        c.execute("PRAGMA secure_delete=ON")
        try:
            _functions_and_vectors(c)
            self.vec_available = True
        except Exception:
            self.vec_available = False

    def _reader(self, apsw: Any, busy_timeout_ms: int) -> Any:
        """A read connection (readers.py): the functions and extension reads may use."""
        c = apsw.Connection(str(self.path), flags=apsw.SQLITE_OPEN_READWRITE)
        c.setbusytimeout(busy_timeout_ms)
        c.execute("PRAGMA query_only=ON")
        c.execute("PRAGMA temp_store=MEMORY")
        _functions_and_vectors(c, vectors=self.vec_available)
        return c

    def schema_version(self) -> int:
        return int(self.query("SELECT MAX(version) FROM schema_version")[0][0])

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        if self._readers is not None:
            self._readers.close()
        with self._lock:
            self.conn.close()

    # --- transactions --------------------------------------------------------------------------
    def _retry(self, fn: Callable[[], T]) -> T:
        deadline = time.monotonic() + MAX_BUSY_WAIT_S
        delay = 0.005
        while True:
            try:
                return fn()
            except self._busy as exc:
                if time.monotonic() > deadline:
                    raise StorageError(f"database {self.path} stayed locked: {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 0.2)
            except self._error as exc:
                raise StorageError(f"{self.path}: {exc}") from exc

    @contextmanager
    def write(self) -> Iterator[None]:
        """A write transaction taken with BEGIN IMMEDIATE; rolled back on any error. Re-entrant:
        a ``write()`` inside another (same thread) joins it, so callers can batch many small
        writes (entity links of a whole import) into one transaction; an error anywhere rolls
        back the outermost one."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self._retry(lambda: self.conn.execute("BEGIN IMMEDIATE"))
            self._depth = 1
            self._writer = threading.get_ident()
            try:
                yield
            except self._busy:
                self._rollback()
                raise  # the caller's retry loop may run the whole transaction again
            except self._error as exc:
                self._rollback()
                raise StorageError(f"{self.path}: {exc}") from exc
            except BaseException:
                self._rollback()
                raise
            else:
                self._retry(lambda: self.conn.execute("COMMIT"))
                if self._scrub:
                    self._checkpoint()
            finally:
                self._depth = 0
                self._writer = None
                self._scrub = False

    def _checkpoint(self) -> None:
        """Copy the WAL into the database file and truncate it to zero bytes: after a forget,
        the only copies of the forgotten rows left were older page versions in the WAL. A
        reader in another process can hold the WAL open; SQLite then waits (busy timeout) and
        the WAL is scrubbed by a later checkpoint if it still cannot."""
        if str(self.path) == ":memory:" or self.read_only:
            return
        try:
            busy = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()[0][0]
        except self._error as exc:
            busy, reason = 1, str(exc)
        else:
            reason = "another process is reading it"
        if busy:
            log.warning("forgotten rows of %s are still in its write-ahead log (%s); they go at"
                        " its next checkpoint", self.path, reason)

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    def query(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[tuple[Any, ...]]:
        """Rows of a read. Outside a write transaction of this thread it runs on a reader
        (readers.py), beside other threads' reads and writes; inside one, on the write
        connection, which sees the transaction's own writes."""
        readers, reader = self._readers, None
        if readers is not None and self._writer != threading.get_ident():
            reader = readers.take()
        if readers is None or reader is None:
            with self._lock:
                return self._retry(lambda: list(self.conn.execute(sql, args)))
        # A statement trace set on the write connection (apsw's exec_trace, for debugging)
        # sees the reads too.
        reader.exec_trace = self.conn.exec_trace
        try:
            return self._retry(lambda: list(reader.execute(sql, args)))
        finally:
            readers.give(reader)

    def _records(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[MemoryRecord]:
        return [row_to_record(r) for r in self.query(sql, args)]

    # --- records -------------------------------------------------------------------------------
    def key_holder(self, namespace: str, key: str) -> MemoryRecord | None:
        rows = self._records(
            f"SELECT {SELECT} FROM memories m WHERE m.namespace = ? AND m.key = ?", (namespace, key)
        )
        return rows[0] if rows else None

    def insert_new(self, record: MemoryRecord) -> None:
        if self._context and is_turn(record):
            self.conn.execute(INSERT_IN_CONTEXT, [*record_values(record), record.namespace,
                                                  record.session_id])
        else:
            self.conn.execute(INSERT, record_values(record))

    def _upsert(self, record: MemoryRecord, skip_existing: bool) -> tuple[MemoryRecord, bool]:
        return upsert(self, record, skip_existing)

    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        with self.write():
            return self._upsert(record, skip_existing=False)

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        if not records:
            return []  # links need a namespace, and a batch without records has none
        now = time.time()
        ns = records[0].namespace
        with self.write():
            results = [self._upsert(r, skip_existing_keys) for r in records]
            stored_id = {r.id: res.id for r, (res, _) in zip(records, results, strict=True)}
            for a, b, strength, origin in links:
                lo, hi = sorted((stored_id.get(a, a), stored_id.get(b, b)))
                # A snapshot may name an end that is in neither the batch nor the store.
                if lo == hi or not self._both_exist(ns, lo, hi):
                    continue
                self.conn.execute(
                    "INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO UPDATE"
                    " SET strength = max(strength, excluded.strength)",
                    (ns, lo, hi, strength, origin, now, now),
                )
        return results

    def _both_exist(self, namespace: str, a: str, b: str) -> bool:
        rows = self.conn.execute(
            "SELECT COUNT(*) FROM memories WHERE namespace = ? AND id IN (?, ?)", (namespace, a, b)
        ).fetchall()
        return int(rows[0][0]) == 2

    def get(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        rows = self._records(
            f"SELECT {SELECT} FROM memories m WHERE m.namespace = ? AND (m.id = ? OR m.key = ?)"
            " ORDER BY m.id = ? DESC LIMIT 1",
            (namespace, id_or_key, id_or_key, id_or_key),
        )
        return rows[0] if rows else None

    def get_many(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        found: builtins.list[MemoryRecord] = []
        for part in chunks(ids):  # SQLite caps the number of bound variables
            found += self._records(
                f"SELECT {SELECT} FROM memories m WHERE m.namespace = ? AND m.id IN"
                f" ({', '.join('?' * len(part))})", (namespace, *part))
        order = {i: n for n, i in enumerate(ids)}
        return sorted(found, key=lambda r: order[r.id])

    def replace_in_place(self, record: MemoryRecord) -> None:
        values = record_values(record)
        self.conn.execute(UPDATE, [*values[1:], record.namespace, record.id])

    def replace(self, record: MemoryRecord) -> None:
        with self.write():
            self.replace_in_place(record)

    def supersede(self, retired: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        with self.write():
            self.replace_in_place(retired)
            return self._upsert(new, skip_existing=False)[0]

    def _delete_ids(self, ns: str, ids: Sequence[str]) -> int:
        c = self.conn
        marks = ", ".join("?" * len(ids))
        self._drop_vectors_and_entities(ns, ids)
        for end in ("a_id", "b_id"):  # one indexed delete per end; OR would scan the namespace
            c.execute(f"DELETE FROM links WHERE namespace = ? AND {end} IN ({marks})", (ns, *ids))
        c.execute(f"DELETE FROM memories WHERE namespace = ? AND id IN ({marks})", (ns, *ids))
        return int(self.conn.changes())

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        removed = 0
        with self.write():
            for part in chunks(list(dict.fromkeys(ids)), 500):
                marks = ", ".join("?" * len(part))
                owned = [r[0] for r in self.conn.execute(
                    f"SELECT id FROM memories WHERE namespace = ? AND id IN ({marks})",
                    (namespace, *part))]
                if owned:
                    removed += self._delete_ids(namespace, owned)
                self.conn.execute(f"DELETE FROM memories_archive WHERE namespace = ? AND id IN"
                                  f" ({marks})", (namespace, *part))
                removed += int(self.conn.changes())
            self._scrub = self._scrub or removed > 0
        return removed

    def delete_namespace(self, namespace: str) -> int:
        with self.write():
            c = self.conn
            ids = [r[0] for r in c.execute("SELECT id FROM memories WHERE namespace = ?",
                                           (namespace,))]
            removed = 0
            for i in range(0, len(ids), 500):
                removed += self._delete_ids(namespace, ids[i: i + 500])
            # vec_log rows hold only row numbers, but their namespace column names the tenant.
            for table in ("links", "memory_entities", "entities", "messages", "summaries",
                          "sessions", "memories_archive", "maintenance_runs", "vec_log"):
                c.execute(f"DELETE FROM {table} WHERE namespace = ?", (namespace,))
            self._scrub = True
            return removed

    def find_archived(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        rows = self.query(
            "SELECT record FROM memories_archive WHERE namespace = ? AND (id = ? OR key = ?)"
            " ORDER BY id = ? DESC, seq DESC LIMIT 1", (namespace, id_or_key, id_or_key,
                                                        id_or_key))
        return MemoryRecord.from_dict(json.loads(rows[0][0])) if rows else None

    def chain(self, namespace: str, id_: str) -> builtins.list[Version]:
        found: dict[str, Version] = {}
        asked: set[str] = set()
        frontier = [id_]
        while frontier:
            marks = ", ".join("?" * len(frontier))
            # Two indexed lookups; one query with OR would scan the namespace.
            live = self._records(
                f"SELECT {SELECT} FROM memories m WHERE m.namespace = ? AND m.id IN ({marks})"
                f" UNION ALL SELECT {SELECT} FROM memories m WHERE m.namespace = ? AND"
                f" m.supersedes IN ({marks})", (namespace, *frontier, namespace, *frontier))
            archived = [MemoryRecord.from_dict(json.loads(r[0])) for r in self.query(
                f"SELECT record FROM memories_archive WHERE namespace = ? AND (id IN ({marks})"
                f" OR record ->> '$.supersedes' IN ({marks}))", (namespace, *frontier,
                                                                  *frontier))]
            asked.update(frontier)
            for r, in_archive in [(r, False) for r in live] + [(r, True) for r in archived]:
                found.setdefault(r.id, (r, in_archive))
            # Next: what supersedes the records just found, and what they supersede.
            ends = {i for r, _ in found.values() for i in (r.id, r.supersedes) if i}
            frontier = sorted(ends - asked)[:500]
        return order_versions(builtins.list(found.values()))

    def derived(self, namespace: str, source_ids: Sequence[str]) -> builtins.list[Version]:
        live: set[str] = set()
        archived: set[str] = set()
        wanted = list(dict.fromkeys(source_ids))
        for part in (wanted[i: i + 500] for i in range(0, len(wanted), 500)):
            for mid, in_archive in self.query(
                    "SELECT DISTINCT memory_id, archived FROM memory_sources WHERE namespace = ?"
                    f" AND source_id IN ({', '.join('?' * len(part))})", (namespace, *part)):
                (archived if in_archive else live).add(str(mid))
        found: builtins.list[Version] = [
            (r, False) for r in self.get_many(namespace, sorted(live))]
        ordered = sorted(archived)
        for part in (ordered[i: i + 500] for i in range(0, len(ordered), 500)):
            found += [(MemoryRecord.from_dict(json.loads(r[0])), True) for r in self.query(
                "SELECT record FROM memories_archive WHERE namespace = ? AND id IN"
                f" ({', '.join('?' * len(part))})", (namespace, *part))]
        return found

    def _upgrade(self) -> None:
        schema.migrate(self)
        self._scrub_after_upgrade()

    def _scrub_after_upgrade(self) -> None:
        """Once, after an upgrade to secure delete: rewrite the file so free pages that held
        text forgotten under older versions are gone. Another process holding the file makes
        VACUUM fail; the flag stays and the next open tries again."""
        c = self.conn
        if str(self.path) == ":memory:" or not schema.needs_vacuum(c):
            return
        try:
            with self._lock:  # no other thread of this process may be mid-transaction
                c.execute("VACUUM")
                c.execute("DELETE FROM meta WHERE key = 'needs_vacuum'")
                self._checkpoint()
        except self._error as exc:
            log.info("could not scrub %s after its upgrade yet (%s); will retry", self.path, exc)

    def vacuum(self) -> None:
        with self._lock:
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.execute("VACUUM")
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def list(
        self, namespace: str, flt: Filter, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> builtins.list[MemoryRecord]:
        where, args = filter_sql(namespace, flt)
        return self._records(
            f"SELECT {SELECT} FROM memories m WHERE {where} ORDER BY {ORDER_SQL[order]}"
            " LIMIT ? OFFSET ?", [*args, limit, offset],
        )

    def count(self, namespace: str, flt: Filter) -> int:
        where, args = filter_sql(namespace, flt)
        return int(self.query(f"SELECT COUNT(*) FROM memories m WHERE {where}", args)[0][0])

    def touch(self, namespace: str, ids: Sequence[str], now: float) -> None:
        if not ids or self.read_only:
            return  # a read-only file can be recalled from; its access counts stay as they are
        with self.write():
            self.conn.execute(
                "UPDATE memories SET last_accessed = ?, access_count = access_count + 1"
                f" WHERE namespace = ? AND id IN ({', '.join('?' * len(ids))})",
                (now, namespace, *ids),
            )

    # --- keyword search (keyword.py) -----------------------------------------------------------
    def keyword_search(
        self, namespace: str, terms: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        return self._keywords.keyword_search(namespace, terms, flt, limit=limit)

    def rank_info(self, namespace: str, ids: Sequence[str], flt: Filter) -> dict[str, RankInfo]:
        where, args = filter_sql(namespace, flt)
        out: dict[str, RankInfo] = {}
        for part in chunks(ids):
            rows = self.query(
                f"SELECT {RANK_SELECT}, 0 FROM memories m WHERE {where} AND m.id IN"
                f" ({', '.join('?' * len(part))})", [*args, *part])
            out.update((r[0], RankInfo(*r[:RANK_COLUMNS])) for r in rows)
        return out

    def like_search(
        self, namespace: str, tokens: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        tokens = [t for t in tokens if t][:16]
        if not tokens:
            return []
        where, args = filter_sql(namespace, flt)
        # ASCII tokens cannot match a non-ASCII letter, so the fast built-in lower() is exact
        # for them; only other tokens pay for a Python call per row.
        fold = "lower" if all(t.isascii() for t in tokens) else "clawmem_lower"
        hits_expr = " + ".join(
            f"(instr({fold}(m.content), ?) > 0 OR instr({fold}(COALESCE(m.key, '')), ?) > 0)"
            for _ in tokens
        )
        tok_args: builtins.list[Any] = []
        for t in tokens:
            tok_args.extend([t.lower(), t.lower()])
        # The newest rows first, walking the (namespace, created_at) index backwards.
        rows = self.query(
            f"SELECT * FROM (SELECT {RANK_SELECT}, ({hits_expr}) AS rel FROM (SELECT * FROM"
            f" memories m WHERE {where} ORDER BY m.created_at DESC LIMIT ?) m) WHERE rel > 0"
            " ORDER BY rel DESC, created_at DESC LIMIT ?",
            [*tok_args, *args, SUBSTRING_SCAN_ROWS, limit],
        )
        return [rank_hit(r) for r in rows]

    # --- graph ---------------------------------------------------------------------------------
    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str,
             accumulate: bool = True) -> bool:
        if a == b:
            return False
        lo, hi = sorted((a, b))
        now = time.time()
        with self.write():
            if not self._both_exist(namespace, lo, hi):
                return False
            grown = "strength + excluded.strength" if accumulate else (
                "max(strength, excluded.strength)")
            self.conn.execute(
                "INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(namespace, a_id, b_id) DO UPDATE"
                f" SET strength = {grown}, updated_at = excluded.updated_at",
                (namespace, lo, hi, strength, origin, now, now),
            )
        return True

    def unlink(self, namespace: str, a: str, b: str) -> bool:
        lo, hi = sorted((a, b))
        with self.write():
            self.conn.execute(
                "DELETE FROM links WHERE namespace = ? AND a_id = ? AND b_id = ?",
                (namespace, lo, hi),
            )
            return bool(self.conn.changes())

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, builtins.list[Link]]:
        out: dict[str, builtins.list[Link]] = {i: [] for i in ids}
        if not ids:
            return out
        marks = ", ".join("?" * len(ids))
        # A UNION of two indexed lookups: with OR, SQLite scans every link of the namespace.
        rows = self.query(
            f"SELECT a_id, b_id, strength, origin FROM links WHERE namespace = ? AND a_id IN"
            f" ({marks}) UNION SELECT a_id, b_id, strength, origin FROM links WHERE namespace = ?"
            f" AND b_id IN ({marks}) ORDER BY strength DESC",
            (namespace, *ids, namespace, *ids),
        )
        for a, b, strength, origin in rows:
            if a in out:
                out[a].append(Link(b, strength, origin))
            if b in out:
                out[b].append(Link(a, strength, origin))
        return out

    # --- housekeeping --------------------------------------------------------------------------
    def _has_table(self, name: str) -> bool:
        return bool(self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchall())

    def namespaces(self) -> builtins.list[str]:
        return [r[0] for r in self.query("SELECT DISTINCT namespace FROM memories ORDER BY 1")]

    def stats(self, namespace: str) -> StoreStats:
        by_kind = dict(self.query(
            "SELECT kind, COUNT(*) FROM memories WHERE namespace = ? AND valid_until IS NULL"
            " GROUP BY kind ORDER BY kind", (namespace,)))
        total, invalid, newest, oldest = self.query(
            "SELECT COUNT(*), COUNT(valid_until), MAX(created_at), MIN(created_at) FROM memories"
            " WHERE namespace = ?", (namespace,))[0]
        links = self.query("SELECT COUNT(*) FROM links WHERE namespace = ?", (namespace,))[0][0]
        size = None
        if str(self.path) != ":memory:":
            size = sum(_size(p) for p in (self.path, Path(f"{self.path}-wal")))
        return StoreStats(
            backend=self.backend, total=int(total) - int(invalid), by_kind=by_kind,
            invalidated=int(invalid), links=int(links), newest=newest, oldest=oldest,
            size_bytes=size, path=str(self.path),
        )

    # --- lifecycle: soft delete, archive (003), maintenance runs --------------------------------
    def _drop_vectors_and_entities(self, ns: str, ids: Sequence[str]) -> None:
        """Inside a write: delete the vectors and entity links of these records."""
        c = self.conn
        marks = ", ".join("?" * len(ids))
        if self._has_table("vec_memories"):
            # One row at a time by its key: sqlite-vec's table answers ``seq IN (SELECT ...)``
            # by scanning every vector (45 ms per forget at 100k, bench/speed.py).
            seqs = [r[0] for r in c.execute(
                f"SELECT seq FROM memories WHERE namespace = ? AND id IN ({marks})", (ns, *ids))]
            for seq in seqs:
                c.execute("DELETE FROM vec_memories WHERE seq = ?", (seq,))
        dropped = c.execute(
            f"SELECT entity_id, COUNT(*) FROM memory_entities WHERE namespace = ? AND memory_id"
            f" IN ({marks}) GROUP BY entity_id", (ns, *ids)).fetchall()
        c.execute(f"DELETE FROM memory_entities WHERE namespace = ? AND memory_id IN ({marks})",
                  (ns, *ids))
        if dropped:
            # An entity nobody mentions any more is text of the dropped memory; the others are
            # mentioned by that many fewer memories (entity ranking weighs 1/mention_count).
            c.execute(f"DELETE FROM entities WHERE id IN ({', '.join('?' * len(dropped))}) AND"
                      " NOT EXISTS (SELECT 1 FROM memory_entities me WHERE me.entity_id ="
                      " entities.id)", [e for e, _ in dropped])
            c.executemany("UPDATE entities SET mention_count = max(mention_count - ?, 1) WHERE"
                          " id = ?", [(n, e) for e, n in dropped])

    def replace_many(self, records: Sequence[MemoryRecord]) -> None:
        with self.write():
            for r in records:
                self.replace_in_place(r)

    def drop_derived(self, namespace: str, ids: Sequence[str]) -> None:
        with self.write():
            for i in range(0, len(ids), 500):
                self._drop_vectors_and_entities(namespace, ids[i: i + 500])

    def archive(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        moved: builtins.list[str] = []
        with self.write():
            c = self.conn
            for i in range(0, len(ids), 500):
                part = ids[i: i + 500]
                rows = c.execute(f"SELECT {SELECT} FROM memories m WHERE m.namespace = ? AND"
                                 f" m.id IN ({', '.join('?' * len(part))})", (namespace, *part))
                for r in [row_to_record(row) for row in rows]:
                    c.execute("DELETE FROM memories_archive WHERE namespace = ? AND id = ?",
                              (namespace, r.id))
                    c.execute(
                        "INSERT INTO memories_archive (id, namespace, record, key, content, tags,"
                        " source, archived_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (r.id, namespace, json.dumps(r.to_dict(), ensure_ascii=False), r.key,
                         r.content, json.dumps(list(r.tags), ensure_ascii=False), r.source, at))
                    moved.append(r.id)
            for i in range(0, len(moved), 500):
                self._delete_ids(namespace, moved[i: i + 500])
        return len(moved)

    def archive_search(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> builtins.list[MemoryRecord]:
        if not terms:
            return []
        rows = self.query(
            "SELECT a.record FROM memories_archive_fts JOIN memories_archive a"
            " ON a.seq = memories_archive_fts.rowid WHERE memories_archive_fts MATCH ? AND"
            " a.namespace = ? ORDER BY bm25(memories_archive_fts, ?, ?, ?, ?), a.seq DESC"
            " LIMIT ?", [fts_query(terms), namespace, *self._weights[:4], limit])
        return [MemoryRecord.from_dict(json.loads(r[0])) for r in rows]

    def archive_count(self, namespace: str) -> int:
        return int(self.query("SELECT COUNT(*) FROM memories_archive WHERE namespace = ?",
                               (namespace,))[0][0])

    def archive_list(
        self, namespace: str, *, limit: int, offset: int = 0
    ) -> builtins.list[ArchiveEntry]:
        rows = self.query(
            "SELECT record, archived_at FROM memories_archive WHERE namespace = ? ORDER BY"
            " archived_at DESC, record ->> '$.created_at' DESC, id LIMIT ? OFFSET ?",
            (namespace, limit, offset))
        return [ArchiveEntry(MemoryRecord.from_dict(json.loads(r)), at) for r, at in rows]

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None:
        with self.write():
            c = self.conn
            rows = c.execute("SELECT record FROM memories_archive WHERE namespace = ? AND id = ?",
                             (namespace, id_)).fetchall()
            if not rows:
                return None
            record = MemoryRecord.from_dict(json.loads(rows[0][0]))
            if record.key and self.key_holder(namespace, record.key) is not None:
                record = record.evolve(key=None)  # the live memory owns the key now
            c.execute(INSERT, record_values(record))
            c.execute("DELETE FROM memories_archive WHERE namespace = ? AND id = ?",
                      (namespace, id_))
            return record

    def live_size_bytes(self) -> int | None:
        try:
            rows = self.query("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name")
        except StorageError:  # a SQLite built without the dbstat table: count used pages
            (count, free, page), = self.query(
                "SELECT * FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()")
            return (int(count) - int(free)) * int(page)
        return sum(int(size) for name, size in rows if not str(name).startswith(
            ("memories_archive", "maintenance_runs")))

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
            self.conn.execute(
                "INSERT INTO maintenance_runs (namespace, job, started_at, finished_at, outcome,"
                " counts, message) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (namespace, job, started_at, finished_at, outcome,
                 json.dumps(counts, sort_keys=True), message))
            run_id = int(self.conn.last_insert_rowid())
        return RunRecord(run_id, namespace, job, started_at, finished_at, outcome, dict(counts),
                         message)

    def runs(
        self, namespace: str, limit: int, *, job: str | None = None
    ) -> builtins.list[RunRecord]:
        rows = self.query(
            "SELECT id, namespace, job, started_at, finished_at, outcome, counts, message FROM"
            " maintenance_runs WHERE namespace = ? AND (? IS NULL OR job = ?)"
            " ORDER BY started_at DESC, id DESC LIMIT ?", (namespace, job, job, limit))
        return [RunRecord(int(i), ns, j, s, f if f is not None else s, o or "failed",
                          json.loads(cnt or "{}"), m or "")
                for i, ns, j, s, f, o, cnt, m in rows]


def _size(path: Path) -> int:
    """A file's size, 0 when it is not there: the WAL comes and goes with the last connection
    of any process, so checking first and reading after would race (FileNotFoundError)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0

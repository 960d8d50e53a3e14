"""The PostgreSQL schema: recorded migrations, recognising a clawmemory schema, and the vector
table that is created once the embedding dimension is known.

PostgreSQL migrations are their own numbered ``.sql`` files in ``backends/postgres/migrations/``
(independent of SQLite's numbers), recorded in ``schema_version`` with the file name in the
transaction that applies them. Processes that open a new database at the same moment take turns
(a transaction-level advisory lock), so each migration runs once.
"""

from __future__ import annotations

import time
from importlib import resources
from typing import TYPE_CHECKING, Any

from clawmemory.errors import NotFoundError, SchemaError, StorageError

if TYPE_CHECKING:
    import psycopg

__all__ = ["ADVISORY_CLASS", "INITIAL_MIGRATION", "create_hnsw_index", "create_vector_table",
           "migrate", "migrations"]

INITIAL_MIGRATION = "001_initial.sql"
# First key of every advisory lock clawmemory takes (pg_advisory_xact_lock(int, int)): the
# second is 0 for migrations, or a namespace's hash for its writers.
ADVISORY_CLASS = 0x434C4157  # "CLAW"
# Tables a per-tenant role may only see its own namespaces' rows of (migration 002).
TENANT_TABLES = ("memories", "links", "entities", "memory_entities", "messages", "summaries",
                 "sessions", "memories_archive", "maintenance_runs", "vector_queue",
                 "memory_sources", "vec_memories", "vector_centres")


def migrations() -> list[tuple[int, str, str]]:
    """(version, file name, SQL) of each PostgreSQL migration, in version order."""
    pkg = resources.files("clawmemory.backends.postgres") / "migrations"
    found = [(int(p.name.split("_", 1)[0]), p.name, p.read_text(encoding="utf-8"))
             for p in pkg.iterdir() if p.name.endswith(".sql")]
    return sorted(found)


def _tables(conn: psycopg.Connection[Any]) -> set[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
    ).fetchall()
    return {str(r[0]) for r in rows}


def _recorded(conn: psycopg.Connection[Any]) -> set[int]:
    if "schema_version" not in _tables(conn):
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM schema_version").fetchall()}


def _check_ownership(conn: psycopg.Connection[Any], where: str) -> None:
    """Refuse a schema that holds another program's tables before anything is written."""
    names = _tables(conn)
    if not names:
        return
    ours = "schema_version" in names and conn.execute(
        "SELECT 1 FROM schema_version WHERE version = 1 AND description = %s",
        (INITIAL_MIGRATION,)).fetchall()
    if not ours:
        shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
        row = conn.execute("SELECT current_schema()").fetchone()  # a row: show its one value
        raise StorageError(
            f"{where}: schema {row[0] if row else '?'} is not a"
            f" clawmemory schema (it holds the tables {shown}); refusing to change it. Give a"
            " database or schema of its own (options=-csearch_path=NAME in the address).")


def _ensure_vector_extension(conn: psycopg.Connection[Any], where: str) -> None:
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchall():
        return
    try:
        with conn.transaction():
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except Exception as exc:
        raise StorageError(
            f"{where}: the pgvector extension is not installed in this database and this role"
            f" may not create it ({exc}). Run `CREATE EXTENSION vector;` once as a superuser"
            " (docs/postgres.md).") from exc


def migrate(conn: psycopg.Connection[Any], where: str, *, read_only: bool = False,
            create: bool = True) -> int:
    """Bring the connection's schema to the newest version; returns that version.
    ``create=False``: a schema without clawmemory's tables is a NotFoundError."""
    if conn.execute("SELECT current_schema()").fetchone() == (None,):
        raise StorageError(f"{where}: no schema to create tables in (the search_path names"
                           " none that exists); create one or fix options=-csearch_path")
    known = migrations()
    newest = known[-1][0]
    if not create and not _recorded(conn):
        raise NotFoundError(f"no clawmemory store at {where} yet (nothing has been stored"
                            " there; `clawmem add` creates it)")
    if read_only:
        if {v for v, _, _ in known} - _recorded(conn):
            raise SchemaError(f"{where} is opened read-only but is not at schema version"
                              f" {newest}; open it once with write access to upgrade it.")
        return newest
    if not {v for v, _, _ in known} - _recorded(conn):
        return newest  # nothing to do (and nothing a role without DDL rights could do)
    _check_ownership(conn, where)
    _ensure_vector_extension(conn, where)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (ADVISORY_CLASS,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer PRIMARY KEY,"
                     " applied_at double precision NOT NULL, description text NOT NULL)")
        recorded = _recorded(conn)
        have = max(recorded, default=0)
        if have > newest:
            raise SchemaError(f"{where} has schema version {have}; this clawmemory knows up to"
                              f" {newest}. Upgrade clawmemory.")
        for version, name, sql in known:
            if version not in recorded:
                conn.execute(sql.encode())  # bytes: the SQL is run as is, no %-placeholders
                conn.execute("INSERT INTO schema_version VALUES (%s, %s, %s)",
                             (version, time.time(), name))
    return newest


def create_hnsw_index(conn: psycopg.Connection[Any], m: int, ef_construction: int) -> None:
    conn.execute(
        "CREATE INDEX IF NOT EXISTS vec_memories_hnsw ON vec_memories USING hnsw"
        f" (embedding vector_cosine_ops) WITH (m = {int(m)},"
        f" ef_construction = {int(ef_construction)})")


def create_vector_table(conn: psycopg.Connection[Any], dimension: int, m: int,
                        ef_construction: int) -> None:
    """Inside a transaction: the vector table for ``dimension``-d vectors with its HNSW index
    (cosine), the per-namespace centres of centred cosine (ADR 0007), and their tenant
    policies. A vector goes with its memory (foreign key, ON DELETE CASCADE)."""
    dim = int(dimension)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS vec_memories (seq bigint PRIMARY KEY REFERENCES memories"
        f" (seq) ON DELETE CASCADE, namespace text NOT NULL, embedding vector({dim}) NOT NULL)")
    conn.execute("CREATE INDEX IF NOT EXISTS vec_memories_ns ON vec_memories (namespace)")
    create_hnsw_index(conn, m, ef_construction)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS vector_centres (namespace text PRIMARY KEY, centre"
        f" vector({dim}), centre_rows bigint NOT NULL DEFAULT 0, added bigint NOT NULL DEFAULT 0)")
    for table in ("vec_memories", "vector_centres"):
        conn.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        if not conn.execute("SELECT 1 FROM pg_policies WHERE schemaname = current_schema() AND"
                            " tablename = %s AND policyname = 'tenant'", (table,)).fetchall():
            conn.execute(f"CREATE POLICY tenant ON {table} USING (namespace IN (SELECT"
                         " r.namespace FROM tenant_roles r WHERE r.role_name = current_user))")

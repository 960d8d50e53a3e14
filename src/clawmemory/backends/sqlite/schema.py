"""The SQLite file's schema: recognising a clawmemory database, recorded migrations, and the
one-time scrub after an upgrade to secure delete.

Migrations are the numbered ``.sql`` files in ``backends/sqlite/migrations/`` plus the few steps SQL
alone cannot express generically (``STEPS``); a file's number is its version, recorded in
``schema_version`` with the file name, in the same transaction as the change.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from importlib import resources
from typing import Any, Protocol

from clawmemory.backends.sqlite.context import add_keyword_context
from clawmemory.errors import SchemaError, StorageError

__all__ = [
    "INITIAL_MIGRATION",
    "SECURE_DELETE_VERSION",
    "check_ownership",
    "migrate",
    "migrations",
    "needs_vacuum",
]

INITIAL_MIGRATION = "001_initial.sql"  # how a clawmemory database recognises itself
SECURE_DELETE_VERSION = 5  # the migration that turned on FTS5 secure-delete
Step = str | Callable[[Any], None]  # SQL text, or a function of the connection


class Database(Protocol):
    """What the schema steps need of the store: its connection, path and write transaction."""

    conn: Any
    path: Any
    read_only: bool

    def write(self) -> Any: ...


def needs_vacuum(conn: Any) -> bool:
    """Whether an upgrade to secure delete left free pages to scrub (one VACUUM, once)."""
    return bool(conn.execute("SELECT 1 FROM meta WHERE key = 'needs_vacuum'").fetchall())


def check_ownership(store: Database, not_a_db: tuple[type[Exception], ...]) -> None:
    """Refuse a file that holds another program's tables, or is not SQLite at all, before
    anything (the WAL switch included) has been written to it."""
    try:
        names = {str(r[0]) for r in store.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except not_a_db as exc:
        raise StorageError(f"{store.path} is not a SQLite database ({exc}); refusing to"
                           " touch it. Give a new file with --db / CLAWMEM_DB.") from exc
    if not names:
        return  # empty: a new store
    theirs = sorted(n for n in names if not n.startswith("sqlite_"))
    if "schema_version" not in names or not store.conn.execute(
            "SELECT 1 FROM schema_version WHERE version = 1 AND description = ?",
            (INITIAL_MIGRATION,)).fetchall():
        shown = ", ".join(theirs[:5]) + (", ..." if len(theirs) > 5 else "")
        raise StorageError(
            f"{store.path} is not a clawmemory database (it holds the tables {shown});"
            " refusing to change it. Give a new file with --db / CLAWMEM_DB.")


def _recorded(conn: Any) -> set[int]:
    """The versions this file records (none when it has no schema_version table yet)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_version'").fetchall():
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM schema_version")}


def _version(conn: Any) -> int:
    return max(_recorded(conn), default=0)


def migrate(store: Database) -> None:
    """Bring the file to the newest schema this version knows (nothing on a read-only file,
    which must already be there)."""
    known = migrations()
    newest = known[-1][0]
    c = store.conn
    if store.read_only:
        if set(v for v, _, _ in known) - _recorded(c):
            raise SchemaError(
                f"{store.path} is opened read-only but has schema version {_version(c)}; this"
                f" clawmemory needs {newest}. Open it once with write access to upgrade it"
                " (or upgrade clawmemory).")
        return
    with store.write():
        c.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY,"
                  " applied_at REAL NOT NULL, description TEXT NOT NULL)")
        have = _version(c)
        if have > newest:
            raise SchemaError(f"{store.path} has schema version {have}; this clawmemory knows"
                              f" up to {newest}. Upgrade clawmemory.")
        # Every known migration not recorded yet, in order, even one numbered below the newest
        # recorded (migrations written side by side can land in either order).
        recorded = _recorded(c)
        for version, name, step in known:
            if version in recorded:
                continue
            c.execute(step) if isinstance(step, str) else step(c)
            c.execute("INSERT INTO schema_version VALUES (?, ?, ?)", (version, time.time(), name))
        if 0 < have < SECURE_DELETE_VERSION:
            # Text forgotten before secure delete existed may sit in free pages.
            c.execute("INSERT OR REPLACE INTO meta VALUES ('needs_vacuum', '1')")


def _seq_autoincrement(c: Any) -> None:
    """Row numbers of memories are never reused (AUTOINCREMENT). Without it SQLite hands the
    number of the newest memory, once forgotten, to the next one, and anything keyed on that
    number and left behind (a vector, a queue row) would silently belong to the new memory.
    SQLite cannot add AUTOINCREMENT to a table, so this is its documented rebuild: a copy with
    the same columns, rows and row numbers, then every index and trigger recreated."""
    table = c.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memories'"
                      ).fetchall()[0][0]
    if "AUTOINCREMENT" in table.upper():
        return
    new, found = re.subn(r"\bseq\s+INTEGER\s+PRIMARY\s+KEY\b", "seq INTEGER PRIMARY KEY"
                         " AUTOINCREMENT", table, count=1, flags=re.IGNORECASE)
    if not found:
        raise SchemaError("memories.seq is not an INTEGER PRIMARY KEY; cannot migrate")
    new = re.sub(r"^CREATE TABLE\s+\"?memories\"?", "CREATE TABLE memories_rebuilt", new,
                 count=1, flags=re.IGNORECASE)
    dependents = c.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE tbl_name = 'memories' AND type IN"
        " ('index', 'trigger') AND sql IS NOT NULL ORDER BY type DESC, name").fetchall()
    columns = ", ".join(f'"{r[1]}"' for r in c.execute("PRAGMA table_info(memories)"))
    c.execute(new)
    c.execute(f"INSERT INTO memories_rebuilt ({columns}) SELECT {columns} FROM memories")
    for kind, name, _ in dependents:  # triggers first: dropping the table must fire none
        c.execute(f'DROP {kind.upper()} "{name}"')
    c.execute("DROP TABLE memories")
    c.execute("ALTER TABLE memories_rebuilt RENAME TO memories")
    for _, _, sql in dependents:
        c.execute(sql)
    # Numbers already handed out and freed again live on only where rows were keyed on them:
    # start above every one of those, so none can be reused after the upgrade either.
    used = [c.execute("SELECT COALESCE(MAX(seq), 0) FROM memories").fetchall()[0][0]]
    for table in ("vec_log", "vector_queue", "vec_memories"):
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchall():
            used.append(c.execute(f"SELECT COALESCE(MAX(seq), 0) FROM {table}").fetchall()[0][0])
    c.execute("DELETE FROM sqlite_sequence WHERE name = 'memories'")
    c.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('memories', ?)", (max(used),))


# Steps that are code, not a .sql file: (version, name, function of the connection).
STEPS: tuple[tuple[int, str, Step], ...] = (
    (9, "009_seq_autoincrement", _seq_autoincrement),
    (15, "015_keyword_context", add_keyword_context),
)


def migrations() -> list[tuple[int, str, Step]]:
    """(version, name, step) of each migration, in version order."""
    pkg = resources.files("clawmemory.backends.sqlite") / "migrations"
    files = [p for p in pkg.iterdir() if p.name.endswith(".sql")]
    found: list[tuple[int, str, Step]] = [
        (int(p.name.split("_", 1)[0]), p.name, p.read_text(encoding="utf-8")) for p in files]
    return sorted([*found, *STEPS], key=lambda m: m[0])

"""The files clawmemory keeps: private to their owner, never someone else's, and readable
without being changed.

- Everything created (database, WAL, shared memory, JSON store, mirror, exports, the home
  folder) is 0600 / 0700 whatever the umask; an existing file others can read gets a warning.
- A file that is not a clawmemory store is refused before a single byte of it changes.
- Read-only commands never create a store; a store opened read-only can be recalled from.
- A database upgraded from before secure delete is scrubbed of what it forgot earlier.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from clawmemory import Memory, NotFoundError, Settings, StorageError
from clawmemory.backends.sqlite.schema import SECURE_DELETE_VERSION
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.config import EmbedderSettings, StorageSettings
from conftest import Clock, old_database

CLAWMEM = Path(sys.executable).parent / "clawmem"
NO_MODEL = Settings(embedder=EmbedderSettings(provider="none"))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A permissive umask, as on many desktops: what we create must be private anyway."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _cli(*args: str, home: Path, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    base |= {"CLAWMEM_HOME": str(home), "CLAWMEM_CONFIG": str(home / "absent.toml"),
             "CLAWMEM_EMBEDDER__PROVIDER": "none", "CLAWMEM_LOG_LEVEL": "WARNING"}
    return subprocess.run([str(CLAWMEM), *args], capture_output=True, text=True,
                          env=base | (env or {}), timeout=120, check=False)


# --- private files -------------------------------------------------------------------------------
def test_the_default_store_is_private_whatever_the_umask(
    tmp_path: Path, open_umask: None
) -> None:
    home = tmp_path / "home" / ".clawmemory"
    done = _cli("add", "User prefers dark mode", home=home)
    assert done.returncode == 0, done.stderr
    db = home / "memory.db"
    assert mode(home) == 0o700
    assert mode(db) == 0o600
    for side in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        if side.exists():  # SQLite gives them the database file's permissions
            assert mode(side) == 0o600, side


def test_wal_and_shm_files_are_private_while_the_store_is_open(
    tmp_path: Path, open_umask: None, clock: Clock
) -> None:
    db = tmp_path / "new" / "deeper" / "agent.db"
    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        mem.store("a fact worth keeping")
        assert {p.name: mode(p) for p in db.parent.iterdir()} == {
            "agent.db": 0o600, "agent.db-wal": 0o600, "agent.db-shm": 0o600}
        assert mode(db.parent) == 0o700 and mode(db.parent.parent) == 0o700


def test_json_store_mirror_and_exports_are_private(
    tmp_path: Path, open_umask: None, clock: Clock
) -> None:
    mirror = tmp_path / "notes"
    cfg = Settings(backend="json", db=tmp_path / "store" / "memory.json",
                   storage=StorageSettings(mirror_dir=mirror), embedder={"provider": "none"})
    with Memory.open(settings=cfg, clock=clock) as mem:
        mem.store("User prefers dark mode", kind="preference")
    assert mode(tmp_path / "store" / "memory.json") == 0o600
    assert mode(tmp_path / "store") == 0o700
    notes = list(mirror.rglob("*.md"))
    assert notes and all(mode(p) == 0o600 for p in notes)
    assert all(mode(p) == 0o700 for p in mirror.rglob("*") if p.is_dir()) and mode(mirror) == 0o700

    home = tmp_path / "home"
    out = tmp_path / "backup.json"
    db = tmp_path / "store" / "memory.json"
    done = _cli("--backend", "json", "--db", str(db), "export", "--out", str(out), home=home)
    assert done.returncode == 0, done.stderr
    assert mode(out) == 0o600
    tree = tmp_path / "tree"
    done = _cli("--backend", "json", "--db", str(db), "export", "--format", "markdown", "--out",
                str(tree), home=home)
    assert done.returncode == 0, done.stderr
    assert mode(tree) == 0o700 and all(mode(p) == 0o600 for p in tree.rglob("*.md"))


def test_an_existing_store_others_can_read_gets_a_warning_and_keeps_its_mode(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "shared.db"
    SQLiteStore(db).close()
    db.chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="clawmemory"):
        SQLiteStore(db).close()
    assert f"chmod 600 {db}" in caplog.text
    assert mode(db) == 0o644  # the user's choice to change, not ours


# --- foreign files -------------------------------------------------------------------------------
def _bookmarks(path: Path) -> None:
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE bookmarks (url TEXT, title TEXT)")
    conn.execute("INSERT INTO bookmarks VALUES ('https://example.org', 'Example')")
    conn.close()


@pytest.mark.parametrize("command", [("stats",), ("list",), ("add", "a fact")])
def test_another_programs_sqlite_file_is_refused_and_left_unchanged(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    db = tmp_path / "browser.db"
    _bookmarks(db)
    before = digest(db)

    done = _cli("--db", str(db), *command, home=tmp_path / "home")

    assert done.returncode == 3, done.stderr
    assert "is not a clawmemory database" in done.stderr and "bookmarks" in done.stderr
    assert "Traceback" not in done.stderr
    assert digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("browser")) == [
        "browser.db"]  # no -wal or -shm either: nothing was switched to WAL


def test_a_file_that_is_not_sqlite_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my private notes, not a database\n" * 200)
    before = digest(notes)
    with pytest.raises(StorageError, match="not a SQLite database"):
        Memory.open(notes, settings=NO_MODEL)
    assert digest(notes) == before


# --- read-only commands and read-only files ------------------------------------------------------
@pytest.mark.parametrize("command", [("stats",), ("list",), ("get", "x"), ("recall", "dark"),
                                     ("export",), ("forget", "x")])
def test_reading_commands_never_create_a_store(tmp_path: Path, command: tuple[str, ...]) -> None:
    db = tmp_path / "sub" / "nothing-here.db"
    done = _cli("--db", str(db), *command, home=tmp_path / "home")
    assert done.returncode == 1, done.stderr
    assert "no clawmemory database at" in done.stderr
    assert not db.exists() and not db.parent.exists()


def test_a_store_opened_read_only_can_be_recalled_from_and_is_not_changed(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "ro.db"
    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        rid = mem.store("The staging database is reset every Monday", key="staging")
    before = digest(db)

    with Memory.open(db, settings=NO_MODEL, read_only=True) as ro:
        hits = ro.recall("staging database reset")
        assert [h.memory.id for h in hits] == [rid]
        assert ro.get("staging").access_count == 0  # nothing written, not even the counters
        assert ro.stats()["total"] == 1
        with pytest.raises(StorageError):
            ro.store("a write must fail, not half-happen")

    assert digest(db) == before


def test_read_only_open_of_a_missing_store_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError):
        Memory.open(tmp_path / "absent.db", settings=NO_MODEL, read_only=True)
    assert not (tmp_path / "absent.db").exists()


# --- upgrading from before secure delete ---------------------------------------------------------
def test_a_store_from_before_secure_delete_is_scrubbed_once_on_upgrade(tmp_path: Path) -> None:
    """A database written by an older clawmemory may hold text it forgot in free pages and
    FTS segments. Opening it with this version removes those copies."""
    db = tmp_path / "old.db"
    old_database(db, SECURE_DELETE_VERSION - 1)  # the last version before secure delete
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA secure_delete=OFF")
    conn.execute("INSERT INTO memories (id, namespace, kind, content, created_at, updated_at)"
                 " VALUES ('m1', 'default', 'fact', 'the Frobnicator password is hunter2', 0, 0)")
    conn.execute("DELETE FROM memories WHERE id = 'm1'")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert b"frobnicator" in db.read_bytes().lower()  # the old version left it behind

    with Memory.open(db, settings=NO_MODEL) as mem:
        assert mem.count() == 0

    assert b"frobnicator" not in db.read_bytes().lower()
    assert b"hunter2" not in db.read_bytes()


# --- row numbers are never reused ----------------------------------------------------------------
def _seqs(db: Path) -> dict[str, int]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return {str(i): int(s) for i, s in conn.execute("SELECT id, seq FROM memories")}
    finally:
        conn.close()


def test_a_memory_never_inherits_the_row_of_a_forgotten_one(tmp_path: Path, clock: Clock) -> None:
    """SQLite reuses the row number of the newest row once it is deleted; vectors and queue
    rows are keyed on it, so a new memory must get a number nothing ever had."""
    db = tmp_path / "seq.db"
    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        mem.store("first")
        newest = mem.store("the newest memory, about to be forgotten")
        gone = _seqs(db)[newest]
        mem.forget(newest)
        after = mem.store("stored after the forget")
    assert _seqs(db)[after] > gone


def test_an_upgraded_store_keeps_its_rows_and_stops_reusing_row_numbers(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "old.db"
    old_database(db, 8)  # the last version before row numbers were AUTOINCREMENT
    conn = apsw.Connection(str(db))
    for i in range(3):
        conn.execute("INSERT INTO memories (id, namespace, kind, content, created_at, updated_at,"
                     " stored_at) VALUES (?, 'default', 'fact', ?, 0, 0, 0)",
                     (f"m{i}", f"old memory {i} about Zanzibar"))
    conn.execute("DELETE FROM memories WHERE id = 'm2'")  # the newest: its number is free again
    conn.close()

    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        assert sorted(h.memory.id for h in mem.recall("Zanzibar", limit=10)) == ["m0", "m1"]
        new = mem.store("a new memory after the upgrade")
        assert mem.store_backend.schema_version() >= 9

    seqs = _seqs(db)
    assert (seqs["m0"], seqs["m1"]) == (1, 2)
    assert seqs[new] == 4  # 3 belonged to the memory forgotten before the upgrade


def test_a_migration_numbered_below_the_newest_recorded_is_still_applied(tmp_path: Path) -> None:
    """Migrations written side by side can land in either order: a file at version N that lacks
    an older-numbered one gets it on the next open."""
    db = tmp_path / "gap.db"
    SQLiteStore(db).close()
    conn = apsw.Connection(str(db))
    conn.execute("DROP TRIGGER memories_vec_log_ad")
    conn.execute("DROP TABLE vec_log")  # what migration 002 created, as if it never ran
    conn.execute("DELETE FROM schema_version WHERE version = 2")
    conn.close()

    SQLiteStore(db).close()

    conn = apsw.Connection(str(db))
    try:
        assert conn.execute("SELECT description FROM schema_version WHERE version = 2"
                            ).fetchall() == [("002_vector_log.sql",)]
        assert conn.execute("SELECT COUNT(*) FROM vec_log").fetchall() == [(0,)]
    finally:
        conn.close()


# --- 003's narrative and task columns (migration 014) ----------------------------------------
def test_a_store_from_before_narrative_and_task_columns_upgrades_in_place(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "old.db"
    old_database(db, 13)  # the last version without narrative_id / task_id
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO memories (id, namespace, key, kind, content, metadata, created_at,"
                 " updated_at, stored_at) VALUES ('m0', 'default', 'lair', 'fact',"
                 " 'the dragon lair is under the mountain', '{\"narrative_id\": 7}', 0, 0, 0)")
    assert "narrative_id" not in {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    conn.close()

    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        old = mem.get("m0")
        assert (old.narrative_id, old.task_id) == (None, None)
        assert old.metadata == {"narrative_id": 7}  # what an older import kept stays as it was
        assert mem.list(narrative_id="7") == []
        new = mem.store("the dragon sleeps by day", narrative_id=7, task_id="t-1")
        assert mem.store("the dragon lair is under the lake", key="lair", narrative_id=7) == "m0"
        assert {r.id for r in mem.list(narrative_id="7")} == {"m0", new}
        assert [h.memory.id for h in mem.recall("dragon", task_id="t-1")] == [new]
        assert mem.store_backend.schema_version() >= 14

    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        indexes = {r[1] for r in conn.execute("PRAGMA index_list(memories)")}
        assert {"memories_ns_narrative", "memories_ns_task"} <= indexes
        plan = " ".join(str(r[3]) for r in conn.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM memories WHERE namespace = 'default' AND"
            " narrative_id = '7'"))
        assert "memories_ns_narrative" in plan
    finally:
        conn.close()

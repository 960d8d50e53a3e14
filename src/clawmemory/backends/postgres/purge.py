"""Purging forgotten text from PostgreSQL's files (docs/postgres.md, "Forget, and what
PostgreSQL keeps").

A deleted row is only marked dead: its bytes stay in the table's pages (and its TOAST and
index entries) until the space is reused, and in the write-ahead log until the segment is
removed. ``forget`` therefore records that a purge is pending (``mark_pending``, in the
deleting transaction), and the next ``repair`` maintenance run (hourly by default, and part of
``clawmem maintain``) calls ``purge``:

1. ``VACUUM FULL`` of each table that holds a memory's text or what was derived from it: the
   table, its TOAST and its indexes are written anew from the live rows and the old files
   are emptied (PostgreSQL truncates them at commit and unlinks them at the next checkpoint).
2. ``pg_switch_wal()`` and ``CHECKPOINT``, repeated while segments older than the checkpoint
   remain: every segment that logged the text is then older than the last checkpoint and is
   deleted by it. With the server's ``wal_recycle = on`` (PostgreSQL's default) the checkpoint
   renames such a segment for reuse instead, text and all, so the purge reports that setting.

A row version that a transaction open since before the forget may still read is copied by
``VACUUM FULL`` as it is; the purge then stays pending for the next run. Statistics never hold
the text (migration 006). The purge needs the table owner's rights and, for the WAL step,
``pg_checkpoint``, ``pg_monitor`` and EXECUTE on ``pg_switch_wal()`` (or a superuser).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["PENDING", "TEXT_TABLES", "mark_pending", "pending", "purge"]

log = logging.getLogger("clawmemory")

PENDING = "purge_pending"  # meta key: set by a delete, cleared by the purge that covered it
# Tables whose rows hold a memory's text or what was derived from it (vectors, entities,
# links, provenance), rewritten by a purge. History (messages, summaries) is not forgotten by
# ``forget`` and is left alone.
TEXT_TABLES = ("memories", "memories_archive", "vec_memories", "entities", "memory_entities",
               "links", "memory_sources", "vector_queue")
WORK_MEM = "2GB"  # maintenance_work_mem while rewriting, as bulk_load: a 1M-vector graph fits
_KEPT = re.compile(r"(\d+) dead row versions cannot be removed yet")


class PostgresStore(Protocol):
    """What the purge uses of ``store.postgres.PostgresStore``."""

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any: ...
    def meta(self, key: str) -> str | None: ...
    def write(self) -> AbstractContextManager[None]: ...
    def connection(self) -> AbstractContextManager[Any]: ...


def mark_pending(store: PostgresStore) -> None:
    """Inside the deleting transaction: a purge is due. A new token each time, so a purge
    that started before this delete leaves the mark for the next run."""
    store.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET"
                  " value = excluded.value", (PENDING, repr(time.time())))


def pending(store: PostgresStore) -> bool:
    return store.meta(PENDING) is not None


def purge(store: PostgresStore) -> dict[str, int]:
    """Rewrite the tables and retire the WAL that may hold forgotten text, if a delete asked
    for it. Counts: ``purged_tables``, ``purge_deferred`` (1: some row versions were still
    visible to an open transaction; pending again), ``wal_checkpoints``, ``wal_recycle_on``
    (1: the server recycles WAL segments, so their old text can stay; docs/postgres.md),
    ``purge_not_permitted`` (1: a step needs rights this role lacks)."""
    token = store.meta(PENDING)
    if token is None:
        return {}
    counts: dict[str, int] = {}
    kept = 0
    with store.connection() as conn:
        tables = [t for t in TEXT_TABLES if conn.execute(
            "SELECT to_regclass(%s) IS NOT NULL", (t,)).fetchone()[0]]
        if not _owns(conn, tables):
            log.warning("forgotten text is not purged from PostgreSQL's files: this role does"
                        " not own the tables (docs/postgres.md)")
            return {"purge_not_permitted": 1}
        details: list[str] = []

        def notice(diag: Any) -> None:  # a Diagnostic is valid only inside the callback
            details.append(str(diag.message_detail or ""))

        conn.add_notice_handler(notice)
        # Rebuilding the HNSW index is most of the cost; a graph larger than the session's
        # maintenance_work_mem (64 MB by default: about 30,000 384-d vectors) builds far slower.
        conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (WORK_MEM,))
        try:
            for table in tables:
                conn.execute(f"VACUUM (FULL, VERBOSE) {table}")
        finally:
            conn.remove_notice_handler(notice)
            conn.execute("RESET maintenance_work_mem")
        kept = sum(int(m.group(1)) for d in details if (m := _KEPT.search(d)))
        counts["purged_tables"] = len(tables)
        counts.update(_retire_wal(conn))
    if kept:
        counts["purge_deferred"] = 1  # an old snapshot kept them: the mark stays
    else:
        with store.write():
            store.execute("DELETE FROM meta WHERE key = %s AND value = %s", (PENDING, token))
    return counts


def _owns(conn: Any, tables: list[str]) -> bool:
    """Whether this role may VACUUM FULL every table (owner, or a member of its role)."""
    rows = conn.execute("SELECT bool_and(pg_has_role(c.relowner, 'USAGE')) FROM pg_class c"
                        " WHERE c.oid = ANY(%s::regclass[])", (tables,)).fetchone()
    return bool(rows and rows[0])


def _retire_wal(conn: Any) -> dict[str, int]:
    """Switch to a new WAL segment and checkpoint until no segment newer than the current one
    is left over (a segment recycled earlier, holding old text, would be written over only
    as far as new WAL reaches): every segment before the checkpoint's is then removed."""
    import psycopg

    counts: dict[str, int] = {}
    if conn.execute("SHOW wal_recycle").fetchone()[0] == "on":
        counts["wal_recycle_on"] = 1
        log.warning("PostgreSQL recycles WAL segments (wal_recycle = on): forgotten text can"
                    " stay in a renamed segment until it is written over; set wal_recycle ="
                    " off (docs/postgres.md)")
    try:
        rounds, left = 0, _later_segments(conn)
        for _ in range(1 + left):  # bounded: a checkpoint may preallocate one new segment
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
            rounds += 1
            if not _later_segments(conn):
                break
        counts["wal_checkpoints"] = rounds
    except psycopg.errors.InsufficientPrivilege as exc:
        log.warning("forgotten text stays in PostgreSQL's WAL until the server's next"
                    " checkpoints: %s (docs/postgres.md)", str(exc).splitlines()[0])
        counts["purge_not_permitted"] = 1
    return counts


def _later_segments(conn: Any) -> int:
    """WAL segment files named after the current one: recycled or preallocated."""
    row = conn.execute(
        "SELECT COUNT(*) FROM pg_ls_waldir() w WHERE w.name ~ '^[0-9A-F]{24}$' AND"
        " w.name > pg_walfile_name(pg_current_wal_lsn())").fetchone()
    return int(row[0])

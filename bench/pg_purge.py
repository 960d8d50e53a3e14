"""What purging forgotten text from PostgreSQL's files costs (not a test): the ``repair`` job's
purge step (backends/postgres/purge.py: VACUUM FULL of the tables that held the text, then WAL
switch and checkpoint) after a few forgets, in a database holding N memories with vectors.

    .venv/bin/python bench/pg_purge.py postgresql://user@host/db --sizes 10000 100000

Each size gets a schema of its own on the given server (dropped afterwards): N memories with
entities on and random 384-d unit vectors (what the purge rewrites does not depend on their
values; HNSW index built once after the load, as ``clawmem copy`` does), one ``repair`` run so
the next one only purges, then ``--forget`` forgets and the purge, timed, with the WAL it wrote
and the size of the rewritten tables; then each table is rewritten once more, alone, to show
where the time goes. The purge takes an exclusive lock on each table while it
rewrites it: recalls and writes of every tenant wait for that table meanwhile.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg

from clawmemory import Memory, Settings
from clawmemory.backends.postgres.purge import TEXT_TABLES, WORK_MEM
from clawmemory.backends.postgres.store import PostgresStore
from clawmemory.config import EntitySettings

WORDS = ("alpha", "beta", "gamma", "delta", "lisbon", "tram", "garden", "python", "rust",
         "coffee", "tea", "paris", "berlin", "music", "kitchen", "meeting", "project", "deadline",
         "river", "mountain", "Alice", "Bob", "Carol")


class RandomUnit:
    """Random unit vectors of the model's dimension: a real vector table without a model."""

    name = "bench-random-384"
    dimension = 384

    def __init__(self) -> None:
        self.rng = np.random.default_rng(0)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        m = self.rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        out: npt.NDArray[np.float32] = m / np.linalg.norm(m, axis=1, keepdims=True)
        return out

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.embed([text])[0]
        return row


def _schema_url(url: str, schema: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options=-csearch_path%3D{schema}%2Cpublic"


def _one(conn: Any, sql: str, args: Sequence[Any] = ()) -> Any:
    row = conn.execute(sql, args).fetchone()
    assert row is not None
    return row[0]


def _sizes(conn: Any) -> int:
    return sum(int(_one(conn, "SELECT COALESCE(pg_total_relation_size(to_regclass(%s)), 0)",
                        (t,))) for t in TEXT_TABLES)


def run(url: str, size: int, forgets: int, entities: bool = True) -> dict[str, Any]:
    schema = f"bench_purge_{random.randrange(16**8):08x}"
    address = _schema_url(url, schema)
    rng = random.Random(size)
    try:
        store = PostgresStore(address)
        cfg = Settings(entities=EntitySettings(enabled=entities))
        with Memory(store, cfg, embedder=RandomUnit()) as mem:
            t = time.perf_counter()
            with store.bulk_load():
                mem.store_many(({"content": " ".join(rng.choices(WORDS, k=12)) + f" item {i}"}
                                for i in range(size)), batch_size=5000)
            fill_s = time.perf_counter() - t
            mem.maintain("repair")  # sets the repair mark: the timed run only purges
            ids = [r.id for r in mem.list(limit=forgets)]
            for i in ids:
                mem.forget(i)
            with psycopg.connect(address, autocommit=True) as conn:
                before = _sizes(conn)
                lsn = _one(conn, "SELECT pg_current_wal_lsn()")
                t = time.perf_counter()
                counts = store.purge_forgotten()
                purge_s = time.perf_counter() - t
                wal = _one(conn, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s)", (lsn,))
                after = _sizes(conn)
                # Where the time goes: each table's rewrite once more (a rewrite costs the same
                # whether or not it finds dead rows).
                tables = {}
                conn.execute("SELECT set_config('maintenance_work_mem', %s, false)", (WORK_MEM,))
                for table in TEXT_TABLES:
                    t = time.perf_counter()
                    conn.execute(f"VACUUM FULL {table}")
                    tables[table] = time.perf_counter() - t
        return {"size": size, "fill_s": fill_s, "purge_s": purge_s, "counts": counts,
                "tables_mb_before": before / 2**20, "tables_mb_after": after / 2**20,
                "wal_mb": float(wal) / 2**20, "tables_s": tables}
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url", help="PostgreSQL address (a role that may create schemas, run"
                    " CHECKPOINT and pg_switch_wal: a superuser on a test server)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    ap.add_argument("--forget", type=int, default=10)
    ap.add_argument("--no-entities", action="store_true",
                    help="no entity extraction while filling (about 1.8x faster fill; the"
                    " entity tables are then empty, about 1 s per 100k of the purge)")
    args = ap.parse_args()
    with psycopg.connect(args.url) as conn:
        print("server:", _one(conn, "SELECT version()"))
        for name in ("shared_buffers", "maintenance_work_mem", "wal_recycle", "max_wal_size"):
            print(f"  {name} = {_one(conn, f'SHOW {name}')}")
    for size in args.sizes:
        r = run(args.url, size, args.forget, entities=not args.no_entities)
        print(f"{r['size']:>9,} memories: purge {r['purge_s']:.1f} s ({r['counts']}); tables"
              f" {r['tables_mb_before']:.0f} MB -> {r['tables_mb_after']:.0f} MB; WAL written"
              f" {r['wal_mb']:.0f} MB; fill took {r['fill_s']:.0f} s", flush=True)
        print("  each table rewritten again: " + ", ".join(
            f"{t} {s:.1f} s" for t, s in r["tables_s"].items()), flush=True)


if __name__ == "__main__":
    main()

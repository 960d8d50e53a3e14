"""What forgetting for real costs (not a test): store and forget latency at N memories, with the
shipped secure delete (the default) next to the same store with it switched off.

    .venv/bin/python bench/forget.py                 # 100k memories, 300 stores and forgets
    .venv/bin/python bench/forget.py --size 10000

"secure delete" is the default: ``PRAGMA secure_delete``, FTS5 ``secure-delete`` and a WAL
checkpoint (TRUNCATE) after each forget. "off" is the same file with the three switched off,
which is what clawmemory did before (forgotten text stayed in free pages and the WAL). Both
databases are copies of one filled file and are measured interleaved, one call each in turn, so
machine noise hits both alike. Keyword store (no embedding model): what is measured is storage.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore

WORDS = ("alpha", "beta", "gamma", "delta", "lisbon", "tram", "garden", "python", "rust",
         "coffee", "tea", "paris", "berlin", "music", "kitchen", "meeting", "project", "deadline",
         "river", "mountain")
NO_MODEL = Settings(embedder={"provider": "none"})


def _sentence(rng: random.Random, tag: str) -> str:
    return " ".join(rng.choices(WORDS, k=12)) + f" {tag}"


def _fill(path: Path, size: int, rng: random.Random) -> None:
    with Memory.open(path, settings=NO_MODEL) as mem:
        mem.store_many({"content": _sentence(rng, f"item {i}")} for i in range(size))


def _switch_off_secure_delete(mem: Memory) -> None:
    store = mem.store_backend
    assert isinstance(store, SQLiteStore)
    store.conn.execute("PRAGMA secure_delete=OFF")
    with store.write():
        for fts in ("memories_fts", "memories_archive_fts"):
            store.conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('secure-delete', 0)")
    store._checkpoint = lambda: None  # type: ignore[method-assign]


def _ms(values: list[float], q: float) -> str:
    return f"{sorted(values)[min(len(values) - 1, int(len(values) * q))] * 1000:.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--ops", type=int, default=300)
    args = ap.parse_args()
    rng = random.Random(1)
    work = Path(tempfile.mkdtemp(prefix="clawmem-forget-"))
    try:
        _fill(work / "filled.db", args.size, rng)
        mems = {}
        for label in ("secure delete (default)", "off"):
            path = work / f"{len(mems)}.db"
            shutil.copy(work / "filled.db", path)
            mems[label] = Memory.open(path, settings=NO_MODEL)
        _switch_off_secure_delete(mems["off"])
        times: dict[str, dict[str, list[float]]] = {k: {"store": [], "forget": []} for k in mems}
        made: dict[str, list[str]] = {k: [] for k in mems}
        for i in range(args.ops):  # all stores first: a store right after a forget pays for
            for label, mem in mems.items():  # starting a fresh WAL, which is not a store's cost
                start = time.perf_counter()
                made[label].append(mem.store(_sentence(rng, f"new {i}")))
                times[label]["store"].append(time.perf_counter() - start)
        for i in range(args.ops):
            for label, mem in mems.items():
                start = time.perf_counter()
                mem.forget(made[label][i])
                times[label]["forget"].append(time.perf_counter() - start)
        table = Table(title=f"store and forget at {args.size:,} memories ({args.ops} each, ms)")
        for col in ("", "store p50", "store p95", "forget p50", "forget p95"):
            table.add_column(col, justify="right" if col else "left")
        for label, t in times.items():
            table.add_row(label, _ms(t["store"], 0.5), _ms(t["store"], 0.95),
                          _ms(t["forget"], 0.5), _ms(t["forget"], 0.95))
        Console(width=120).print(table)
        ratio = statistics.median(times["secure delete (default)"]["forget"]) / statistics.median(
            times["off"]["forget"])
        print(f"forget p50 ratio, secure / off: {ratio:.1f}x")
        for mem in mems.values():
            mem.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""What provenance costs (ADR 0010): the ``memory_sources`` triggers on ingest, and forget with
the derived-memory lookup.

    .venv/bin/python bench/provenance.py            # 20,000 records per ingest run
    .venv/bin/python bench/provenance.py --n 5000

Ingest is measured three ways in one interleaved run (three repetitions, medians): records
naming two sources with the triggers, the same with the triggers dropped, records naming none
with the triggers. Then ``forget`` of an episode nothing was derived from and of one a fact was
derived from (that fact goes too), and ``provenance.forget_set`` alone for both.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.provenance import forget_set

TRIGGERS = ("ai", "ad", "au", "archive_ai", "archive_ad")


def fresh(drop_triggers: bool) -> Memory:
    store = SQLiteStore(Path(tempfile.mkdtemp(prefix="prov-")) / "m.db")
    if drop_triggers:
        with store.write():
            for t in TRIGGERS:
                store.conn.execute(f"DROP TRIGGER memory_sources_{t}")
    return Memory(store, Settings(embedder={"provider": "none"}, entities={"enabled": False}))


def ingest_rate(mem: Memory, n: int, with_sources: bool) -> float:
    items = [{"content": f"fact number {i} about topic {i % 97}",
              "source_ids": [f"ep{i}", f"ep{i + 1}"] if with_sources else []} for i in range(n)]
    t = time.perf_counter()
    mem.store_many(items, batch_size=1000)
    return n / (time.perf_counter() - t)


def ms(values: list[float]) -> str:
    return f"{1000 * statistics.median(values):.3f} ms"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=20_000, help="records per ingest run")
    n = p.parse_args().n
    rows: dict[str, list[float]] = {"triggers, 2 sources each": [],
                                    "no triggers, 2 sources each": [],
                                    "triggers, no sources": []}
    for _ in range(3):
        for name, values in rows.items():
            mem = fresh(drop_triggers=name.startswith("no triggers"))
            values.append(ingest_rate(mem, n, "no sources" not in name))
            mem.close()
    for name, values in rows.items():
        print(f"ingest, {name}: median {statistics.median(values):,.0f} records/s"
              f" ({', '.join(f'{v:,.0f}' for v in values)})")

    mem = fresh(drop_triggers=False)
    eps = mem.store_many({"content": f"episode {i}", "kind": "episode",
                          "session_id": f"s{i % 50}"} for i in range(n))
    mem.store_many({"content": f"fact from episode {i}", "source_ids": [eps[i]]}
                   for i in range(0, n, 2))
    sets_plain, sets_derived, plain, derived = [], [], [], []
    for i in range(min(200, n // 4)):
        lone, source = mem.get(eps[2 * i + 1]), mem.get(eps[2 * i])
        t = time.perf_counter()
        forget_set(mem.store_backend, mem.namespace, lone)
        sets_plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        forget_set(mem.store_backend, mem.namespace, source)
        sets_derived.append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.forget(lone.id)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.forget(source.id)  # its fact goes too
        derived.append(time.perf_counter() - t)
    print(f"forget, nothing derived: {ms(plain)}; with one derived fact: {ms(derived)}"
          f" ({n + n // 2} memories)")
    print(f"forget_set alone, nothing derived: {ms(sets_plain)}; one derived: {ms(sets_derived)}")
    mem.close()


if __name__ == "__main__":
    main()

"""How the bounded keyword ranking of SQLite (ADR 0006, ``storage.keyword_candidates``) compares
with the exact ranking of every matching row, on a database filled by bench/speed.py:

    .venv/bin/python bench/speed.py --sizes 1000000 --no-embed --no-extras \\
        --sqlite-db /tmp/speed.db
    .venv/bin/python bench/keyword_bound.py --db /tmp/speed.db --caps 2000,5000,10000

For each question of bench/speed.py (the same generator, --data, seed), per cap: whether the
best keyword score is the same as the exact ranking's, the share of the exact top-10 scores
found among the exact scores of the bounded top-10 (scores, not ids: rows with equal text
tie; common terms are pruned before ranking, so a hit is judged by its exact score), and the
keyword search p50/p95 (ms) at that cap, caps interleaved question by question (a cap past every
question's matches, e.g. 1000000, is the ranking before the bound: common terms pruned, every
other matching row ranked). Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from clawmemory.backends.sqlite.sql import fts_query
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.model import Filter
from clawmemory.search.sanitize import content_terms, sanitize_terms
from speed import DEFAULT_DATA, Corpus, real_sentences

TOP = 10


def exact(store: SQLiteStore, terms: list[str]) -> dict[str, float]:
    """Memory id -> score of the best rows of the exact ranking: every row matching any term
    scored by every term (no pruning, no bound). The best 1,000: a row further down is in
    no top 10."""
    rows = store.query(
        "SELECT m.id, f.rel FROM (SELECT rowid, -bm25(memories_fts, ?, ?, ?, ?, ?) AS rel FROM"
        " memories_fts WHERE memories_fts MATCH ? ORDER BY rel DESC LIMIT 1000) f"
        " JOIN memories m ON m.seq = f.rowid ORDER BY f.rel DESC",
        [*store._weights, fts_query(terms)])
    return {r[0]: float(r[1]) for r in rows}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--db", required=True, help="a SQLite file filled by bench/speed.py")
    p.add_argument("--data", default=str(DEFAULT_DATA), help="LoCoMo JSON, as for speed.py")
    p.add_argument("--caps", default="2000,5000,10000",
                   type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--queries", type=int, default=100)
    args = p.parse_args(argv)
    queries = Corpus(real_sentences(Path(args.data))).queries(args.queries)
    store = SQLiteStore(args.db, create=False, read_only=True)
    namespace = store.namespaces()[0]
    best: Counter[int] = Counter()
    agree: Counter[int] = Counter()
    times: dict[int, list[float]] = {cap: [] for cap in args.caps}
    asked = wanted = 0
    for q in queries:
        terms = content_terms(sanitize_terms(q))
        scores = exact(store, terms) if terms else {}
        want = list(scores.values())[:TOP]
        if not want:
            continue
        asked += 1
        wanted += len(want)
        turn = asked % len(args.caps)  # who goes first (and counts the terms) takes turns
        for cap in args.caps[turn:] + args.caps[:turn]:
            store.keyword_candidates = cap
            t = time.perf_counter()
            hits = store.keyword_search(namespace, terms, Filter(), limit=TOP)
            times[cap].append((time.perf_counter() - t) * 1000)
            # Each hit by its exact score (a pruned term lowers the score it was ranked by).
            got = [scores.get(h.info.id, -1.0) for h in hits]
            best[cap] += bool(got) and abs(got[0] - want[0]) < 1e-6
            left = list(got)
            for s in want:  # each exact score found once among the bounded ones
                match = next((g for g in left if abs(g - s) < 1e-6), None)
                if match is not None:
                    left.remove(match)
                    agree[cap] += 1
    print(f"{asked} questions, {store.query('SELECT count(*) FROM memories')[0][0]:,} memories,"
          f" load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| cap | best score same | top-10 scores agree | keyword p50 ms | keyword p95 ms |")
    print("|---|---|---|---|---|")
    for cap in args.caps:
        ms = sorted(times[cap])
        p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
        print(f"| {cap:,} | {100 * best[cap] / asked:.0f}% |"
              f" {100 * agree[cap] / wanted:.0f}% | {statistics.median(ms):.1f} |"
              f" {p95:.1f} |")
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

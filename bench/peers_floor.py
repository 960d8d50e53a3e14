"""The floor of a peers comparison: what clawmemory's embedder alone costs on the peers corpus.

No recall can cost less than embedding its question, and no ingest can run faster than the
model embeds the texts. Run this right before and after ``run_paired.sh`` (same machine, same
minutes) and report its figures beside the peers' search and ingest columns:

    .venv/bin/python bench/peers_floor.py --peers-dir PATH --n 20000 --q 200

``--peers-dir`` is the folder holding the peers harness (``peers.py``; default
``../shared/bench/peers``); its ``make_corpus`` builds the same sentences and questions the
harness uses. Prints: query embedding p50/p95 (one question at a time, a fresh text each, the
query cache bypassed), raw batch throughput on the corpus (texts/s, tokens/s) and the load
average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

DEFAULT_PEERS = Path(__file__).resolve().parents[2] / "shared" / "bench" / "peers"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peers-dir", type=Path, default=DEFAULT_PEERS)
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--q", type=int, default=100)
    p.add_argument("--seed", type=int, default=42)
    args = p.parse_args(argv)
    if not (args.peers_dir / "peers.py").is_file():
        p.error(f"no peers.py in {args.peers_dir} (give --peers-dir)")
    sys.path.insert(0, str(args.peers_dir))
    from peers import make_corpus

    from clawmemory import Memory

    texts, questions, _ = make_corpus(args.n, args.q, args.seed)
    with Memory.open(":memory:") as mem:
        embedder = mem.components.embedder
        raw = getattr(embedder, "inner", embedder)  # past the query cache
        raw.embed_query("load the model")
        times = []
        for q in questions:
            t = time.perf_counter()
            raw.embed_query(q)
            times.append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        raw.embed(texts)
        batch_s = time.perf_counter() - t
    tokens = sum(len(s.split()) for s in texts)  # words: a stable proxy across tokenizers
    p95 = statistics.quantiles(times, n=20)[-1]
    print(f"query embedding p50 {statistics.median(times):.2f} ms, p95 {p95:.2f} ms"
          f" ({len(times)} questions); raw batch {len(texts) / batch_s:,.0f} texts/s"
          f" ({tokens / batch_s:,.0f} words/s); load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

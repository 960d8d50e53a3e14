"""The first recall after reopening a store, against warm ones (model load excepted).

Each measurement runs in a fresh process on an existing store (one filled by
``bench/recall_quality.py``, e.g. the peers 20k corpus): open, load the embedding model and bind
the vectors (timed apart: "model"), then one recall ("first"), then warm recalls ("warm",
median). Three kinds of process, each ``--runs`` times:

* ``cold``: ``Memory.open(warm=False)``, the model loaded and the vectors bound (timed apart),
  then the first recall: what a program pays that turned the warm-up at open off;
* ``warm-up``: ``Memory.warm_up()`` and a wait before the first recall, as a server does;
* ``at-open``: ``Memory.open()`` as it is by default (it warms up in the background,
  ``embedder.warm_at_open``), ``--wait`` seconds (default 2), then the first recall.

    .venv/bin/python bench/first_recall.py --db /tmp/rq/peers-20000.db --namespace u1
    .venv/bin/python bench/first_recall.py --fill 20000   # first recall after an ingest

``--fill N``: the peers harness's order instead, in one fresh process: open a new store,
recall once on it empty (loads the model), ``store_many`` N synthetic sentences into one
namespace, then time the first hybrid recall and the median of 59 more (new texts each).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

KINDS = ("cold", "warm-up", "at-open")
QUERIES = [
    "What new hobby is Jonas Fischer picking up?", "Which city did Omar Murphy relocate to?",
    "What does Alice Haddad do for a living?", "Where is Aaron Sato travelling by plane?",
    "Which book is Elena Klein in the middle of?", "What kind of car does Dana Chen have?",
]


def measure(db: str, namespace: str, kind: str, wait: float) -> dict[str, float]:
    from clawmemory import Memory, Settings

    t = time.perf_counter()
    # Opened in the namespace: the warm-up at open loads the vectors of the one opened.
    mem = Memory.open(db, namespace=namespace, settings=Settings(db=db), warm=kind == "at-open")
    opened = time.perf_counter() - t
    t = time.perf_counter()
    if kind == "at-open":
        time.sleep(wait)
    elif kind == "warm-up":
        mem.warm_up()
        while mem.components.loaded_vectors() is None:
            time.sleep(0.01)
        time.sleep(3)  # the namespace's vectors and the first forward pass, in the background
    else:
        mem.components.vectors()  # model load and bind: excepted
    model = time.perf_counter() - t
    t = time.perf_counter()
    mem.recall(QUERIES[0], touch=False)
    first = time.perf_counter() - t
    warm = []
    for i, q in enumerate(QUERIES[1:] * 4):
        t = time.perf_counter()
        mem.recall(f"{q} {i}", touch=False)  # a new text: embedded, not served from the cache
        warm.append(time.perf_counter() - t)
    mem.close()
    return {"open_ms": 1000 * opened, "model_s": model, "first_ms": 1000 * first,
            "warm_ms": 1000 * statistics.median(warm)}


WORDS = (
    "alice", "bob", "carol", "dave", "travel", "paris", "berlin", "hobby", "guitar", "cooking",
    "painting", "car", "book", "city", "moved", "job", "engineer", "teacher", "doctor", "dog",
    "cat", "garden", "coffee", "tea", "running", "swimming", "chess",
)


def after_fill(n: int) -> str:
    """The first recall after filling a fresh store in this process (the peers harness)."""
    import os
    import random
    import tempfile

    from clawmemory import Memory

    rnd = random.Random(1)
    home = tempfile.mkdtemp(prefix="first-recall-")
    os.environ["CLAWMEM_HOME"] = home
    with Memory.open(Path(home) / "m.db") as mem:
        mem.recall("model load", limit=1, touch=False)
        user = mem.with_namespace("u1")
        t = time.perf_counter()
        user.store_many({"content": f"{rnd.choice(WORDS).title()} {rnd.choice(WORDS)} likes"
                                    f" {rnd.choice(WORDS)} near {rnd.choice(WORDS)} {i}"}
                        for i in range(n))
        ingest = time.perf_counter() - t
        queries = [f"What does {rnd.choice(WORDS).title()} like about {rnd.choice(WORDS)}?"
                   for _ in range(60)]
        times = []
        for q in queries:
            t = time.perf_counter()
            user.recall(q, limit=5)
            times.append(1000 * (time.perf_counter() - t))
    steady = statistics.median(times[1:])
    return (f"after a fill of {n:,} (ingest {ingest:.1f} s): first recall {times[0]:.1f} ms,"
            f" steady median {steady:.1f} ms, ratio {times[0] / steady:.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--db")
    p.add_argument("--fill", type=int, default=0, metavar="N",
                   help="measure the first recall after filling a fresh store with N memories")
    p.add_argument("--namespace", default="u1")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--wait", type=float, default=2.0,
                   help="at-open: seconds between opening and the first recall")
    p.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.fill:
        print(after_fill(args.fill))
        return 0
    if not args.db:
        p.error("--db (a filled store) or --fill N is needed")
    if args.child:
        print(json.dumps(measure(args.db, args.namespace, args.child, args.wait)))
        return 0
    for kind in KINDS:
        for _ in range(args.runs):
            out = subprocess.run([sys.executable, __file__, "--db", args.db, "--namespace",
                                  args.namespace, "--child", kind, "--wait", str(args.wait)],
                                 capture_output=True,
                                 text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{kind:8s} model or wait {r['model_s']:.2f} s"
                  f"  first recall {r['first_ms']:.0f} ms  warm recall {r['warm_ms']:.1f} ms"
                  f"  ratio {r['first_ms'] / r['warm_ms']:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

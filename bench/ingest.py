"""Conversation ingest against the embedder's own speed on the same text (issue 25, item 3).

    .venv/bin/python bench/ingest.py                       # one LongMemEval_S history
    .venv/bin/python bench/ingest.py --histories 3 --rounds 2

Each history (one question's haystack: ~50 sessions, ~500 turns, long assistant turns) is
stored the way ``bench/longmemeval.py`` stores it: ``Memory.store_many`` one session at a
time, every turn an ``episode`` with its session, role and date, into a new SQLite file with
the default settings (entities on, each turn embedded after the turn before it). Beside it,
in turns so that the machine's load weighs on all alike:

* **raw**: the model alone on the same texts, one bulk ``embed`` call (what the embedder
  does at its best: length-sorted batches on every core);
* **raw in context**: the model alone on the same (previous turn, turn) pairs, one
  ``embed_in_context`` call: the embedding work ingest chooses to do;
* **ingest**: the whole ``store_many`` path.

Rates are the turns' own tokens per second (the tokenizer's count, cut to the model's
window), the same numerator for all three, so "ingest ÷ raw" is the share of the embedder's
speed a user gets. Issue 25's target: ingest ≥ 0.8 × raw.

The data (MIT licence) is read from --data and never copied into this repository; its default
is ../shared/bench/longmemeval/longmemeval_s_dev80.json.gz beside the checkout.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings
from clawmemory.embed import make_embedder
from locomo import Clock
from longmemeval import DEFAULT_DATA, haystack, interleaved


def turns_of(item: dict[str, Any]) -> list[tuple[float, str, list[dict[str, Any]]]]:
    """(date, session, its non-empty turns) in date order, as bench/longmemeval.py stores."""
    return [(when, sid, [t for t in turns if t["content"].strip()])
            for when, sid, turns in haystack(item)]


def pairs_of(sessions: list[tuple[float, str, list[dict[str, Any]]]]) -> list[tuple[str, str]]:
    """(the turn before, the turn) within each session: what ingest embeds (context_turns 1)."""
    out = []
    for _, _, turns in sessions:
        before = ""
        for t in turns:
            out.append((before, t["content"]))
            before = t["content"]
    return out


def ingest(sessions: list[tuple[float, str, list[dict[str, Any]]]], embedder: Any) -> float:
    """Seconds to store the history into a new database (its folder removed after)."""
    folder = Path(tempfile.mkdtemp(prefix="clawmem-ingest-"))
    clock = Clock()
    mem = Memory.open(settings=Settings(db=folder / "h.db"), clock=clock, embedder=embedder)
    try:
        start = time.perf_counter()
        for when, sid, turns in sessions:
            clock.now = when
            mem.store_many([{"content": t["content"], "kind": "episode", "session_id": sid,
                             "event_time": when, "source_role": t["role"]} for t in turns])
        mem.flush()
        return time.perf_counter() - start
    finally:
        mem.close()
        shutil.rmtree(folder)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--histories", type=int, default=1, help="haystacks measured (default 1)")
    p.add_argument("--rounds", type=int, default=1, help="raw / in context / ingest rounds")
    args = p.parse_args(argv)
    console = Console()
    if not Path(args.data).is_file():
        console.print(f"[red]no data at {args.data}[/red] (pass --data)")
        return 2
    with gzip.open(args.data, "rt", encoding="utf-8") as f:
        items = interleaved(json.load(f))[: args.histories]
    cached = make_embedder("local")
    model = getattr(cached, "inner", cached)  # the model itself: no query cache in between
    runtime = model._load()  # the tokenizer the model reads with
    model.embed(["warm up"])
    console.print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
                  f" on {os.cpu_count()} cores")
    table = Table(title="Conversation ingest against the embedder on the same turns"
                        " (tokens: the turns' own, cut to the model's window)")
    for col in ("history", "turns", "tokens", "raw tok/s", "raw in context tok/s",
                "ingest tok/s", "ingest ÷ raw", "ingest ÷ raw in context", "load 1m"):
        table.add_column(col, justify="right")
    for item in items:
        sessions = turns_of(item)
        pairs = pairs_of(sessions)
        texts = [t for _, t in pairs]
        tokens = sum(len(runtime.encode(t)) for t in texts)
        got: dict[str, list[float]] = {"raw": [], "context": [], "ingest": []}
        for _ in range(args.rounds):
            t = time.perf_counter()
            model.embed(texts)
            got["raw"].append(tokens / (time.perf_counter() - t))
            t = time.perf_counter()
            model.embed_in_context(pairs)
            got["context"].append(tokens / (time.perf_counter() - t))
            got["ingest"].append(tokens / ingest(sessions, cached))
        raw, ctx, ing = (statistics.median(got[k]) for k in ("raw", "context", "ingest"))
        table.add_row(item["question_id"], f"{len(texts):,}", f"{tokens:,}", f"{raw:,.0f}",
                      f"{ctx:,.0f}", f"{ing:,.0f}", f"{ing / raw:.2f}", f"{ing / ctx:.2f}",
                      f"{os.getloadavg()[0]:.2f}")
        console.print(f"  {item['question_id']}: raw {raw:,.0f}, in context {ctx:,.0f},"
                      f" ingest {ing:,.0f} tok/s")
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Session support on LoCoMo (ADR 0020): its weight and reach re-ranked offline, and its cost.

Session support is applied to the engine's final ranking, so this program captures, for every
question, the engine's own ranked candidates with session support off (``session_weight = 0``),
and re-ranks them with each variant: a variant's numbers equal the end-to-end ones of
`bench/locomo.py` with that setting (up to ties). It then times recall with the shipped
setting and with support off, question by question in turn (same process, same database), and
prints the median difference.

    .venv/bin/python bench/locomo.py --modes hybrid --db /tmp/locomo   # fill once
    .venv/bin/python bench/locomo_session.py --db /tmp/locomo
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings
from clawmemory.search import pipeline
from locomo import CATEGORIES, DEFAULT_DATA, KS, questions, turns

# One question: its category, evidence turn indices, and the ranked (turn index, final score).
Question = tuple[int, set[int], list[tuple[int, float]]]
Ranker = Callable[[list[str], list[tuple[int, float]]], list[int]]


def capture(mem: Memory, data: list[dict[str, Any]]) -> list[tuple[list[str], list[Question]]]:
    """Every conversation's sessions (by turn index) and its questions' ranked candidates."""
    seen: list[list[tuple[str, float]]] = []
    rank = pipeline.Retriever._rank

    def keep(self: pipeline.Retriever, *args: Any, **kw: Any) -> Any:
        ranked = rank(self, *args, **kw)
        seen.append([(m, s) for m, s, _ in ranked])
        return ranked

    pipeline.Retriever._rank = keep  # type: ignore[method-assign]
    out = []
    try:
        for conv in data:
            ns = mem.with_namespace(conv["sample_id"])
            order = {it["metadata"]["dia_id"]: i for i, it in enumerate(turns(conv))}
            records = sorted(ns.list(limit=100_000, kind="episode"),
                             key=lambda r: order.get(r.metadata.get("dia_id"), 10**9))
            index = {r.id: i for i, r in enumerate(records)}
            dia = [r.metadata["dia_id"] for r in records]
            qs, _ = questions(conv, set(dia))
            rows: list[Question] = []
            for q in qs:
                ns.recall(q["q"], limit=max(KS), mode="hybrid", touch=False)
                ranked = [(index[m], s) for m, s in seen.pop()]
                rows.append((q["cat"], {dia.index(e) for e in q["evidence"]}, ranked))
            out.append(([r.session_id or "" for r in records], rows))
    finally:
        pipeline.Retriever._rank = rank  # type: ignore[method-assign]
    return out


def support(weight: float, top: int) -> Ranker:
    """The engine's rule (search/pipeline.py ``_session_support``), on captured scores."""
    def run(sessions: list[str], ranked: list[tuple[int, float]]) -> list[int]:
        best: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for i, s in ranked[:top]:
            best[sessions[i]].append((i, s))
        scored = []
        for i, s in ranked:
            mates = [x for j, x in best.get(sessions[i], ()) if j != i]
            scored.append((i, s + weight * max(mates) if mates else s))
        scored.sort(key=lambda t: -t[1])
        return [i for i, _ in scored]
    return run


def evaluate(convs: list[tuple[list[str], list[Question]]], fn: Ranker) -> list[float]:
    """R@5, R@10, R@25 and R@10 per category."""
    per: dict[int, list[list[float]]] = defaultdict(list)
    for sessions, rows in convs:
        for cat, ev, ranked in rows:
            order = fn(sessions, ranked)
            per[cat].append([len(ev & set(order[:k])) / len(ev) for k in KS])
    every = [r for v in per.values() for r in v]
    return ([statistics.fmean(r[i] for r in every) for i in range(len(KS))]
            + [statistics.fmean(r[1] for r in per[c]) if per[c] else 0.0 for c in CATEGORIES])


def latency(db: Path, data: list[dict[str, Any]]) -> tuple[float, float, float]:
    """Median recall ms with session support on and off, and the median paired difference."""
    on = Memory.open(db, settings=Settings(db=db))
    off = Memory.open(db, settings=Settings(db=db, recall={"session_weight": 0}))
    t_on, t_off = [], []
    for conv in data:
        a, b = on.with_namespace(conv["sample_id"]), off.with_namespace(conv["sample_id"])
        for qa in conv["qa"]:
            for ns, out in ((a, t_on), (b, t_off)):
                t = time.perf_counter()
                ns.recall(qa["question"], limit=max(KS), mode="hybrid", touch=False)
                out.append(1000 * (time.perf_counter() - t))
    on.close()
    off.close()
    diff = statistics.median(x - y for x, y in zip(t_on, t_off, strict=True))
    return statistics.median(t_on), statistics.median(t_off), diff


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--db", required=True, help="folder given to `bench/locomo.py --db`")
    p.add_argument("--data", default=str(DEFAULT_DATA))
    args = p.parse_args(argv)
    db = Path(args.db) / "locomo.db"
    if not db.exists() or not Path(args.data).exists():
        print(f"error: need {db} (fill it with bench/locomo.py --db) and the data at"
              f" {args.data}", file=sys.stderr)
        return 2
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    console = Console(width=160)
    mem = Memory.open(db, settings=Settings(db=db, recall={"session_weight": 0}))
    with console.status("capturing the engine's candidates ..."):
        convs = capture(mem, data)
    mem.close()
    t = Table(title="LoCoMo hybrid, session support re-ranked offline (engine's own candidates)")
    for col in ["session_weight / session_top", *(f"R@{k}" for k in KS),
                *(f"{n} @10" for n in CATEGORIES.values())]:
        t.add_column(col, justify="left" if col.startswith("session") else "right")
    grid = [(0.0, 5), (0.1, 5), (0.2, 5), (0.25, 3), (0.25, 5), (0.25, 10), (0.3, 5), (0.4, 5),
            (0.5, 5), (0.7, 5)]
    for weight, top in grid:
        t.add_row(f"{weight} / {top}", *(f"{v:.3f}" for v in evaluate(convs, support(weight, top))))
    console.print(t)
    with console.status("timing recall, support on and off in turn ..."):
        t_on, t_off, diff = latency(db, data)
    console.print(f"hybrid recall p50: {t_on:.2f} ms with session support, {t_off:.2f} ms"
                  f" without; median paired difference {diff:+.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

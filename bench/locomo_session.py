"""Session support on LoCoMo (ADR 0020): its weight and reach re-ranked offline, and its cost;
and breadth for aggregate questions (issue 26: "how many", "all the", "what activities..."),
re-ranked the same way (ADR 0026: measured, not kept).

Session support is applied to the engine's final ranking, so this program captures, for every
question, the engine's own ranked candidates with session support off (``session_weight = 0``),
and re-ranks them with each variant: a variant's numbers equal the end-to-end ones of
`bench/locomo.py` with that setting (up to ties). The breadth variants apply, after the shipped
session support and only to questions that ask for several things (``AGGREGATE``), either a
session diversity (each further hit of a session already above it × (1 − d), chosen
greedily) or a quota (at most q hits of a session before any session's next). It then times
recall with the shipped setting and with support off, question by question in turn (same
process, same database), and prints the median difference.

    .venv/bin/python bench/locomo.py --modes hybrid --db /tmp/locomo   # fill once
    .venv/bin/python bench/locomo_session.py --db /tmp/locomo
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings
from clawmemory.search import pipeline
from locomo import CATEGORIES, DEFAULT_DATA, KS, questions, turns

# One question: its category, evidence turn indices, the ranked (turn index, final score) and
# whether it asks for several things.
Question = tuple[int, set[int], list[tuple[int, float]], bool]
Ranker = Callable[[list[str], list[tuple[int, float]], bool], list[int]]
# Questions that ask for a count, a total or a list ("How many times...", "What activities
# does Melanie partake in?"): their pieces often sit in several sessions.
AGGREGATE = re.compile(
    r"\b(how many|how much|in total|total|altogether|all the|every time|each time|combined"
    r"|what (?:\w+ ){0,2}(?:activities|things|books|places|events|hobbies|items|kinds|types"
    r"|ways|pets|instruments|sports|countries|cities|games|foods|plans|shows|movies|songs"
    r"|gifts|changes|steps))\b", re.IGNORECASE)


def capture(mem: Memory, data: list[dict[str, Any]]) -> list[tuple[list[str], list[Question]]]:
    """Every conversation's sessions (by turn index) and its questions' ranked candidates."""
    seen: list[list[tuple[str, float]]] = []
    rank = pipeline.Retriever._rank

    def keep(self: pipeline.Retriever, *args: Any, **kw: Any) -> Any:
        ranked = rank(self, *args, **kw)
        seen.append([(m, s) for m, s, *_ in ranked])
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
                rows.append((q["cat"], {dia.index(e) for e in q["evidence"]}, ranked,
                             bool(AGGREGATE.search(q["q"]))))
            out.append(([r.session_id or "" for r in records], rows))
    finally:
        pipeline.Retriever._rank = rank  # type: ignore[method-assign]
    return out


def supported(sessions: list[str], ranked: list[tuple[int, float]], weight: float,
              top: int) -> list[tuple[int, float]]:
    """The engine's rule (search/pipeline.py ``_session_support``), on captured scores: the
    candidates with their supported scores, best first."""
    best: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for i, s in ranked[:top]:
        best[sessions[i]].append((i, s))
    scored = []
    for i, s in ranked:
        mates = [x for j, x in best.get(sessions[i], ()) if j != i]
        scored.append((i, s + weight * max(mates) if mates else s))
    scored.sort(key=lambda t: -t[1])
    return scored


def support(weight: float, top: int) -> Ranker:
    def run(sessions: list[str], ranked: list[tuple[int, float]], _: bool = False) -> list[int]:
        return [i for i, _ in supported(sessions, ranked, weight, top)]
    return run


def breadth(d: float = 0.0, quota: int = 0) -> Ranker:
    """The shipped support, then, for an aggregate question only, session diversity ``d`` or a
    per-session ``quota`` (module docstring)."""
    def run(sessions: list[str], ranked: list[tuple[int, float]], agg: bool = False) -> list[int]:
        scored = supported(sessions, ranked, 0.25, 5)
        seen: Counter[str] = Counter()
        if not agg or not (d or quota):
            return [i for i, _ in scored]
        if quota:
            first: list[int] = []
            later: list[int] = []
            for i, _ in scored:
                (first if seen[sessions[i]] < quota else later).append(i)
                seen[sessions[i]] += 1
            return first + later
        rest, picked = dict(scored), []
        while rest:
            pick = max(rest, key=lambda i: rest[i] * (1 - d) ** seen[sessions[i]])
            del rest[pick]
            picked.append(pick)
            seen[sessions[pick]] += 1
        return picked
    return run


def evaluate(convs: list[tuple[list[str], list[Question]]], fn: Ranker) -> list[float]:
    """R@5, R@10, R@25, R@10 per category and R@10 of the aggregate questions."""
    per: dict[int, list[list[float]]] = defaultdict(list)
    agg: list[float] = []
    for sessions, rows in convs:
        for cat, ev, ranked, many in rows:
            order = fn(sessions, ranked, many)
            per[cat].append([len(ev & set(order[:k])) / len(ev) for k in KS])
            if many:
                agg.append(per[cat][-1][1])
    every = [r for v in per.values() for r in v]
    return ([statistics.fmean(r[i] for r in every) for i in range(len(KS))]
            + [statistics.fmean(r[1] for r in per[c]) if per[c] else 0.0 for c in CATEGORIES]
            + [statistics.fmean(agg) if agg else 0.0])


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
    n_agg = sum(many for _, rows in convs for *_, many in rows)
    for col in ["session_weight / session_top", *(f"R@{k}" for k in KS),
                *(f"{n} @10" for n in CATEGORIES.values()), f"aggregate ({n_agg}) @10"]:
        t.add_column(col, justify="left" if col.startswith("session") else "right")
    grid = [(0.0, 5), (0.1, 5), (0.2, 5), (0.25, 3), (0.25, 5), (0.25, 10), (0.3, 5), (0.4, 5),
            (0.5, 5), (0.7, 5)]
    for weight, top in grid:
        t.add_row(f"{weight} / {top}", *(f"{v:.3f}" for v in evaluate(convs, support(weight, top))))
    console.print(t)
    t = Table(title="Aggregate questions only: breadth after the shipped support (0.25 / 5)")
    for col in ["breadth", *(f"R@{k}" for k in KS), *(f"{n} @10" for n in CATEGORIES.values()),
                f"aggregate ({n_agg}) @10"]:
        t.add_column(col, justify="left" if col == "breadth" else "right")
    variants = [("none (shipped)", breadth()), *((f"diversity d = {d}", breadth(d=d))
                                                 for d in (0.1, 0.25, 0.5)),
                *((f"quota {q} per session", breadth(quota=q)) for q in (1, 2))]
    for name, fn in variants:
        t.add_row(name, *(f"{v:.3f}" for v in evaluate(convs, fn)))
    console.print(t)
    with console.status("timing recall, support on and off in turn ..."):
        t_on, t_off, diff = latency(db, data)
    console.print(f"hybrid recall p50: {t_on:.2f} ms with session support, {t_off:.2f} ms"
                  f" without; median paired difference {diff:+.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

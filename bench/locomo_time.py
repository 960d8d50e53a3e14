"""Time in recall on LoCoMo (ADR 0017): each question recalled with the time features on and
off, on one database, interleaved question by question, and the false-positive check.

    .venv/bin/python bench/locomo.py --modes hybrid --db /tmp/locomo   # fill once
    .venv/bin/python bench/locomo_time.py --db /tmp/locomo

"on" is the default configuration; "off" sets ``time.query_boost = 0``,
``time.query_candidates = false`` and ``time.answer_boost = 0`` (the event times read from the
turns at ingest stay: without a period in the question nothing reads them). Every question
falls in one group: it names a period ("in May 2023"), it asks for a time ("When did..."), or
neither; the last group must rank exactly as with the features off (same ids, same scores).
Questions are asked now, so "last year" in a question means the year before today's, as a
user asking today would mean it; LoCoMo's conversations are dated 2022-2023.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings
from clawmemory.search.temporal import asks_when, query_periods, zone
from locomo import CATEGORIES, DEFAULT_DATA, questions, turns

OFF = {"query_boost": 0.0, "query_candidates": False, "answer_boost": 0.0}


def group(query: str, now: float) -> str:
    if query_periods(query, now, zone("UTC"), ("en",)):
        return "names a period"
    return "asks when" if asks_when(query) else "neither"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--db", required=True, help="folder of a database bench/locomo.py filled")
    p.add_argument("--mode", default="hybrid")
    p.add_argument("--json", dest="json_out", default=None)
    args = p.parse_args(argv)
    db = Path(args.db) / "locomo.db"
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    on = Memory.open(db, settings=Settings(db=db))
    off = Memory.open(db, settings=Settings(db=db, time=OFF))
    recall: dict[str, dict[int, list[float]]] = {"on": defaultdict(list), "off": defaultdict(list)}
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # questions, ranked differently
    now = on.clock()
    for conv in data:
        items = turns(conv)
        qs, _ = questions(conv, {i["metadata"]["dia_id"] for i in items})
        sides = {"on": on.with_namespace(conv["sample_id"]),
                 "off": off.with_namespace(conv["sample_id"])}
        for q in qs:
            ranked = {}
            for name, mem in sides.items():
                hits = mem.recall(q["q"], limit=25, mode=args.mode, touch=False)
                ranked[name] = [(h.memory.id, round(h.score, 9)) for h in hits]
                got = {h.memory.metadata.get("dia_id") for h in hits[:10]}
                recall[name][q["cat"]].append(len(q["evidence"] & got) / len(q["evidence"]))
            g = groups[group(q["q"], now)]
            g[0] += 1
            g[1] += ranked["on"] != ranked["off"]
    on.close()
    off.close()
    report(recall, groups, args.json_out)
    return 0


def report(recall: dict[str, dict[int, list[float]]], groups: dict[str, list[int]],
           json_out: str | None) -> None:
    console = Console(width=160)
    t = Table(title="LoCoMo R@10, time features on and off (same database, same questions)")
    t.add_column("time features")
    t.add_column("R@10", justify="right")
    for c in CATEGORIES.values():
        t.add_column(c, justify="right")
    out: dict[str, Any] = {}
    for name, cats in recall.items():
        every = [v for rows in cats.values() for v in rows]
        row = {"overall": statistics.fmean(every),
               **{CATEGORIES[c]: statistics.fmean(v) for c, v in sorted(cats.items())}}
        out[name] = row
        t.add_row(name, *(f"{row.get(k, 0):.3f}" for k in ["overall", *CATEGORIES.values()]))
    console.print(t)
    g = Table(title="Which questions rank differently with the time features on")
    for col in ("question", "questions", "ranked differently"):
        g.add_column(col)
    for name, (n, changed) in sorted(groups.items()):
        g.add_row(name, str(n), str(changed))
    console.print(g)
    out["groups"] = {k: {"questions": n, "changed": c} for k, (n, c) in groups.items()}
    if json_out:
        Path(json_out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    sys.exit(main())

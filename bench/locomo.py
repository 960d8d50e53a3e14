"""LoCoMo retrieval benchmark: turn-level evidence recall @5/@10/@25 per mode and category.

Each conversation goes into its own namespace through the public API: every dialogue turn is
one ``episode`` memory (content "Speaker: text", the session's date as ``event_time``, the
speaker as ``source_role``, ``dia_id`` in metadata). Every question with resolvable evidence is
recalled; evidence recall = |evidence ∩ retrieved dia_ids| / |evidence|, averaged (the metric
of the LoCoMo repository's task_eval).

    .venv/bin/python bench/locomo.py                      # all modes, all conversations
    .venv/bin/python bench/locomo.py --modes hybrid --conversations 2
    .venv/bin/python bench/locomo.py --llm [--decompose]  # question answering, LLM judge (J)
    .venv/bin/python bench/locomo.py --anchored --db /tmp/locomo  # asked at the conversation's end

--anchored: the time-anchored variant. Each session is stored with the clock at its date (the
memories are created when they were said, as a user's history grows; its own database file,
locomo-anchored.db) and every question is asked with ``as_of`` at the conversation's last
session date plus a day, so "last week" and recency are read against the conversation's time,
not today's.

--llm needs an LLM endpoint ([llm] in the config file or CLAWMEM_LLM__* variables): each
question of categories 1-4 is answered from recalled memories and judged (bench/locomo_qa.py).

The data (CC BY-NC 4.0) is read from --data and never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from clawmemory import ClawMemoryError, ConfigError, Memory, Settings

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
KS = (5, 10, 25)
_DIA = re.compile(r"D\d+:\d+")


class Clock:
    """Memory.open's clock: the time set in ``now`` (a session's date while it is stored, a
    question's when it is asked), else the real time."""

    def __init__(self) -> None:
        self.now: float | None = None

    def __call__(self) -> float:
        return self.now if self.now is not None else time.time()


def session_date(text: str | None) -> float | None:
    """'1:56 pm on 8 May, 2023' -> epoch seconds (UTC)."""
    if not text:
        return None
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC).timestamp()
        except ValueError:
            continue
    return None


def turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """Every turn of a conversation as store_many() items, in dialogue order."""
    c = conv["conversation"]
    sessions = sorted(
        (k for k in c if re.fullmatch(r"session_\d+", k)), key=lambda k: int(k.split("_")[1])
    )
    items = []
    for s in sessions:
        when = session_date(c.get(f"{s}_date_time"))
        for t in c[s]:
            text = t["text"]
            if t.get("blip_caption"):
                text += f" [shares a photo: {t['blip_caption']}]"
            items.append(
                {
                    "content": f"{t['speaker']}: {text}",
                    "kind": "episode",
                    "session_id": s,
                    "event_time": when,
                    "source_role": t["speaker"],
                    "source": "locomo",
                    "metadata": {"dia_id": t["dia_id"], "speaker": t["speaker"]},
                }
            )
    return items


def questions(conv: dict[str, Any], known: set[str]) -> tuple[list[dict[str, Any]], int]:
    """Questions with at least one resolvable evidence id; and how many evidence ids were
    skipped (malformed or pointing to turns that do not exist)."""
    out, skipped = [], 0
    for qa in conv["qa"]:
        raw = " ".join(str(e) for e in qa.get("evidence") or [])
        ids = [e for e in _DIA.findall(raw.replace(";", " "))]
        good = {e for e in ids if e in known}
        skipped += len(set(ids) - good) + (0 if ids or not raw.strip() else 1)
        if good:
            out.append({"q": qa["question"], "evidence": good, "cat": qa["category"]})
    return out, skipped


def run(args: argparse.Namespace) -> dict[str, Any]:
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))[: args.conversations]
    console = Console(width=180)
    if args.backend == "postgres":
        from speed import database  # a schema of its own on --pg-url, or on a new server

        db: Path | str = database(args, "locomo")
    else:
        name = "locomo-anchored.db" if args.anchored else "locomo.db"
        db = Path(args.db or tempfile.mkdtemp(prefix="locomo-")) / name
    clock = Clock()
    mem = Memory.open(db, settings=Settings(db=db), clock=clock)
    if args.llm:
        return run_qa(args, data, mem, console)
    t0 = time.perf_counter()
    qsets: dict[str, list[dict[str, Any]]] = {}
    skipped = n_turns = 0
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("ingest", total=len(data))
        for conv in data:
            ns = mem.with_namespace(conv["sample_id"])
            items = turns(conv)
            n_turns += len(items)
            if ns.count(include_invalid=True) == 0 and args.anchored:
                for session in dict.fromkeys(i["session_id"] for i in items):
                    part = [i for i in items if i["session_id"] == session]
                    clock.now = part[0]["event_time"] or time.time()
                    ns.store_many(part)
                clock.now = None
            elif ns.count(include_invalid=True) == 0:
                ns.store_many(items)
            qs, sk = questions(conv, {i["metadata"]["dia_id"] for i in items})
            if args.anchored:
                end = max(i["event_time"] or 0.0 for i in items) + 86_400
                qs = [{**q, "as_of": end} for q in qs]
            qsets[conv["sample_id"]], skipped = qs, skipped + sk
            bar.advance(task)
    ingest_s = time.perf_counter() - t0
    results = {m: evaluate(mem, qsets, m, console) for m in args.modes}
    n_q = sum(len(q) for q in qsets.values())
    report(console, results, n_q, skipped, n_turns, ingest_s)
    mem.close()
    return results


def ingest(mem: Memory, data: list[dict[str, Any]]) -> None:
    """Each conversation into its own namespace (kept when the database is reused)."""
    for conv in data:
        ns = mem.with_namespace(conv["sample_id"])
        if ns.count(include_invalid=True) == 0:
            ns.store_many(turns(conv))


def run_qa(
    args: argparse.Namespace, data: list[dict[str, Any]], mem: Memory, console: Console
) -> dict[str, Any]:
    from clawmemory.llm import close_llm, make_llm
    from locomo_qa import evaluate_qa, qa_questions, report_qa

    llm = make_llm(mem.settings.llm)
    if llm is None:
        raise ConfigError("--llm needs an LLM endpoint: set [llm] in the config file or"
                          " CLAWMEM_LLM__PROVIDER/BASE_URL/MODEL (docs/llm.md)")
    try:
        ingest(mem, data)
        qsets = {c["sample_id"]: qa_questions(c) for c in data}
        if args.questions is not None:
            left = args.questions
            for sample, qs in qsets.items():
                qsets[sample], left = qs[: max(left, 0)], left - len(qs)
        results = evaluate_qa(mem, llm, qsets, args, console)
        report_qa(console, results)
        return results
    finally:
        close_llm(llm)
        mem.close()


def evaluate(
    mem: Memory, qsets: dict[str, list[dict[str, Any]]], mode: str, console: Console
) -> dict[str, Any]:
    per_cat: dict[int, list[list[float]]] = defaultdict(list)
    lat: list[float] = []
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task(f"recall {mode}", total=sum(len(q) for q in qsets.values()))
        for sample, qs in qsets.items():
            ns = mem.with_namespace(sample)
            for q in qs:
                t = time.perf_counter()
                hits = ns.recall(q["q"], limit=max(KS), mode=mode, touch=False,
                                 as_of=q.get("as_of"))
                lat.append(time.perf_counter() - t)
                got = [h.memory.metadata.get("dia_id") for h in hits]
                per_cat[q["cat"]].append(
                    [len(q["evidence"] & set(got[:k])) / len(q["evidence"]) for k in KS]
                )
                bar.advance(task)
    every = [r for rows in per_cat.values() for r in rows]
    return {
        "overall": [statistics.fmean(r[i] for r in every) for i in range(len(KS))],
        "by_cat": {
            c: [statistics.fmean(r[i] for r in rows) for i in range(len(KS))]
            for c, rows in sorted(per_cat.items())
        },
        "p50_ms": 1000 * statistics.median(lat),
        "p95_ms": 1000 * statistics.quantiles(lat, n=20)[-1],
    }


def report(
    console: Console, results: dict[str, Any], n_q: int, skipped: int, n_turns: int, ingest_s: float
) -> None:
    t = Table(
        title=f"LoCoMo evidence recall ({n_q} questions, {n_turns} turns;"
        f" {skipped} unresolvable evidence ids skipped; ingest {ingest_s:.1f} s)"
    )
    t.add_column("mode")
    for k in KS:
        t.add_column(f"R@{k}", justify="right")
    for c in CATEGORIES.values():
        t.add_column(f"{c} @10", justify="right")
    t.add_column("p50 ms", justify="right")
    t.add_column("p95 ms", justify="right")
    for mode, r in results.items():
        cats = [f"{r['by_cat'][c][1]:.3f}" if c in r["by_cat"] else "-" for c in CATEGORIES]
        t.add_row(
            mode,
            *(f"{v:.3f}" for v in r["overall"]),
            *cats,
            f"{r['p50_ms']:.1f}",
            f"{r['p95_ms']:.1f}",
        )
    console.print(t)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument(
        "--modes",
        default="keyword,vector,hybrid",
        type=lambda s: [m.strip() for m in s.split(",") if m.strip()],
    )
    p.add_argument("--conversations", type=int, default=None, help="only the first N")
    p.add_argument("--db", default=None, help="folder for the database (kept; reused if filled)")
    p.add_argument("--json", dest="json_out", default=None, help="also write results here")
    p.add_argument("--anchored", action="store_true",
                   help="store each session at its date; ask at the conversation's end (as_of)")
    p.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--pg-url", default=None,
                   help="PostgreSQL server for --backend postgres (default: start one)")
    p.add_argument("--pg-schema", default=None,
                   help="PostgreSQL: fill and keep this schema; a later run measures it again")
    qa = p.add_argument_group("question answering (needs an LLM endpoint)")
    qa.add_argument("--llm", action="store_true",
                    help="answer each question from recalled memories; score with an LLM judge")
    qa.add_argument("--decompose", action="store_true",
                    help="split each question into search queries with the LLM first")
    qa.add_argument("--qa-mode", default="auto", help="recall mode for --llm (default auto)")
    qa.add_argument("--top-k", type=int, default=20, help="memories given to each answer")
    qa.add_argument("--questions", type=int, default=None, help="only the first N questions")
    qa.add_argument("--judge-prompt", default=None,
                    help="a judge template file ({question}, {gold_answer}, {generated_answer})")
    args = p.parse_args(argv)
    if not Path(args.data).exists():
        print(f"error: LoCoMo data not found at {args.data} (pass --data)", file=sys.stderr)
        return 2
    try:
        results = run(args)
    except ClawMemoryError as exc:  # no endpoint, a bad setting: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, ConfigError) else 3
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

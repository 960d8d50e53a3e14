"""LongMemEval_S retrieval benchmark: session-level recall_any / recall_all / NDCG @5 and @10,
overall and per question type, for clawmemory's modes and three reference retrievers computed
in the same run on the same turns.

    .venv/bin/python bench/longmemeval.py --db /tmp/lme             # fills, then measures
    .venv/bin/python bench/longmemeval.py --db /tmp/lme --modes hybrid --questions 20
    .venv/bin/python bench/longmemeval.py --db /tmp/lme --json after.json
    .venv/bin/python bench/longmemeval.py --db /tmp/lme --set recall.recency=none

Each question has its own haystack (~50 sessions, ~500 turns), so each goes into its own
database file in --db (kept: a ranking change re-runs without embedding again). Every turn is
one ``episode`` memory (its text, the session as ``session_id``, the session's date as
``event_time``, the role as ``source_role``), stored through ``Memory.store_many`` one session
at a time with the clock at the session's date, as a user's history grows. The question is
recalled with the clock at the question's date (relative expressions such as "four weeks ago"
read against it). A session ranks at the first position where one of its turns is recalled.

References, on the same turns: BM25 (rank_bm25's BM25Okapi over lower-cased words), plain
cosine of the same all-MiniLM-L6-v2 (each turn alone, cut to the model's 256 tokens; cached in
--db), and their reciprocal-rank fusion (k = 60).

Metrics as LongMemEval reports them: ``any@k`` (an evidence session in the top k), ``all@k``
(every evidence session in the top k), ``ndcg@k`` (binary relevance). Evidence: the
question's ``answer_session_ids``, less the "answer" sessions whose user turns carry no
``has_answer``; a question left without evidence (the answer stated by the assistant alone)
is skipped and counted. "empty": questions a mode answered with nothing (the relevance floor).

The data (MIT licence) is read from --data and never copied into this repository; its default
is ../shared/bench/longmemeval/longmemeval_s_dev80.json.gz beside the checkout.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from clawmemory import ClawMemoryError, Memory, Settings
from locomo import Clock  # Memory.open's clock, set to a session's or question's date
from recall_quality import settings_for  # --set section.key=value, as there

DEFAULT_DATA = (Path(__file__).resolve().parents[2] / "shared" / "bench" / "longmemeval"
                / "longmemeval_s_dev80.json.gz")
KS = (5, 10)
DEPTH = 60  # memories recalled per question: enough turns to rank well past 10 sessions
RRF_K = 60
REFERENCES = ("bm25", "cosine", "rrf")
_WORD = re.compile(r"\w+")


def parse_date(text: str) -> float:
    """'2023/05/30 (Tue) 22:26' -> epoch seconds (UTC)."""
    return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text).strip(),
                             "%Y/%m/%d %H:%M").replace(tzinfo=UTC).timestamp()


def evidence(item: dict[str, Any]) -> set[str]:
    sessions = dict(zip(item["haystack_session_ids"], item["haystack_sessions"], strict=True))
    out = set()
    for sid in item["answer_session_ids"]:
        turns = sessions.get(sid, [])
        marked = any(t.get("has_answer") for t in turns if t["role"] == "user")
        if "answer" in sid and not marked:
            continue
        out.add(sid)
    return out


def haystack(item: dict[str, Any]) -> list[tuple[float, str, list[dict[str, Any]]]]:
    """(date, session id, turns) in date order."""
    rows = [(parse_date(d), sid, turns) for d, sid, turns in zip(
        item["haystack_dates"], item["haystack_session_ids"], item["haystack_sessions"],
        strict=True)]
    return sorted(rows, key=lambda r: r[0])


def flat_turns(item: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Every turn's text and its session, in the order the memories are stored."""
    texts, sessions = [], []
    for _, sid, turns in haystack(item):
        for t in turns:
            texts.append(t["content"])
            sessions.append(sid)
    return texts, sessions


def interleaved(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions taking the types in turn, so the first N hold every type."""
    seen: dict[str, int] = defaultdict(int)
    keyed = []
    for i, d in enumerate(data):
        keyed.append((seen[d["question_type"]], i, d))
        seen[d["question_type"]] += 1
    return [d for _, _, d in sorted(keyed, key=lambda k: (k[0], k[1]))]


# --- clawmemory -----------------------------------------------------------------------------
def open_question(folder: Path, item: dict[str, Any], embedder: Any, clock: Clock,
                  base: Settings) -> Memory:
    """The question's database, filled once (a file without its done-marker is refilled)."""
    qid = item["question_id"]
    db, done = folder / f"{qid}.db", folder / f"{qid}.done"
    if db.exists() and not done.exists():
        for p in folder.glob(f"{qid}.db*"):
            p.unlink()
    shared = {"embedder": embedder} if embedder is not None else {}  # the model loaded once
    mem = Memory.open(settings=base.model_copy(update={"db": db}), clock=clock, **shared)
    if not done.exists():
        for when, sid, turns in haystack(item):
            clock.now = when
            mem.store_many([
                {"content": t["content"], "kind": "episode", "session_id": sid,
                 "event_time": when, "source_role": t["role"], "source": "longmemeval",
                 "metadata": {"turn": i}}
                for i, t in enumerate(turns) if t["content"].strip()])
        mem.flush()
        done.write_text("ok")
    return mem


def session_ranking(sessions: Sequence[str | None]) -> list[str]:
    return [s for s in dict.fromkeys(sessions) if s is not None]


def metrics(ranked: Sequence[str], wanted: set[str]) -> dict[str, float]:
    out = {"empty": float(not ranked)}  # the relevance floor returned nothing
    for k in KS:
        top = ranked[:k]
        out[f"any@{k}"] = float(any(s in wanted for s in top))
        out[f"all@{k}"] = float(wanted <= set(top))
        dcg = sum(1 / math.log2(i + 2) for i, s in enumerate(top) if s in wanted)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(wanted))))
        out[f"ndcg@{k}"] = dcg / ideal if ideal else 0.0
    return out


# --- references -----------------------------------------------------------------------------
def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def reference_rankings(
    folder: Path, item: dict[str, Any], embed: Callable[[Sequence[str]], Any]
) -> dict[str, list[int]]:
    """Turn indexes best first for BM25, plain cosine and their RRF."""
    from rank_bm25 import BM25Okapi

    texts, _ = flat_turns(item)
    cache = folder / f"{item['question_id']}.ref.npy"
    if cache.exists():
        vectors = np.load(cache)
    else:
        vectors = np.asarray(embed(texts), dtype=np.float32)
        np.save(cache, vectors)
    q = np.asarray(embed([item["question"]]), dtype=np.float32)[0]
    cosine = list(np.argsort(-(vectors @ q), kind="stable"))
    bm25 = BM25Okapi([words(t) or [""] for t in texts]).get_scores(words(item["question"]))
    lexical = list(np.argsort(-np.asarray(bm25), kind="stable"))
    fused: dict[int, float] = defaultdict(float)
    for ranking in (lexical, cosine):
        for rank, i in enumerate(ranking[:500], start=1):
            fused[int(i)] += 1 / (RRF_K + rank)
    rrf = sorted(fused, key=lambda i: (-fused[i], i))
    return {"bm25": [int(i) for i in lexical], "cosine": [int(i) for i in cosine], "rrf": rrf}


# --- the run ---------------------------------------------------------------------------------
def run(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    with gzip.open(args.data, "rt", encoding="utf-8") as f:
        data = json.load(f)
    if args.types:
        data = [d for d in data if d["question_type"] in args.types]
    data = interleaved(data)[: args.questions]
    if args.only_filled:  # another run may be filling the rest
        data = [d for d in data if (Path(args.db) / f"{d['question_id']}.done").exists()]
    folder = Path(args.db)
    folder.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    base = settings_for(folder / "x.db", args.overrides)  # each question's file set below
    systems = [*args.modes, *([] if args.no_references else REFERENCES)]
    rows: dict[str, list[tuple[str, dict[str, float]]]] = {s: [] for s in systems}
    latency: dict[str, list[float]] = defaultdict(list)
    embedder: Any = None
    skipped = 0
    t0 = time.perf_counter()
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("questions (the first run embeds every haystack)", total=len(data))
        for item in data:
            mem = open_question(folder, item, embedder, clock, base)
            embedder = embedder or mem.components.embedder
            wanted = evidence(item)
            if not wanted:  # e.g. an answer stated by the assistant only: nothing to measure
                skipped += 1
                mem.close()
                bar.advance(task)
                continue
            clock.now = parse_date(item["question_date"])
            for mode in args.modes:
                t = time.perf_counter()
                hits = mem.recall(item["question"], limit=DEPTH, mode=mode, touch=False)
                latency[mode].append(1000 * (time.perf_counter() - t))
                ranked = session_ranking([h.memory.session_id for h in hits])
                rows[mode].append((item["question_type"], metrics(ranked, wanted)))
            mem.close()
            if not args.no_references:
                _, sessions = flat_turns(item)
                for name, order in reference_rankings(folder, item, embedder.embed).items():
                    ranked = session_ranking([sessions[i] for i in order])
                    rows[name].append((item["question_type"], metrics(ranked, wanted)))
            bar.advance(task)
    results = summarise(rows, latency)
    results["seconds"] = time.perf_counter() - t0
    results["questions"] = len(data) - skipped
    results["skipped"] = skipped
    return results


def summarise(rows: dict[str, list[tuple[str, dict[str, float]]]],
              latency: dict[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"systems": {}}
    for system, got in rows.items():
        if not got:
            continue
        names = list(got[0][1])
        by_type: dict[str, list[dict[str, float]]] = defaultdict(list)
        for qtype, m in got:
            by_type[qtype].append(m)
        out["systems"][system] = {
            "overall": {n: statistics.fmean(m[n] for _, m in got) for n in names},
            "by_type": {t: {n: statistics.fmean(m[n] for m in ms) for n in names} | {"n": len(ms)}
                        for t, ms in sorted(by_type.items())},
            "p50_ms": statistics.median(latency[system]) if latency.get(system) else None,
        }
    return out


def report(console: Console, results: dict[str, Any]) -> None:
    systems = results["systems"]
    names = [f"{m}@{k}" for k in KS for m in ("any", "all", "ndcg")]
    t = Table(title=f"LongMemEval_S sessions ({results['questions']} questions;"
                    f" {results['skipped']} without an evidence session skipped;"
                    f" {results['seconds']:.0f} s)")
    t.add_column("system")
    for n in names:
        t.add_column(n, justify="right")
    t.add_column("empty", justify="right")
    t.add_column("p50 ms", justify="right")
    for system, r in systems.items():
        p50 = f"{r['p50_ms']:.1f}" if r["p50_ms"] is not None else "-"
        empty = round(r["overall"]["empty"] * results["questions"])
        t.add_row(system, *(f"{r['overall'][n]:.3f}" for n in names), str(empty), p50)
    console.print(t)
    types = sorted({q for r in systems.values() for q in r["by_type"]})
    for metric in ("all@5", "any@5"):
        bt = Table(title=f"{metric} by question type")
        bt.add_column("system")
        for q in types:
            n = next(r["by_type"][q]["n"] for r in systems.values() if q in r["by_type"])
            bt.add_column(f"{q} ({n})", justify="right")
        for system, r in systems.items():
            bt.add_row(system, *(f"{r['by_type'][q][metric]:.3f}" if q in r["by_type"] else "-"
                                 for q in types))
        console.print(bt)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", default=str(DEFAULT_DATA),
                   help="longmemeval_s_dev80.json.gz (default: %(default)s)")
    p.add_argument("--db", required=True,
                   help="folder for the per-question databases (kept; reused once filled)")
    p.add_argument("--modes", default="keyword,vector,hybrid",
                   type=lambda s: [m.strip() for m in s.split(",") if m.strip()])
    p.add_argument("--questions", type=int, default=None, help="only the first N")
    p.add_argument("--types", type=lambda s: {t.strip() for t in s.split(",")}, default=None,
                   help="only these question types (comma-separated)")
    p.add_argument("--no-references", action="store_true", help="skip BM25/cosine/RRF")
    p.add_argument("--only-filled", action="store_true",
                   help="only the questions whose database is already filled")
    p.add_argument("--set", dest="overrides", action="append", default=[],
                   metavar="SECTION.KEY=VALUE",
                   help="override a setting for recall (repeatable): compare variants on the"
                        " same databases, e.g. --set recall.recency=none")
    p.add_argument("--json", dest="json_out", default=None, help="also write results here")
    args = p.parse_args(argv)
    if not Path(args.data).exists():
        print(f"error: LongMemEval data not found at {args.data} (pass --data)", file=sys.stderr)
        return 2
    console = Console(width=200)
    try:
        results = run(args, console)
    except ClawMemoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    report(console, results)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

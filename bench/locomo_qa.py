"""LoCoMo question answering scored by an LLM judge (J), for users with an LLM endpoint.

``bench/locomo.py --llm`` fills the store as the retrieval benchmark does, then for each
question of categories 1-4 (adversarial questions, category 5, are left out, as mem0's
evaluation does) recalls memories, asks the configured model to answer from them
(``prompts.LOCOMO_ANSWER``) and asks it to judge the answer against the gold one
(``prompts.LOCOMO_JUDGE``, the criteria and output of mem0's ``evaluation/metrics/
llm_judge.py``; ``--judge-prompt FILE`` uses another template, e.g. mem0's own text). J is the
share of questions judged CORRECT, overall and per category: the number mem0 (66.9) and Zep
(75.1) publish. ``--decompose`` first splits each question into search queries
(``prompts.DECOMPOSE``) and recalls each; the same number of memories reaches the answer.

A failed answer call counts as WRONG and a failed judge call leaves the question out; both are
counted and printed, never hidden.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from clawmemory import ClawMemoryError, Memory
from clawmemory.llm.base import LLM, Message
from clawmemory.llm.parse import ask_json
from clawmemory.llm.prompts import DECOMPOSE, LOCOMO_ANSWER, LOCOMO_JUDGE

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MAX_QUERIES = 4  # sub-queries of a decomposed question
ANSWER_TOKENS = 200
JUDGE_TOKENS = 300


def qa_questions(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """The questions J is computed on: categories 1-4, each with its gold answer."""
    return [{"q": qa["question"], "gold": str(qa["answer"]), "cat": int(qa["category"])}
            for qa in conv["qa"] if int(qa.get("category", 0)) in CATEGORIES and "answer" in qa]


def _date(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%d %B %Y") if ts is not None else "?"


def _queries(llm: LLM, question: str) -> list[str]:
    def check(value: Any) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError("expected a JSON array of strings")
        return [v.strip() for v in value if v.strip()][:MAX_QUERIES]

    found = ask_json(llm, [Message("user", DECOMPOSE.format(max_queries=MAX_QUERIES,
                                                            question=question))],
                     check=check, expect=list, what="the decomposition")
    return found or [question]


def recall_for(mem: Memory, llm: LLM, question: str, args: argparse.Namespace) -> list[Any]:
    """The memories an answer is given: the question's hits, or with --decompose the hits of
    the question and of each sub-query interleaved, without repeats, ``top_k`` in all."""
    queries = [question] + (_queries(llm, question) if args.decompose else [])
    lists = [mem.recall(q, limit=args.top_k, mode=args.qa_mode, touch=False) for q in queries]
    seen: dict[str, Any] = {}
    for rank in range(args.top_k):
        for hits in lists:
            if rank < len(hits) and hits[rank].memory.id not in seen:
                seen[hits[rank].memory.id] = hits[rank].memory
    return list(seen.values())[: args.top_k]


def answer(llm: LLM, question: str, memories: Sequence[Any]) -> str:
    lines = [f"({_date(m.event_time)}) {m.content}" for m in memories]
    prompt = LOCOMO_ANSWER.format(memories="\n".join(lines) or "(none)", question=question)
    return llm.chat([Message("user", prompt)], temperature=0.0,
                    max_tokens=ANSWER_TOKENS).text.strip()


def judge(llm: LLM, template: str, question: str, gold: str, generated: str) -> bool:
    def check(value: Any) -> bool:
        label = str(value.get("label", "")).strip().upper() if isinstance(value, dict) else ""
        if label not in ("CORRECT", "WRONG"):
            raise ValueError('expected {"label": "CORRECT"} or {"label": "WRONG"}')
        return label == "CORRECT"

    prompt = template.format(question=question, gold_answer=gold, generated_answer=generated)
    return ask_json(llm, [Message("user", prompt)], check=check, expect=dict,
                    max_tokens=JUDGE_TOKENS, what="the judge's answer")


def evaluate_qa(
    mem: Memory, llm: LLM, qsets: dict[str, list[dict[str, Any]]], args: argparse.Namespace,
    console: Console,
) -> dict[str, Any]:
    template = Path(args.judge_prompt).read_text(encoding="utf-8") if args.judge_prompt else (
        LOCOMO_JUDGE)
    per_cat: dict[int, list[int]] = defaultdict(list)
    failed = {"answer_failures": 0, "judge_failures": 0}
    lat: list[float] = []
    total = sum(len(q) for q in qsets.values())
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("answer + judge", total=total)
        for sample, qs in qsets.items():
            ns = mem.with_namespace(sample)
            for q in qs:
                t = time.perf_counter()
                try:
                    generated = answer(llm, q["q"], recall_for(ns, llm, q["q"], args))
                except ClawMemoryError as exc:
                    console.print(f"answer failed: {exc}", markup=False)
                    failed["answer_failures"] += 1
                    per_cat[q["cat"]].append(0)
                    bar.advance(task)
                    continue
                try:
                    per_cat[q["cat"]].append(int(judge(llm, template, q["q"], q["gold"],
                                                       generated)))
                except ClawMemoryError as exc:
                    console.print(f"judge failed: {exc}", markup=False)
                    failed["judge_failures"] += 1
                lat.append(time.perf_counter() - t)
                bar.advance(task)
    every = [v for rows in per_cat.values() for v in rows]
    return {
        "J": statistics.fmean(every) if every else 0.0,
        "by_cat": {CATEGORIES[c]: statistics.fmean(v) for c, v in sorted(per_cat.items())},
        "questions": total, "judged": len(every), **failed,
        "decompose": bool(args.decompose), "mode": args.qa_mode, "top_k": args.top_k,
        "model": llm.model, "p50_s": statistics.median(lat) if lat else 0.0,
    }


def report_qa(console: Console, r: dict[str, Any]) -> None:
    title = (f"LoCoMo QA, LLM judge J ({r['judged']} of {r['questions']} questions judged;"
             f" model {r['model']}; recall {r['mode']} top {r['top_k']}"
             f"{'; decomposed' if r['decompose'] else ''}; answer failures"
             f" {r['answer_failures']}, judge failures {r['judge_failures']})")
    t = Table(title=title)
    t.add_column("J", justify="right")
    for c in CATEGORIES.values():
        t.add_column(c, justify="right")
    t.add_column("p50 s", justify="right")
    cats = [f"{r['by_cat'][c]:.3f}" if c in r["by_cat"] else "-" for c in CATEGORIES.values()]
    t.add_row(f"{r['J']:.3f}", *cats, f"{r['p50_s']:.2f}")
    console.print(t)

"""LoCoMo ranking experiments offline: re-rank stored evidence without re-running recall.

`bench/locomo.py` measures the engine end to end. This program answers "what if the fusion
were different?" in seconds per variant: it reads a LoCoMo database filled by
`bench/locomo.py --db DIR`, takes every turn's vector as the engine stores it and every
question's BM25 scores from the store, and then scores each variant with numpy. Every turn of
a conversation is a candidate here (the engine keeps the top of each list), so its numbers
read about 0.015 above the end-to-end ones but move with them. The rows of ADR 0007 and
docs/benchmark-history.md marked "harness" come from here.

    .venv/bin/python bench/locomo.py --modes hybrid --db /tmp/locomo   # fill once
    .venv/bin/python bench/locomo_rerank.py --db /tmp/locomo
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table

from clawmemory import Memory, Settings
from clawmemory.model import Filter
from clawmemory.search.sanitize import content_terms, sanitize_terms
from locomo import CATEGORIES, DEFAULT_DATA, KS, questions, turns

F32 = npt.NDArray[np.float32]


@dataclass
class Conversation:
    """One conversation as matrices: turns in dialogue order, questions as rows."""

    dia: list[str]
    docs: F32  # stored vectors, one row per turn
    queries: F32  # query embeddings, one row per question
    bm25: F32  # (questions, turns) BM25 relevance from the store, 0 where no match
    adjacent: F32  # (turns, turns) 1 where two turns follow each other in a session
    speaker: F32  # (questions, turns) 1 where the turn's speaker is the one the question names
    evidence: list[npt.NDArray[np.int64]]
    categories: list[int]


def load(mem: Memory, conv: dict[str, Any]) -> Conversation:
    ns = mem.with_namespace(conv["sample_id"])
    items = turns(conv)
    order = {it["metadata"]["dia_id"]: i for i, it in enumerate(items)}
    records = sorted(ns.list(limit=100_000, kind="episode"),
                     key=lambda r: order.get(r.metadata.get("dia_id"), 10**9))
    dia = [r.metadata["dia_id"] for r in records]
    qs, _ = questions(conv, set(dia))
    docs = np.stack([v for _, v in mem.components.embed_documents(records)])
    queries = np.stack([mem.components.embed_query(q["q"]) for q in qs])
    bm25 = np.zeros((len(qs), len(records)), dtype=np.float32)
    index = {r.id: i for i, r in enumerate(records)}
    for qi, q in enumerate(qs):
        terms = content_terms(sanitize_terms(q["q"]))
        for hit in mem.store_backend.keyword_search(ns.namespace, terms, Filter(), limit=1000):
            bm25[qi, index[hit.info.id]] = hit.relevance
    adjacent = np.zeros((len(records), len(records)), dtype=np.float32)
    for i in range(len(records) - 1):
        if records[i].session_id == records[i + 1].session_id:
            adjacent[i, i + 1] = adjacent[i + 1, i] = 1
    names = [conv["conversation"]["speaker_a"], conv["conversation"]["speaker_b"]]
    roles = np.array([r.source_role for r in records])
    speaker = np.zeros_like(bm25)
    for qi, q in enumerate(qs):
        named = [n for n in names if re.search(rf"\b{re.escape(n.split()[0])}\b", q["q"])]
        if len(named) == 1:
            speaker[qi] = roles == named[0]
    return Conversation(dia, docs, queries, bm25, adjacent, speaker,
                        [np.array([dia.index(e) for e in q["evidence"]]) for q in qs],
                        [q["cat"] for q in qs])


def _unit(x: F32) -> F32:
    out: F32 = x / np.linalg.norm(x, axis=-1, keepdims=True)
    return out


def cosines(c: Conversation, centred: bool, feedback: float = 0.0, top: int = 2,
            first: F32 | None = None) -> F32:
    """Query-turn cosines, around the conversation's mean vector when ``centred``. With
    ``feedback``, the query moves towards the mean of the ``top`` turns ranked by ``first``."""
    mu = c.docs.mean(0) if centred else np.zeros(c.docs.shape[1], dtype=np.float32)
    d, q = _unit(c.docs - mu), _unit(c.queries - mu)
    if feedback and first is not None:
        best = np.argsort(-first, axis=1)[:, :top]
        q = _unit(q + feedback * d[best].mean(1))
    out: F32 = q @ d.T
    return out


def fused(c: Conversation, cos: F32, text_weight: float, smoothing: float, pool: int,
          speaker_boost: float = 0.0) -> F32:
    """The engine's weighted fusion, neighbour smoothing and candidate gate, in matrix form."""
    top = c.bm25.max(1, keepdims=True)
    top[top == 0] = 1
    gate = _top_mask(cos, pool) | (_top_mask(c.bm25, pool) & (c.bm25 > 0))
    f = np.where(gate, text_weight * c.bm25 / top + (1 - text_weight) * (cos + 1) / 2, 0)
    f = (f + smoothing * (f @ c.adjacent) * gate) * (1 + speaker_boost * c.speaker)
    out: F32 = np.where(gate, f, -1)
    return out


def _top_mask(s: F32, k: int) -> npt.NDArray[np.bool_]:
    if k >= s.shape[1]:
        return np.ones_like(s, dtype=bool)
    mask = np.zeros_like(s, dtype=bool)
    np.put_along_axis(mask, np.argpartition(-s, k, axis=1)[:, :k], True, axis=1)
    return mask


Variant = Callable[[Conversation], F32]


def variants() -> dict[str, Variant]:
    def hybrid(centred: bool, wt: float, nb: float = 0.15, pool: int = 50, fb: float = 0.0,
               spk: float = 0.0) -> Variant:
        def run(c: Conversation) -> F32:
            cos = cosines(c, centred)
            if fb:
                cos = cosines(c, centred, fb, 2, fused(c, cos, wt, nb, pool, spk))
            return fused(c, cos, wt, nb, pool, spk)
        return run

    return {
        "keyword (BM25, no smoothing)": lambda c: c.bm25,
        "vector, plain cosine": lambda c: cosines(c, False),
        "vector, centred cosine (default)": lambda c: cosines(c, True),
        "hybrid plain cosine 0.5/0.5": hybrid(False, 0.5),
        "hybrid plain cosine 0.4/0.6": hybrid(False, 0.4),
        "hybrid centred 0.5/0.5": hybrid(True, 0.5),
        "hybrid centred 0.4/0.6 (default)": hybrid(True, 0.4),
        "  pool 100 instead of 50": hybrid(True, 0.4, pool=100),
        "  smoothing 0.1 instead of 0.15": hybrid(True, 0.4, nb=0.1),
        "  smoothing 0.25 instead of 0.15": hybrid(True, 0.4, nb=0.25),
        "  + query feedback 0.6 × top 2": hybrid(True, 0.4, fb=0.6),
        "  + feedback + speaker boost 0.1": hybrid(True, 0.4, fb=0.6, spk=0.1),
        "  + speaker boost 0.3": hybrid(True, 0.4, spk=0.3),
    }


def evaluate(convs: list[Conversation], fn: Variant) -> tuple[list[float], dict[int, float]]:
    per_cat: dict[int, list[list[float]]] = defaultdict(list)
    for c in convs:
        scores = fn(c)
        for qi, ev in enumerate(c.evidence):
            rank = np.empty(scores.shape[1], dtype=np.int64)
            rank[np.argsort(-scores[qi], kind="stable")] = np.arange(scores.shape[1])
            per_cat[c.categories[qi]].append([float(np.mean(rank[ev] < k)) for k in KS])
    rows = [r for v in per_cat.values() for r in v]
    overall = [statistics.fmean(r[i] for r in rows) for i in range(len(KS))]
    return overall, {k: statistics.fmean(r[1] for r in v) for k, v in sorted(per_cat.items())}


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
    console = Console(width=160)
    mem = Memory.open(db, settings=Settings(db=db))
    with console.status("embedding turns and reading BM25 scores ..."):
        convs = [load(mem, conv) for conv in json.loads(Path(args.data).read_text())]
    t = Table(title=f"LoCoMo re-ranked offline ({sum(len(c.evidence) for c in convs)} questions;"
              " every turn a candidate)")
    for col in ["variant", *(f"R@{k}" for k in KS), *(f"{n} @10" for n in CATEGORIES.values())]:
        t.add_column(col, justify="left" if col == "variant" else "right")
    for name, fn in variants().items():
        overall, cats = evaluate(convs, fn)
        t.add_row(name, *(f"{v:.3f}" for v in overall),
                  *(f"{cats[k]:.3f}" if k in cats else "-" for k in CATEGORIES))
    console.print(t)
    mem.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

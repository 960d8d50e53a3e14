"""Same hits before and after a change to the recall path: record, then compare, field by field.

    .venv/bin/python bench/recall_diff.py record --db D.db --out before.json
    (change the code)
    .venv/bin/python bench/recall_diff.py record --db D.db --out after.json
    .venv/bin/python bench/recall_diff.py compare before.json after.json

A speed change to recall must not change what it returns. ``record`` opens an existing store
read-only, with the clock fixed (``--now``, default: one day after its newest memory), and
asks each namespace questions built from its own memories (so any store will do and no data
file is needed): for ``--per-namespace`` memories spread over the namespace, five of its
words, its first 300 characters, and its last four words asked ``as_of`` a day after it was
stored, in every mode of ``--modes``. It writes each recall's hits: id, score and the whole
explanation.

``compare`` prints the first differences and exits 1 if there is any. Floats are compared to a
relative 1e-12: sums over sets run in an order that changes with each process's string
hashing, so the last bits of a score differ between two runs of the same code.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from clawmemory import Memory
from clawmemory.errors import ClawMemoryError

DAY = 86_400.0


def _questions(mem: Memory, namespace: str, n: int) -> list[tuple[str, float | None]]:
    """(question, as_of or None) built from ``n`` memories spread over the namespace."""
    records = mem.with_namespace(namespace).list(limit=100_000)
    if not records:
        return []
    step = max(1, len(records) // n)
    out: list[tuple[str, float | None]] = []
    for r in records[::step][:n]:
        words = r.content.split()
        out.append((" ".join(words[1:6]) or r.content, None))
        out.append((r.content[:300], None))
        out.append((" ".join(words[-4:]) or r.content, r.created_at + DAY))
    return out


def record(args: argparse.Namespace) -> int:
    clock = [0.0]  # set below, before the first recall reads it
    mem = Memory.open(args.db, read_only=True, create=False, warm=False,
                      clock=lambda: clock[0])
    out: list[dict[str, Any]] = []
    try:
        namespaces = (args.namespaces.split(",") if args.namespaces
                      else mem.parts.shared.store.namespaces())
        newest = max((r.created_at for ns in namespaces
                      for r in mem.with_namespace(ns).list(limit=1)), default=0.0)
        clock[0] = args.now if args.now is not None else newest + DAY
        for ns in namespaces:
            view = mem.with_namespace(ns)
            for question, as_of in _questions(mem, ns, args.per_namespace):
                for mode in args.modes.split(","):
                    extra: dict[str, Any] = {"as_of": as_of} if as_of is not None else {}
                    try:
                        hits = view.recall(question, mode=mode, limit=args.limit, touch=False,
                                           **extra)
                        got: Any = [{"id": h.memory.id, "score": h.score,
                                     "explain": h.explain.to_dict()} for h in hits]
                    except ClawMemoryError as exc:
                        got = f"{type(exc).__name__}: {exc}"
                    out.append({"namespace": ns, "question": question, "as_of": as_of,
                                "mode": mode, "hits": got})
    finally:
        mem.close()
    Path(args.out).write_text(json.dumps({"now": clock[0], "recalls": out}, indent=0))
    print(f"{len(out)} recalls from {len(namespaces)} namespace(s) -> {args.out}")
    return 0


def compare(args: argparse.Namespace) -> int:
    a = json.loads(Path(args.before).read_text())
    b = json.loads(Path(args.after).read_text())
    if len(a["recalls"]) != len(b["recalls"]):
        print(f"different recalls: {len(a['recalls'])} vs {len(b['recalls'])}")
        return 1
    shown = 0
    differing = 0
    for ra, rb in zip(a["recalls"], b["recalls"], strict=True):
        if _same(ra, rb):
            continue
        differing += 1
        if shown < args.show:
            shown += 1
            print(f"--- {ra['namespace']} {ra['mode']} as_of={ra['as_of']}:"
                  f" {ra['question'][:80]!r}")
            _show(ra["hits"], rb["hits"])
    print(f"{differing} of {len(a['recalls'])} recalls differ")
    return 1 if differing else 0


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _show(ha: Any, hb: Any) -> None:
    if isinstance(ha, str) or isinstance(hb, str) or len(ha) != len(hb):
        print(f"  before: {ha if isinstance(ha, str) else [h['id'] for h in ha]}")
        print(f"  after:  {hb if isinstance(hb, str) else [h['id'] for h in hb]}")
        return
    for i, (x, y) in enumerate(zip(ha, hb, strict=True)):
        if x != y:
            for key in ("id", "score"):
                if not _same(x[key], y[key]):
                    print(f"  hit {i} {key}: {x[key]!r} -> {y[key]!r}")
            for key, value in x["explain"].items():
                if not _same(value, y["explain"].get(key)):
                    print(f"  hit {i} explain.{key}: {value!r} -> {y['explain'].get(key)!r}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="recall on a store and write every hit")
    r.add_argument("--db", required=True, help="an existing SQLite store (opened read-only)")
    r.add_argument("--out", required=True)
    r.add_argument("--namespaces", default="", help="comma-separated (default: all)")
    r.add_argument("--per-namespace", type=int, default=40, help="memories questions come from")
    r.add_argument("--modes", default="keyword,vector,hybrid")
    r.add_argument("--limit", type=int, default=10)
    r.add_argument("--now", type=float, default=None, help="the fixed clock (epoch seconds)")
    c = sub.add_parser("compare", help="compare two recordings; exit 1 on any difference")
    c.add_argument("before")
    c.add_argument("after")
    c.add_argument("--show", type=int, default=5, help="differing recalls to print")
    args = p.parse_args()
    return record(args) if args.command == "record" else compare(args)


if __name__ == "__main__":
    sys.exit(main())

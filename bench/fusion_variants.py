"""Fusion variants re-scored offline on the engine's own candidate lists (ADR 0011's tables).

`bench/recall_quality.py` measures recall end to end. This program answers "what if the lists
were fused differently?" in seconds per variant: for every question of a corpus it runs the
engine's candidate lists once (keyword BM25, vector cosine, entity matches, exactly as
`Retriever.recall` builds them), keeps their raw scores and the sequence links between
candidates, and then ranks them with each variant in numpy. Ranking factors are left out (every
memory of these corpora is equally new and unreinforced), so a variant's numbers equal the
end-to-end ones up to ties.

    .venv/bin/python bench/recall_quality.py --db /tmp/rq --modes hybrid   # fill once
    .venv/bin/python bench/fusion_variants.py --db /tmp/rq
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from rich.console import Console
from rich.table import Table

from clawmemory.model import Filter
from clawmemory.search.pipeline import Candidates, RecallRequest, Retriever
from clawmemory.search.sanitize import content_terms, sanitize_terms
from clawmemory.text import tokenize
from recall_quality import (
    DEFAULT_DATA,
    PEERS,
    Corpus,
    load_peers,
    locomo_corpora,
    peers_corpus,
    settings_for,
)

F = npt.NDArray[np.float64]
LIMIT = 25


@dataclass
class Lists:
    """One question's candidates (the union of the three lists) with their raw scores."""

    bm25: F  # 0 where the keyword list does not hold the candidate
    cos: F  # centred cosine of every candidate (the engine computes it for all)
    in_vec: npt.NDArray[np.bool_]  # in the vector list itself
    ent: F  # entity score (Σ 1/mention_count), 0 where absent
    pairs: npt.NDArray[np.int64]  # (m, 2) sequence-linked candidate pairs
    gold: list[int]  # indices of the gold candidates
    n_gold: int  # gold items in total (some may be missing from every list)
    category: str
    bm25_res: F  # BM25 of the query without the words of the entity names it matched
    ent_terms: int  # query words covered by matched entity names
    termset: list[frozenset[str]]  # the query words each candidate contains (stemmed)
    n_terms: int = 0  # the query's content words


def capture(corpus: Corpus, every: int = 1) -> list[Lists]:
    mem = corpus.mem
    retriever = mem.parts.retrieval.retriever()
    out = []
    for q in corpus.questions[::every]:
        req = RecallRequest(mem.namespace, q.text, LIMIT, Filter.build(), time.time(), "hybrid")
        pool = max(retriever.cfg.candidate_pool, LIMIT * 2)
        kw, _ = retriever.keyword(req, pool)
        qv, vec = retriever._vector_side(req, pool)
        ent = retriever.entity(req, pool) if retriever.entity_search else None
        ids: dict[str, int] = {}
        for c in (kw, vec, ent):
            for info, _ in (c.items if c else []):
                ids.setdefault(info.id, len(ids))
        n = len(ids)
        bm25, e = np.zeros(n), np.zeros(n)
        in_vec = np.zeros(n, dtype=bool)
        if kw.via is None:
            for info, s in kw.items:
                bm25[ids[info.id]] = s
        for info, _ in vec.items:
            in_vec[ids[info.id]] = True
        for info, s in (ent.items if ent else []):
            e[ids[info.id]] = s
        assert retriever.vectors is not None
        sims = retriever.vectors.similarities(mem.namespace, qv, list(ids))
        cos = np.array([sims.get(i, -1.0) for i in ids])
        links = mem.store_backend.links(mem.namespace, list(ids))
        pairs = [(ids[a], ids[lk.other_id]) for a, lks in links.items() for lk in lks
                 if lk.origin == "sequence" and lk.other_id in ids]
        records = mem.store_backend.get_many(mem.namespace, list(ids))
        keyed = {r.id: (r.metadata.get("dia_id") if corpus.key == "dia_id" else r.content)
                 for r in records}
        gold = [ids[i] for i in ids if keyed.get(i) in q.gold]
        res, covered = residual(retriever, req, pool, ent, ids)
        terms = {t: set(tokenize(t)) for t in content_terms(sanitize_terms(q.text))}
        sets = {}
        for r in records:
            stems = set(tokenize(f"{r.key or ''} {r.content} {' '.join(r.tags)} {r.source or ''}"))
            sets[r.id] = frozenset(t for t, tt in terms.items() if tt and tt <= stems)
        out.append(Lists(bm25, cos, in_vec, e, np.array(pairs, dtype=np.int64).reshape(-1, 2),
                         gold, len(q.gold), q.category, res, covered,
                         [sets.get(i, frozenset()) for i in ids], len(terms)))
    return out


def residual(retriever: Retriever, req: RecallRequest, pool: int, ent: Candidates | None,
             ids: dict[str, int]) -> tuple[F, int]:
    """BM25 of the query's words minus those of the entity names the entity list matched."""
    terms = content_terms(sanitize_terms(req.query))
    names = {w for d in (ent.detail.values() if ent else []) for n in d.split(", ")
             for w in sanitize_terms(n)}
    rest = [t for t in terms if t not in names]
    out = np.zeros(len(ids))
    if len(rest) == len(terms):
        for h in retriever.store.keyword_search(req.namespace, terms, req.flt, limit=pool):
            if h.info.id in ids:
                out[ids[h.info.id]] = h.relevance
        return out, 0
    for h in retriever.store.keyword_search(req.namespace, rest, req.flt, limit=pool):
        if h.info.id in ids:
            out[ids[h.info.id]] = h.relevance
    return out, len(terms) - len(rest)


Variant = Callable[[Lists], F]


def smooth(x: Lists, f: F, weight: float = 0.15) -> F:
    """The engine's neighbour smoothing: each candidate gains weight × its linked ones' scores."""
    if weight and len(x.pairs):
        support = np.zeros_like(f)
        np.add.at(support, x.pairs[:, 0], f[x.pairs[:, 1]])
        return f + weight * support
    return f


def keyword_only(x: Lists) -> F:
    return np.where(x.bm25 > 0, smooth(x, x.bm25 / max(x.bm25.max(), 1e-9)), -np.inf)


def vector_only(x: Lists) -> F:
    return np.where(x.in_vec, x.cos, -np.inf)


def shipped(x: Lists, wt: float = 0.4, wv: float = 0.6, we: float = 0.0) -> F:
    """ADR 0007: 0.4 × bm25/max + 0.6 × (cos + 1)/2 (+ entity/max), then smoothing."""
    top = x.bm25.max()
    text = x.bm25 / top if top > 0 else x.bm25
    ent = x.ent / x.ent.max() if x.ent.max() > 0 else x.ent
    return smooth(x, wt * text + wv * (x.cos + 1) / 2 + we * ent)


def minmax(s: F, present: npt.NDArray[np.bool_]) -> F:
    vals = s[present]
    if len(vals) == 0:
        return np.zeros_like(s)
    lo, hi = vals.min(), vals.max()
    out = (s - lo) / (hi - lo) if hi > lo else np.ones_like(s)
    return np.where(present, out, 0.0)


def mmfused(x: Lists, wt: float = 0.4, wv: float = 0.6) -> F:
    k = x.bm25 / x.bm25.max() if x.bm25.max() > 0 else x.bm25
    return smooth(x, wt * k + wv * minmax(x.cos, np.ones_like(x.in_vec)))


def rrf(x: Lists, k: float = 60, wt: float = 1, wv: float = 1, we: float = 0.5) -> F:
    def ranks(s: F, present: npt.NDArray[np.bool_]) -> F:
        order = np.argsort(-np.where(present, s, -np.inf), kind="stable")
        r = np.empty(len(s))
        r[order] = np.arange(1, len(s) + 1)
        return np.where(present, 1 / (k + r), 0.0)
    return (wt * ranks(x.bm25, x.bm25 > 0) + wv * ranks(x.cos, x.in_vec)
            + we * ranks(x.ent, x.ent > 0))


def standardised(s: F, present: npt.NDArray[np.bool_], floor: float | None) -> F:
    """search/fusion.py's z-scores: over the list's members, floored at -floor."""
    vals = s[present]
    if len(vals) < 2 or vals.std() < 1e-9:
        return np.where(present, 1.0, -(floor or 0.0))
    z = (s - vals.mean()) / vals.std()
    return z if floor is None else np.maximum(z, -floor)


def tied(x: Lists, tie: float) -> F:
    """BM25 of candidates with the same query words within ``tie`` of the best of them, raised
    to that best (search/fusion.py)."""
    best: dict[frozenset[str], float] = {}
    for i, words in enumerate(x.termset):
        if x.bm25[i] > 0:
            best[words] = max(best.get(words, 0.0), x.bm25[i])
    top = np.array([best.get(w, 0.0) for w in x.termset])
    return np.where((x.bm25 > 0) & (x.bm25 >= (1 - tie) * top), top, x.bm25)


def calibrated(x: Lists, wt: float = 0.6, wv: float = 0.4, we: float = 0.1, tie: float = 0.2,
               bonus: float = 0.5, floor: float | None = 0.5) -> F:
    """The default fusion (search/fusion.py), then smoothing."""
    b = tied(x, tie) if tie else x.bm25
    f = wt * standardised(b, b > 0, floor) + wv * standardised(x.cos, x.in_vec, floor)
    if b.max() > 0:
        f = f + bonus * (b == b.max())
    if we and x.ent.max() > 0:
        f = f + we * x.ent / x.ent.max()
    return smooth(x, f - f.min())


def variants() -> dict[str, Variant]:
    return {
        "keyword only (+smoothing)": keyword_only,
        "vector only": vector_only,
        "weighted 0.4/0.6 (shipped before)": shipped,
        "weighted 0.4/0.6 + entity 0.1": lambda x: shipped(x, we=0.1),
        "RRF 1/1/0.5": rrf,
        "min-max cosine 0.4/0.6": mmfused,
        "z-scores 0.5/0.5": lambda x: calibrated(x, 0.5, 0.5, 0, 0, 0, None),
        "z-scores 0.6/0.4, floor 0.5": lambda x: calibrated(x, 0.6, 0.4, 0, 0, 0),
        "  + same-words ties 0.2": lambda x: calibrated(x, 0.6, 0.4, 0, 0.2, 0),
        "  + keyword top bonus 0.5": lambda x: calibrated(x, 0.6, 0.4, 0, 0.2, 0.5),
        "  + entity 0.1 = calibrated (default)": calibrated,
        "calibrated, ties 0.1": lambda x: calibrated(x, tie=0.1),
        "calibrated, ties 0.3": lambda x: calibrated(x, tie=0.3),
        "calibrated, every same-words candidate tied": lambda x: calibrated(x, tie=1.0),
        "calibrated, weights 0.5/0.5": lambda x: calibrated(x, 0.5, 0.5),
        "calibrated, weights 0.7/0.3": lambda x: calibrated(x, 0.7, 0.3),
        "calibrated, no top bonus": lambda x: calibrated(x, bonus=0),
        "calibrated, floor 1.0": lambda x: calibrated(x, floor=1.0),
        "weighted, names left to the entity list (0.4)": without_names,
    }


def without_names(x: Lists, we: float = 0.4) -> F:
    """Tried: BM25 of the query without the words of the entity names it matched (a name
    scored once, flat, by the entity list), weighted with min-max cosine."""
    top = x.bm25_res.max()
    text = x.bm25_res / top if top > 0 else x.bm25_res
    ent = (x.ent > 0).astype(float)
    return smooth(x, 0.4 * text + 0.6 * minmax(x.cos, np.ones_like(x.in_vec)) + we * ent)


def evaluate(qs: Sequence[Lists], fn: Variant) -> dict[str, float]:
    r1, r10, mrr = [], [], []
    for x in qs:
        s = fn(x)
        order = np.argsort(-s, kind="stable")
        rank = np.empty(len(s), dtype=np.int64)
        rank[order] = np.arange(len(s))
        ok = np.isfinite(s)
        gr = sorted(int(rank[g]) for g in x.gold if ok[g])
        r1.append(sum(r < 1 for r in gr) / x.n_gold)
        r10.append(sum(r < 10 for r in gr) / x.n_gold)
        mrr.append(1 / (gr[0] + 1) if gr and gr[0] < LIMIT else 0.0)
    return {"R@1": statistics.fmean(r1), "R@10": statistics.fmean(r10),
            "MRR": statistics.fmean(mrr)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--db", required=True)
    p.add_argument("--corpora", default="peers-2k,peers-20k,locomo")
    p.add_argument("--peers", default=str(PEERS))
    p.add_argument("--data", default=str(DEFAULT_DATA))
    p.add_argument("--set", dest="overrides", action="append", default=[])
    p.add_argument("--recapture", action="store_true",
                   help="run the lists again (after changing the engine or --set)")
    p.add_argument("--only", default="", help="comma-separated variant name prefixes")
    args = p.parse_args(argv)
    folder = Path(args.db)
    s = settings_for(folder / "x.db", args.overrides)
    peers = load_peers(Path(args.peers))
    cache = folder / "fusion_lists.pkl"
    captured: dict[str, list[Lists]] = (
        pickle.loads(cache.read_bytes()) if cache.exists() and not args.recapture else {})
    for name in args.corpora.split(","):
        if name in captured:
            continue
        t = time.perf_counter()
        if name.startswith("peers-"):
            n = int(name.removeprefix("peers-").removesuffix("k")) * 1000
            cs = [peers_corpus(folder, n, 100 if n <= 2000 else 200, peers, s)]
        else:
            cs = locomo_corpora(folder, Path(args.data), s)
        captured[name] = [x for c in cs for x in capture(c)]
        print(f"captured {name} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        cache.write_bytes(pickle.dumps(captured))
    captured = {k: v for k, v in captured.items() if k in args.corpora.split(",")}
    t = Table(title="Fusion variants on the engine's candidate lists (R@1 / R@10 / MRR)")
    t.add_column("variant")
    for name in captured:
        t.add_column(name, justify="right")
    only = [o for o in args.only.split(",") if o]
    for vname, fn in variants().items():
        if only and not any(vname.startswith(o) for o in only):
            continue
        cells = []
        for qs in captured.values():
            r = evaluate(qs, fn)
            cells.append(f"{r['R@1']:.3f} / {r['R@10']:.3f} / {r['MRR']:.3f}")
        t.add_row(vname, *cells)
    Console(width=200).print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())

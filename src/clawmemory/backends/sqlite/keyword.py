"""Keyword search on SQLite: FTS5's ``bm25()``, with very common terms pruned and the rows it
ranks bounded on large tables (ADR 0006).

FTS5 has no WAND/block-max pruning: an OR query computes ``bm25()`` for every row matching any
term before ``ORDER BY ... LIMIT`` keeps the best. Finding a term's rows without ranking them
is cheap (FTS5 walks its doclist in rowid order), so when the query's terms match more than
``storage.keyword_candidates`` rows, the rarest terms pick at most that many rows, newest
first, and every term scores them (``backends.base.candidate_plans``, the PostgreSQL
backend's plans too). Below the cap every matching row is ranked, as before.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from typing import Any

from clawmemory.backends.base import Plan, TextHit, candidate_plans
from clawmemory.backends.sqlite.sql import (
    RANK_COLUMNS,
    RANK_SELECT,
    filter_sql,
    fts_query,
    rank_hit,
    searchable_row,
)
from clawmemory.model import Filter

__all__ = ["COMMON_TERM_DOCS", "COMMON_TERM_SHARE", "KeywordSearch"]

# Keyword query pruning (ADR 0006): a term matching more than this many rows, and more than
# this share of the table, is left out of the query when rarer terms remain.
COMMON_TERM_DOCS = 5000
COMMON_TERM_SHARE = 0.05
TERM_CACHE_MAX = 20_000

Query = Callable[..., builtins.list[tuple[Any, ...]]]  # (sql, args=()) -> rows


class KeywordSearch:
    """The SQLite store's keyword search, over the store's ``query`` (its one connection and
    lock). ``weights``: BM25's field weights (key, content, tags, source, a turn's context:
    ``rel > 0`` drops the rows only a context weighted 0 matched); ``keyword_candidates``: at
    most this many rows ranked once more match. Remembers the terms' capped counts."""

    def __init__(self, query: Query, weights: tuple[float, float, float, float, float],
                 keyword_candidates: int) -> None:
        self.query = query
        self._weights = weights
        self.keyword_candidates = keyword_candidates
        self._term_counts: dict[str, tuple[int, int]] = {}  # term -> (capped count, size)

    def keyword_search(
        self, namespace: str, terms: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        if not terms or limit <= 0:
            return []
        size = int(self.query("SELECT COALESCE(MAX(seq), 0) FROM memories")[0][0])
        terms = self._without_common_terms(terms, size)
        where, args = filter_sql(namespace, flt)
        whole = fts_query(terms)
        # Rank inside FTS5 first and join only the best rows: joining every matching row
        # before sorting doubles the cost on large tables. When the filter (namespace, kind,
        # tags...) leaves too few of them, rank the filtered rows exactly instead.
        inner, cap = max(limit * 4, 200), self.keyword_candidates
        matches, exact = self._matches(whole, terms, size, max(cap, inner) + 1)
        if matches <= cap:  # every matching row is ranked: the exact BM25 order
            plans: builtins.list[tuple[str, str]] = [(whole, "")]
        else:
            counts = [self._capped_count(t, self._count_cap(size), size) for t in terms]
            order = sorted(range(len(terms)), key=lambda i: counts[i])
            plans = [_expressions(terms, p) for p in candidate_plans(order, counts, size, cap)]
        found: dict[str, tuple[Any, ...]] = {}
        for chosen, rest in plans:
            for r in self._ranked(chosen, rest, cap if matches > cap else 0, where, args,
                                  inner, limit):
                found.setdefault(r[0], r)
            if len(found) >= limit:
                break
        if len(found) < limit and matches > min(cap, inner) and not exact:
            matches = self._count(whole, max(cap, inner) + 1)
        if len(found) < limit and matches > min(cap, inner):
            # CROSS JOIN keeps the full-text match the outer loop: with a time filter
            # (as_of, created_since...) the planner drove the join from the memories' index
            # and ran the match once per row (LoCoMo, 600 rows: 20 ms -> 430 ms).
            rows = self.query(
                f"SELECT {RANK_SELECT}, -bm25(memories_fts, ?, ?, ?, ?, ?) AS rel FROM"
                f" memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid"
                f" WHERE memories_fts MATCH ? AND rel > 0 AND {where} ORDER BY rel DESC LIMIT ?",
                [*self._weights, whole, *args, limit],
            )
            found = {r[0]: r for r in rows}
        ranked = sorted(found.values(), key=lambda r: -float(r[RANK_COLUMNS]))[:limit]
        return [rank_hit(r) for r in ranked]

    def _ranked(
        self, chosen: str, rest: str, cap: int, where: str, args: Sequence[Any],
        inner: int, limit: int,
    ) -> builtins.list[tuple[Any, ...]]:
        """The best ``limit`` memories passing the filter among the best ``inner`` rows
        matching ``chosen`` (an FTS5 expression), each scored by every query term.

        BM25 is a sum over the query's phrases, each scored in the rows holding it, so
        ``(chosen) AND (rest)`` scores the rows holding another term exactly as the whole OR
        query would, and ``chosen`` alone the others (where ``rest`` adds nothing): together
        every row of ``chosen``. With ``cap``, only the newest ``cap`` rows of
        ``chosen`` are ranked: a rowid bound FTS5 applies while walking its doclists, so the
        work is bounded whatever the words. Newest, because truncating must pick some rows
        without ranking them, and among rows holding the same rare words the recent memory is
        the likelier one wanted (recall's recency factor says so too, and an older one is
        often superseded); it is also deterministic."""
        floor: builtins.list[Any] = []
        if cap:
            rows = self.query("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"
                              " ORDER BY rowid DESC LIMIT 1 OFFSET ?", (chosen, cap - 1))
            floor = [rows[0][0]] if rows else []
        bound = " AND rowid >= ?" if floor else ""
        # The rows holding another term, scored by every term; then every row of ``chosen``
        # scored by its own terms, which is exact for the rows holding no other term (their
        # other terms add nothing). Not ``(chosen) NOT (rest)``: FTS5's bm25() walks the whole
        # doclist of each term of its expression to count the rows holding it, and the rest
        # are the common terms (at 1M, ~4-25 ms a statement, once more per statement).
        exprs = [f"({chosen}) AND ({rest})", chosen] if rest else [chosen]
        # One statement per expression, merged here: as a UNION ALL under the join SQLite's
        # planner made the same work take ~30 times as long at 1M.
        best: dict[Any, Any] = {}
        for e in exprs:
            for seq, score in self.query(
                "SELECT rowid, -bm25(memories_fts, ?, ?, ?, ?, ?) AS rel FROM memories_fts"
                f" WHERE memories_fts MATCH ?{bound} AND rel > 0 ORDER BY rel DESC LIMIT ?",
                [*self._weights, e, *floor, inner]):
                # A row of the first statement has its exact score; the second statement's
                # would leave out the other terms'. A row holding another term that the
                # first statement did not return ranks below its ``inner`` rows anyway.
                best.setdefault(seq, score)
        ranked = sorted(best.items(), key=lambda r: -float(r[1]))[:inner]
        rel = dict(ranked)
        out: builtins.list[tuple[Any, ...]] = []
        start = 0
        while start < len(ranked) and len(out) < limit:
            # The best rows first, ``limit`` and their ties at a time: the filter seldom drops
            # any, so the rest of the ``inner`` rows are rarely read.
            stop = min(start + limit, len(ranked))
            while stop < len(ranked) and ranked[stop][1] == ranked[stop - 1][1]:
                stop += 1
            part = [seq for seq, _ in ranked[start:stop]]
            start = stop
            # NOT INDEXED: each row by its rowid; the planner preferred the namespace index (a
            # scan of the namespace, ~300 ms at 1M).
            # The searchable columns come along: the row is read anyway, and recall wants to
            # know which query words each hit holds (TextHit.text).
            rows = self.query(
                f"SELECT {RANK_SELECT}, m.seq, m.key, m.content, m.tags, m.source FROM memories m"
                f" NOT INDEXED WHERE m.seq IN ({', '.join('?' * len(part))}) AND {where}",
                [*part, *args])
            # (ranking fields, relevance, seq, searchable text)
            n = RANK_COLUMNS
            out += [(*r[:n], rel[r[n]], r[n], searchable_row(*r[n + 1:n + 5])) for r in rows]
        # Equal scores in the order of the rows (SQLite reads an IN list's rowids ascending).
        out.sort(key=lambda r: (-float(r[RANK_COLUMNS]), r[RANK_COLUMNS + 1]))
        return [(*r[:RANK_COLUMNS + 1], r[RANK_COLUMNS + 2]) for r in out[:limit]]

    def _matches(self, whole: str, terms: Sequence[str], size: int,
                 cap: int) -> tuple[int, bool]:
        """How many rows the query matches, or an upper bound (and whether it is exact). The
        bound costs no query when it is under ``keyword_candidates``: the table's size, or
        the sum of the terms' remembered counts. Counting the whole query walked up to 5,001
        rows per recall (~0.4 ms at 20k memories) to learn what the bound already says."""
        if size <= self.keyword_candidates:
            return size, False
        if size > max(COMMON_TERM_DOCS, int(COMMON_TERM_SHARE * size)):  # counts remembered
            bound = sum(self._capped_count(t, self._count_cap(size), size) for t in terms)
            if bound <= self.keyword_candidates:
                return bound, False
        return self._count(whole, cap), True

    def _count(self, expression: str, cap: int) -> int:
        """Rows matching an FTS5 expression, counted up to ``cap`` (no ranking: a doclist
        walk)."""
        return int(self.query(
            "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?"
            " LIMIT ?)", (expression, cap))[0][0])

    def _count_cap(self, size: int) -> int:
        """How far a term's rows are counted: past the pruning threshold, and past
        ``keyword_candidates`` so that the plans can add counts up to it."""
        return max(COMMON_TERM_DOCS, int(COMMON_TERM_SHARE * size), self.keyword_candidates)

    def _without_common_terms(self, terms: Sequence[str], size: int) -> Sequence[str]:
        """Drop terms that match a large share of a large table, while rarer terms remain.

        FTS5 scores every row matching any OR-ed term; a word in 28% of 100k rows costs
        ~15 ms of BM25 while adding little (its IDF is small next to a rare term's). Counting
        is capped, so the check itself stays cheap, and tables under COMMON_TERM_DOCS /
        COMMON_TERM_SHARE rows are never pruned. ADR 0006."""
        if len(terms) < 2:
            return terms
        common = max(COMMON_TERM_DOCS, int(COMMON_TERM_SHARE * size))
        if size <= common:
            return terms
        kept = [t for t in terms if self._capped_count(t, self._count_cap(size), size) <= common]
        return kept or terms

    def _capped_count(self, term: str, cap: int, size: int) -> int:
        """Rows matching ``term``, counted up to cap + 1. Remembered while the table stays
        within 5% of the size it had when counted: whether a word is common changes slowly,
        and recounting on every query cost ~1 ms at 100k rows."""
        known = self._term_counts.get(term)
        if known is not None and abs(size - known[1]) <= size * 0.05:
            return known[0]
        n = self._count(fts_query([term]), cap + 1)
        if len(self._term_counts) >= TERM_CACHE_MAX:
            self._term_counts.clear()
        self._term_counts[term] = (n, size)
        return n


def _expressions(terms: Sequence[str], plan: Plan) -> tuple[str, str]:
    """A plan as FTS5 expressions: the rows it picks, and the other terms (OR-ed)."""
    op, picked = plan
    chosen = (" AND " if op == "&" else " OR ").join(fts_query([terms[i]]) for i in picked)
    rest = fts_query([t for i, t in enumerate(terms) if i not in picked])
    return chosen, rest

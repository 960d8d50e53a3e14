"""Keyword search on PostgreSQL: a ``tsvector`` per memory with a GIN index, ranked so weighted
fusion sees the same kind of number as SQLite's BM25 (ADR 0015).

``ts_rank`` has no inverse document frequency: a word in every memory counts as much as a name
in one. So each query term is ranked on its own (``ts_rank`` with the field weights of
``recall.weight_*`` and length normalisation) and weighted by BM25's idf,
``ln(1 + (N − df + 0.5) / (df + 0.5))``: rare terms decide, as in FTS5's ``bm25()``. df is
counted with the GIN index, capped and remembered per term while the table stays within 5% of
the size it was counted at (the term cache: a stale count only shifts an idf slightly, so
replicas need not share it).

At scale, ranking every memory that contains a common word is what costs (ADR 0006 measured it
on SQLite). Here the rarest terms pick the candidates (up to ``[postgres]
keyword_candidates`` rows by their counts) and every term scores them; only when that finds
fewer than ``limit`` memories does the full OR query run.
"""

from __future__ import annotations

import builtins
import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import SUBSTRING_SCAN_ROWS, RankInfo, TextHit, candidate_plans
from clawmemory.backends.postgres.sql import (
    RANK_COLUMNS,
    RANK_SELECT,
    PostgresOptions,
    filter_sql,
    fold,
    rank_hit,
)
from clawmemory.model import Filter, MemoryRecord

__all__ = ["SearchMixin"]

TERM_CACHE_ROWS = 5000  # below this table size counts are exact on every query
TERM_CACHE_MAX = 20_000
COUNT_CAP = 1000  # rows read at most to count one term
SIZE_TTL_S = 5.0


class SearchMixin:
    if TYPE_CHECKING:
        _weights: tuple[float, float, float, float, float]
        _term_counts: dict[str, tuple[int, int]]
        options: PostgresOptions

        def query(self, sql: str, args: Sequence[Any] = ()) -> builtins.list[
            tuple[Any, ...]]: ...

    # --- terms ---------------------------------------------------------------------------------
    def _rank_weights(self) -> tuple[builtins.list[float], float]:
        """ts_rank's weight array {D, C, B, A} = {source, content, tags, key}, scaled into
        (0, 1] as ts_rank requires, and the factor that scales the rank back."""
        key, content, tags, source, _ = self._weights
        top = max(self._weights[:4]) or 1.0
        return [max(w / top, 1e-6) for w in (source, content, tags, key)], top

    def _table_size(self) -> int:
        """The table's size (its highest row number), remembered for a few seconds once past
        ``TERM_CACHE_ROWS``: from there on counts are only reused within 5% of it anyway."""
        known: tuple[int, float] | None = getattr(self, "_size_seen", None)
        if known is not None and known[0] > TERM_CACHE_ROWS and \
                time.monotonic() - known[1] < SIZE_TTL_S:
            return known[0]
        size = int(self.query("SELECT COALESCE(MAX(seq), 0) FROM memories")[0][0])
        self._size_seen = (size, time.monotonic())
        return size

    def _doc_counts(self, terms: Sequence[str]) -> tuple[builtins.list[int], int]:
        """Rows matching each term (whole table) and the table's size.

        Counting a row means reading it from the table (PostgreSQL cannot count from a GIN
        index alone), so counts are bounded. A common word's count comes from the planner's
        statistics of the tsvector column (``pg_stats.most_common_elems``, ANALYZE's frequency
        of the ~1,000 most common lexemes). Other terms are counted up to ``COUNT_CAP`` rows; a
        term past it gets an estimate between the cap and the least frequent common lexeme.
        Counts are remembered while the table stays within 5% of the size they were taken at."""
        size = self._table_size()
        out: dict[str, int] = {}
        todo = []
        for t in terms:
            known = self._term_counts.get(t)
            if size > TERM_CACHE_ROWS and known is not None and abs(size - known[1]) <= size * 0.05:
                out[t] = known[0]
            else:
                todo.append(t)
        if todo:
            common = self._common_lexemes(size) if size > TERM_CACHE_ROWS else {}
            rows = self.query("SELECT t, querytree(phraseto_tsquery('clawmem', t)) FROM"
                               " unnest(%s::text[]) t", (todo,))
            lexeme = {str(t): str(q).strip("'") for t, q in rows}
            count = [t for t in todo if lexeme.get(t) not in common]
            found = dict(zip(count, self.query("SELECT " + ", ".join(
                "(SELECT count(*) FROM (SELECT 1 FROM memories WHERE fts @@"
                " phraseto_tsquery('clawmem', %s) LIMIT %s) s)" for _ in count),
                [x for t in count for x in (t, COUNT_CAP + 1)])[0], strict=True)) if count else {}
            # Past the cap and not among the common lexemes: between the two.
            rarest_common = min(common.values(), default=0.0) * size
            past_cap = int(math.sqrt((COUNT_CAP + 1) * max(rarest_common, COUNT_CAP + 1)))
            if len(self._term_counts) >= TERM_CACHE_MAX:
                self._term_counts.clear()
            for t in todo:
                if t in found:
                    n = int(found[t]) if int(found[t]) <= COUNT_CAP else past_cap
                else:
                    n = int(common[lexeme[t]] * size)
                out[t] = n
                self._term_counts[t] = (n, size)
        return [out[t] for t in terms], size

    def _common_lexemes(self, size: int) -> dict[str, float]:
        """Lexeme -> share of rows holding it, for the most common lexemes (ANALYZE's
        statistics), re-read when the table has grown or shrunk by 5% since."""
        cached: tuple[dict[str, float], int] | None = getattr(self, "_lexemes", None)
        if cached is not None and abs(size - cached[1]) <= size * 0.05:
            return cached[0]
        rows = self.query(
            "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats"
            " WHERE schemaname = current_schema() AND tablename = 'memories' AND"
            " attname = 'fts'")
        found: dict[str, float] = {}
        if rows and rows[0][0] is not None:
            found = dict(zip(rows[0][0], rows[0][1], strict=False))
        self._lexemes = (found, size)
        return found

    # --- keyword search ------------------------------------------------------------------------
    def keyword_search(
        self, namespace: str, terms: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        folded = builtins.list(dict.fromkeys(f for f in (fold(t) for t in terms) if f))
        if not folded or limit <= 0:
            return []
        cap = self.options.keyword_candidates
        counts, size = self._doc_counts(folded)
        size = max(size, 1)
        idf = [math.log(1 + (size - n + 0.5) / (n + 0.5)) for n in counts]
        order = sorted(range(len(folded)), key=lambda i: counts[i])
        found: dict[str, tuple[Any, ...]] = {}
        for plan in candidate_plans(order, counts, size, cap):
            for r in self._ranked(namespace, folded, idf, plan, flt, limit, cap):
                found.setdefault(r[0], r)
            if len(found) >= limit:
                break
        n = RANK_COLUMNS  # then the relevance and the seq
        rows = sorted(found.values(), key=lambda r: (-r[n], -r[n + 1]))[:limit]
        return [rank_hit(r) for r in rows]

    def _ranked(
        self, namespace: str, terms: Sequence[str], idf: Sequence[float],
        match: tuple[str, Sequence[int]], flt: Filter, limit: int, cap: int,
    ) -> builtins.list[tuple[Any, ...]]:
        """The best ``limit`` of at most ``cap`` memories matching ``match`` (the terms it
        names, joined by ``|`` or ``&``), each scored by every term: Σ idf × ts_rank. The
        ``cap`` rows are the first the index gives, in no particular order: ranking costs a
        read of each row, so the work is bounded whatever the words."""
        weights, top = self._rank_weights()
        # A turn's context (ADR 0036) is ranked inside the row, as FTS5 ranks a field: one
        # ts_rank over both vectors, the row's whole length normalising it. Ranked on its own
        # beside the row, LoCoMo hybrid R@10 fell from 0.778 to 0.766; inside, 0.799. Its words
        # carry label D, the source's weight (ts_rank has four labels, all taken).
        context = self._weights[4] > 0
        where, args = filter_sql(namespace, flt)
        qs = ", ".join(f"phraseto_tsquery('clawmem', %s) AS q{i}" for i in range(len(terms)))
        vector = "m.fts || m.fts_context" if context else "m.fts"
        score = " + ".join(f"%s * ts_rank(%s::real[], {vector}, q.q{i}, 1)"
                           for i in range(len(terms)))
        score_args: builtins.list[Any] = []
        for i in range(len(terms)):
            score_args += [idf[i] * top, weights]
        joined = f" {'||' if match[0] == '|' else '&&'} ".join(f"q.q{i}" for i in match[1])
        found = f"(m.fts @@ ({joined}) OR m.fts_context @@ ({joined}))" if context else \
            f"m.fts @@ ({joined})"
        return self.query(
            f"SELECT * FROM (SELECT {RANK_SELECT}, ({score}) AS rel, m.seq FROM (SELECT {qs}) q,"
            f" memories m WHERE {found} AND {where} LIMIT %s) s"
            " ORDER BY rel DESC, seq DESC LIMIT %s",
            [*score_args, *terms, *args, cap, limit])

    def rank_info(self, namespace: str, ids: Sequence[str], flt: Filter) -> dict[str, RankInfo]:
        if not ids:
            return {}
        where, args = filter_sql(namespace, flt)
        rows = self.query(f"SELECT {RANK_SELECT}, 0 FROM memories m WHERE {where} AND"
                           " m.id = ANY(%s)", [*args, builtins.list(ids)])
        return {r[0]: rank_hit(r).info for r in rows}

    def like_search(
        self, namespace: str, tokens: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        tokens = [t for t in tokens if t][:16]
        if not tokens:
            return []
        where, args = filter_sql(namespace, flt)
        hits_expr = " + ".join(
            "(strpos(lower(m.content), %s) > 0 OR strpos(lower(COALESCE(m.key, '')), %s) > 0)"
            "::int" for _ in tokens)
        tok_args: builtins.list[Any] = []
        for t in tokens:
            tok_args.extend([t.lower(), t.lower()])
        rows = self.query(
            f"SELECT * FROM (SELECT {RANK_SELECT}, ({hits_expr}) AS rel FROM (SELECT * FROM"
            f" memories m WHERE {where} ORDER BY m.created_at DESC LIMIT %s) m) s WHERE rel > 0"
            " ORDER BY rel DESC, created_at DESC LIMIT %s",
            [*tok_args, *args, SUBSTRING_SCAN_ROWS, limit])
        return [rank_hit(r) for r in rows]

    def archive_search(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> builtins.list[MemoryRecord]:
        folded = builtins.list(dict.fromkeys(f for f in (fold(t) for t in terms) if f))
        if not folded:
            return []
        weights, _ = self._rank_weights()
        query = " || ".join(["phraseto_tsquery('clawmem', %s)"] * len(folded))
        rows = self.query(
            f"SELECT a.record FROM (SELECT {query} AS q) q, memories_archive a WHERE"
            " a.namespace = %s AND a.fts @@ q.q ORDER BY ts_rank(%s::real[], a.fts, q.q, 1)"
            " DESC, a.seq DESC LIMIT %s", [*folded, namespace, weights, limit])
        import json

        return [MemoryRecord.from_dict(json.loads(r[0])) for r in rows]

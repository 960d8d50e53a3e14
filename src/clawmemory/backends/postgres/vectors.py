"""Vectors in PostgreSQL: pgvector's ``vec_memories`` table with an HNSW index (cosine), the
model and dimension locked in ``meta``, and the vector queue (ADR 0013) as a table.

No row is cached in a process: every replica searches the same rows, so a vector one replica
stores is found by the next search of any other (ADR 0015); only a large namespace's centre is
remembered for two seconds. Similarity is cosine around the
namespace's mean vector (ADR 0007), as on SQLite:

    cos_c(q, d) = (d·q − d·c − q·c + c·c) / (|q − c| · |d − c|),  |d − c|² = 1 − 2 d·c + c·c

The centre ``c`` of a namespace is kept in ``vector_centres`` and recomputed when the vectors
stored since moved its row count by 10%, or brought the namespace to ``centre_min_rows`` (the
frozen-mean rule of ``VectorMatrix``); every replica reads the same centre. A namespace with
fewer than ``exact_search_rows`` vectors is searched exactly; a larger one asks the HNSW index
for the nearest neighbours of ``q − c`` (ranking by ``d·(q − c)``, the numerator of cos_c up to
constants) and re-scores them exactly.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from clawmemory.backends.postgres import schema
from clawmemory.backends.postgres.store import PostgresStore
from clawmemory.vectors.base import QueueEntry

__all__ = ["PostgresVectorQueue", "PostgresVectors"]

log = logging.getLogger("clawmemory")
F32 = npt.NDArray[np.float32]
# The centred score of a row, from pgvector's negative inner product (<#>): parameters are
# q, c, q·c − c·c, |q − c|, c·c.
_CENTRED = ("((-(v.embedding <#> %(q)s)) - (-(v.embedding <#> %(c)s)) - %(qc_cc)s)"
            " / (%(qn)s * sqrt(greatest(1 + 2 * (v.embedding <#> %(c)s) + %(cc)s, 1e-12)))")
_PLAIN = "(-(v.embedding <#> %(q)s))"
CENTRE_TTL_S = 2.0


def _unit(v: Any) -> F32:
    a = np.asarray(v, dtype=np.float32).reshape(-1)
    n = float(np.linalg.norm(a))
    return a / n if n > 0 else a


class PostgresVectors:
    def __init__(self, store: PostgresStore, centre_min_rows: int = 50,
                 centre_min_norm: float = 0.0) -> None:
        self.store = store
        self.centre_min_rows = centre_min_rows
        self.centre_min_norm = centre_min_norm
        self.dimension: int | None = None
        self._centres: dict[str, tuple[F32 | None, int, float]] = {}

    # --- binding -------------------------------------------------------------------------------
    def bind(self, model: str, dimension: int) -> str | None:
        have_dim, have_model = self.store.meta("embedding_dimension"), self.store.meta(
            "embedding_model")
        if have_dim is None:
            if self.store.read_only:
                return (f"vector search unavailable: {self.store.path} is open read-only and"
                        " holds no vectors yet; keyword and entity recall still work")
            self._create(model, dimension)
            return None
        if int(have_dim) != dimension or (have_model and have_model != model):
            return (
                f"vector search disabled: {self.store.path} holds {have_dim}-d vectors from"
                f" {have_model!r} but the embedder {model!r} gives {dimension}-d vectors."
                " Keyword and entity recall still work; run `clawmem reindex` to rebuild"
                " the vectors with the current embedder.")
        self.dimension = dimension
        return None

    def _create(self, model: str, dimension: int) -> None:
        o = self.store.options
        with self.store.write():
            self.store.execute("SELECT pg_advisory_xact_lock(%s, 1)", (schema.ADVISORY_CLASS,))
            if self.store.meta("embedding_dimension") is None:
                schema.create_vector_table(self.store.current_tx(), dimension, o.hnsw_m,
                                           o.hnsw_ef_construction)
                for key, value in (("embedding_dimension", str(dimension)),
                                   ("embedding_model", model)):
                    self.store.execute("INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO"
                                       " UPDATE SET value = excluded.value", (key, value))
        self.dimension = dimension

    def reset(self, model: str, dimension: int) -> None:
        self._centres.clear()
        with self.store.write():
            self.store.execute("DROP TABLE IF EXISTS vec_memories")
            self.store.execute("DROP TABLE IF EXISTS vector_centres")
            self.store.execute("DELETE FROM meta WHERE key IN ('embedding_dimension',"
                               " 'embedding_model')")
        self.dimension = None
        self._create(model, dimension)

    # --- writing -------------------------------------------------------------------------------
    def upsert(
        self,
        namespace: str,
        items: Sequence[tuple[str, F32]],
        *,
        queued: Mapping[str, int] | None = None,
    ) -> int:
        """Store vectors and take their memories off the queue in one transaction; with
        ``queued`` only those still queued with that token (the text did not change since)."""
        if not items or self.dimension is None:
            return 0
        s = self.store
        with s.write():
            # A vector is derived data: should a crash lose this commit, the queue row it
            # deletes comes back with it and the memory is embedded again. So the commit need
            # not wait for the disk (the records' own commits do).
            s.execute("SET LOCAL synchronous_commit = off")
            seqs = dict(s.execute("SELECT id, seq FROM memories WHERE namespace = %s AND"
                                  " id = ANY(%s)", (namespace, [i for i, _ in items])).fetchall())
            wanted = [(seqs[i], _unit(v)) for i, v in items if i in seqs]
            if not wanted:
                return 0
            if queued is None:
                s.execute("DELETE FROM vector_queue WHERE seq = ANY(%s)",
                          ([q for q, _ in wanted],))
            else:
                by_seq = {seqs[i]: t for i, t in queued.items() if i in seqs}
                gone = {int(r[0]) for r in s.execute(
                    "DELETE FROM vector_queue q USING unnest(%s::bigint[], %s::bigint[])"
                    " AS u(seq, token) WHERE q.seq = u.seq AND q.token = u.token RETURNING"
                    " q.seq", ([q for q, _ in wanted], [by_seq.get(q, -1) for q, _ in wanted])
                ).fetchall()}
                wanted = [(q, v) for q, v in wanted if q in gone]
            had = {int(r[0]) for r in s.execute("SELECT seq FROM vec_memories WHERE"
                                                " seq = ANY(%s)", ([q for q, _ in wanted],))}
            s.current_tx().cursor().executemany(
                "INSERT INTO vec_memories (seq, namespace, embedding) VALUES (%s, %s, %s)"
                " ON CONFLICT (seq) DO UPDATE SET embedding = excluded.embedding",
                [(q, namespace, v) for q, v in wanted])
            added = sum(1 for q, _ in wanted if q not in had)
            if added:
                s.execute("INSERT INTO vector_centres (namespace, added) VALUES (%s, %s)"
                          " ON CONFLICT (namespace) DO UPDATE SET added = vector_centres.added"
                          " + excluded.added", (namespace, added))
        return len(wanted)

    def forget(self, namespace: str, ids: Sequence[str]) -> None:
        """Nothing to do: a vector is deleted with its memory (foreign key)."""

    def drop_namespace(self, namespace: str) -> None:
        self._centres.pop(namespace, None)
        if self.dimension is None:
            return
        with self.store.write():
            self.store.execute("DELETE FROM vec_memories WHERE namespace = %s", (namespace,))
            self.store.execute("DELETE FROM vector_centres WHERE namespace = %s", (namespace,))

    # --- reading -------------------------------------------------------------------------------
    def _centre(self, namespace: str) -> tuple[F32 | None, int]:
        """The namespace's centre (None below ``centre_min_rows`` vectors) and its row count,
        recomputed when the rows stored since moved the count by 10%. A large namespace's
        centre (past ``exact_search_rows``) is remembered for ``CENTRE_TTL_S``: a recall reads
        it up to three times, and it moves only when a tenth of the rows are new."""
        known = self._centres.get(namespace)
        if known is not None and time.monotonic() - known[2] < CENTRE_TTL_S:
            return known[0], known[1]
        centre, n = self._read_centre(namespace)
        if n > self.store.options.exact_search_rows:
            self._centres[namespace] = (centre, n, time.monotonic())
        return centre, n

    def _read_centre(self, namespace: str) -> tuple[F32 | None, int]:
        rows = self.store.query("SELECT centre, centre_rows, added FROM vector_centres WHERE"
                                 " namespace = %s", (namespace,))
        if not rows:
            return None, 0
        centre, n, added = rows[0]
        # Stale when a tenth of the rows are new, or when the namespace has just reached
        # centre_min_rows (a centre computed below it was never used): centred from that row
        # on, as VectorMatrix is.
        stale = added * 10 >= max(n, 1) or n < self.centre_min_rows <= n + added
        if stale and not self.store.read_only:
            centre, n = self._recentre(namespace)
        if centre is None or not self.centre_min_rows or n < self.centre_min_rows:
            return None, int(n)
        values = centre.to_numpy() if hasattr(centre, "to_numpy") else centre
        c = np.asarray(values, dtype=np.float32)
        if float(np.linalg.norm(c)) < self.centre_min_norm:
            return None, int(n)  # diverse texts: plain cosine (VectorMatrix's rule, ADR 0029)
        return c, int(n)

    def _recentre(self, namespace: str) -> tuple[Any, int]:
        with self.store.write():
            row = self.store.execute(
                "UPDATE vector_centres c SET centre = s.centre, centre_rows = s.n, added = 0"
                " FROM (SELECT avg(embedding) AS centre, count(*) AS n FROM vec_memories WHERE"
                " namespace = %s) s WHERE c.namespace = %s RETURNING c.centre, c.centre_rows",
                (namespace, namespace)).fetchone()
        return (row[0], int(row[1])) if row else (None, 0)

    def _params(self, q: F32, c: F32 | None) -> tuple[str, dict[str, Any]]:
        if c is None:
            return _PLAIN, {"q": q}
        qc, cc = float(q @ c), float(c @ c)
        qn = float(np.sqrt(max(1.0 - 2.0 * qc + cc, 1e-12)))
        return _CENTRED, {"q": q, "c": c, "qc_cc": qc - cc, "qn": qn, "cc": cc}

    def search(
        self, namespace: str, query: F32, k: int, *, allowed: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if self.dimension is None or k <= 0:
            return []
        q = _unit(query)
        c, n = self._centre(namespace)
        score, p = self._params(q, c)
        p.update(ns=namespace, k=k)
        if allowed is not None:
            p["ids"] = list(allowed)
            sql = (f"SELECT m.id, {score} AS s FROM vec_memories v JOIN memories m ON m.seq ="
                   " v.seq WHERE m.namespace = %(ns)s AND m.id = ANY(%(ids)s) ORDER BY s DESC,"
                   " v.seq LIMIT %(k)s")
            return [(str(i), float(s)) for i, s in self.store.query(sql, p)]  # type: ignore[arg-type]
        if n + 1 <= self.store.options.exact_search_rows:
            sql = (f"SELECT m.id, {score} AS s FROM vec_memories v JOIN memories m ON m.seq ="
                   " v.seq WHERE v.namespace = %(ns)s ORDER BY s DESC, v.seq LIMIT %(k)s")
            return [(str(i), float(s)) for i, s in self.store.query(sql, p)]  # type: ignore[arg-type]
        return self._approximate(q, c, score, p, k)

    def _approximate(self, q: F32, c: F32 | None, score: str, p: dict[str, Any],
                     k: int) -> list[tuple[str, float]]:
        """The HNSW index's ``k`` nearest neighbours of q − c, re-scored exactly."""
        direction = q if c is None else _unit(q - c)
        p.update(dir=direction, cand=k)
        ef = max(self.store.options.hnsw_ef_search, k)
        with self.store.connection() as conn, conn.transaction():
            # The namespace is large (past exact_search_rows): walk the index rather than sort
            # the namespace (enable_sort), even where the planner's statistics are not current
            # yet; iterative scans keep walking until k rows of this namespace are found.
            conn.execute("SELECT set_config('hnsw.ef_search', %s, true), set_config("
                         "'hnsw.iterative_scan', 'relaxed_order', true), set_config("
                         "'enable_sort', 'off', true)", (str(int(ef)),))
            rows = conn.execute(
                f"SELECT m.id, {score} AS s FROM (SELECT v.seq, v.embedding FROM vec_memories v"
                " WHERE v.namespace = %(ns)s ORDER BY v.embedding <=> %(dir)s LIMIT %(cand)s) v"
                " JOIN memories m ON m.seq = v.seq ORDER BY s DESC, v.seq LIMIT %(k)s",
                p).fetchall()
        return [(str(i), float(s)) for i, s in rows]

    def similarities(self, namespace: str, query: F32, ids: Sequence[str]) -> dict[str, float]:
        if self.dimension is None or not ids:
            return {}
        c, _ = self._centre(namespace)
        score, p = self._params(_unit(query), c)
        p.update(ns=namespace, ids=list(ids))
        rows = self.store.query(
            f"SELECT m.id, {score} FROM vec_memories v JOIN memories m ON m.seq = v.seq"
            " WHERE m.namespace = %(ns)s AND m.id = ANY(%(ids)s)", p)  # type: ignore[arg-type]
        return {str(i): float(s) for i, s in rows}

    def missing(self, namespace: str, limit: int) -> list[str]:
        if self.dimension is None:
            return []
        rows = self.store.query(
            "SELECT m.id FROM memories m WHERE m.namespace = %s AND m.valid_until IS NULL AND"
            " NOT EXISTS (SELECT 1 FROM vec_memories v WHERE v.seq = m.seq) ORDER BY m.seq"
            " LIMIT %s", (namespace, limit))
        return [str(r[0]) for r in rows]

    def count(self, namespace: str) -> int:
        if self.dimension is None:
            return 0
        return int(self.store.query("SELECT COUNT(*) FROM vec_memories WHERE namespace = %s",
                                     (namespace,))[0][0])

    def centred(self, namespace: str) -> bool:
        # One row of vector_centres, as search reads it: COUNT(*) over the namespace's vectors
        # cost 23 ms per recall at 100k (bench/speed.py --backend postgres).
        return self.dimension is not None and self._centre(namespace)[0] is not None


class PostgresVectorQueue:
    """The vector queue of a PostgreSQL store (``backends/sqlite/queue.py`` on SQLite): rows
    written in the writer's transaction, taken off by ``PostgresVectors.upsert``."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store

    def enqueue(self, namespace: str, ids: Sequence[str], now: float) -> list[QueueEntry]:
        with self.store.write():
            rows = self.store.execute("SELECT id, seq FROM memories WHERE namespace = %s AND"
                                      " id = ANY(%s)", (namespace, list(ids))).fetchall()
            values = [(int(seq), namespace, random.getrandbits(62), now) for _, seq in rows]
            self.store.execute(
                "INSERT INTO vector_queue (seq, namespace, token, queued_at) SELECT u.seq, %s,"
                " u.token, %s FROM unnest(%s::bigint[], %s::bigint[]) AS u(seq, token)"
                " ON CONFLICT (seq) DO UPDATE SET token = excluded.token, queued_at ="
                " excluded.queued_at, attempts = 0, last_error = NULL",
                (namespace, now, [v[0] for v in values], [v[2] for v in values]))
        return [(namespace, str(mid), v[0], v[2]) for (mid, _), v in zip(rows, values,
                                                                            strict=True)]

    def pending(
        self, namespace: str | None, limit: int, *, after: int = 0,
        max_attempts: int | None = None,
    ) -> list[QueueEntry]:
        return [(str(ns), str(i), int(seq), int(tok)) for ns, i, seq, tok in self.store.query(
            "SELECT q.namespace, m.id, q.seq, q.token FROM vector_queue q JOIN memories m"
            " ON m.seq = q.seq WHERE (%s::text IS NULL OR q.namespace = %s) AND q.seq > %s"
            " AND (%s::int IS NULL OR q.attempts < %s) ORDER BY q.seq LIMIT %s",
            (namespace, namespace, after, max_attempts, max_attempts, limit))]

    def size(self, namespace: str | None) -> int:
        return int(self.store.query(
            "SELECT COUNT(*) FROM vector_queue WHERE %s::text IS NULL OR namespace = %s",
            (namespace, namespace))[0][0])

    def failed(self, seqs: Sequence[int], error: str) -> None:
        with self.store.write():
            self.store.execute("UPDATE vector_queue SET attempts = attempts + 1, last_error = %s"
                               " WHERE seq = ANY(%s)", (error[:500], list(seqs)))

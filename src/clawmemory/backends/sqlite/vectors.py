"""Vectors in SQLite: sqlite-vec ``vec0`` (004's ``vec_memories``) is the durable store, the
dimension and model are locked in ``meta``, and an in-RAM ``VectorMatrix`` per namespace serves
searches. The ``vec_log`` journal (migration 002) keeps each process's matrix in step with
writes from other processes."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from clawmemory.backends.sqlite import vec_chunks
from clawmemory.backends.sqlite.sql import chunks
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.vectors.matrix import VectorMatrix

__all__ = ["SQLiteVectors"]

log = logging.getLogger("clawmemory")
F32 = npt.NDArray[np.float32]
# Keep the journal bounded; a process that fell further behind reloads its namespace fully.
LOG_KEEP = 200_000


class _Cache:
    def __init__(self, matrix: VectorMatrix, gen: int) -> None:
        self.matrix = matrix
        self.gen = gen
        self.by_seq: dict[int, str] = {}  # deleted rows can no longer be joined to their id

    def add(self, rows: Sequence[tuple[int, str, bytes]]) -> None:
        self.matrix.upsert((mid, np.frombuffer(blob, dtype=np.float32)) for _, mid, blob in rows)
        self.by_seq.update((seq, mid) for seq, mid, _ in rows)

    def add_block(self, seqs: Sequence[int], ids: Sequence[str], block: F32) -> None:
        """Rows of a load (``matrix.prepare()`` follows the last block)."""
        self.matrix.upsert_block(ids, block, prepare=False, absent=True)
        self.by_seq.update(zip(seqs, ids, strict=True))


class SQLiteVectors:
    def __init__(self, store: SQLiteStore, centre_min_rows: int = 50,
                 centre_min_norm: float = 0.0) -> None:
        self.store = store
        self.centre_min_rows = centre_min_rows
        self.centre_min_norm = centre_min_norm
        self.dimension: int | None = None
        self._caches: dict[str, _Cache] = {}
        self._lock = threading.RLock()
        self._chunks_readable: bool | None = None  # vec_chunks.py; checked on first load

    # --- binding -------------------------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        rows = self.store.query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def bind(self, model: str, dimension: int) -> str | None:
        have_dim, have_model = self._meta("embedding_dimension"), self._meta("embedding_model")
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
                " the vectors with the current embedder."
            )
        self.dimension = dimension
        return None

    def _create(self, model: str, dimension: int) -> None:
        with self.store.write():
            c = self.store.conn
            c.execute(
                "CREATE VIRTUAL TABLE IF NOT EXISTS vec_memories USING vec0(seq INTEGER PRIMARY"
                f" KEY, namespace TEXT partition key, embedding float[{int(dimension)}]"
                " distance_metric=cosine)"
            )
            c.execute(
                "INSERT OR REPLACE INTO meta VALUES ('embedding_dimension', ?)", (str(dimension),)
            )
            c.execute("INSERT OR REPLACE INTO meta VALUES ('embedding_model', ?)", (model,))
        self.dimension = dimension

    def reset(self, model: str, dimension: int) -> None:
        with self._lock:
            with self.store.write():
                c = self.store.conn
                c.execute("DROP TABLE IF EXISTS vec_memories")
                c.execute("DELETE FROM vec_log")
                c.execute(
                    "DELETE FROM meta WHERE key IN ('embedding_dimension', 'embedding_model')"
                )
            self._caches.clear()
            self._create(model, dimension)

    # --- writing -------------------------------------------------------------------------------
    def upsert(
        self,
        namespace: str,
        items: Sequence[tuple[str, F32]],
        *,
        queued: Mapping[str, int] | None = None,
    ) -> int:
        """Store vectors and take their memories off the vector queue, in one transaction.
        ``queued`` (id -> queue token): store only the vectors whose memory is still queued
        with that token, so a vector of text that changed (or a memory forgotten) meanwhile
        is dropped. Returns how many vectors were stored."""
        if not items or self.dimension is None:
            return 0
        with self._lock:
            self._sync(namespace)  # a first load happens here, outside the write lock
            with self.store.write():
                # Again inside the transaction: another connection may have committed vectors
                # while this one waited for the lock, and the generation taken below would
                # skip them for good (a server missed ~1 in 5 memories a CLI stored beside it).
                cache = self._sync(namespace)
                c = self.store.conn
                ids = [i for i, _ in items]
                seqs = dict(
                    c.execute(
                        f"SELECT id, seq FROM memories WHERE namespace = ? AND id IN"
                        f" ({', '.join('?' * len(ids))})",
                        (namespace, *ids),
                    ).fetchall()
                )
                kept = []
                for i, v in items:
                    if i not in seqs:
                        continue
                    if queued is None:
                        c.execute("DELETE FROM vector_queue WHERE seq = ?", (seqs[i],))
                    else:
                        c.execute("DELETE FROM vector_queue WHERE seq = ? AND token = ?",
                                  (seqs[i], queued.get(i)))
                        if not c.changes():
                            continue
                    kept.append((seqs[i], i, np.asarray(v, dtype=np.float32).tobytes()))
                for seq, _, blob in kept:
                    c.execute("DELETE FROM vec_memories WHERE seq = ?", (seq,))
                    c.execute(
                        "INSERT INTO vec_memories(seq, namespace, embedding) VALUES (?, ?, ?)",
                        (seq, namespace, blob),
                    )
                    c.execute(
                        "INSERT INTO vec_log(namespace, seq, op) VALUES (?, ?, 'u')",
                        (namespace, seq),
                    )
                gen = int(c.execute("SELECT COALESCE(MAX(gen), 0) FROM vec_log").fetchall()[0][0])
            cache.add(kept)
            cache.gen = gen
            return len(kept)

    def similarities(self, namespace: str, query: F32, ids: Sequence[str]) -> dict[str, float]:
        if self.dimension is None:
            return {}
        with self._lock:
            return self._sync(namespace).matrix.similarities(query, ids)

    def drop_namespace(self, namespace: str) -> None:
        with self._lock:
            self._caches.pop(namespace, None)
            if self.dimension is not None:
                with self.store.write():
                    self.store.conn.execute("DELETE FROM vec_memories WHERE namespace = ?",
                                            (namespace,))
                    self.store.conn.execute("DELETE FROM vec_log WHERE namespace = ?",
                                            (namespace,))

    def forget(self, namespace: str, ids: Sequence[str]) -> None:
        with self._lock:
            cache = self._caches.get(namespace)
            if cache is not None:
                cache.matrix.remove(ids)

    # --- reading -------------------------------------------------------------------------------
    def search(
        self, namespace: str, query: F32, k: int, *, allowed: Sequence[str] | None = None
    ) -> list[tuple[str, float]]:
        if self.dimension is None:
            return []
        with self._lock:
            return self._sync(namespace).matrix.search(query, k, allowed=allowed)

    def count(self, namespace: str) -> int:
        if self.dimension is None:
            return 0
        with self._lock:
            return len(self._sync(namespace).matrix)

    def centred(self, namespace: str) -> bool:
        if self.dimension is None:
            return False
        with self._lock:
            return self._sync(namespace).matrix.centred

    def missing(self, namespace: str, limit: int) -> list[str]:
        if self.dimension is None:
            return []
        rows = self.store.query(
            "SELECT m.id FROM memories m WHERE m.namespace = ? AND m.valid_until IS NULL"
            " AND NOT EXISTS"
            " (SELECT 1 FROM vec_memories v WHERE v.seq = m.seq) ORDER BY m.seq LIMIT ?",
            (namespace, limit),
        )
        return [r[0] for r in rows]

    # --- cache maintenance ---------------------------------------------------------------------
    def _sync(self, namespace: str) -> _Cache:
        """The namespace's matrix, brought up to date with the journal."""
        # Two scalar subqueries: SQLite answers a lone MIN or MAX from the index, but
        # MIN and MAX in one SELECT scan the whole journal (5 ms at 100k rows).
        head, floor = self.store.query(
            "SELECT COALESCE((SELECT MAX(gen) FROM vec_log), 0),"
            " COALESCE((SELECT MIN(gen) FROM vec_log), 0)"
        )[0]
        cache = self._caches.get(namespace)
        if cache is not None and cache.gen == head:
            return cache
        if cache is None or cache.gen < floor - 1:
            cache = self._caches[namespace] = self._load(namespace, int(head))
            return cache
        changes = self.store.query(
            "SELECT l.seq, m.id FROM vec_log l LEFT JOIN memories m ON m.seq = l.seq"
            " WHERE l.namespace = ? AND l.gen > ? GROUP BY l.seq",
            (namespace, cache.gen),
        )
        deleted = [
            cache.by_seq.pop(seq) for seq, mid in changes if mid is None and seq in cache.by_seq
        ]
        cache.matrix.remove(deleted)
        seqs = [seq for seq, mid in changes if mid is not None]
        for part in chunks(seqs, 500):
            cache.add(self._rows(f"v.seq IN ({', '.join('?' * len(part))})", part))
        cache.gen = int(head)
        self._trim(int(head))
        return cache

    def _rows(self, where: str, args: Sequence[object]) -> list[tuple[int, str, bytes]]:
        return [
            (int(seq), str(mid), bytes(blob))
            for seq, mid, blob in self.store.query(
                "SELECT v.seq, m.id, v.embedding FROM vec_memories v JOIN memories m"
                f" ON m.seq = v.seq WHERE {where}",
                args,
            )
        ]

    def _load(self, namespace: str, head: int) -> _Cache:
        if self._chunks_readable is None:
            self._chunks_readable = vec_chunks.chunks_readable(self.store.query)
        if self._chunks_readable:
            try:
                return self._load_chunks(namespace, head)
            except vec_chunks.ChunkLayoutError as exc:
                log.warning("reading vectors row by row: sqlite-vec's tables are not laid out"
                            " as expected (%s)", exc)
                self._chunks_readable = False
        cache = self._cache(head)
        cache.add(self._rows("v.namespace = ?", [namespace]))
        return cache

    def _load_chunks(self, namespace: str, head: int) -> _Cache:
        """The namespace's matrix from sqlite-vec's chunks (vec_chunks.py): the rows
        ``_rows`` returns, in its order, ~40 times as fast."""
        assert self.dimension is not None
        cache = self._cache(head)
        ids: dict[int, str] = dict(self.store.query(
            "SELECT seq, id FROM memories WHERE namespace = ?", (namespace,)))
        chunks = vec_chunks.partition_chunks(self.store.query, namespace)
        listed = [c.seqs.tolist() for c in chunks]
        absent: set[int] = set()
        if unknown := [s for seqs in listed for s in seqs if s not in ids]:
            ids.update(self._ids_of(unknown))  # as _rows's join: by seq alone
            absent = {s for s in unknown if s not in ids}  # a vector without its memory
        # Room for every row at once, as one upsert of them all would make.
        cache.matrix.reserve(sum(len(seqs) for seqs in listed) - len(absent))
        for n, (chunk, found) in enumerate(zip(chunks, listed, strict=True)):
            block = vec_chunks.chunk_vectors(self.store.query, chunk, self.dimension,
                                             first=n == 0)
            seqs = found
            if absent and not absent.isdisjoint(found):
                keep = [i for i, s in enumerate(found) if s not in absent]
                block, seqs = block[keep], [found[i] for i in keep]
            if seqs:
                cache.add_block(seqs, [ids[s] for s in seqs], block)
        cache.matrix.prepare()
        return cache

    def _ids_of(self, seqs: Sequence[int]) -> list[tuple[int, str]]:
        out: list[tuple[int, str]] = []
        for part in chunks(seqs, 500):
            out += self.store.query(
                f"SELECT seq, id FROM memories WHERE seq IN ({', '.join('?' * len(part))})", part)
        return out

    def _cache(self, head: int) -> _Cache:
        assert self.dimension is not None
        return _Cache(VectorMatrix(self.dimension, centre_min_rows=self.centre_min_rows,
                                   centre_min_norm=self.centre_min_norm), head)

    def _trim(self, head: int) -> None:
        if head % 10_000 == 0 and head > LOG_KEEP:
            with self.store.write():
                self.store.conn.execute("DELETE FROM vec_log WHERE gen < ?", (head - LOG_KEEP,))

"""A namespace's vectors read from sqlite-vec's own tables, a chunk at a time.

Scanning ``vec_memories`` (a ``vec0`` table) reads its vectors one row at a time: ~2 s per
100,000 rows on the 2-core box, so the first recall after opening a file of 1M memories spent
~22 s there, and one of 20k ~0.4 s. ``vec0`` keeps each partition's vectors in chunks: a row
of ``vec_memories_chunks`` per chunk (its capacity, a validity bitmap, the rowid of each slot)
and the chunk's vectors as one blob in ``vec_memories_vector_chunks00``. Reading those blobs
takes ~0.5 s for 1M vectors.

That layout is sqlite-vec's (0.1.x), not a public interface. So it is checked before use: the
tables' columns, each chunk's blob sizes, and the first and last vector of the first chunk and
of every chunk with an empty slot against what ``vec0`` itself returns for their rowids.
Anything unexpected, and the caller scans ``vec0``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["Chunk", "ChunkLayoutError", "chunk_vectors", "chunks_readable", "partition_chunks"]

Query = Callable[..., builtins.list[tuple[Any, ...]]]  # (sql, args=()) -> rows
Seqs = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]

_COLUMNS = {
    "vec_memories_chunks": ["chunk_id", "size", "sequence_id", "partition00", "validity", "rowids"],
    "vec_memories_vector_chunks00": ["rowid", "vectors"],
}


class ChunkLayoutError(Exception):
    """The chunk tables do not hold what this module expects: scan ``vec0`` instead."""


def chunks_readable(query: Query) -> bool:
    """Whether the chunk tables have the columns this module reads."""
    for table, columns in _COLUMNS.items():
        have = [r[1] for r in query(f"SELECT * FROM pragma_table_info('{table}')")]
        if have != columns:
            return False
    return True


class Chunk(NamedTuple):
    """One chunk of a partition: its id, which of its slots hold a vector, and their rowids."""

    chunk_id: int
    valid: npt.NDArray[np.bool_]
    seqs: Seqs


def partition_chunks(query: Query, namespace: str) -> list[Chunk]:
    """The namespace's chunks, in the order a ``vec0`` scan reads them. Raises
    ``ChunkLayoutError`` when a chunk's bitmap or rowids do not fit its capacity."""
    out = []
    for chunk_id, slots, validity, rowids in query(
            "SELECT chunk_id, size, validity, rowids FROM vec_memories_chunks"
            " WHERE partition00 = ? ORDER BY chunk_id", (namespace,)):
        size = int(slots)
        if len(rowids) != 8 * size or len(validity) != (size + 7) // 8:
            raise ChunkLayoutError(f"chunk {chunk_id} of {namespace!r}: unexpected sizes")
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        valid = bits[:size].astype(bool)
        out.append(Chunk(int(chunk_id), valid, np.frombuffer(rowids, dtype=np.int64)[valid]))
    return out


def chunk_vectors(query: Query, chunk: Chunk, dimension: int, *, first: bool = False) -> F32:
    """The vectors of a chunk's filled slots, in slot order (``first``: the first chunk read,
    checked against ``vec0`` even when full). Read one statement per chunk, not in one
    snapshot with the chunk list: the vector journal replays what changed meanwhile (the
    caller reads its ``head`` first). Raises ``ChunkLayoutError`` as above."""
    rows = query("SELECT vectors FROM vec_memories_vector_chunks00 WHERE rowid = ?",
                 (chunk.chunk_id,))
    size = len(chunk.valid)
    if not rows or len(rows[0][0]) != 4 * dimension * size:
        raise ChunkLayoutError(f"chunk {chunk.chunk_id}: no vectors, or not {size} of them")
    block: F32 = np.frombuffer(rows[0][0], dtype=np.float32).reshape(size, dimension)
    if first or not chunk.valid.all():  # a full chunk has no bitmap to misread
        _check(query, chunk.seqs, block[chunk.valid])
    return block if len(chunk.seqs) == size else block[chunk.valid]


def _check(query: Query, seqs: Seqs, block: F32) -> None:
    """A chunk's first and last rows are the vectors ``vec0`` gives for their rowids (a
    misread slot order, or validity bitmap, shows there)."""
    for i in sorted({0, len(seqs) - 1}) if len(seqs) else ():
        got = query("SELECT embedding FROM vec_memories WHERE seq = ?", (int(seqs[i]),))
        if not got or bytes(got[0][0]) != block[i].tobytes():
            raise ChunkLayoutError(f"row {int(seqs[i])} differs from vec0's own answer")

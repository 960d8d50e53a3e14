"""Pinned behaviour of the vector package (issue 16): what mutation testing showed no other test
held. The binary pre-selection of ``VectorMatrix`` (which rows are rescored, by sign-code
Hamming distance), backfill on the in-memory and PostgreSQL backends, the vector queue's
failure count, a namespace's vectors going with the namespace.

The matrices here are built so that the Hamming pre-selection and an exact search disagree:
that is the only way a test sees which rows the pre-selection kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from test_vectors import HashEmbedder

from clawmemory import Memory, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.jsonfile.store import JSONFileStore
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.backends.postgres.store import PostgresOptions, PostgresStore
from clawmemory.backends.registry import backend_of
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.errors import EmbeddingError
from clawmemory.vectors.matrix import VectorMatrix
from conftest import Clock, backend_params, postgres_url

F32 = npt.NDArray[np.float32]


def _binary(dimension: int, centre_min_rows: int = 0, half: bool = False) -> VectorMatrix:
    """A matrix that always pre-selects by Hamming distance (plain cosine by default), with
    float32 rows unless ``half``: these tests build rows a rounding would tie."""
    return VectorMatrix(dimension, binary_threshold=0, centre_min_rows=centre_min_rows,
                        half_precision=half)


def _exact_best(m: VectorMatrix, q: F32, ids: list[str]) -> str:
    """The exact nearest of ``ids`` (an ``allowed`` search never pre-selects)."""
    return m.search(q, 1, allowed=ids)[0][0]


# --- which rows the sign-code pre-selection keeps -----------------------------------------------
def test_rows_whose_signs_all_differ_are_not_rescored() -> None:
    """A row with a high cosine but every sign but one flipped loses to 250 rows whose signs
    all match the query: at least 200 candidates are found at Hamming distance 0."""
    q = np.full(64, 0.01, np.float32)
    q[0] = 1.0
    far = -q.copy()
    far[0] = 1.0  # cosine ≈ 0.99 with q, yet 63 of 64 signs differ
    near = []
    for i in range(250):
        v = np.full(64, 0.1, np.float32)
        v[0], v[1] = 0.5, 0.1 + 0.001 * i  # same signs as q, cosine ≈ 0.6
        near.append((f"d{i}", v))
    m = _binary(64)
    m.upsert([("far", far), *near])
    assert _exact_best(m, q, ["far", *(i for i, _ in near)]) == "far"
    best = _exact_best(m, q, [i for i, _ in near])
    assert m.search(q, 1) == [(best, pytest.approx(m.similarities(q, [best])[best]))]
    assert best == "d0"


def test_an_exact_zero_is_a_clear_sign_bit() -> None:
    """Only a positive component sets its bit: a query with exact zeros is nearest (Hamming 0)
    to a row whose other components are negative, not to rows that are positive there."""
    q = np.zeros(64, np.float32)
    q[0] = 1.0
    target = np.full(64, -0.01, np.float32)
    target[0] = 1.0
    decoys = [(f"d{i}", np.r_[np.float32(0.5), np.full(63, 0.1 + 0.001 * i, np.float32)])
              for i in range(250)]
    m = _binary(64)
    m.upsert([*decoys, ("target", target)])
    assert [i for i, _ in m.search(q, 1)] == ["target"]


def test_the_first_row_has_a_code_too() -> None:
    q = np.full(64, 0.125, np.float32)
    decoys = []
    for i in range(250):
        v = q.copy()
        v[i % 64] = -0.125  # one sign away from q, cosine 0.97
        decoys.append((f"d{i}", v))
    m = _binary(64)
    m.upsert([("first", q.copy()), *decoys])
    assert m.search(q, 1) == [("first", pytest.approx(1.0))]


def _ladder() -> tuple[VectorMatrix, F32]:
    """200 rows one sign from the query, then 20 rows two signs away (the best, by cosine, is
    "two0"), then 100 rows ten signs away."""
    q = np.full(64, 0.125, np.float32)
    rows: list[tuple[str, F32]] = []
    for i in range(200):
        v = q.copy()
        v[i % 64] = -0.125 - 0.0001 * i  # cosine 0.97
        rows.append((f"one{i}", v))
    for i in range(20):
        v = q.copy()
        v[[i, i + 1]] = -0.0001  # two tiny flips: cosine 0.98 ...
        v[63] *= 1 + 0.05 * i  # ... falling to 0.978 as this component grows
        rows.append((f"two{i}", v))
    for i in range(100):
        v = q.copy()
        v[i % 50 : i % 50 + 10] = -0.125
        rows.append((f"ten{i}", v))
    m = _binary(64)
    m.upsert(rows)
    return m, q


def test_the_pre_selection_keeps_200_candidates_for_a_small_k() -> None:
    """k = 1 asks for 20 candidates, raised to 200: exactly the 200 rows at distance 1, so the
    better rows at distance 2 are never rescored."""
    m, q = _ladder()
    exact = _exact_best(m, q, m.ids())
    assert exact == "two0"
    top = m.search(q, 1)[0][0]
    assert top == _exact_best(m, q, [f"one{i}" for i in range(200)])


def test_the_pre_selection_keeps_rescore_factor_times_k_candidates() -> None:
    """k = 11 asks for 11 × 20 = 220 candidates: the rows at distance 2 are rescored too."""
    m, q = _ladder()
    got = m.search(q, 11)
    assert got[0][0] == "two0"
    assert [i for i, _ in got] == [i for i, _ in m.search(q, 11, allowed=m.ids())]


@pytest.mark.parametrize("spread", ["wide", "clustered"])
def test_a_large_matrix_rescores_the_rows_a_full_histogram_would(spread: str) -> None:
    """From 50 × the candidates wanted, the cut is first estimated on every 16th distance and
    then found exactly among the rows it keeps: the rows rescored, and so the hits, are the
    ones a histogram of every row picks (12,000 rows, 200 candidates for k = 1..10; a
    clustered matrix puts many rows at one distance)."""
    from clawmemory.vectors import matrix

    rng = np.random.default_rng(7)
    n, d = 12_000, 64
    rows = rng.standard_normal((n, d)).astype(np.float32)
    if spread == "clustered":
        rows[: n // 2] = rows[0] + 0.01 * rows[: n // 2]
    m = _binary(d)
    m.upsert((f"r{i}", rows[i]) for i in range(n))
    for q in rng.standard_normal((8, d)).astype(np.float32):
        for k in (1, 10):
            codes = m._codes()
            qbits = m._pack_rows(q.reshape(1, -1) / np.linalg.norm(q))[0]
            dist = np.bitwise_count(codes[0, :n] ^ qbits[0]).astype(np.uint16)
            want = max(k * m.rescore_factor, 200)
            cut = int(np.searchsorted(np.cumsum(np.bincount(dist)), want))
            assert matrix._nearest_codes(dist, want).tolist() == np.flatnonzero(
                dist <= cut).tolist()
            full = [f"r{i}" for i in np.flatnonzero(dist <= cut)]
            assert [i for i, _ in m.search(q, k)] == [
                i for i, _ in m.search(q, k, allowed=full)]


@pytest.mark.parametrize("n", [1, 32_768, 70_001])
def test_hamming_distances_taken_a_block_at_a_time_are_every_row_s_full_distance(n: int) -> None:
    """The distance pass runs over blocks of rows (the scratch stays in cache): every row's
    distance is its whole code's, at block edges and in a short last block too."""
    from clawmemory.vectors import matrix

    rng = np.random.default_rng(n)
    codes = rng.integers(0, 2**63, size=(6, n + 5), dtype=np.uint64)  # spare capacity too
    q = rng.integers(0, 2**63, size=6, dtype=np.uint64)
    want = sum(np.bitwise_count(codes[w, :n] ^ q[w]).astype(np.int64) for w in range(6))
    got = matrix._hamming(codes, q, n)
    assert got.dtype == np.uint16 and got.shape == (n,)
    assert got.tolist() == want.tolist()


def _rows(n: int, d: int, seed: int) -> npt.NDArray[np.float32]:
    rows = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    rows[:, 0] += 1.5  # a shared direction, so the namespace is centred
    return rows


def test_past_the_threshold_rows_take_half_the_memory_and_give_the_same_hits() -> None:
    """Past ``binary_threshold`` rows the matrix keeps bfloat16 rows: half the bytes, and on
    12,000 random rows the same top 10 for 20 questions as float32 rows, cosines within
    0.01. Below it the rows stay float32."""
    rows, d = _rows(12_000, 64, 3), 64
    half = VectorMatrix(d, binary_threshold=10_000)
    full = VectorMatrix(d, binary_threshold=10_000, half_precision=False)
    half.upsert((f"r{i}", rows[i]) for i in range(9_000))
    assert half._data.dtype == np.float32
    for m in (half, full):
        m.upsert((f"r{i}", rows[i]) for i in range(12_000))
    assert half._data.nbytes * 2 == full._data.nbytes
    agree = 0
    for q in np.random.default_rng(4).standard_normal((20, d)).astype(np.float32):
        got, want = half.search(q, 10), full.search(q, 10)
        agree += len({i for i, _ in got} & {i for i, _ in want})
        sims = full.similarities(q, [i for i, _ in got])
        assert all(abs(s - sims[i]) < 0.01 for i, s in got)
    assert agree >= 0.97 * 200


def test_half_precision_rows_keep_their_centre_through_writes_and_removals() -> None:
    """The running sum behind the centre counts the rows as stored (rounded): after 3,000
    rewrites and removals the searches are those of a matrix built from the final rows."""
    rows, d = _rows(14_000, 32, 5), 32
    m = VectorMatrix(d, binary_threshold=10_000)
    m.upsert((f"r{i}", rows[i]) for i in range(11_000))
    for i in range(11_000, 14_000):
        m.upsert([(f"r{i - 11_000}", rows[i])])  # a rewrite, one at a time
    m.remove(f"r{i}" for i in range(5_000, 6_000))
    stored = m._block(slice(0, len(m)))
    assert np.allclose(m._sum, stored.sum(axis=0, dtype=np.float64), atol=1e-6)
    assert m.centred
    centre = m._centre  # frozen between refreshes; the centring terms must match the rows
    for raw in np.random.default_rng(6).standard_normal((10, d)).astype(np.float32):
        q = raw / np.linalg.norm(raw)
        got = m.search(q, 10)
        cos = ((stored - centre) @ (q - centre)) / (
            np.linalg.norm(stored - centre, axis=1) * np.linalg.norm(q - centre))
        for i, s in got:
            assert s == pytest.approx(float(cos[m._row[i]]), abs=3e-3)  # bfloat16: 2^-9


def test_every_word_of_a_long_code_counts() -> None:
    """128 dimensions, two 64-bit words: the nearest row by the whole code (2 + 4 signs off)
    beats 250 rows that match either word exactly but not the other, and 250 rows that match
    the first word and are 7 signs off in the second."""
    rng = np.random.default_rng(21)
    s = rng.choice([-1.0, 1.0], 128).astype(np.float32)
    small = [3, 9, 70, 80, 90, 100]  # where the query is nearly zero
    q = s.copy()
    q[small] *= 0.01
    target = q.copy()
    target[small] *= -1  # signs 2 off in word 0, 4 off in word 1; cosine ≈ 1
    rows: list[tuple[str, F32]] = [("target", target)]
    for i in range(250):
        mag = rng.uniform(0.5, 1.5, 128).astype(np.float32)
        a = s * mag
        a[64:] *= -1  # first word matches, second is opposite
        b = s * mag
        b[:64] *= -1  # second word matches, first is opposite
        c = s * mag
        c[[64 + j for j in (1, 5, 11, 17, 23, 29, 41)]] *= -1  # 7 signs off in word 1
        rows += [(f"a{i}", a), (f"b{i}", b), (f"c{i}", c)]
    noise = rng.standard_normal((1000, 128)).astype(np.float32)
    rows += [(f"r{i}", noise[i]) for i in range(1000)]
    m = _binary(128)
    m.upsert(rows)
    assert m.search(q, 1) == [("target", pytest.approx(float(q @ target / np.linalg.norm(q) ** 2)))]


def test_a_dimension_that_is_no_multiple_of_64_is_padded() -> None:
    """65 dimensions: codes of two words, the second holding one bit and padding."""
    rng = np.random.default_rng(4)
    data = rng.standard_normal((400, 65)).astype(np.float32)
    m = _binary(65)
    m.upsert((f"m{i}", data[i]) for i in range(400))
    for i in (0, 64, 399):
        assert m.search(data[i], 1) == [(f"m{i}", pytest.approx(1.0))]


def test_rows_past_the_first_chunk_of_codes_are_coded() -> None:
    """Codes are packed 65,536 rows at a time: row 65,536 starts the second chunk."""
    q = np.array([1.0, 1.0], np.float32)
    data = np.tile(np.array([-1.0, -1.0], np.float32), (65_600, 1))  # two signs off
    data[:300] = [1.0, -0.1]  # one sign off, cosine 0.64
    data[65_536] = q  # the only row with q's signs
    m = _binary(2)
    m.upsert((f"m{i}", data[i]) for i in range(65_600))
    assert m.search(q, 1) == [("m65536", pytest.approx(1.0))]


def test_codes_are_signs_around_the_centre() -> None:
    """A large shared direction: the codes of the centred rows still tell rows apart, so the
    pre-selection is approximate (uncentred codes would all be equal, and every row rescored).
    Overlap of the binary top 10 with the exact top 10, for ten queries."""
    rng = np.random.default_rng(11)
    s = rng.choice([-1.0, 1.0], 64)
    data = (3.0 * s + rng.standard_normal((4000, 64))).astype(np.float32)
    m = _binary(64, centre_min_rows=50)
    m.upsert((f"m{i}", data[i]) for i in range(4000))
    overlap = []
    for _ in range(10):
        q = (3.0 * s + rng.standard_normal(64)).astype(np.float32)
        got = {i for i, _ in m.search(q, 10)}
        overlap.append(len(got & {i for i, _ in m.search(q, 10, allowed=m.ids())}))
    assert overlap == [7, 10, 8, 6, 8, 9, 7, 3, 8, 4]


# --- forgetting takes the vectors out of a JSON file --------------------------------------------
def _file_embeddings(path: Path) -> list[str]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return sorted(doc["embeddings"]) if isinstance(doc, dict) else []


def test_forgetting_a_namespace_takes_its_vectors_out_of_the_json_file(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "memory.json"
    mem = Memory(JSONFileStore(path), Settings(), clock=clock, embedder=HashEmbedder())
    kept = mem.store("alpha keeps tulips")
    bob = mem.with_namespace("bob")
    gone = bob.store("bob keeps volcano notes")
    assert _file_embeddings(path) == sorted([kept, gone])
    assert bob.forget_namespace() == 1
    assert _file_embeddings(path) == [kept]  # at once, not at the next write
    mem.close()
    assert _file_embeddings(path) == [kept]


def test_forgetting_a_keyed_memory_takes_its_vector_out_of_the_json_file(
    tmp_path: Path, clock: Clock
) -> None:
    path = tmp_path / "memory.json"
    mem = Memory(JSONFileStore(path), Settings(), clock=clock, embedder=HashEmbedder())
    kept = mem.store("alpha keeps tulips")
    keyed = mem.store("the wifi password is in the red notebook", key="wifi")
    assert _file_embeddings(path) == sorted([kept, keyed])
    mem.forget(keyed)
    assert _file_embeddings(path) == [kept]
    mem.close()


# --- backfill and reindex on the in-memory backend -------------------------------------------
class RecordingEmbedder(HashEmbedder):
    """``HashEmbedder`` that keeps the texts of each ``embed`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> F32:
        self.batches.append(list(texts))
        return super().embed(texts)


@pytest.mark.parametrize("backend", backend_params("memory", "postgres"), indirect=True)
def test_backfill_embeds_the_memories_without_a_vector_oldest_first(
    store: Store, clock: Clock
) -> None:
    """95 memories stored with no embedder, one with: backfill embeds the 95, oldest first, in
    batches, and stops (every progress step is within the total)."""
    Memory(store, Settings(), clock=clock, embedder=None).store_many(
        [{"content": f"note {i:02d} about topic{i}"} for i in range(95)])
    embedder = RecordingEmbedder()
    mem = Memory(store, Settings(), clock=clock, embedder=embedder)
    mem.store("already embedded note")
    embedder.batches.clear()
    steps: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        assert done <= 95, "backfill went past the memories that lack a vector"
        steps.append((done, total))

    assert mem.backfill(batch_size=50, progress=progress) == 95
    assert steps == [(50, 95), (95, 95)]
    assert embedder.batches == [[f"note {i:02d} about topic{i}" for i in range(50)],
                                [f"note {i:02d} about topic{i}" for i in range(50, 95)]]
    assert mem.backfill() == 0


def test_reindex_on_the_in_memory_backend(clock: Clock) -> None:
    mem = Memory(MemoryStore(), Settings(), clock=clock, embedder=HashEmbedder())
    first = mem.store("kayak repair on sunday")
    mem.store("the tram strike is over")
    assert mem.reindex() == 2
    assert mem.recall("kayak repair", mode="vector")[0].memory.id == first


@pytest.mark.parametrize("backend", backend_params("json", "sqlite"), indirect=True)
def test_a_forgotten_namespace_starts_again_with_no_vectors(store: Store, clock: Clock) -> None:
    """After ``forget_namespace`` the namespace's vectors are gone from the index too: one new
    memory is alone (plain cosine), not centred on the three forgotten ones. Forgetting a
    namespace that never had vectors is a no-op."""
    embedder = HashEmbedder()
    mem = Memory(store, Settings(recall={"centre_min_rows": 3}), clock=clock, embedder=embedder)
    bob = mem.with_namespace("bob")
    bob.store_many([{"content": t} for t in ("red kayak", "tram strike", "orchid light")])
    assert mem.with_namespace("nobody").forget_namespace() == 0
    assert bob.forget_namespace() == 3
    if isinstance(store, SQLiteStore):  # the rows themselves, not only the cache
        assert store.query("SELECT COUNT(*) FROM vec_memories") == [(0,)]
    new = bob.store("apple pie recipe")
    hit = bob.recall("apple pie", mode="vector")[0]
    plain = float(embedder.embed_query("apple pie") @ embedder.embed(["apple pie recipe"])[0])
    assert hit.memory.id == new
    assert hit.explain.lists["vector"]["cosine"] == pytest.approx(plain, abs=1e-6)


class FailingEmbedder(HashEmbedder):
    """Loads, then fails every document batch with a long message."""

    def embed(self, texts: Sequence[str]) -> F32:
        raise EmbeddingError("model crashed: " + "x" * 600)


@pytest.mark.parametrize("backend", backend_params("sqlite", "postgres"), indirect=True)
def test_a_failed_embedding_is_counted_on_the_queue_row(store: Store, clock: Clock) -> None:
    """The memory is kept and stays queued; its row counts the attempt (the background worker
    gives up on a row after a few) and keeps the first 500 characters of the error."""
    mem = Memory(store, Settings(), clock=clock, embedder=FailingEmbedder())
    mid = mem.store("a note the model cannot embed")
    queue = mem.components.vector_queue()
    assert queue is not None
    (entry,) = queue.pending("default", 10)
    assert entry[:2] == ("default", mid)
    assert queue.pending(None, 10, after=entry[2]) == []
    assert queue.pending(None, 10, max_attempts=1) == []
    assert queue.pending(None, 10, max_attempts=2) == [entry]
    rows = store.query("SELECT attempts, last_error FROM vector_queue")  # type: ignore[attr-defined]
    assert [tuple(r) for r in rows] == [(1, ("model crashed: " + "x" * 600)[:500])]


@pytest.mark.parametrize("backend", backend_params("sqlite", "postgres"), indirect=True)
def test_an_unbound_vector_store_counts_nothing(store: Store) -> None:
    make = backend_of(store).vectors
    assert make is not None
    vectors = make(50, 0.39)
    assert vectors is not None
    assert (vectors.count("default"), vectors.missing("default", 10)) == (0, [])
    assert vectors.upsert("default", [("m1", np.ones(4, np.float32))]) == 0


# --- the HNSW path of PostgreSQL (past exact_search_rows) -----------------------------------------
# Five rows and a query, 3-d, where the three rankings disagree: plain cosine and centred
# cosine put row 3 first; the index's order for q − c (d·(q − c)) puts row 4 first.
_ROWS = [[0.1, -0.1, 0.6], [0.1, -0.5, 0.4], [1.3, 0.9, -0.7], [-1.3, -0.6, 0.0],
         [-2.3, -0.2, -1.2]]
_QUERY = [-0.7, -0.5, -0.3]


class TableEmbedder:
    """Row i of ``_ROWS`` for the text "row i"; ``_QUERY`` for any query."""

    name, dimension = "table", 3

    def embed(self, texts: Sequence[str]) -> F32:
        return np.array([_ROWS[int(t.split()[-1])] for t in texts], np.float32)

    def embed_query(self, text: str) -> F32:
        return np.array(_QUERY, np.float32)


def _unit(v: Sequence[float]) -> F32:
    a = np.asarray(v, np.float32)
    return a / np.linalg.norm(a)


@pytest.fixture
def approximate(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PostgresStore]:
    """A PostgreSQL store that searches every namespace through the HNSW index."""
    store = PostgresStore(postgres_url(request, tmp_path),
                          options=PostgresOptions(exact_search_rows=0))
    yield store
    store.close()


@pytest.mark.parametrize(("centre_min_rows", "best"), [(0, 3), (3, 4)])
def test_the_index_is_asked_for_the_neighbours_of_the_centred_query(
    approximate: PostgresStore, clock: Clock, centre_min_rows: int, best: int
) -> None:
    """Plain cosine: the index's nearest to q (row 3). Centred: the index's nearest to q − c
    (row 4: k candidates, here one, are rescored, not the whole namespace)."""
    mem = Memory(approximate, Settings(recall={"centre_min_rows": centre_min_rows,
                                               "centre_min_norm": 0}),  # a short mean here
                 clock=clock, embedder=TableEmbedder())
    ids = mem.store_many([{"content": f"row {i}"} for i in range(5)])
    vectors = mem.components.vectors()
    assert vectors is not None
    d, q = np.stack([_unit(r) for r in _ROWS]), _unit(_QUERY)
    if centre_min_rows:
        c = d.mean(0)
        score = float((d[best] - c) @ (q - c) / np.linalg.norm(d[best] - c)
                      / np.linalg.norm(q - c))
    else:
        score = float(d[best] @ q)
    assert vectors.search("default", q, 1) == [(ids[best], pytest.approx(score, abs=1e-5))]


def test_a_forgotten_memory_leaves_the_index(clock: Clock) -> None:
    """Two of three forgotten, one added: two rows are left, below ``centre_min_rows`` = 3, so
    the similarity is plain cosine (the forgotten rows would make it centred)."""
    embedder = HashEmbedder()
    mem = Memory(MemoryStore(), Settings(recall={"centre_min_rows": 3}), clock=clock,
                 embedder=embedder)
    ids = mem.store_many([{"content": t} for t in ("red kayak", "tram strike", "orchid light")])
    mem.forget(ids[0])
    mem.forget(ids[1])
    new = mem.store("apple pie recipe")
    hit = mem.recall("apple pie", mode="vector")[0]
    plain = float(embedder.embed_query("apple pie") @ embedder.embed(["apple pie recipe"])[0])
    assert hit.memory.id == new
    assert hit.explain.lists["vector"]["cosine"] == pytest.approx(plain, abs=1e-6)


# --- the centre of a PostgreSQL namespace ---------------------------------------------------
@pytest.mark.parametrize("backend", backend_params("postgres"), indirect=True)
def test_the_postgres_centre_moves_when_a_tenth_of_the_rows_are_new(
    store: Store, clock: Clock
) -> None:
    """Computed at 21 rows; 2 more (under 10%) leave it; a third (30/21 ≥ 10%) moves it to the
    mean of all 24. Below ``centre_min_rows`` nothing is centred."""
    embedder = HashEmbedder()
    mem = Memory(store, Settings(recall={"centre_min_rows": 21}), clock=clock, embedder=embedder)
    vectors = mem.components.vectors()
    assert vectors is not None
    texts = [f"note {i} about topic{i} and thing{i % 5}" for i in range(24)]
    ids = mem.store_many([{"content": t} for t in texts[:20]])
    assert vectors.centred("default") is False
    ids += mem.store_many([{"content": texts[20]}])
    q = embedder.embed_query("topic3 thing3")
    d = embedder.embed(texts).astype(np.float32)

    def centred(c: F32) -> float:
        return float((d[3] - c) @ (q - c) / np.linalg.norm(d[3] - c) / np.linalg.norm(q - c))

    assert vectors.centred("default") is True
    assert vectors.similarities("default", q, [ids[3]]) == {
        ids[3]: pytest.approx(centred(d[:21].mean(0)), abs=1e-5)}
    ids += mem.store_many([{"content": t} for t in texts[21:23]])
    assert vectors.similarities("default", q, [ids[3]]) == {
        ids[3]: pytest.approx(centred(d[:21].mean(0)), abs=1e-5)}
    ids += mem.store_many([{"content": texts[23]}])
    assert vectors.similarities("default", q, [ids[3]]) == {
        ids[3]: pytest.approx(centred(d.mean(0)), abs=1e-5)}


def test_the_vector_journal_is_trimmed_to_the_last_200_000_changes(tmp_path: Path) -> None:
    """A database whose journal has reached change 210,000 (the first 209,998 made by long-gone
    writes): the process that applies it drops the changes more than 200,000 behind."""
    import apsw

    db = tmp_path / "journal.db"
    a = Memory.open(db, embedder=HashEmbedder())
    b = Memory.open(db, embedder=HashEmbedder())
    try:
        a.store("first memory about tulips")
        assert b.recall("tulips", mode="vector")  # b's matrix is loaded at change 1
        conn = apsw.Connection(str(db))
        conn.execute("INSERT INTO vec_log(gen, namespace, seq, op) VALUES (209999, 'x', 0, 'u')")
        new = a.store("second memory about volcanoes")  # change 210,000
        assert b.recall("volcanoes", mode="vector")[0].memory.id == new
        assert list(conn.execute("SELECT gen FROM vec_log ORDER BY gen")) == [(209999,),
                                                                              (210000,)]
        conn.close()
    finally:
        a.close()
        b.close()


def test_a_bulk_write_leaves_the_index_ready_for_search() -> None:
    """A bulk upsert brings the centre and the sign-bit codes up to date itself, so the first
    search after an ingest does not rebuild them (it made the first recall ~2x later ones);
    single-row writes leave that to the search."""
    rng = np.random.default_rng(5)
    m = VectorMatrix(64, binary_threshold=300, centre_min_rows=50)
    m.upsert((f"a{i}", rng.standard_normal(64).astype(np.float32)) for i in range(400))
    assert m._centre_n == 400 and m._bits is not None
    before = m.search(rng.standard_normal(64).astype(np.float32), 5)
    m.upsert((f"b{i}", rng.standard_normal(64).astype(np.float32)) for i in range(100))
    assert m._centre_n == 400  # below the bulk size: the centre waits for a search
    m.search(rng.standard_normal(64).astype(np.float32), 5)
    assert m._centre_n == 500 and len(before) == 5


def test_the_matrix_grows_by_a_quarter_and_keeps_every_row() -> None:
    """Room grows by 25% at a time (doubling held ~60% unused rows at 20k): one row at a
    time past several growths, every row is still found, and the room stays within 25%."""
    rng = np.random.default_rng(9)
    m = VectorMatrix(16, binary_threshold=10**9, centre_min_rows=0)
    vecs = rng.standard_normal((3000, 16)).astype(np.float32)
    for i, v in enumerate(vecs):
        m.upsert([(f"r{i}", v)])
    assert len(m) == 3000 and m._data.shape[0] <= 3000 * 1.25 + 1
    for i in (0, 1023, 1024, 1279, 1280, 2999):
        assert m.search(vecs[i], 1)[0][0] == f"r{i}"


# --- centring only on a long mean (ADR 0029) ------------------------------------------------
class OffsetEmbedder:
    """Seeded random 16-d vectors per text, plus ``offset`` in every coordinate: 0 gives
    diverse texts (a mean of unit vectors ~0.1 long at 60 rows), 4 texts that share a
    direction (~0.97)."""

    name, dimension = "offset", 16

    def __init__(self, offset: float) -> None:
        self.offset = offset

    def _one(self, text: str) -> F32:
        seed = int.from_bytes(text.encode()[-8:].rjust(8, b"\0"), "little")
        v = np.random.default_rng(seed).standard_normal(16) + self.offset
        return v.astype(np.float32)

    def embed(self, texts: Sequence[str]) -> F32:
        return np.stack([self._one(t) for t in texts])

    def embed_query(self, text: str) -> F32:
        return self._one(text)


@pytest.mark.parametrize("backend", backend_params("sqlite", "memory", "postgres"),
                         indirect=True)
@pytest.mark.parametrize(("offset", "centred"), [(0.0, False), (4.0, True)])
def test_a_namespace_is_centred_only_when_its_mean_is_long(
    store: Store, clock: Clock, offset: float, centred: bool
) -> None:
    embedder = OffsetEmbedder(offset)
    settings = Settings(recall={"centre_min_rows": 20, "centre_min_norm": 0.39})
    mem = Memory(store, settings, clock=clock, embedder=embedder)
    ids = mem.store_many([{"content": f"memory number {i:03d}"} for i in range(60)])
    vectors = mem.components.vectors()
    assert vectors is not None
    assert vectors.centred("default") is centred
    d = embedder.embed([f"memory number {i:03d}" for i in range(60)])
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q = _unit(embedder.embed_query("a question"))
    c = d.mean(0) if centred else np.zeros(16, np.float32)
    want = float((d[7] - c) @ (q - c) / np.linalg.norm(d[7] - c) / np.linalg.norm(q - c))
    assert vectors.similarities("default", q, [ids[7]]) == {ids[7]: pytest.approx(want,
                                                                                 abs=1e-5)}
    if store.backend == "memory":
        return  # its vectors live in the Memory that stored them: no second view to open
    # With the rule off (0), the same diverse namespace is centred, as before ADR 0029.
    always = Memory(store, Settings(recall={"centre_min_rows": 20, "centre_min_norm": 0}),
                    clock=clock, embedder=embedder).components.vectors()
    assert always is not None and always.centred("default") is True

"""Vector storage and hybrid retrieval: the in-RAM index, vec0 persistence and its journal across
connections, the dimension lock, fusion and its explanations, links, contextual embeddings.

Embeddings come from ``HashEmbedder``, a small deterministic bag-of-words embedder defined here,
so the tests are fast and exact; the packaged MiniLM model is exercised by test_embedders.py and
the MCP end-to-end test.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from clawmemory import InvalidInputError, Memory, Settings
from clawmemory.backends.base import Store
from clawmemory.vectors.matrix import VectorMatrix
from conftest import Clock, backend_params

F32 = npt.NDArray[np.float32]


class HashEmbedder:
    """Each word adds +1 to one hashed dimension; rows are L2-normalised."""

    def __init__(self, dimension: int = 64, name: str = "test-hash") -> None:
        self.name = name
        self.dimension = dimension
        self.calls = 0

    def _vec(self, text: str) -> F32:
        v = np.zeros(self.dimension, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed(self, texts: Sequence[str]) -> F32:
        self.calls += 1
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dimension))

    def embed_query(self, text: str) -> F32:
        return self._vec(text)


@pytest.fixture
def vmem(store: Store, clock: Clock) -> Memory:
    return Memory(store, Settings(), clock=clock, embedder=HashEmbedder())


# --- the in-RAM index -------------------------------------------------------------------------
def test_matrix_exact_search_matches_brute_force() -> None:
    rng = np.random.default_rng(3)
    data = rng.standard_normal((500, 32)).astype(np.float32)
    m = VectorMatrix(32, centre_min_rows=0)  # plain cosine
    m.upsert((f"m{i}", data[i]) for i in range(500))
    q = rng.standard_normal(32).astype(np.float32)
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    expected = [f"m{i}" for i in np.argsort(-(unit @ (q / np.linalg.norm(q))))[:10]]
    assert [i for i, _ in m.search(q, 10)] == expected


def test_matrix_remove_keeps_rows_consistent() -> None:
    m = VectorMatrix(4)
    m.upsert([("a", np.array([1, 0, 0, 0], np.float32)), ("b", np.array([0, 1, 0, 0], np.float32)),
              ("c", np.array([0, 0, 1, 0], np.float32))])
    m.remove(["a"])
    assert len(m) == 2 and "a" not in m
    assert m.search(np.array([0, 0, 1, 0], np.float32), 1)[0][0] == "c"
    assert m.similarities(np.array([0, 1, 0, 0], np.float32), ["b", "a"]) == {"b": 1.0}


def test_matrix_binary_preselection_finds_near_duplicates() -> None:
    rng = np.random.default_rng(5)
    data = rng.standard_normal((3000, 64)).astype(np.float32)
    m = VectorMatrix(64, binary_threshold=0)  # always pre-select by Hamming distance
    m.upsert((f"m{i}", data[i]) for i in range(3000))
    for i in (7, 1234, 2999):
        q = data[i] + 0.05 * rng.standard_normal(64).astype(np.float32)
        assert m.search(q, 1)[0][0] == f"m{i}"


def test_matrix_allowed_restricts_the_search() -> None:
    m = VectorMatrix(2)
    m.upsert([("x", np.array([1, 0], np.float32)), ("y", np.array([0.9, 0.1], np.float32))])
    assert [i for i, _ in m.search(np.array([1, 0], np.float32), 5, allowed=["y"])] == ["y"]


# --- hybrid recall through the engine, on every backend -------------------------------------
def test_hybrid_explains_every_list(store: Store, clock: Clock) -> None:
    vmem = Memory(store, Settings(recall={"fusion": "rrf"}), clock=clock, embedder=HashEmbedder())
    vmem.store("The staging database resets every Monday morning")
    vmem.store("Lunch is served at noon in the cafeteria")
    hits = vmem.recall("staging database reset", mode="hybrid")
    top = hits[0]
    assert "staging" in top.memory.content
    lists = top.explain.lists
    assert lists["keyword"]["rank"] == 1 and lists["keyword"]["bm25"] > 0
    assert lists["vector"]["rank"] == 1 and 0 < lists["vector"]["cosine"] <= 1
    # RRF: the fused score is the sum of 1/(60 + rank) over the lists (weights 1).
    assert top.explain.fused == pytest.approx(2 / 61)
    assert {"reinforcement", "recency", "confidence"} <= set(top.explain.factors)
    assert "staging" in top.explain.matched_terms


def test_vector_mode_finds_what_keywords_cannot(vmem: Memory) -> None:
    vmem.store("Kubernetes cluster upgrade scheduled")
    vmem.store("Birthday party for Anna on Friday")
    # Stop words only: the keyword list falls back to substring matching, vectors still rank.
    hits = vmem.recall("anna birthday", mode="vector")
    assert hits[0].memory.content.startswith("Birthday")
    assert set(hits[0].explain.lists) == {"vector"}


def test_weighted_fusion_uses_000_formula(store: Store, clock: Clock) -> None:
    settings = Settings(recall={"fusion": "weighted", "text_weight": 0.4, "vector_weight": 0.6})
    mem = Memory(store, settings, clock=clock, embedder=HashEmbedder())
    mem.store("alpha beta gamma")
    mem.store("delta epsilon")
    hit = mem.recall("alpha beta", mode="hybrid")[0]
    cos = hit.explain.lists["vector"]["cosine"]
    assert hit.explain.fused == pytest.approx(0.4 * 1.0 + 0.6 * (cos + 1) / 2)


def test_depth_one_follows_links(vmem: Memory) -> None:
    a = vmem.store("Project Falcon uses PostgreSQL 16", key="falcon-db")
    b = vmem.store("Backups run nightly at 02:00", key="backups")
    assert vmem.link(a, b)
    hits = vmem.recall("Falcon PostgreSQL", mode="keyword", depth=1, limit=1)
    assert [h.memory.id for h in hits] == [a, b]
    assert hits[1].explain.via == f"link:{a}"
    assert hits[1].score == pytest.approx(hits[0].score * 0.5)


def test_forget_removes_the_vector(vmem: Memory) -> None:
    mid = vmem.store("secret rocket recipe")
    assert vmem.recall("rocket recipe", mode="vector")
    vmem.forget(mid)
    assert vmem.recall("rocket recipe", mode="vector") == []


def test_update_re_embeds(vmem: Memory) -> None:
    mid = vmem.store("apples and pears")
    vmem.update(mid, content="submarine periscope")
    hit = vmem.recall("submarine periscope", mode="vector")[0]
    assert hit.memory.id == mid and hit.explain.lists["vector"]["cosine"] == pytest.approx(1.0)


@pytest.mark.parametrize("context_turns", [0, 1])
def test_episodes_are_embedded_with_the_turn_before(
    store: Store, clock: Clock, context_turns: int
) -> None:
    settings = Settings(embedder={"context_turns": context_turns})
    mem = Memory(store, settings, clock=clock, embedder=HashEmbedder(dimension=256))
    mem.store_many([
        {"content": "Do you want to go hiking on Saturday?", "kind": "episode", "session_id": "s1"},
        {"content": "Sure, I'd love to!", "kind": "episode", "session_id": "s1"},
    ])
    reply = mem.store("Sounds great, count me in", kind="episode", session_id="s1")
    hits = {h.memory.content: h for h in mem.recall("hiking saturday", mode="vector", limit=5)}
    cos = hits["Sure, I'd love to!"].explain.lists["vector"].get("cosine", 0.0) if (
        "Sure, I'd love to!" in hits) else 0.0
    if context_turns:
        assert cos > 0.3  # the reply carries the question it answers
        assert mem.get(reply)  # a single store() also finds its context in the store
    else:
        assert cos == pytest.approx(0.0, abs=1e-6)


def test_context_chars_keeps_the_end_of_the_turn_before(store: Store, clock: Clock) -> None:
    """``context_chars``: an episode is read after the last characters of the turn before it
    only. The reply carries "saturday" (the end of the question) and not "hiking" (its
    start, 60 characters back)."""
    settings = Settings(embedder={"context_chars": 40})
    mem = Memory(store, settings, clock=clock, embedder=HashEmbedder(dimension=256))
    mem.store_many([
        {"content": "Hiking? Would you like to come along with us, maybe on Saturday",
         "kind": "episode", "session_id": "s1"},
        {"content": "Sure, I'd love to!", "kind": "episode", "session_id": "s1"},
    ])

    def cosine(query: str) -> float:
        hits = {h.memory.content: h for h in mem.recall(query, mode="vector", limit=5)}
        hit = hits.get("Sure, I'd love to!")
        return hit.explain.lists["vector"].get("cosine", 0.0) if hit else 0.0

    assert cosine("saturday") > 0.1
    assert cosine("hiking") == pytest.approx(0.0, abs=1e-6)


# --- SQLite: persistence, journal sync, dimension lock ----------------------------------------
@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_two_connections_see_each_others_vectors(tmp_path: Path, backend: object) -> None:
    db = tmp_path / "shared.db"
    a = Memory.open(db, embedder=HashEmbedder())
    b = Memory.open(db, embedder=HashEmbedder())
    try:
        a.store("first memory about tulips")
        assert b.recall("tulips", mode="vector")  # loads b's matrix
        new = a.store("second memory about volcanoes")
        assert b.recall("volcanoes", mode="vector")[0].memory.id == new  # journal applied
        a.forget(new)
        assert all(h.memory.id != new for h in b.recall("volcanoes", mode="vector"))
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_two_writers_at_once_each_search_every_memory_of_the_other(
    tmp_path: Path, backend: object
) -> None:
    """Two connections (a server and a CLI beside it, say) storing at the same time. A vector
    write used to read the journal's generation after waiting for the other's transaction and
    so skipped the vectors that transaction committed, for good: ~1 in 5 of the other's memories
    were never found by vector search until the process restarted."""
    db = tmp_path / "busy.db"
    a = Memory.open(db, embedder=SeededEmbedder())
    b = Memory.open(db, embedder=SeededEmbedder())
    try:
        for mem in (a, b):
            mem.recall("nothing yet", mode="vector")  # each holds its matrix from here on
        start = threading.Barrier(2)

        def write(mem: Memory, who: str) -> list[str]:
            start.wait()
            return [mem.store(f"{who} wrote note {n}") for n in range(150)]

        with ThreadPoolExecutor(2) as pool:
            alpha, beta = pool.submit(write, a, "alpha"), pool.submit(write, b, "beta")
            written = {"alpha": alpha.result(), "beta": beta.result()}
        for mem, other in ((a, "beta"), (b, "alpha")):
            missed = [n for n, memory_id in enumerate(written[other])
                      if [h.memory.id for h in mem.recall(f"{other} wrote note {n}",
                                                          mode="vector", limit=1, touch=False)]
                      != [memory_id]]
            assert missed == [], f"{len(missed)} of {other}'s memories never found"
    finally:
        a.close()
        b.close()


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_dimension_mismatch_disables_vectors_until_reindex(
    tmp_path: Path, backend: object, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "dims.db"
    with Memory.open(db, embedder=HashEmbedder(64)) as mem:
        mem.store("the quick brown fox")
    with Memory.open(db, embedder=HashEmbedder(32, name="other-model")) as mem:
        with caplog.at_level(logging.WARNING, logger="clawmemory"):
            assert mem.recall("quick fox")  # keyword recall still works
        assert "vector search disabled" in caplog.text and "reindex" in caplog.text
        with pytest.raises(InvalidInputError, match="vector search disabled"):
            mem.recall("quick fox", mode="vector")
        assert mem.reindex() == 1
        hit = mem.recall("quick fox", mode="vector")[0]
        assert hit.explain.lists["vector"]["cosine"] > 0


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_vectors_survive_reopen_and_stay_out_of_snapshots(tmp_path: Path, backend: object) -> None:
    db = tmp_path / "keep.db"
    with Memory.open(db, embedder=HashEmbedder()) as mem:
        mem.store("orchids need indirect light")
        snapshot = mem.export_snapshot()
    assert "embedding" not in snapshot
    embedder = HashEmbedder()
    with Memory.open(db, embedder=embedder) as mem:
        assert mem.recall("orchids light", mode="vector")
        assert embedder.calls == 0  # nothing was re-embedded on open


def test_co_recall_links_grow_and_boost(store: Store, clock: Clock) -> None:
    settings = Settings(recall={"co_recall": True})
    mem = Memory(store, settings, clock=clock, embedder=None)
    a = mem.store("solar panel inverter fault")
    b = mem.store("solar panel warranty claim")
    mem.store("unrelated grocery list")
    for _ in range(3):
        mem.recall("solar panel", mode="keyword")
    links = store.links("default", [a])[a]
    assert links and links[0].other_id == b and links[0].origin == "co-recall"
    assert links[0].strength == pytest.approx(0.3)
    hit = mem.recall("solar panel", mode="keyword")[0]
    assert hit.explain.factors["co_recall"] == pytest.approx(1 + 0.05 * 0.3)


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_reindex_covers_every_namespace(tmp_path: Path, backend: object) -> None:
    """The model is locked per database, so a reindex from one namespace re-embeds them all."""
    db = tmp_path / "tenants.db"
    with Memory.open(db, embedder=HashEmbedder(64)) as mem:
        mem.store("alpha tenant note about kayaks")
        mem.with_namespace("bob").store("bob tenant note about violins")
    with Memory.open(db, embedder=HashEmbedder(32, name="new-model")) as mem:
        assert mem.reindex() == 2
        assert mem.recall("kayaks", mode="vector")
        assert mem.with_namespace("bob").recall("violins", mode="vector")


# --- dialogue sequence --------------------------------------------------------------------------
def _dialogue(mem: Memory) -> list[str]:
    return mem.store_many([
        {"content": "Did you finish the kayak repair?", "kind": "episode", "session_id": "s1"},
        {"content": "Yes, on Sunday, it floats again", "kind": "episode", "session_id": "s1"},
        {"content": "Unrelated: the tram strike is over", "kind": "episode", "session_id": "s2"},
    ])


def test_episodes_are_linked_to_the_turn_before(vmem: Memory) -> None:
    q, a, other = _dialogue(vmem)
    later = vmem.store("Great, let's paddle next week", kind="episode", session_id="s1")
    assert {r.id for r in vmem.neighbors(a)} == {q, later}
    links = vmem.store_backend.links("default", [q])[q]
    assert [(lk.other_id, lk.origin) for lk in links] == [(a, "sequence")]
    assert vmem.neighbors(other) == []  # another session is another dialogue


def test_sequence_links_can_be_turned_off(store: Store, clock: Clock) -> None:
    mem = Memory(store, Settings(storage={"sequence_links": False}), clock=clock, embedder=None)
    q, _a, _ = _dialogue(mem)
    assert mem.neighbors(q) == []


def test_neighbour_smoothing_lifts_the_answer_next_to_the_question(
    store: Store, clock: Clock
) -> None:
    mem = Memory(store, Settings(recall={"neighbour_weight": 0.5}), clock=clock, embedder=None)
    _q, a, _ = _dialogue(mem)
    mem.store("Kayak shops open at nine", kind="fact")
    hits = mem.recall("kayak repair floats", mode="keyword", limit=5)
    answer = next(h for h in hits if h.memory.id == a)
    assert answer.explain.lists["neighbours"]["support"] > 0
    plain = Memory(store, Settings(), clock=clock, embedder=None)
    before = next(h for h in plain.recall("kayak repair floats", mode="keyword", limit=5)
                  if h.memory.id == a)
    assert answer.score > before.score


# --- centring (ADR 0007) -----------------------------------------------------------------------
def _centred_brute_force(data: np.ndarray, q: np.ndarray) -> np.ndarray:
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    c = unit.mean(0)
    d = unit - c
    qq = q / np.linalg.norm(q) - c
    return (d @ qq) / (np.linalg.norm(d, axis=1) * np.linalg.norm(qq))


def test_matrix_centres_similarity_on_the_namespace_mean() -> None:
    rng = np.random.default_rng(5)
    # A strong shared direction, as sentence embeddings have: plain cosine is dominated by it.
    data = (rng.standard_normal((300, 16)) + 4.0).astype(np.float32)
    q = (rng.standard_normal(16) + 4.0).astype(np.float32)
    m = VectorMatrix(16, centre_min_rows=50)
    m.upsert((f"m{i}", data[i]) for i in range(300))
    want = _centred_brute_force(data, q)
    got = m.search(q, 10)
    assert [i for i, _ in got] == [f"m{i}" for i in np.argsort(-want)[:10]]
    assert got[0][1] == pytest.approx(float(want.max()), abs=1e-4)
    sims = m.similarities(q, ["m0", "m7"])
    assert sims["m0"] == pytest.approx(float(want[0]), abs=1e-4)
    assert sims["m7"] == pytest.approx(float(want[7]), abs=1e-4)
    plain = VectorMatrix(16, centre_min_rows=0)
    plain.upsert((f"m{i}", data[i]) for i in range(300))
    assert [i for i, _ in plain.search(q, 10)] != [i for i, _ in got]  # centring changed it


def test_matrix_centre_follows_updates_and_removals() -> None:
    rng = np.random.default_rng(6)
    data = (rng.standard_normal((200, 8)) + 2.0).astype(np.float32)
    m = VectorMatrix(8, centre_min_rows=50)
    m.upsert((f"m{i}", data[i]) for i in range(100))
    m.search(data[0], 1)  # computes the centre at 100 rows
    m.upsert((f"m{i}", data[i]) for i in range(100, 200))  # grows past 10%: centre refreshed
    m.remove([f"m{i}" for i in range(0, 200, 4)])
    keep = [i for i in range(200) if i % 4]
    q = data[3]
    want = _centred_brute_force(data[keep], q)
    assert [i for i, _ in m.search(q, 5)] == [f"m{keep[j]}" for j in np.argsort(-want)[:5]]


def test_matrix_small_namespaces_use_plain_cosine() -> None:
    m = VectorMatrix(4, centre_min_rows=50)
    m.upsert([("a", np.array([1, 0, 0, 0], np.float32)),
              ("b", np.array([0.9, 0.1, 0, 0], np.float32))])
    # One or two rows would be erased by their own mean; below the minimum nothing is centred.
    assert m.similarities(np.array([1, 0, 0, 0], np.float32), ["a"])["a"] == pytest.approx(1.0)


def test_binary_preselection_uses_centred_codes() -> None:
    rng = np.random.default_rng(7)
    data = (rng.standard_normal((2000, 64)) + 1.5).astype(np.float32)
    q = data[42] + 0.05 * rng.standard_normal(64).astype(np.float32)
    exact = VectorMatrix(64, centre_min_rows=50)
    binary = VectorMatrix(64, binary_threshold=0, centre_min_rows=50)
    for m in (exact, binary):
        m.upsert((f"m{i}", data[i]) for i in range(2000))
    assert binary.search(q, 1)[0][0] == "m42"
    top_exact = {i for i, _ in exact.search(q, 10)}
    top_binary = {i for i, _ in binary.search(q, 10)}
    assert len(top_exact & top_binary) >= 8


def test_binary_codes_follow_writes_after_they_are_built() -> None:
    rng = np.random.default_rng(8)
    data = rng.standard_normal((3000, 64)).astype(np.float32)
    m = VectorMatrix(64, binary_threshold=0, centre_min_rows=50)
    m.upsert((f"m{i}", data[i]) for i in range(2000))
    assert m.search(data[10], 1)[0][0] == "m10"  # codes built here
    m.upsert((f"m{i}", data[i]) for i in range(2000, 2100))  # appended: codes extended
    m.upsert([("m5", data[2500])])  # rewritten in place: its code changes
    m.remove([f"m{i}" for i in range(0, 1000, 2)])  # holes filled by moving the last rows
    assert m.search(data[2050], 1)[0][0] == "m2050"
    assert m.search(data[2500], 1)[0][0] == "m5"
    assert m.search(data[1999], 1)[0][0] == "m1999"  # a row that was moved into a hole
    assert all(i != "m4" for i, _ in m.search(data[4], 20))


class SeededEmbedder:
    """A distinct pseudo-random unit vector per text: no two memories tie on a query."""

    name = "test-seeded"
    dimension = 48

    def _vec(self, text: str) -> F32:
        seed = int(hashlib.md5(text.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).standard_normal(self.dimension).astype(np.float32)
        out: F32 = v / np.linalg.norm(v)
        return out

    def embed(self, texts: Sequence[str]) -> F32:
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dimension))

    def embed_query(self, text: str) -> F32:
        return self._vec(text)


def _vector_answers(mem: Memory, queries: Sequence[str]) -> list[list[tuple[str, float]]]:
    return [[(h.memory.id, h.score) for h in mem.recall(q, mode="vector", limit=15, touch=False)]
            for q in queries]


def test_reopened_vectors_come_from_sqlite_vec_chunks_as_a_row_scan_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reopening reads a namespace's vectors from sqlite-vec's chunk tables (vec_chunks.py),
    not row by row: across several chunks, with holes left by forgetting and moved rows left
    by corrections, in two namespaces, recall answers exactly as the row-by-row scan's matrix
    answers, and what was forgotten stays gone."""
    from clawmemory.backends.sqlite import vec_chunks

    db = tmp_path / "chunks.db"
    queries = [f"question {i} about lanterns" for i in range(12)]
    with Memory.open(db, embedder=SeededEmbedder()) as mem:
        other = mem.with_namespace("other")
        ids = mem.store_many([{"content": f"note number {i}"} for i in range(2300)])  # 3 chunks
        other.store_many([{"content": f"other note {i}"} for i in range(700)])
        forgotten = ids[3:2300:9]
        for mid in forgotten:
            mem.forget(mid)
        for mid in [m for m in ids[1500:1520] if m not in forgotten][:10]:
            mem.correct(mid, f"corrected note {mid}")
    read = []  # the chunks the reopened store read (the path under test)
    real = vec_chunks.chunk_vectors
    monkeypatch.setattr(vec_chunks, "chunk_vectors",
                        lambda *a, **k: read.append(a[1]) or real(*a, **k))
    with Memory.open(db, embedder=SeededEmbedder()) as mem:
        chunked = _vector_answers(mem, queries)
        chunked_other = _vector_answers(mem.with_namespace("other"), queries)
        every = {m.id for m in mem.list(limit=5000)}
        assert not every & set(forgotten)
        assert not {mid for hits in chunked for mid, _ in hits} & set(forgotten)
    assert len(read) == 4 and not all(c.valid.all() for c in read)  # holes were read past
    monkeypatch.setattr(vec_chunks, "chunks_readable", lambda query: False)
    with Memory.open(db, embedder=SeededEmbedder()) as mem:
        scanned = _vector_answers(mem, queries)
        scanned_other = _vector_answers(mem.with_namespace("other"), queries)
    assert all(len(hits) == 15 for hits in chunked + chunked_other)
    for got, want in zip(chunked + chunked_other, scanned + scanned_other, strict=True):
        # The same rows in the same order; the centre is summed a chunk at a time, so scores
        # agree to ~1e-10, not to the bit.
        assert [m for m, _ in got] == [m for m, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], abs=1e-7)

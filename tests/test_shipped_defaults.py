"""The defaults chosen by measurement, each held on a small fixture made here, with the shipped
settings untouched (``Settings()``) and the shipped embedding model: weighted fusion 0.4/0.6
(ADR 0004, 0007), cosine centred on the namespace mean from 50 vectors on (ADR 0007) and
neighbour smoothing at 0.15 (ADR 0005). The other two have theirs elsewhere: stop words
(ADR 0003) in test_sanitize.py, late chunking (ADR 0007) in test_embedders.py
(``test_memory_embeds_episodes_in_context_and_facts_alone``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.memory.store import MemoryStore
from conftest import Clock

FACTS = ["The staging database resets every Monday", "Lunch is served at noon",
         "The staging server runs Debian", "Anna's birthday party is on Friday"]


@pytest.fixture
def shipped(clock: Clock, default_embedder: Any) -> Memory:
    return Memory(MemoryStore(), Settings(), clock=clock, embedder=default_embedder)


def test_hybrid_fuses_0_6_of_the_keyword_z_and_0_4_of_the_cosine_z(shipped: Memory) -> None:
    """The calibrated fusion (ADR 0011): 0.5 + 0.6 z(keyword) + 0.4 z(cosine) + 0.5 for the
    best keyword match, each z over its list's own members and floored at -0.5."""
    assert shipped.settings.recall.fusion == "calibrated"
    for text in FACTS:
        shipped.store(text)
    hits = shipped.recall("staging database")  # the default mode: hybrid when vectors work
    assert {tuple(h.explain.lists) for h in hits} >= {("keyword", "vector")}
    top = max(h.explain.lists["keyword"]["z"] for h in hits if "keyword" in h.explain.lists)
    for h in hits:
        k = h.explain.lists.get("keyword", {}).get("z", -0.5)
        v = h.explain.lists.get("vector", {}).get("z", -0.5)
        bonus = 0.5 if "keyword" in h.explain.lists and k == top else 0.0
        assert h.explain.fused == pytest.approx(0.5 + 0.6 * k + 0.4 * v + bonus, abs=2e-4)
    assert hits[0].memory.content == FACTS[0]


def test_cosine_is_centred_on_the_namespace_mean_from_50_vectors(
    shipped: Memory, default_embedder: Any
) -> None:
    texts = [f"note {i}: the {w} of {v}" for i, (w, v) in enumerate(
        (w, v) for w in ("colour", "price", "size", "owner", "age", "smell", "sound")
        for v in ("the garden shed", "my bicycle", "the blue kettle", "our old car",
                  "the office plant", "the red door", "the spare key", "a winter coat"))][:50]
    query = "what colour is the bicycle"
    rows = default_embedder.embed(texts).astype(np.float64)
    q = default_embedder.embed_query(query).astype(np.float64)

    def cosines(n: int) -> dict[str, float]:
        hits = shipped.recall(query, mode="vector", limit=n, touch=False)
        return {h.memory.content: h.explain.lists["vector"]["cosine"] for h in hits}

    for text in texts[:49]:
        shipped.store(text)
    plain = dict(zip(texts[:49], rows[:49] @ q, strict=True))  # 49 vectors: plain cosine
    got = cosines(49)  # (those above vector mode's relevance floor)
    assert len(got) >= 10 and got == pytest.approx({t: plain[t] for t in got}, abs=2e-6)

    shipped.store(texts[49])  # the 50th: from now on, around the mean
    centre = rows.mean(axis=0)
    d, qc = rows - centre, q - centre
    centred = (d @ qc) / (np.linalg.norm(d, axis=1) * np.linalg.norm(qc))
    got = cosines(50)
    expected = dict(zip(texts, centred, strict=True))
    assert len(got) >= 10 and got == pytest.approx({t: expected[t] for t in got}, abs=2e-5)
    assert max(got, key=got.__getitem__) == texts[int(np.argmax(centred))]
    assert not np.allclose(centred, rows @ q, atol=0.05)  # centring changed the numbers


def test_a_turn_gains_0_15_of_the_score_of_the_turns_next_to_it(clock: Clock) -> None:
    mem = Memory(MemoryStore(), Settings(embedder={"provider": "none"}), clock=clock)
    question, answer, _ = mem.store_many([
        {"content": "Did you finish the kayak repair?", "kind": "episode", "session_id": "s1"},
        {"content": "Yes, on Sunday, it floats again", "kind": "episode", "session_id": "s1"},
        {"content": "The tram strike is over", "kind": "episode", "session_id": "s2"},
    ])
    lone = mem.store("Kayak shops sell floats", kind="fact")  # no turn next to it
    hits = {h.memory.id: h.explain for h in mem.recall("kayak repair floats", mode="keyword")}
    bm25 = {mid: e.lists["keyword"]["bm25"] for mid, e in hits.items()}
    for mid, neighbour in ((question, answer), (answer, question)):
        assert hits[mid].lists["neighbours"] == {"support": bm25[neighbour]}
        assert hits[mid].fused == pytest.approx(bm25[mid] + 0.15 * bm25[neighbour], abs=2e-6)
    assert "neighbours" not in hits[lone].lists and hits[lone].fused == bm25[lone]

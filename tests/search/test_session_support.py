"""Session support (ADR 0020): a candidate gains ``recall.session_weight`` (0.25) × the best final
score among the ``session_top`` (5) best *other* candidates of its session, so the turn that
answers a question ranks above a look-alike from another conversation even when it shares fewer
words with the question than its session's best turn does, and sits further away than the
adjacent turn that neighbour smoothing reaches."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.base import Store
from conftest import Clock

# s1: the marathon, then a turn between, then the ramen after it (two turns away: no neighbour
# smoothing between them). s2: a look-alike about ramen that BM25 prefers (the word twice).
DIALOGUE = [
    {"content": "I ran the Berlin marathon on Sunday", "session_id": "s1"},
    {"content": "My legs still hurt a lot", "session_id": "s1"},
    {"content": "Then we had ramen together", "session_id": "s1"},
    {"content": "Ramen night, ramen for everyone", "session_id": "s2"},
]
QUERY = "ramen after the marathon"
# Other memories, so that BM25's word weights mean something.
FILLER = ["The tram strike is over", "Lunch is served at noon", "The staging server runs Debian",
          "Anna's birthday party is on Friday", "The printer on floor two is out of toner",
          "Renew the car insurance before March", "The cat needs her vaccine in June",
          "Backups run every night at two"]


def _store(mem: Memory) -> list[str]:
    # Events of a session, not dialogue turns: a turn's keyword context (ADR 0036) would carry
    # the marathon's words into the two turns after it, and this is about session support.
    ids = mem.store_many([{**d, "kind": "event"} for d in DIALOGUE])
    mem.store_many({"content": f, "kind": "fact"} for f in FILLER)
    return ids


def test_a_turn_gains_a_quarter_of_its_sessions_best_other_candidate(
    store: Store, clock: Clock
) -> None:
    mem = Memory(store, Settings(embedder={"provider": "none"}), clock=clock)
    marathon, _legs, ramen, lookalike = _store(mem)
    # No session: never supported.
    lone = mem.store("The ramen place takes no bookings on weekdays", kind="fact")
    hits = mem.recall(QUERY, mode="keyword", limit=5, touch=False)
    assert [h.memory.id for h in hits] == [marathon, ramen, lookalike, lone]
    by_id = {h.memory.id: h for h in hits}
    # Every ranking factor is 1 here (new, unreinforced memories): the score before support is
    # the fused one.
    assert all(math.prod(h.explain.factors.values()) == 1 for h in hits)
    base = {m: h.explain.fused for m, h in by_id.items()}
    assert by_id[ramen].explain.lists["session"] == {"support": round(base[marathon], 6)}
    assert by_id[ramen].score == pytest.approx(base[ramen] + 0.25 * base[marathon], rel=1e-6)
    assert by_id[ramen].explain.final == by_id[ramen].score
    assert by_id[marathon].explain.lists["session"] == {"support": round(base[ramen], 6)}
    assert by_id[marathon].score == pytest.approx(base[marathon] + 0.25 * base[ramen], rel=1e-6)
    assert "session" not in by_id[lookalike].explain.lists  # alone in its session's top 5
    assert "session" not in by_id[lone].explain.lists

    off = Memory(store, Settings(embedder={"provider": "none"}, recall={"session_weight": 0}),
                 clock=clock)
    plain = off.recall(QUERY, mode="keyword", limit=5, touch=False)
    assert [h.memory.id for h in plain] == [marathon, lookalike, ramen, lone]
    assert all("session" not in h.explain.lists for h in plain)
    assert {h.memory.id: h.score for h in plain} == pytest.approx(base, rel=1e-6)


def test_only_the_top_candidates_lend_support(store: Store, clock: Clock) -> None:
    def recall(top: int) -> dict[str, Any]:
        mem = Memory(store, Settings(embedder={"provider": "none"}, recall={"session_top": top}),
                     clock=clock)
        return {h.memory.id: h for h in mem.recall(QUERY, mode="keyword", limit=5, touch=False)}

    marathon, _legs, ramen, lookalike = _store(Memory(store, clock=clock, embedder=None))
    # Without the weekday fact "ramen" is rarer: the look-alike (the word twice) leads, then
    # the marathon turn, then the ramen turn.
    one = recall(1)
    assert list(one) == [lookalike, marathon, ramen]
    assert all("session" not in h.explain.lists for h in one.values())  # s2 has no other turn
    two = recall(2)
    assert two[ramen].explain.lists["session"] == {"support": round(two[marathon].score, 6)}
    assert "session" not in two[marathon].explain.lists  # the ramen turn is 3rd, not in the top 2
    assert two[marathon].score == two[marathon].explain.fused
    assert "session" not in two[lookalike].explain.lists


def test_the_default_hybrid_recall_on_a_database_file_ranks_the_answer_above_a_look_alike(
    tmp_path: Path, default_embedder: Any
) -> None:
    db = tmp_path / "m.db"
    canteen = {"content": "Ramen is on the canteen menu on Tuesdays", "session_id": "s2"}
    no_context = Settings(db=db, storage={"keyword_context": False})  # as in _store
    with Memory.open(db, settings=no_context, embedder=default_embedder) as mem:
        _marathon, legs, ramen, lookalike = mem.store_many(
            [{**d, "kind": "episode"} for d in [*DIALOGUE[:3], canteen]])
        mem.store_many({"content": f, "kind": "fact"} for f in FILLER)
        hits = mem.recall(QUERY, limit=4, touch=False)  # the default: hybrid
        assert all("vector" in h.explain.lists for h in hits)
        assert [h.memory.id for h in hits][1:] == [ramen, legs, lookalike]
        assert all("session" in h.explain.lists for h in hits[:3])
    with Memory.open(db, settings=Settings(db=db, recall={"session_weight": 0}),
                     embedder=default_embedder) as mem:
        hits = mem.recall(QUERY, limit=4, touch=False)
        assert [h.memory.id for h in hits][1:] == [lookalike, ramen, legs]

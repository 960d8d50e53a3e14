"""Exact behaviour no test protected: each test here fails for one small change of the code
(a mutant) that the whole suite let through before (issue 16's hand-made mutants, then
mutmut's survivors; docs/testing.md). Numbers are asserted exactly, through the public API.
"""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from clawmemory import InvalidInputError, Memory, NotFoundError, Settings
from clawmemory.portability import read_source
from clawmemory.store.memory import MemoryStore
from clawmemory.tools import call_tool
from conftest import DAY, START, Clock

KEYWORD = Settings(embedder={"provider": "none"})


def by_id(mem: Memory, query: str, **options: Any) -> dict[str, Any]:
    return {h.memory.id: h for h in mem.recall(query, mode="keyword", **options)}


# --- ranking factors (003) ---------------------------------------------------------------------
def test_reinforcement_is_exp_of_score_times_0_2(mem: Memory) -> None:
    up, down, plain = (mem.store(f"kayak trip {n}") for n in ("one", "two", "three"))
    mem.reinforce(up)
    mem.reinforce(up)
    mem.demote(down)
    factor = {rid: h.explain.factors["reinforcement"] for rid, h in by_id(mem, "kayak").items()}
    assert factor[up] == pytest.approx(math.exp(6 * 0.2), rel=1e-12)  # score 6: 3.32x
    assert factor[down] == pytest.approx(math.exp(-0.2), rel=1e-12)  # score -1: 0.82x
    assert factor[plain] == 1.0


def test_recency_loses_1_percent_a_day_since_the_last_access(mem: Memory, clock: Clock) -> None:
    rid = mem.store("kayak trip")
    clock.advance(10 * DAY)  # never recalled: counted from creation
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(1 / 1.1, rel=1e-12)
    mem.flush()  # the access tracker writes the recall's access now, not touch_delay_s later
    clock.advance(20 * DAY)  # the recall above was the last access, 20 days ago
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(1 / 1.2, rel=1e-12)
    mem.flush()
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == 1.0  # just accessed


def test_reinforce_restarts_the_recency_clock(mem: Memory, clock: Clock) -> None:
    rid = mem.store("kayak trip")
    clock.advance(50 * DAY)
    mem.reinforce(rid)
    assert mem.get(rid).last_accessed == START + 50 * DAY
    hit = by_id(mem, "kayak", touch=False)[rid]
    assert hit.explain.factors == {"reinforcement": pytest.approx(math.exp(0.6), rel=1e-12),
                                   "recency": 1.0, "confidence": 1.0}
    mem.demote(rid)  # demoting is not an access
    clock.advance(DAY)
    assert by_id(mem, "kayak")[rid].explain.factors["recency"] == pytest.approx(1 / 1.01)


# --- fusion and depth (000, 002, 004) ------------------------------------------------------------
@pytest.mark.parametrize("weights", [None, {"keyword": 1.0, "vector": 0.25, "entity": 2.0}])
def test_rrf_weighs_each_list_by_its_weight(
    clock: Clock, default_embedder: Any, weights: dict[str, float] | None
) -> None:
    recall: dict[str, Any] = {"fusion": "rrf"} | ({"list_weights": weights} if weights else {})
    mem = Memory(MemoryStore(), Settings(recall=recall), clock=clock, embedder=default_embedder)
    rid = mem.store("Alice Cooper plays the guitar on Fridays")
    mem.store("Bob Dylan writes songs")
    hit = mem.recall("Alice Cooper guitar")[0]
    assert hit.memory.id == rid
    ranks = {name: info["rank"] for name, info in hit.explain.lists.items()}
    assert ranks == {"keyword": 1, "vector": 1, "entity": 1}
    w = weights or {"keyword": 1.0, "vector": 1.0, "entity": 0.5}  # the default list weights
    assert hit.explain.fused == pytest.approx(sum(w.values()) / 61, rel=1e-12)  # k = 60


def test_depth_1_neighbours_obey_the_filters(mem: Memory) -> None:
    trip = mem.store("kayak trip to the lake", kind="fact")
    paddles = mem.store("bought paddles", kind="event")
    cold = mem.store("the lake water is cold", kind="fact")
    mem.link(trip, paddles)
    mem.link(trip, cold)
    mem.correct(cold, "the lake water is warm")  # the old version is invalidated

    def found(**options: Any) -> list[str]:
        return [h.memory.id for h in mem.recall("trip", depth=1, mode="keyword", **options)]

    assert found() == [trip, paddles]  # the invalidated neighbour stays out
    assert found(kind="fact") == [trip]  # so does a neighbour of another kind
    everything = found(include_invalid=True)  # two neighbours of equal score: either order
    assert everything[0] == trip and sorted(everything[1:]) == sorted([paddles, cold])
    neighbour = by_id(mem, "trip", depth=1)[paddles]
    assert (neighbour.explain.via, neighbour.explain.factors) == (
        f"link:{trip}", {"link_decay": 0.5})
    assert neighbour.score == pytest.approx(by_id(mem, "trip")[trip].score * 0.5)


# --- scoping -----------------------------------------------------------------------------------
def test_recall_counts_access_only_in_its_own_namespace(mem: Memory, clock: Clock) -> None:
    rid = mem.store("the wifi password is hunter2")
    twin = mem.with_namespace("twin")
    assert twin.import_snapshot(mem.export_snapshot())["created"] == 1  # the same id there
    clock.advance(DAY)
    assert [h.memory.id for h in mem.recall("wifi", mode="keyword")] == [rid]
    assert (mem.get(rid).access_count, mem.get(rid).last_accessed) == (1, START + DAY)
    assert (twin.get(rid).access_count, twin.get(rid).last_accessed) == (0, START)
    twin.recall("wifi", mode="keyword")
    twin.recall("wifi", mode="keyword")
    assert (twin.get(rid).access_count, mem.get(rid).access_count) == (2, 1)


def test_forget_namespace_forgets_its_entities(mem: Memory) -> None:
    gone = mem.with_namespace("gone")
    gone.store("Alice Cooper plays the guitar")
    mem.store("Alice Cooper sings")
    assert gone.entity_info("Alice Cooper")["mention_count"] == 1
    assert gone.forget_namespace() == 1
    with pytest.raises(NotFoundError, match="no entity named 'Alice Cooper' in namespace 'gone'"):
        gone.entity_info("Alice Cooper")
    kept = mem.entity_info("Alice Cooper")
    assert (kept["mention_count"], [r.content for r in kept["memories"]]) == (
        1, ["Alice Cooper sings"])


def test_forget_takes_the_memory_out_of_its_entity(mem: Memory) -> None:
    a = mem.store("Alice Cooper plays the guitar")
    b = mem.store("Alice Cooper sings")
    mem.forget(a)
    info = mem.entity_info("Alice Cooper")
    assert [r.id for r in info["memories"]] == [b]
    mem.forget(b)
    with pytest.raises(NotFoundError):
        mem.entity_info("Alice Cooper")


# --- engine ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["preference", "event", "fact"])
def test_correct_keeps_the_kind(mem: Memory, kind: str) -> None:
    old = mem.store("the user likes tea", kind=kind, session_id="s1", source="chat")
    new = mem.correct(old, "the user likes coffee")
    assert (new.kind, new.session_id, new.source) == (kind, "s1", "chat")
    assert mem.get(new.id).kind == kind


# --- tools -------------------------------------------------------------------------------------
def test_koshi_memory_query_returns_five_by_default(mem: Memory) -> None:
    mem.store_many({"content": f"widget note {i}"} for i in range(12))
    answer = call_tool(mem, "memory_query", {"query": "widget"}, dialect="koshi")
    assert len(answer.text.splitlines()) == 5 and answer.data["count"] == 5
    more = call_tool(mem, "memory_query", {"query": "widget", "limit": 8}, dialect="koshi")
    assert more.data["count"] == 8


# --- vectors -----------------------------------------------------------------------------------
class Renamed:
    """The default embedder under another model name: the same dimension, another space."""

    def __init__(self, inner: Any, name: str) -> None:
        self.inner, self.name, self.dimension = inner, name, inner.dimension

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        rows: npt.NDArray[np.float32] = self.inner.embed(texts)
        return rows

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.inner.embed_query(text)
        return row


def test_another_model_of_the_same_dimension_is_refused_until_reindex(
    tmp_path: Path, default_embedder: Any
) -> None:
    db = tmp_path / "m.db"
    with Memory.open(db, settings=Settings(), embedder=default_embedder) as mem:
        mem.store("the quick brown fox")
    other = Renamed(default_embedder, "another-384-d-model")
    with Memory.open(db, settings=Settings(), embedder=other) as mem:
        status = mem.stats()["vectors"]
        with pytest.raises(InvalidInputError, match="vector search disabled"):
            mem.recall("fox", mode="vector")
        assert "'another-384-d-model' gives 384-d vectors" in mem.stats()["vectors"], status
        assert mem.reindex() == 1
        assert mem.recall("fox", mode="vector")[0].memory.content == "the quick brown fox"


# --- import ------------------------------------------------------------------------------------
def test_sclaw_summaries_keep_their_own_time(tmp_path: Path) -> None:
    source = tmp_path / "sclaw.db"
    db = sqlite3.connect(source)
    db.executescript("""
        CREATE TABLE schema_version (version INTEGER NOT NULL);
        INSERT INTO schema_version VALUES (2);
        CREATE TABLE facts (id TEXT PRIMARY KEY, content TEXT NOT NULL, source TEXT, tags TEXT,
            metadata TEXT, created_at DATETIME);
        CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT
            NULL, content TEXT NOT NULL DEFAULT '', created_at DATETIME);
        CREATE TABLE summaries (session_id TEXT PRIMARY KEY, summary TEXT NOT NULL,
            updated_at DATETIME);
        INSERT INTO summaries VALUES ('s1', 'Alice introduced herself.', '2024-01-15 11:00:00');
        INSERT INTO summaries VALUES ('s2', 'No time was recorded.', NULL);
    """)
    db.commit()
    db.close()
    imported_at = START + 400 * DAY
    with Memory.open(tmp_path / "m.db", settings=KEYWORD, clock=Clock(imported_at)) as mem:
        parsed = read_source("sclaw-db", source, namespace=mem.namespace, now=mem.clock(),
                             max_chars=mem.settings.storage.max_content_chars)
        assert mem.import_records(parsed)["created"] == 2
        when = {r.session_id: (r.created_at, r.updated_at, r.stored_at)
                for r in mem.list(kind="summary")}
    jan_15 = 1_705_316_400.0  # 2024-01-15 11:00:00 UTC
    assert when == {"s1": (jan_15, jan_15, imported_at),
                    "s2": (imported_at, imported_at, imported_at)}

"""The benchmark-justified recall defaults (ADR 0011), each on a small fixture built here, with the
real default embedder (the packaged all-MiniLM-L6-v2, loaded once for the module):

* a paraphrased question about a person: every fact about them matches the name in BM25, which
  prefers the shortest; hybrid must rank like the vector side;
* an identifier among near-identical ones: the vectors cannot tell them apart; hybrid must rank
  like BM25;
* the entity list contributes in the default mode;
* the relevance floor: nothing relevant, nothing returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.embed import make_embedder

PEOPLE = ["Jonas Fischer", "Maya Okafor", "Liam Berg", "Sofia Marin", "Theo Grant", "Nina Alves"]
FACTS = {  # template, values (one per person, rotated)
    "hobby": ("{p} took up {v} this spring.",
              ["pottery classes", "chess", "salsa dancing", "woodworking", "the cello", "judo"]),
    "book": ("{p} reads {v} on the train.",
             ["Beloved", "Dune", "Emma", "Solaris", "Ulysses", "Middlemarch"]),
    "car": ("{p} owns a {v} hatchback.", ["red", "blue", "silver", "black", "green", "white"]),
    "job": ("{p} is a {v} at the city hospital.",
            ["nurse", "surgeon", "radiologist", "pharmacist", "porter", "midwife"]),
    "food": ("{p} cannot eat {v}.", ["peanuts", "shellfish", "gluten", "dairy", "eggs", "sesame"]),
}
CODES = {
    "E4471": "Error E4471 means the nightly export overran its time budget.",
    "E4472": "Error E4472 means the nightly import overran its memory budget.",
    "E4473": "Error E4473 means the nightly backup could not reach the bucket.",
    "E4474": "Error E4474 means the nightly report had no data.",
}
WORK = [
    "The staging database resets on Monday.",
    "Deploys are frozen during the last week of the quarter.",
    "User prefers dark mode in every editor.",
    "The on-call rotation changes every Tuesday at noon.",
    "Grafana dashboards for the billing service live in folder FIN-2.",
]


def fact(person: str, kind: str) -> str:
    template, values = FACTS[kind]
    i = PEOPLE.index(person)
    return template.format(p=person, v=values[(i + list(FACTS).index(kind)) % len(values)])


@pytest.fixture(scope="module")
def embedder() -> Any:
    e = make_embedder("local")
    assert e is not None
    e.embed_query("warm up")
    return e


@pytest.fixture
def people(tmp_path: Path, embedder: Any) -> Iterator[Memory]:
    mem = Memory.open(tmp_path / "people.db", embedder=embedder)
    mem.store_many({"content": fact(p, k)} for p in PEOPLE for k in FACTS)
    yield mem
    mem.close()


def top(mem: Memory, query: str, mode: str, limit: int = 5) -> list[str]:
    return [h.memory.content for h in mem.recall(query, mode=mode, limit=limit, touch=False)]


@pytest.mark.parametrize(("query", "person", "kind"), [
    ("What new hobby is Jonas Fischer picking up?", "Jonas Fischer", "hobby"),
    ("Which hobby has Maya Okafor started?", "Maya Okafor", "hobby"),
])
def test_paraphrase_hybrid_ranks_like_the_vector_side(
    people: Memory, query: str, person: str, kind: str
) -> None:
    gold = fact(person, kind)
    keyword = top(people, query, "keyword")
    # The case bites: the question shares only the name with its fact, and BM25 prefers the
    # person's shortest fact.
    assert keyword[0] != gold and keyword[0].startswith(person)
    assert top(people, query, "vector")[0] == gold
    hits = people.recall(query, limit=5, touch=False)  # the default: hybrid, calibrated
    assert hits[0].memory.content == gold
    # The name's BM25 matches tie (same words, lengths within 20%), so the vector decided.
    assert hits[0].explain.lists["keyword"]["z"] == hits[1].explain.lists["keyword"]["z"]


@pytest.mark.parametrize("code", ["E4472", "E4474 error"])
def test_an_identifier_hybrid_ranks_like_bm25(tmp_path: Path, embedder: Any, code: str) -> None:
    with Memory.open(tmp_path / "codes.db", embedder=embedder) as mem:
        mem.store_many({"content": t} for t in CODES.values())
        gold = CODES[code.split(maxsplit=1)[0]]
        assert top(mem, code, "keyword")[0] == gold
        assert top(mem, code, "vector")[0] != gold  # near-identical codes look alike to MiniLM
        assert top(mem, code, "hybrid")[0] == gold
        assert top(mem, code, "auto")[0] == gold


def test_the_entity_list_takes_part_by_default(people: Memory) -> None:
    hits = people.recall("Theo Grant hatchback colour", limit=3, touch=False)
    assert hits[0].memory.content == fact("Theo Grant", "car")
    assert "entity" in hits[0].explain.lists
    assert "entity:Theo Grant" in hits[0].explain.matched_terms
    # BM25 and the entity agree on *who*: every hit is about Theo Grant, although the vector
    # side alone ranks another person's hatchback second.
    assert all(h.memory.content.startswith("Theo Grant") for h in hits)
    assert not top(people, "Theo Grant hatchback colour", "vector", 3)[1].startswith("Theo")


def test_nothing_relevant_returns_nothing(tmp_path: Path, embedder: Any) -> None:
    with Memory.open(tmp_path / "work.db", embedder=embedder) as mem:
        ids = mem.store_many({"content": t} for t in WORK)
        for mode in ("auto", "hybrid", "vector", "keyword"):
            assert mem.recall("banana bread recipe", mode=mode) == []
        # A paraphrase still finds its memory (no shared word; plain cosine 0.30, the next 0.24)...
        assert top(mem, "night theme", "auto", 1) == [WORK[2]]
        mem.forget(ids[2])
        # ... and once that memory is forgotten, nothing else is passed off as relevant.
        assert mem.recall("night theme") == []


def test_the_floor_is_a_setting(tmp_path: Path, embedder: Any) -> None:
    settings = Settings(db=tmp_path / "work.db")
    settings.recall.relevance_floor = False
    with Memory.open(settings=settings, embedder=embedder) as mem:
        mem.store_many({"content": t} for t in WORK)
        assert len(mem.recall("banana bread recipe", mode="vector")) == len(WORK)


def test_vector_mode_keeps_a_memory_holding_the_question_words(tmp_path: Path,
                                                               embedder: Any) -> None:
    """The floor never empties vector mode when a memory on the question's topic exists: here
    no memory reaches the cosine the floor asks (the best, about the quarter's freeze, is just
    under it) but that one holds the question's word."""
    with Memory.open(tmp_path / "work.db", embedder=embedder) as mem:
        mem.store_many({"content": t} for t in WORK)
        hits = mem.recall("quarter", mode="vector")
        assert hits[0].memory.content == WORK[1]
        assert hits[0].explain.floor is not None and "query's words" in hits[0].explain.floor
        assert "kept: holds the query's words" in str(hits[0].explain)
        assert mem.recall("banana bread recipe", mode="vector") == []  # still nothing
        # Every hit says why the floor kept it.
        best = mem.recall("staging database", mode="hybrid")[0]
        assert best.explain.floor == "holds a query word"
        assert mem.recall("night theme", mode="vector")[0].explain.floor.startswith("cosine 0.")

"""The storage contract: every backend gives the same answers through ``Memory`` and ``Store``.

Each test runs once per backend in ``conftest.BACKENDS``. Backend-specific checks (the SQLite
file's full-text index, the JSON file's shapes) live at the end and narrow the parametrisation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from clawmemory import Filter, ImportFormatError, InvalidInputError, Memory, MemoryRecord, Settings
from clawmemory.backends.base import ORDERS, SUBSTRING_SCAN_ROWS, Store
from clawmemory.backends.jsonfile.store import JSONFileStore
from clawmemory.errors import NotFoundError, StorageError
from conftest import (
    BACKENDS,
    DAY,
    EMBEDDINGS,
    START,
    Backend,
    Clock,
    backend_params,
    memory_on,
)


@pytest.fixture(params=EMBEDDINGS)
def embedding(request: pytest.FixtureRequest) -> str:
    """Every test here runs keyword-only and with the shipped default (conftest.EMBEDDINGS)."""
    return str(request.param)

# --- helpers ---------------------------------------------------------------------------------


def fields(record: MemoryRecord, *, without: tuple[str, ...] = ()) -> dict[str, Any]:
    d = record.to_dict()
    for name in without:
        d.pop(name)
    return d


def all_records(mem: Memory) -> list[MemoryRecord]:
    return mem.list(include_invalid=True, limit=10_000, order="oldest")


def contents(records: list[MemoryRecord]) -> list[str]:
    return [r.content for r in records]


def link_view(store: Store, mem: Memory) -> set[tuple[str, str, float, str]]:
    """Every link of mem's namespace as (lo, hi, strength, origin), seen from both ends."""
    ids = [r.id for r in all_records(mem)]
    out = set()
    for rid, links in store.links(mem.namespace, ids).items():
        for lk in links:
            lo, hi = sorted((rid, lk.other_id))
            out.add((lo, hi, lk.strength, lk.origin))
    return out


# --- records ---------------------------------------------------------------------------------


def test_backend_satisfies_the_store_protocol(store: Store, backend: Backend) -> None:
    assert isinstance(store, Store)
    assert store.backend == backend.name


def test_a_store_says_when_it_is_closed(open_store: Callable[[], Store]) -> None:
    store = open_store()
    assert store.closed is False
    store.close()
    assert store.closed is True  # the access-count thread stops on it (search/access.py)


def test_store_then_get_by_id_and_by_key(mem: Memory, clock: Clock) -> None:
    rid = mem.store("User prefers dark mode", key="ui-theme", kind="preference",
                    tags=["ui", "theme"], metadata={"app": "editor", "level": 2},
                    session_id="s1", narrative_id="arc-9", task_id=12, source="conversation",
                    source_role="user", event_time=START - DAY)
    by_id, by_key = mem.get(rid), mem.get("ui-theme")
    assert by_id == by_key
    assert by_id.id == rid
    assert by_id.namespace == "default"
    assert (by_id.content, by_id.kind, by_id.key) == ("User prefers dark mode", "preference",
                                                      "ui-theme")
    assert by_id.tags == ("ui", "theme")
    assert by_id.metadata == {"app": "editor", "level": 2}
    assert (by_id.session_id, by_id.source, by_id.source_role) == ("s1", "conversation", "user")
    assert (by_id.narrative_id, by_id.task_id) == ("arc-9", "12")
    assert by_id.created_at == by_id.updated_at == by_id.last_accessed == START
    assert by_id.event_time == START - DAY
    assert (by_id.score, by_id.access_count, by_id.confidence) == (0, 0, 1.0)
    assert by_id.is_valid


def test_get_of_an_unknown_id_or_key_raises_not_found(mem: Memory) -> None:
    mem.store("something")
    with pytest.raises(NotFoundError):
        mem.get("no-such-key")


def test_id_wins_over_a_key_with_the_same_text(mem: Memory) -> None:
    first = mem.store("first")
    second = mem.store("second", key=first)  # a key that spells the other memory's id
    assert mem.get(first).content == "first"
    assert mem.get(second).content == "second"


def test_upsert_by_key_keeps_id_created_at_and_score(mem: Memory, clock: Clock) -> None:
    rid = mem.store("Project uses Postgres 15", key="db", tags=["infra"])
    mem.reinforce(rid)
    clock.advance(DAY)
    again = mem.store("Project uses Postgres 16", key="db", tags=["infra", "db"])
    assert again == rid
    r = mem.get("db")
    assert r.content == "Project uses Postgres 16"
    assert r.tags == ("infra", "db")
    assert r.created_at == START
    assert r.updated_at == START + DAY
    assert r.score == 3
    assert mem.count() == 1
    # the full-text index follows the new content
    assert [h.memory.id for h in mem.recall("16")] == [rid]
    assert mem.recall("15", mode="keyword") == []


def test_put_reports_whether_a_record_was_created(store: Store) -> None:
    rec = MemoryRecord(id="a1", content="alpha", key="k", created_at=START, updated_at=START)
    stored, created = store.put(rec)
    assert created and stored == rec
    stored2, created2 = store.put(rec.evolve(id="a2", content="beta", score=9))
    assert not created2
    assert stored2.id == "a1" and stored2.content == "beta" and stored2.score == 0
    assert store.get("default", "k") == stored2


def test_a_failed_batch_leaves_an_archived_key_holder_in_the_archive(store: Store) -> None:
    """A keyed write brings the archived holder of its key back (ADR 0022); when the rest of
    its batch fails, the whole batch is undone, the archive included: nothing is lost."""
    held = MemoryRecord(id="h1", content="old door code", key="door", created_at=START,
                        updated_at=START, stored_at=START)
    other = MemoryRecord(id="o1", content="other", created_at=START, updated_at=START)
    store.put_many([held, other], skip_existing_keys=False)
    assert store.archive("default", ["h1"], at=START + 1) == 1
    new = MemoryRecord(id="n1", content="new door code", key="door", created_at=START + 2,
                       updated_at=START + 2, stored_at=START + 2)
    clash = other.evolve(content="a second record with an id already stored")
    with pytest.raises(StorageError):
        store.put_many([new, clash], skip_existing_keys=False)
    archived = store.find_archived("default", "door")
    assert archived is not None and archived.content == "old door code"
    assert store.get("default", "door") is None
    stored, created = store.put_many([new], skip_existing_keys=False)[0]
    assert (stored.id, stored.content, created) == ("h1", "new door code", False)
    assert store.find_archived("default", "door") is None


BAD_TEXT = {"NUL": "a\x00b", "lone surrogate": "a\udc80b"}
BAD_FIELDS: dict[str, Callable[[str], dict[str, Any]]] = {
    "content": lambda t: {"content": t},
    "key": lambda t: {"content": "ok", "key": t},
    "tag": lambda t: {"content": "ok", "tags": ["fine", t]},
    "metadata value": lambda t: {"content": "ok", "metadata": {"k": t}},
    "metadata key": lambda t: {"content": "ok", "metadata": {t: 1}},
}


@pytest.mark.parametrize("bad", BAD_TEXT.values(), ids=BAD_TEXT.keys())
@pytest.mark.parametrize("field", BAD_FIELDS.values(), ids=BAD_FIELDS.keys())
def test_text_no_backend_can_store_is_refused(
    mem: Memory, bad: str, field: Callable[[str], dict[str, Any]]
) -> None:
    with pytest.raises(InvalidInputError):
        mem.store(**field(bad))
    assert mem.count() == 0
    assert mem.get(mem.store("still works")).content == "still works"


# --- listing and counting ----------------------------------------------------------------------


@pytest.fixture
def sample(mem: Memory, clock: Clock) -> dict[str, str]:
    """Five memories created one minute apart, with varied kinds, tags, sessions and sources."""
    specs: list[tuple[str, dict[str, Any]]] = [
        ("alpha fact", {"kind": "fact", "tags": ["x"], "session_id": "s1", "source": "agent",
                        "metadata": {"team": "red", "n": 1}, "narrative_id": "n1",
                        "task_id": 7}),
        ("beta preference", {"kind": "preference", "tags": ["x", "y"], "session_id": "s1",
                             "metadata": {"team": "blue", "n": 2}, "narrative_id": "n1"}),
        ("gamma event", {"kind": "event", "tags": ["y"], "session_id": "s2",
                         "source": "agent", "metadata": {"team": "red", "n": 3},
                         "narrative_id": "n2", "task_id": "7"}),
        ("delta fact", {"kind": "knowledge", "tags": ["x", "y", "z"], "session_id": "s2",
                        "source": "import"}),
        ("epsilon core", {"kind": "core"}),
    ]
    ids = {}
    for content, kw in specs:
        ids[content.split()[0]] = mem.store(content, **kw)
        clock.advance(60)
    return ids


def test_list_newest_and_oldest(mem: Memory, sample: dict[str, str]) -> None:
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]
    assert [r.id for r in mem.list(order="oldest")] == [sample[n] for n in names]
    assert [r.id for r in mem.list()] == [sample[n] for n in reversed(names)]


def test_list_order_by_score(mem: Memory, sample: dict[str, str]) -> None:
    mem.reinforce(sample["gamma"])
    mem.demote(sample["delta"])
    got = [r.id for r in mem.list(order="score")]
    # score desc, then newest first among equal scores
    assert got == [sample["gamma"], sample["epsilon"], sample["beta"], sample["alpha"],
                   sample["delta"]]


def test_list_order_by_last_access(mem: Memory, sample: dict[str, str], clock: Clock) -> None:
    clock.advance(DAY)
    assert [h.memory.id for h in mem.recall("alpha", mode="keyword")] == [sample["alpha"]]
    got = [r.id for r in mem.list(order="accessed")]
    assert got[0] == sample["alpha"]
    assert got[1:] == [sample[n] for n in ("epsilon", "delta", "gamma", "beta")]


def test_list_refuses_an_unknown_order(mem: Memory) -> None:
    assert set(ORDERS) == {"newest", "oldest", "score", "accessed"}
    with pytest.raises(InvalidInputError):
        mem.list(order="random")


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"kind": "fact"}, {"alpha", "delta"}),
        ({"kind": "knowledge"}, {"alpha", "delta"}),
        ({"kind": ["event", "core"]}, {"gamma", "epsilon"}),
        ({"tags": ["x"]}, {"alpha", "beta", "delta"}),
        ({"tags": ["x", "y"]}, {"beta", "delta"}),
        ({"tags": ["nope"]}, set()),
        ({"session_id": "s2"}, {"gamma", "delta"}),
        ({"narrative_id": "n1"}, {"alpha", "beta"}),
        ({"task_id": 7}, {"alpha", "gamma"}),  # 003's integer ids are their decimal text
        ({"task_id": "7", "narrative_id": "n2"}, {"gamma"}),
        ({"narrative_id": "n3"}, set()),
        ({"metadata": {"team": "red"}}, {"alpha", "gamma"}),
        ({"metadata": {"team": "red", "n": 3}}, {"gamma"}),
        ({"source": "agent"}, {"alpha", "gamma"}),
        ({"kind": "fact", "tags": ["y"], "source": "import"}, {"delta"}),
        ({}, {"alpha", "beta", "gamma", "delta", "epsilon"}),
    ],
    ids=lambda v: json.dumps(v, sort_keys=True) if isinstance(v, dict) else None,
)
def test_list_and_count_filters(
    mem: Memory, sample: dict[str, str], filters: dict[str, Any], expected: set[str]
) -> None:
    names = {rid: name for name, rid in sample.items()}
    assert {names[r.id] for r in mem.list(**filters)} == expected
    assert mem.count(**filters) == len(expected)


def test_list_limit_and_offset_page_through_everything(mem: Memory, clock: Clock) -> None:
    ids = []
    for i in range(12):
        ids.append(mem.store(f"note number {i}"))
        clock.advance(1)
    for order in ("newest", "oldest"):
        pages = [mem.list(limit=5, offset=o, order=order) for o in (0, 5, 10, 15)]
        assert [len(p) for p in pages] == [5, 5, 2, 0]
        seen = [r.id for p in pages for r in p]
        assert seen == (ids[::-1] if order == "newest" else ids)


def test_equal_timestamps_keep_insertion_order(mem: Memory) -> None:
    ids = [mem.store(f"same instant {i}") for i in range(6)]  # the clock does not move
    assert [r.id for r in mem.list(order="oldest")] == ids
    assert [r.id for r in mem.list(order="newest")] == ids[::-1]


def test_list_rejects_bad_paging(mem: Memory) -> None:
    with pytest.raises(InvalidInputError):
        mem.list(limit=0)
    with pytest.raises(InvalidInputError):
        mem.list(offset=-1)


# --- update and forget -------------------------------------------------------------------------


def test_update_changes_fields_and_reindexes(mem: Memory, clock: Clock) -> None:
    rid = mem.store("The cat is named Tom", key="cat", tags=["pets"])
    mem.reinforce(rid)
    clock.advance(3600)
    r = mem.update("cat", content="The dog is named Rex", tags=["pets", "dog"],
                   metadata={"age": 3}, kind="event", key="dog")
    assert r.id == rid
    stored = mem.get(rid)
    assert stored == r
    assert (stored.content, stored.kind, stored.key) == ("The dog is named Rex", "event", "dog")
    assert stored.tags == ("pets", "dog") and stored.metadata == {"age": 3}
    assert stored.score == 3 and stored.created_at == START
    assert stored.updated_at == stored.last_accessed == START + 3600
    with pytest.raises(NotFoundError):
        mem.get("cat")
    assert [h.memory.id for h in mem.recall("Rex")] == [rid]
    assert mem.recall("Tom cat", mode="keyword") == []


def test_update_refuses_a_key_used_by_another_memory(mem: Memory) -> None:
    mem.store("one", key="k1")
    mem.store("two", key="k2")
    with pytest.raises(InvalidInputError):
        mem.update("k2", key="k1")
    assert mem.get("k2").content == "two"
    with pytest.raises(NotFoundError):
        mem.update("nope", content="x")


def test_forget_removes_the_record_and_its_links(mem: Memory, store: Store) -> None:
    a = mem.store("apples are red", key="apple")
    b = mem.store("bananas are yellow", key="banana")
    c = mem.store("cherries are dark red", key="cherry")
    assert mem.link(a, b) and mem.link(a, c) and mem.link(b, c)
    forgotten = mem.forget("apple")
    assert forgotten.id == a
    with pytest.raises(NotFoundError):
        mem.get(a)
    assert mem.count() == 2
    assert [r.id for r in mem.neighbors(b)] == [c]
    assert store.links("default", [a]) == {a: []}
    assert [lk.other_id for lk in store.links("default", [b])[b]] == [c]
    assert [lk.other_id for lk in store.links("default", [c])[c]] == [b]
    assert mem.stats()["links"] == 1
    assert [h.memory.id for h in mem.recall("red", mode="keyword")] == [c]
    assert mem.recall("apples", mode="keyword") == []
    assert {h.memory.id for h in mem.recall("apples are red")} <= {b, c}  # nor by its vector
    with pytest.raises(NotFoundError):
        mem.forget("apple")


def test_store_delete_ignores_unknown_ids(store: Store, mem: Memory) -> None:
    rid = mem.store("keep me")
    assert store.delete("default", ["missing", "also-missing"]) == 0
    assert store.delete("default", []) == 0
    assert store.delete("other-namespace", [rid]) == 0
    assert store.delete("default", [rid, "missing"]) == 1


# --- namespaces ------------------------------------------------------------------------------


def test_namespaces_isolate_everything(mem: Memory, store: Store) -> None:
    other = mem.with_namespace("tenant-b")
    a1 = mem.store("shared secret recipe: garlic", key="recipe", metadata={"t": "a"})
    a2 = mem.store("alpha side note")
    b1 = other.store("tenant b recipe: onions", key="recipe", metadata={"t": "b"})
    b2 = other.store("bravo side note")
    assert a1 != b1
    assert mem.get("recipe").content.endswith("garlic")
    assert other.get("recipe").content.endswith("onions")
    for own, foreign in ((mem, b1), (other, a1)):
        with pytest.raises(NotFoundError):
            own.get(foreign)
        with pytest.raises(NotFoundError):
            own.forget(foreign)
    assert [h.memory.id for h in mem.recall("garlic onions recipe", mode="keyword")] == [a1]
    assert [h.memory.id for h in other.recall("garlic onions recipe", mode="keyword")] == [b1]
    assert mem.recall("bravo", mode="keyword") == []
    assert other.recall("alpha", mode="keyword") == []
    for own, mine in ((mem, {a1, a2}), (other, {b1, b2})):  # the default's vectors too
        assert {h.memory.id for h in own.recall("garlic onions recipe bravo alpha")} <= mine
    assert mem.count() == other.count() == 2
    assert [r.id for r in mem.search_by_metadata("t", "b")] == []
    # links never cross a namespace, not even through the store
    assert not mem.link(a1, b1)
    assert not store.link("default", a1, b1, strength=1.0, origin="manual")
    assert not store.link("tenant-b", a1, a2, strength=1.0, origin="manual")
    assert mem.link(a1, a2) and other.link(b1, b2)
    assert mem.stats()["links"] == other.stats()["links"] == 1
    assert store.namespaces() == ["default", "tenant-b"]
    other.forget(b2)
    assert [r.id for r in mem.neighbors(a1)] == [a2]
    assert other.forget_namespace() == 1
    assert other.count() == 0 and other.recall("onions") == []
    assert mem.count() == 2 and store.namespaces() == ["default"]
    assert [r.id for r in mem.neighbors(a1)] == [a2]


# --- metadata search -------------------------------------------------------------------------


def test_search_by_metadata_string_int_and_bool(mem: Memory) -> None:
    a = mem.store("a", metadata={"project": "apollo", "priority": 3, "done": True})
    b = mem.store("b", metadata={"project": "gemini", "priority": 1, "done": False})
    c = mem.store("c", metadata={"project": "apollo", "priority": 10, "flag": 1})
    mem.store("d")

    def found(key: str, value: Any) -> set[str]:
        return {r.id for r in mem.search_by_metadata(key, value)}

    assert found("project", "apollo") == {a, c}
    assert found("priority", 3) == {a}
    assert found("priority", "3") == {a}  # 001 metadata is text: "3" finds 3
    assert found("priority", 1) == {b}
    assert found("done", True) == {a}
    assert found("done", False) == {b}
    assert found("done", "true") == {a}
    assert found("flag", True) == set()  # 1 is not true
    assert found("flag", 1) == {c}
    assert found("project", "mercury") == set()
    assert found("missing", "apollo") == set()


def test_metadata_keys_with_dots_and_quotes(mem: Memory) -> None:
    a = mem.store("a", metadata={"a.b": "dotted", 'we"ird': "quoted", "sp ace": 1})
    mem.store("b", metadata={"a": {"b": "dotted"}})
    assert [r.id for r in mem.search_by_metadata("a.b", "dotted")] == [a]
    assert [r.id for r in mem.search_by_metadata('we"ird', "quoted")] == [a]
    assert [r.id for r in mem.search_by_metadata("sp ace", 1)] == [a]


def test_metadata_equality_is_the_same_on_every_backend(mem: Memory) -> None:
    a = mem.store("a", metadata={"big": 1e20, "tiny": 1e-7, "list": [1, 2], "huge": 2**70,
                                 "obj": {"y": 1, "x": [True, None]}, "flag": "True",
                                 "back\\slash": "v", "n": -3})
    mem.store("b", metadata={"big": 1e19, "list": [2, 1], "obj": {"x": [1, None], "y": 1},
                             "flag": False, "n": "-3.0"})

    def found(key: str, value: Any) -> set[str]:
        return {r.id for r in mem.search_by_metadata(key, value)}

    assert found("big", 1e20) == {a}
    assert found("tiny", 1e-7) == {a}
    assert found("huge", 2**70) == {a} and found("huge", str(2**70)) == {a}
    assert found("list", [1, 2]) == {a}
    assert found("list", "[1, 2]") == set()  # a container only equals a container
    assert found("obj", {"x": [True, None], "y": 1}) == {a}  # key order does not matter
    assert found("flag", True) == {a}  # "True" is text for true (001 metadata is text)
    assert found("back\\slash", "v") == {a}
    assert found("n", -3) == {a} and found("n", "-3") == {a}


# --- recall ----------------------------------------------------------------------------------


def _corpus(mem: Memory, clock: Clock) -> None:
    for text in ("gardening tips for spring", "cooking pasta at home",
                 "weekly team meeting notes", "travel plans for the summer"):
        mem.store(text)
        clock.advance(1)


def test_more_matching_terms_rank_higher(mem: Memory, clock: Clock) -> None:
    _corpus(mem, clock)
    best = mem.store("python testing with pytest fixtures")
    some = mem.store("python testing is fun")
    one = mem.store("python snakes are reptiles")
    hits = mem.recall("python pytest testing fixtures", limit=10, mode="keyword")
    assert [h.memory.id for h in hits] == [best, some, one]
    assert hits[0].score > hits[1].score > hits[2].score


def _twins(mem: Memory, clock: Clock) -> tuple[str, str]:
    """Two memories the query matches equally well; returns them in their recall order."""
    _corpus(mem, clock)
    mem.store("kayak river trip one")
    mem.store("kayak river trip two")
    hits = mem.recall("kayak", limit=10, mode="keyword")
    assert len(hits) == 2
    assert hits[0].score == pytest.approx(hits[1].score)
    return hits[0].memory.id, hits[1].memory.id


def test_reinforce_raises_rank(mem: Memory, clock: Clock) -> None:
    first, second = _twins(mem, clock)
    r = mem.reinforce(second)
    assert r.score == 3 and mem.get(second).score == 3
    hits = mem.recall("kayak", mode="keyword")
    assert [h.memory.id for h in hits] == [second, first]
    assert hits[0].explain.factors["reinforcement"] > 1.0


def test_demote_lowers_rank(mem: Memory, clock: Clock) -> None:
    first, second = _twins(mem, clock)
    assert mem.demote(first).score == -1
    hits = mem.recall("kayak", mode="keyword")
    assert [h.memory.id for h in hits] == [second, first]
    assert hits[1].explain.factors["reinforcement"] < 1.0


def test_recall_counts_as_access(mem: Memory, clock: Clock) -> None:
    hit_id = mem.store("the wifi password is hunter2")
    miss_id = mem.store("unrelated note")
    clock.advance(DAY)
    hits = mem.recall("wifi password", mode="keyword")
    assert [h.memory.id for h in hits] == [hit_id]
    assert hits[0].memory.access_count == 1 and hits[0].memory.last_accessed == START + DAY
    stored = mem.get(hit_id)
    assert stored.access_count == 1 and stored.last_accessed == START + DAY
    untouched = mem.get(miss_id)
    assert untouched.access_count == 0 and untouched.last_accessed == START
    clock.advance(DAY)
    mem.recall("wifi", touch=False)
    assert mem.get(hit_id).access_count == 1
    mem.recall("wifi", mode="keyword")
    assert mem.get(hit_id).access_count == 2
    assert mem.get(hit_id).last_accessed == START + 2 * DAY
    # with the configured mode (the default: hybrid) exactly what came back is counted
    clock.advance(DAY)
    returned = {h.memory.id for h in mem.recall("wifi password")}
    assert hit_id in returned
    for rid, count, accessed in ((hit_id, 2, START + 2 * DAY), (miss_id, 0, START)):
        touched = rid in returned
        assert mem.get(rid).access_count == count + touched
        assert mem.get(rid).last_accessed == (START + 3 * DAY if touched else accessed)


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_returns_nothing(mem: Memory, query: str) -> None:
    mem.store("anything at all")
    assert mem.recall(query) == []


def test_recall_kind_and_invalid_filters(mem: Memory) -> None:
    f = mem.store("coffee in the morning", kind="fact")
    p = mem.store("coffee without sugar", kind="preference")
    assert {h.memory.id for h in mem.recall("coffee")} == {f, p}
    assert [h.memory.id for h in mem.recall("coffee", kind="preference")] == [p]
    assert [h.memory.id for h in mem.recall("coffee", kind="knowledge")] == [f]
    assert mem.recall("coffee", kind="event") == []
    with pytest.raises(InvalidInputError):
        mem.recall("coffee", kind="nonsense")


def test_recall_respects_limit(mem: Memory) -> None:
    for i in range(8):
        mem.store(f"meeting number {i}")
    assert len(mem.recall("meeting", limit=3)) == 3
    assert len(mem.recall("meeting")) == 5  # recall.limit default (000)


def test_like_fallback_for_single_character_tokens(mem: Memory) -> None:
    r_lang = mem.store("Use the R language for statistics")
    mem.store("Python is fun")
    hits = mem.recall("R", mode="keyword")
    assert [h.memory.id for h in hits] == [r_lang]
    assert hits[0].explain.via == "like-fallback"
    assert hits[0].explain.matched_terms == ("r",)


def test_like_fallback_for_a_substring(mem: Memory) -> None:
    p = mem.store("Python programming tips")
    mem.store("Gardening for beginners")
    hits = mem.recall("thon", mode="keyword")
    assert [h.memory.id for h in hits] == [p]
    assert hits[0].explain.via == "like-fallback"
    assert "thon" in hits[0].explain.matched_terms


def test_like_fallback_reads_only_the_newest_memories(mem: Memory, embedding: str,
                                                      clock: Clock) -> None:
    """The substring scan is bounded (SUBSTRING_SCAN_ROWS newest memories): a word no memory
    holds must not read a whole namespace. Keyword-only: vectors change nothing here."""
    if embedding != "keyword":
        pytest.skip("the bound is the same with vectors; 2,000 embeddings per backend is slow")
    old = mem.store("note zqxjalpha")
    clock.advance(60)
    mem.store_many({"content": f"filler number {i}"} for i in range(SUBSTRING_SCAN_ROWS - 1))
    clock.advance(60)
    new = mem.store("note zqxjbeta")
    hits = mem.recall("zqxj", mode="keyword")
    assert [h.memory.id for h in hits] == [new]  # the oldest is past the newest 2,000
    assert hits[0].explain.via == "like-fallback"
    assert [h.memory.id for h in mem.recall("zqxjalpha", mode="keyword")] == [old]  # FTS


def test_like_fallback_folds_non_ascii_case(mem: Memory) -> None:
    b = mem.store("TREFFEN IM BÜRO")
    mem.store("meeting at home")
    hits = mem.recall("üro", mode="keyword")
    assert [h.memory.id for h in hits] == [b]


def test_recall_ignores_diacritics(mem: Memory) -> None:
    cafe = mem.store("We met at the Café Central")
    naive = mem.store("a nai\u0308ve question")  # decomposed (NFD) text, as macOS produces it
    mem.store("tea house downtown")
    for query, found in (("cafe", cafe), ("CAFÉ", cafe), ("naïve", naive),
                         ("nai\u0308ve", naive)):
        assert [h.memory.id for h in mem.recall(query, mode="keyword")] == [found]


def test_matched_terms_ignore_diacritics(mem: Memory) -> None:
    mem.store("We met at the Café Central")
    mem.store("tea house downtown")
    hits = mem.recall("CAFÉ", mode="keyword")
    assert len(hits) == 1
    assert hits[0].explain.matched_terms == ("café",)


def test_every_hit_is_explained(mem: Memory, clock: Clock) -> None:
    _corpus(mem, clock)
    mem.store("dark mode in the editor", key="editor-theme", tags=["ui"])
    mem.store("the editor font is monospace")
    hits = mem.recall("editor dark theme", mode="keyword")
    assert len(hits) == 2
    for h in hits:
        e = h.explain
        assert e.matched_terms and set(e.matched_terms) <= {"editor", "dark", "theme"}
        assert set(e.factors) == {"reinforcement", "recency", "confidence"}
        assert e.lists["keyword"]["rank"] in (1, 2)
        assert e.final == h.score > 0
        assert str(e).startswith("matched ")
    assert set(hits[0].explain.matched_terms) == {"editor", "dark", "theme"}
    assert hits[1].explain.matched_terms == ("editor",)


@pytest.mark.parametrize(("query", "matched"), [
    ('"', None), ("NEAR(a b", ("a", "b")), ("AND OR NOT", ("and",)),
    ("content:secret", ("content", "secret")), ("*", None), ("^start", ("start",)),
    ("a AND", ("and",)), ("(((", None), ("'; --", None), ("https://example.com/x?y=1", None),
    ("👍🏽", None), ("col:term -neg +plus", None), ("\u0301\u0302", None)])
def test_hostile_queries_are_plain_words(
    mem: Memory, query: str, matched: tuple[str, ...] | None
) -> None:
    """Query syntax is never interpreted: what is left are words, matched as words (a query
    of only stop words searches them all; one with no word of two letters, by substring)."""
    rid = mem.store("plain content about secrets and start")
    hits = mem.recall(query, mode="keyword")
    assert [(h.memory.id, h.explain.matched_terms) for h in hits] == (
        [(rid, matched)] if matched else [])
    assert [h.explain.via for h in hits] == (["like-fallback"] if query == "NEAR(a b" else
                                             [None] * len(hits))
    assert {h.memory.id for h in mem.recall(query)} <= {rid}  # the configured mode: no error


# --- correction lifecycle --------------------------------------------------------------------


def test_correct_invalidates_old_and_moves_the_key(mem: Memory, clock: Clock) -> None:
    old = mem.store("The office is in Berlin", key="office", tags=["work"])
    mem.reinforce(old)
    clock.advance(DAY)
    new = mem.correct("office", "The office is in Munich", reason="moved")
    assert new.id != old and new.supersedes == old
    assert new.key == "office" and new.tags == ("work",) and new.score == 3
    assert new.metadata == {"correction_reason": "moved"}
    assert old in new.source_ids
    assert mem.get("office").id == new.id
    retired = mem.get(old)
    assert retired.valid_until == START + DAY and retired.key is None and not retired.is_valid
    assert mem.recall("Berlin", mode="keyword") == []
    assert old not in {h.memory.id for h in mem.recall("The office is in Berlin")}
    assert [h.memory.id for h in mem.recall("Berlin", include_invalid=True,
                                            mode="keyword")] == [old]
    assert [h.memory.id for h in mem.recall("office")] == [new.id]
    assert mem.count() == 1 and mem.count(include_invalid=True) == 2
    assert [r.id for r in mem.list()] == [new.id]
    assert {r.id for r in mem.list(include_invalid=True)} == {old, new.id}
    with pytest.raises(InvalidInputError):
        mem.correct(old, "again")
    assert mem.stats()["invalidated"] == 1 and mem.stats()["total"] == 1


def test_narrative_and_task_provenance_from_store_to_snapshot(mem: Memory, clock: Clock) -> None:
    """003's narrative_id and task_id: stored, read back, filtered on in list, count and recall
    (keyword and the configured mode), carried by a correction, an episode and a snapshot."""
    quest = mem.store("The dragon sleeps under the mountain", narrative_id="quest-7", task_id=3)
    clock.advance(60)
    other = mem.store("The dragon hoards copper coins", narrative_id="quest-8", task_id="3")
    clock.advance(60)
    plain = mem.store("The dragon likes riddles")
    got = mem.get(quest)
    assert (got.narrative_id, got.task_id) == ("quest-7", "3")
    assert (mem.get(plain).narrative_id, mem.get(plain).task_id) == (None, None)

    assert [r.id for r in mem.list(narrative_id="quest-7")] == [quest]
    assert [r.id for r in mem.list(task_id=3)] == [other, quest]
    assert mem.count(narrative_id="quest-8") == 1 and mem.count(task_id="4") == 0
    for mode in ("keyword", None):
        assert [h.memory.id for h in mem.recall("dragon", narrative_id="quest-7", mode=mode)
                ] == [quest]
        hits = mem.recall("dragon", task_id="3", mode=mode)
        assert {h.memory.id for h in hits} == {quest, other}
        assert {(h.memory.narrative_id, h.memory.task_id) for h in hits} == {
            ("quest-7", "3"), ("quest-8", "3")}
    assert {h.memory.id for h in mem.recall("dragon", mode="keyword")} == {quest, other, plain}

    clock.advance(60)
    fixed = mem.correct(quest, "The dragon sleeps under the lake")
    assert (fixed.narrative_id, fixed.task_id) == ("quest-7", "3")
    assert [r.id for r in mem.list(narrative_id="quest-7")] == [fixed.id]
    assert {r.id for r in mem.list(narrative_id="quest-7", include_invalid=True)} == {
        quest, fixed.id}
    episode = mem.observe("user", "I told the dragon a riddle", "s-dragon",
                          narrative_id="quest-7", task_id=9)
    assert (mem.get(episode).narrative_id, mem.get(episode).task_id) == ("quest-7", "9")
    with pytest.raises(InvalidInputError, match="narrative_id"):
        mem.store("bad", narrative_id=1.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="task_id"):
        mem.list(task_id=True)  # type: ignore[arg-type]

    copy = mem.with_namespace("copy")
    assert copy.import_snapshot(mem.export_snapshot())["created"] == 5
    assert {r.id: (r.narrative_id, r.task_id) for r in all_records(copy)} == {
        r.id: (r.narrative_id, r.task_id) for r in all_records(mem)}
    assert {r.id for r in copy.list(narrative_id="quest-7")} == {fixed.id, episode}


def test_history_follows_the_whole_chain(mem: Memory, clock: Clock) -> None:
    v1 = mem.store("version one", key="doc")
    clock.advance(1)
    v2 = mem.correct("doc", "version two").id
    clock.advance(1)
    v3 = mem.correct("doc", "version three").id
    want = [v1, v2, v3]
    for rid in want:
        assert [r.id for r in mem.history(rid)] == want
    lone = mem.store("never corrected")
    assert [r.id for r in mem.history(lone)] == [lone]


def test_confirm_protects_a_memory(mem: Memory, clock: Clock) -> None:
    rid = mem.store("birthday is 3 May", confidence=0.4)
    assert mem.get(rid).confidence == 0.4 and mem.get(rid).decay_rate == 0.1
    clock.advance(5)
    r = mem.confirm(rid)
    assert (r.decay_rate, r.confidence, r.updated_at) == (0.0, 1.0, START + 5)
    assert mem.get(rid) == r


# --- links -----------------------------------------------------------------------------------


def test_link_unlink_neighbors(mem: Memory, store: Store) -> None:
    a = mem.store("user prefers python", key="py")
    b = mem.store("project uses python", key="proj")
    c = mem.store("testing approach is pytest", key="test")
    assert mem.link("py", "proj")
    assert mem.link(a, c, strength=5.0, origin="synthesis")
    assert [r.id for r in mem.neighbors("py")] == [c, b]  # strongest first
    assert [r.id for r in mem.neighbors(b)] == [a]  # both directions
    assert [r.id for r in mem.neighbors(a, limit=1)] == [c]
    by_end = store.links("default", [a])[a]
    assert [(lk.other_id, lk.strength, lk.origin) for lk in by_end] == [
        (c, 5.0, "synthesis"), (b, 1.0, "manual")]
    assert mem.link("proj", "py", strength=2.5)  # linking again keeps the larger strength
    assert {lk.other_id: lk.strength for lk in store.links("default", [b])[b]} == {a: 2.5}
    assert mem.link("proj", "py") and mem.link("py", "proj", strength=2.5)  # idempotent
    assert [(lk.other_id, lk.strength, lk.origin) for lk in store.links("default", [b])[b]] == [
        (a, 2.5, "manual")]
    assert mem.unlink("proj", "py")
    assert not mem.unlink("proj", "py")
    assert [r.id for r in mem.neighbors(b)] == []
    assert [r.id for r in mem.neighbors(a)] == [c]


def test_co_recall_still_grows_a_link_that_manual_links_leave_alone(
        store: Store, settings: Settings, clock: Clock, embedder: Any) -> None:
    # A repeated manual link is idempotent (issue 22: it added up); co-recall, which strengthens
    # a pair each time the two are recalled together, must keep adding.
    co = settings.model_copy(update={"recall": settings.recall.model_copy(update={
        "co_recall": True, "co_recall_increment": 0.25})})
    mem = memory_on(store, co, clock, embedder)
    a = mem.store("solar panel inverter fault")
    b = mem.store("solar panel warranty claim")

    def strength() -> list[float]:
        return [lk.strength for lk in store.links("default", [a])[a]]

    mem.recall("solar panel", mode="keyword", limit=2)
    assert strength() == [0.25]
    mem.recall("solar panel", mode="keyword", limit=2)
    assert strength() == [0.5]
    assert mem.link(a, b, strength=0.25) and strength() == [0.5]  # never weakens it
    assert mem.link(a, b, strength=2.0) and strength() == [2.0]
    mem.recall("solar panel", mode="keyword", limit=2)
    assert strength() == [2.25]


def test_link_is_false_when_either_end_is_missing(mem: Memory, store: Store) -> None:
    a = mem.store("exists")
    assert not mem.link(a, "missing")
    assert not mem.link("missing", a)
    assert not mem.link(a, a)
    assert not mem.unlink(a, "missing")
    assert not store.link("default", a, "missing", strength=1.0, origin="manual")
    assert not store.unlink("default", a, "missing")
    assert mem.stats()["links"] == 0
    with pytest.raises(NotFoundError):
        mem.neighbors("missing")


# --- snapshots -------------------------------------------------------------------------------


def _varied(mem: Memory, clock: Clock) -> list[str]:
    """Memories that exercise every field, links and a correction chain."""
    a = mem.store("User prefers dark mode", key="theme", kind="preference",
                  tags=["ui", "ü"], metadata={"n": 1, "ok": True, "x": None, "f": 0.25},
                  session_id="s1", narrative_id="arc-1", task_id=42, source="conversation",
                  source_role="user", event_time="2023-01-02T03:04:05Z", source_ids=["src-1"],
                  confidence=0.7)
    clock.advance(10)
    b = mem.store("Soul: curious and kind", key="soul:core", kind="core")
    clock.advance(10)
    c = mem.store("Met Ana at the café 😀\nsecond line", kind="event", session_id="s2",
                  narrative_id="arc-1")
    mem.reinforce(b)
    mem.demote(c)
    mem.recall("dark mode")
    mem.link(a, b, strength=2.5, origin="synthesis")
    mem.link(b, c)
    clock.advance(10)
    d = mem.correct(c, "Met Ana at the tea house", reason="wrong place").id
    mem.confirm(a)
    return [a, b, c, d]


def test_export_import_round_trip_is_lossless(mem: Memory, store: Store, clock: Clock) -> None:
    _varied(mem, clock)
    original = all_records(mem)
    snapshot = mem.export_snapshot()
    copy = mem.with_namespace("restored")
    clock.advance(DAY)  # import time must not leak into imported records, but for arrival
    report = copy.import_snapshot(snapshot)
    assert report == {"created": 4, "skipped": 0, "links": 2}
    restored = {r.id: r for r in all_records(copy)}
    assert set(restored) == {r.id for r in original}
    own = ("namespace", "stored_at")  # each store's own: the tenant, and arrival in it
    for r in original:
        assert restored[r.id].namespace == "restored"
        assert restored[r.id].stored_at == clock.now  # arrived now: idle clocks start here
        assert fields(restored[r.id], without=own) == fields(r, without=own)
    assert link_view(store, copy) == link_view(store, mem)
    assert len(link_view(store, mem)) == 2
    # exporting the copy gives the same entries
    again = json.loads(copy.export_snapshot())
    first = json.loads(snapshot)
    strip = [{k: v for k, v in e.items() if k not in own} for e in first["entries"]]
    assert [{k: v for k, v in e.items() if k not in own} for e in again["entries"]] == strip
    assert again["links"] == first["links"]
    # and the copy is indexed: it can be recalled
    assert copy.get("theme").content == "User prefers dark mode"
    theme = mem.get("theme").id
    assert [h.memory.id for h in copy.recall("dark mode", mode="keyword")] == [theme]
    assert copy.recall("dark mode")[0].memory.id == theme


def test_import_skips_existing_ids_and_keys(mem: Memory, store: Store, clock: Clock) -> None:
    _varied(mem, clock)
    before = {r.id: fields(r) for r in all_records(mem)}
    links_before = link_view(store, mem)
    snapshot = mem.export_snapshot()
    report = mem.import_snapshot(snapshot)
    assert report["created"] == 0 and report["skipped"] == 4
    assert {r.id: fields(r) for r in all_records(mem)} == before
    assert link_view(store, mem) == links_before
    # a different memory already holding one of the keys wins over the imported one
    other = mem.with_namespace("other")
    kept = other.store("my own theme", key="theme")
    report = other.import_snapshot(snapshot)
    assert report["created"] == 3 and report["skipped"] == 1
    assert other.get("theme").id == kept and other.get("theme").content == "my own theme"
    assert other.count(include_invalid=True) == 4


def test_import_dry_run_writes_nothing(mem: Memory, clock: Clock) -> None:
    _varied(mem, clock)
    target = mem.with_namespace("dry")
    report = target.import_snapshot(mem.export_snapshot(), dry_run=True)
    assert report["created"] == 4
    assert target.count(include_invalid=True) == 0


MALFORMED: list[tuple[str, Any, str]] = [
    ("empty content", [{"key": "ok", "content": "fine"}, {"key": "bad", "content": ""}],
     "entry 1"),
    ("content not text", {"entries": [{"content": "fine"}, {"content": 5}]}, "entry 1"),
    ("entry not object", [{"content": "fine"}, "just a string"], "entry 1"),
    ("unknown kind", [{"content": "fine"}, {"content": "x", "kind": "banana"}], "entry 1"),
    ("bad time", [{"content": "x", "timestamp": "yesterday-ish"}], "entry 0"),
    ("NUL in content", [{"content": "fine"}, {"content": "a\x00b"}], "entry 1"),
    ("metadata not object", [{"content": "x", "metadata": [1, 2]}], "entry 0"),
    ("confidence not a number", [{"content": "fine"}, {"content": "x", "kind": "fact",
                                                       "confidence": "high"}], "entry 1"),
    ("access_count not a number", [{"content": "x", "access_count": "many"}], "entry 0"),
    ("tags not a list", [{"content": "fine"}, {"content": "x", "tags": 5}], "entry 1"),
    ("tag not text", [{"content": "x", "tags": ["ok", 3]}], "entry 0"),
    ("source_ids not a list", [{"content": "x", "source_ids": 7}], "entry 0"),
    ("confidence above 1", [{"content": "x", "confidence": 1.5}], "entry 0"),
    ("confidence NaN", [{"content": "fine"}, {"content": "x", "confidence": float("nan")}],
     "entry 1"),
    ("negative access_count", [{"content": "x", "access_count": -3}], "entry 0"),
    ("infinite score", [{"content": "x", "kind": "fact", "score": 1e999}], "entry 0"),
    ("bad link strength", {"entries": [{"id": "a", "content": "x"}, {"id": "b", "content": "y"}],
                           "links": [{"a": "a", "b": "b", "strength": "strong"}]}, "link 0"),
    ("lone surrogate", [{"content": "fine"}, {"content": "bad \udc80"}], "entry 1"),
    ("not a snapshot", {"something": "else"}, "not a snapshot"),
    ("not json", "{not json", "not valid JSON"),
]


@pytest.mark.parametrize(("text", "where"), [pytest.param(
    doc if isinstance(doc, str) else json.dumps(doc), where, id=name)
    for name, doc, where in MALFORMED])
def test_malformed_snapshot_changes_nothing(mem: Memory, text: str, where: str) -> None:
    mem.store("pre-existing", key="ok")
    before = [fields(r) for r in all_records(mem)]
    with pytest.raises(ImportFormatError) as info:
        mem.import_snapshot(text, source="snap.json")
    assert where in str(info.value)
    assert str(info.value).startswith("snap.json")
    assert [fields(r) for r in all_records(mem)] == before


def test_import_ignores_links_to_memories_that_do_not_exist(mem: Memory, store: Store) -> None:
    doc = {"entries": [{"id": "a", "content": "alpha"}, {"id": "b", "content": "beta"}],
           "links": [{"a": "a", "b": "ghost"}, {"a": "a", "b": "b", "strength": 2.0}]}
    mem.import_snapshot(json.dumps(doc))
    assert link_view(store, mem) == {("a", "b", 2.0, "manual")}
    assert mem.stats()["links"] == 1


def ptrclaw_entries() -> list[dict[str, Any]]:
    """Entries exactly as PtrClaw (000) writes them: category, timestamp, links by key."""
    return [
        {"id": "0001-aaaa", "key": "soul:identity", "content": "I am Claw, a helpful agent",
         "category": "core", "timestamp": 1690000000, "session_id": "", "links": []},
        {"id": "0002-bbbb", "key": "user-prefers-python", "content": "User prefers Python",
         "category": "knowledge", "timestamp": 1690000100, "session_id": "sess-1",
         "last_accessed": 1690000500, "score": 0.87,
         "links": ["project-uses-python", "python-testing"]},
        {"id": "0003-cccc", "key": "project-uses-python", "content": "The project uses Python 3.12",
         "category": "knowledge", "timestamp": 1690000200, "session_id": "sess-1",
         "links": ["user-prefers-python"]},
        {"id": "0004-dddd", "key": "python-testing", "content": "Tests are written with pytest",
         "category": "knowledge", "timestamp": 1690000300, "session_id": "",
         "links": ["user-prefers-python"]},
        {"id": "0005-eeee", "key": "turn-17", "content": "user said hi",
         "category": "conversation", "timestamp": 1690000400, "session_id": "sess-2",
         "links": []},
    ]


def ptrclaw_legacy() -> str:
    return json.dumps(ptrclaw_entries(), indent=2)


def ptrclaw_object() -> str:
    embeddings = {e["key"]: [0.1, -0.2, 0.3] for e in ptrclaw_entries()}
    return json.dumps({"entries": ptrclaw_entries(), "embeddings": embeddings})


def check_ptrclaw_import(mem: Memory) -> None:
    assert mem.count(include_invalid=True) == 5
    soul = mem.get("soul:identity")
    assert (soul.id, soul.kind, soul.created_at, soul.session_id) == (
        "0001-aaaa", "core", 1690000000.0, None)
    pref = mem.get("user-prefers-python")
    assert (pref.kind, pref.session_id, pref.last_accessed) == ("fact", "sess-1", 1690000500.0)
    assert pref.score == 0  # 000's score is a recall relevance, not reinforcement
    assert pref.decay_rate == 0.1 and soul.decay_rate == 0.0
    assert mem.get("turn-17").kind == "conversation"
    assert {r.key for r in mem.neighbors("user-prefers-python")} == {
        "project-uses-python", "python-testing"}
    assert [r.key for r in mem.neighbors("python-testing")] == ["user-prefers-python"]
    assert mem.stats()["links"] == 2
    strengths = link_view(mem.store_backend, mem)
    assert {s for *_, s, _o in [(lo, hi, st, o) for lo, hi, st, o in strengths]} <= {1.0}
    assert mem.count(kind="knowledge") == 3
    assert [h.memory.key for h in mem.recall("pytest", mode="keyword")] == ["python-testing"]
    assert mem.recall("pytest")[0].memory.key == "python-testing"


@pytest.mark.parametrize("shape", [ptrclaw_legacy, ptrclaw_object], ids=["array", "object"])
def test_ptrclaw_snapshots_import(mem: Memory, shape: Callable[[], str]) -> None:
    report = mem.import_snapshot(shape())
    assert report["created"] == 5
    check_ptrclaw_import(mem)
    assert mem.import_snapshot(shape())["created"] == 0  # 000: duplicates skipped by key


# --- backend specifics: the SQLite file ----------------------------------------------------------


def _fts_matches(db: Path, token: str) -> int:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute(
            "SELECT COUNT(*) FROM memories_fts WHERE memories_fts MATCH ?", (f'"{token}"',)
        ).fetchall()
        return int(rows[0][0])
    finally:
        conn.close()


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_sqlite_forget_leaves_nothing_in_the_full_text_index(mem: Memory, tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    mem.store("zebracorn sighting report", key="zebra-key", tags=["quagga"])
    keep = mem.store("ordinary note")
    assert _fts_matches(db, "zebracorn") == 1 and _fts_matches(db, "quagga") == 1
    mem.forget("zebra-key")
    assert _fts_matches(db, "zebracorn") == 0
    assert _fts_matches(db, "quagga") == 0
    assert _fts_matches(db, "zebra") == 0
    assert _fts_matches(db, "ordinary") == 1
    # updates replace the indexed text too
    mem.update(keep, content="extraordinary unicorn")
    assert _fts_matches(db, "ordinary") == 0 and _fts_matches(db, "unicorn") == 1
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    conn.close()


@pytest.mark.parametrize("backend", backend_params("sqlite"), indirect=True)
def test_sqlite_forget_namespace_clears_the_index(mem: Memory, tmp_path: Path) -> None:
    other = mem.with_namespace("gone")
    other.store("wombatish content")
    mem.store("kept content")
    other.forget_namespace()
    assert _fts_matches(tmp_path / "memory.db", "wombatish") == 0
    assert _fts_matches(tmp_path / "memory.db", "kept") == 1


# --- backend specifics: persistence ------------------------------------------------------------


@pytest.mark.parametrize(
    "backend", backend_params(*[n for n, b in BACKENDS.items() if b.persistent]), indirect=True)
def test_persistent_backends_survive_reopen(
    open_store: Callable[[], Store], settings: Any, clock: Clock
) -> None:
    first = Memory(open_store(), settings, clock=clock)
    _varied(first, clock)
    first.with_namespace("second").store("other tenant", key="t")
    before = [fields(r) for r in all_records(first)]
    links_before = link_view(first.store_backend, first)
    first.close()
    reopened = Memory(open_store(), settings, clock=clock)
    assert [fields(r) for r in all_records(reopened)] == before
    assert link_view(reopened.store_backend, reopened) == links_before
    assert reopened.with_namespace("second").get("t").content == "other tenant"
    assert [h.memory.key for h in reopened.recall("dark mode", mode="keyword")] == ["theme"]
    assert reopened.recall("dark mode")[0].memory.key == "theme"


@pytest.mark.parametrize("shape", [ptrclaw_legacy, ptrclaw_object], ids=["array", "object"])
def test_json_backend_reads_ptrclaw_files(
    tmp_path: Path, settings: Any, clock: Clock, shape: Callable[[], str]
) -> None:
    path = tmp_path / "memory.json"
    path.write_text(shape(), encoding="utf-8")
    store = JSONFileStore(path)
    mem = Memory(store, settings, clock=clock)
    check_ptrclaw_import(mem)
    if shape is ptrclaw_object:
        assert set(store.embeddings) == {e["key"] for e in ptrclaw_entries()}
    # writing keeps the file readable by both clawmemory and the 000 shape
    mem.store("a new fact", key="new-fact")
    doc = json.loads(path.read_text(encoding="utf-8"))
    entries = doc["entries"] if isinstance(doc, dict) else doc
    assert {e["key"] for e in entries} >= {"new-fact", "soul:identity"}
    assert all({"id", "key", "content", "category", "timestamp", "links"} <= set(e)
               for e in entries)
    reopened = Memory(JSONFileStore(path), settings, clock=clock)
    assert reopened.get("new-fact").content == "a new fact"
    assert reopened.stats()["links"] == 2


@pytest.mark.parametrize("backend", backend_params("json"), indirect=True)
def test_json_backend_writes_atomically(mem: Memory, tmp_path: Path) -> None:
    ids = [mem.store(f"note {i}") for i in range(20)]
    mem.link(ids[0], ids[1])
    mem.forget(ids[2])
    mem.recall("note")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json"]
    doc = json.loads((tmp_path / "memory.json").read_text(encoding="utf-8"))
    entries = doc["entries"] if isinstance(doc, dict) else doc  # with vectors: 000's object
    assert len(entries) == 19


@pytest.mark.parametrize("backend", backend_params("json"), indirect=True)
def test_json_backend_failed_write_changes_nothing(
    store: Store, tmp_path: Path, open_store: Callable[[], Store]
) -> None:
    from clawmemory.errors import StorageError

    good = MemoryRecord(id="good", content="kept", created_at=START, updated_at=START)
    store.put(good)
    # Store-level writes are not validated: text that cannot be encoded fails in the dump.
    with pytest.raises(StorageError):
        store.put(MemoryRecord(id="bad", content="x", source="\udc80", created_at=START))
    assert store.get("default", "bad") is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.json"]
    store.put(good.evolve(id="later", content="later write"))  # not poisoned by the failure
    reopened = open_store()
    assert {r.id for r in reopened.list("default", Filter(), limit=10)} == {"good", "later"}


def test_json_backend_reports_a_corrupt_file(tmp_path: Path) -> None:
    from clawmemory.errors import StorageError

    path = tmp_path / "memory.json"
    path.write_text('[{"content": "x"},\n oops', encoding="utf-8")
    with pytest.raises(StorageError, match=r"memory\.json:2"):
        JSONFileStore(path)


def test_filter_semantics_match_the_reference(mem: Memory, store: Store, clock: Clock) -> None:
    """Store.list/count agree with Filter.matches (the reference) on every combination used."""
    _varied(mem, clock)
    everything = all_records(mem)
    filters = [
        Filter(), Filter(include_invalid=True), Filter(kinds=("core", "event")),
        Filter(tags=("ui",)), Filter(session_id="s2", include_invalid=True),
        Filter(exclude_session_id="s1"), Filter(metadata={"ok": True}),
        Filter(metadata={"n": "1"}), Filter(metadata={"x": None}), Filter(source="conversation"),
        Filter(created_after=START + 10), Filter(created_before=START + 10),
        Filter(narrative_id="arc-1"), Filter(narrative_id="arc-1", include_invalid=True),
        Filter(task_id="42"), Filter(narrative_id="arc-1", task_id="42"),
        Filter(narrative_id="arc-2"),
    ]
    for flt in filters:
        want = {r.id for r in everything if flt.matches(r)}
        assert {r.id for r in store.list("default", flt, limit=100)} == want, flt
        assert store.count("default", flt) == len(want), flt

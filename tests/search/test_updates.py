"""Knowledge updates in recall (search/updates.py), on every backend: of two memories stating
different values of the same thing, the newer ranks first and the older is marked."""

from __future__ import annotations

from clawmemory import Memory
from conftest import DAY, Clock


def _ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.memory.id for h in hits]


def test_the_newer_value_ranks_first_and_the_older_is_marked(mem: Memory, clock: Clock) -> None:
    old = mem.store("My 5K personal record is 27:12")
    clock.advance(30 * DAY)
    new = mem.store("I beat my 5K personal record today with a time of 25:50, after months")
    mem.store("Ran a slow 10K in the rain")
    mem.settings.recall.latest_first = False
    plain = mem.recall("What is my 5K personal record?", mode="keyword")
    assert _ids(plain)[:2] == [old, new]  # BM25 prefers the shorter, older statement
    mem.settings.recall.latest_first = True
    hits = mem.recall("What is my 5K personal record?", mode="keyword")
    assert _ids(hits)[:2] == [new, old]
    assert hits[1].explain.superseded_by == new
    assert hits[0].explain.superseded_by is None
    assert hits[0].score == hits[1].score  # the newer takes the older's place and score
    assert hits[0].explain.factors["latest"] > 1
    assert f"superseded by {new}" in str(hits[1].explain)


def test_other_speakers_and_statements_without_a_changed_value_are_no_updates(
    mem: Memory, clock: Clock
) -> None:
    mem.store("Mel went hiking last Friday, the views were great")
    clock.advance(3 * DAY)
    mem.store("Mel loves hiking")  # a preference, not a new value of the hike
    assert all(h.explain.superseded_by is None for h in mem.recall("Mel hiking", mode="keyword"))
    user = mem.store("My office is in Berlin", source_role="user")
    clock.advance(DAY)
    mem.store("Your office could move to Hamburg", source_role="assistant")
    hits = mem.recall("office", mode="keyword")
    assert user in _ids(hits)
    assert all(h.explain.superseded_by is None for h in hits)


def test_a_correction_marks_the_version_it_replaced(mem: Memory, clock: Clock) -> None:
    # No shared words beyond "office": only the correction's `supersedes` links the two.
    old = mem.store("The office is in Berlin", key="office")
    clock.advance(DAY)
    new = mem.correct("office", "The office is in Hamburg").id
    hits = {h.memory.id: h for h in mem.recall("office", mode="keyword", include_invalid=True)}
    assert hits[old].explain.superseded_by == new
    assert hits[new].explain.superseded_by is None

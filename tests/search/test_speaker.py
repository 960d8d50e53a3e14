"""The speaker a question names (``recall.speaker_boost``, ADR 0026), on every backend: a memory
said by that person (its ``source_role``) ranks a little higher, and its explanation says so."""

from __future__ import annotations

import pytest

from clawmemory import Memory, Settings
from clawmemory.model import Filter
from conftest import DAY, Clock


def _two_painters(mem: Memory, clock: Clock) -> tuple[str, str]:
    """The same words said by Melanie, then a day later by Caroline (a day newer: without the
    boost, Caroline's ranks first)."""
    melanie = mem.store("I painted the lake at dawn", source_role="Melanie")
    clock.advance(DAY)
    caroline = mem.store("I painted the lake at dusk", source_role="Caroline")
    return melanie, caroline


@pytest.mark.parametrize("query", ["What did Melanie paint at the lake?", "melanie lake"])
def test_a_memory_said_by_the_one_the_question_names_ranks_first(
    mem: Memory, clock: Clock, query: str
) -> None:
    melanie, caroline = _two_painters(mem, clock)
    mem.settings.recall.speaker_boost = 0.0
    plain = mem.recall(query, mode="keyword")
    assert [h.memory.id for h in plain] == [caroline, melanie]
    assert all("speaker" not in h.explain.factors for h in plain)
    mem.settings.recall.speaker_boost = Settings().recall.speaker_boost
    assert mem.settings.recall.speaker_boost == 0.1  # the shipped default
    hits = mem.recall(query, mode="keyword")
    assert [h.memory.id for h in hits] == [melanie, caroline]
    assert hits[0].explain.factors["speaker"] == pytest.approx(1.1)
    assert "speaker" not in hits[1].explain.factors


def test_a_name_counts_only_as_a_whole_word_and_the_like_fallback_carries_the_speaker(
    mem: Memory, clock: Clock
) -> None:
    mel = mem.store("x y", source_role="Mel")
    mary_ann = mem.store("x z", source_role="Mary Ann")
    other = mem.store("x w", source_role="assistant")
    # Single letters: FTS5 finds nothing, the substring fallback ranks (its own RankInfo).
    hits = {h.memory.id: h for h in mem.recall("what did Melanie and Mary Ann say about x?",
                                               mode="keyword")}
    assert set(hits) == {mel, mary_ann, other}
    assert {h.explain.via for h in hits.values()} == {"like-fallback"}
    assert "speaker" not in hits[mel].explain.factors  # "Mel" is not "Melanie"
    assert hits[mary_ann].explain.factors["speaker"] == pytest.approx(1.1)
    assert "speaker" not in hits[other].explain.factors


def test_the_ranking_fields_carry_who_said_it(mem: Memory) -> None:
    said = mem.store("The budget is final", source_role="Alice")
    unsaid = mem.store("The budget is late")
    infos = mem.store_backend.rank_info("default", [said, unsaid], Filter())
    assert (infos[said].source_role, infos[unsaid].source_role) == ("Alice", None)
    found = {h.info.id: h.info for h in mem.store_backend.keyword_search(
        "default", ["budget"], Filter(), limit=10)}
    assert (found[said].source_role, found[unsaid].source_role) == ("Alice", None)

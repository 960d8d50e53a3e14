"""The keyword sanitiser's choices, held through recall (the path every query takes).

Each test pins one choice exactly, so changing it fails a test: the 32-word cap, URL stripping,
the stop-word list and what a query made only of stop words does. The cap and the stop words
were tuned on LoCoMo (ADR 0003); these tests keep them from drifting unnoticed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from clawmemory import Hit, Memory, Settings
from clawmemory.search.sanitize import MAX_TERMS, STOPWORDS

# 40 distinct content words, none a stop word, none sharing a stem with another.
WORDS = [
    "apple", "banjo", "cactus", "dolphin", "eagle", "falcon", "guitar", "hammock", "igloo",
    "jaguar", "kettle", "lantern", "mango", "nectar", "oyster", "penguin", "quartz", "raven",
    "saddle", "tulip", "umbrella", "violin", "walrus", "xylophone", "yogurt", "zebra", "anchor",
    "bucket", "candle", "donkey", "engine", "fossil", "glacier", "harbor", "island", "jungle",
    "kayak", "lemon", "marble", "nickel",
]


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    settings = Settings(db=tmp_path / "m.db", embedder={"provider": "none"})
    return Memory.open(tmp_path / "m.db", settings=settings)


def _contents(hits: list[Hit]) -> list[str]:
    return [h.memory.content for h in hits]


def test_the_first_32_distinct_words_of_a_query_are_searched_and_no_more(mem: Memory) -> None:
    assert MAX_TERMS == 32
    assert len(set(WORDS)) == 40 and not set(WORDS) & STOPWORDS
    mem.store("the 32nd word: " + WORDS[31])
    mem.store("the 33rd word: " + WORDS[32])
    query = " ".join(WORDS[:33])
    # Word 32 is searched; word 33 is not, neither by BM25 nor by the substring fallback.
    assert _contents(mem.recall(query, mode="keyword")) == ["the 32nd word: " + WORDS[31]]
    hits = mem.recall(" ".join(WORDS[:31] + WORDS[32:33]), mode="keyword")
    assert _contents(hits) == ["the 33rd word: " + WORDS[32]]  # at position 32 it counts
    assert hits[0].explain.matched_terms == (WORDS[32],)


def test_repeated_words_do_not_use_up_the_cap(mem: Memory) -> None:
    mem.store("only the last word matters: " + WORDS[31])
    query = " ".join(WORDS[:31] * 3 + WORDS[31:32])  # 94 words, 32 distinct
    assert _contents(mem.recall(query, mode="keyword")) == [
        "only the last word matters: " + WORDS[31]]


def test_urls_are_not_search_words(mem: Memory) -> None:
    mem.store("renew the com domain before March")
    mem.store("deploy checklist for the release")
    hits = mem.recall("https://example.com/docs?page=2 deploy", mode="keyword")
    assert _contents(hits) == ["deploy checklist for the release"]
    assert hits[0].explain.matched_terms == ("deploy",)
    # Every scheme and the bare www. form; a word glued before the scheme stays a word.
    for query in ("git+ssh://com.example/x deploy", "www.com.example deploy",
                  "(http://com.example) deploy"):
        assert _contents(mem.recall(query, mode="keyword")) == [
            "deploy checklist for the release"], query
    assert _contents(mem.recall("renew:https://x.example", mode="keyword")) == [
        "renew the com domain before March"]


def test_stop_words_are_dropped_when_content_words_remain(mem: Memory) -> None:
    mem.store("what is the best way to do this and that")  # only stop words and "best", "way"
    kube = mem.store("kubernetes cluster upgrade")
    hits = mem.recall("what is the kubernetes", mode="keyword")
    assert [h.memory.id for h in hits] == [kube]
    assert hits[0].explain.matched_terms == ("kubernetes",)


def test_with_stopwords_off_function_words_are_searched(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"}, recall={"stopwords": False})
    with Memory.open(tmp_path / "s.db", settings=settings) as mem:
        chatter = mem.store("what is the best way to do this and that")
        kube = mem.store("kubernetes cluster upgrade")
        ids = {h.memory.id for h in mem.recall("what is the kubernetes", mode="keyword")}
    assert ids == {chatter, kube}


def test_a_query_of_only_stop_words_searches_them_all(mem: Memory) -> None:
    """ADR 0003: a query made only of function words is kept whole, so it still finds text
    that contains them, ranked by BM25; it does not fall back to substring matching (where
    "be" would match "Bees")."""
    hamlet = mem.store("Hamlet asks whether to be or not to be")
    mem.store("Bees make honey")
    hits = mem.recall("to be or not to be", mode="keyword")
    assert [h.memory.id for h in hits] == [hamlet]
    assert hits[0].explain.via is None
    assert set(hits[0].explain.matched_terms) == {"to", "be", "or", "not"}


def test_substring_matching_is_only_the_fallback_when_no_word_matches(mem: Memory) -> None:
    """000's LIKE fallback: when the full-text index finds nothing, tokens are matched as
    substrings (so "Bees" answers "be" in a store without the word "be")."""
    bees = mem.store("Bees make honey")
    hits = mem.recall("to be or not to be", mode="keyword")
    assert [h.memory.id for h in hits] == [bees]
    assert hits[0].explain.via == "like-fallback"

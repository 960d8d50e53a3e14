"""Bounded work per request: every pattern a query or a stored text goes through is linear in
the text's length, queries are limited before any parsing, and the HTTP server keeps answering
other clients while one sends the largest query it accepts.

Times are measured on a busy machine, so the linearity checks compare growth (4x the text must
not cost more than ~9x the time; quadratic work costs 16x) rather than absolute speed, and the
server check asserts a generous bound, not a benchmark.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from clawmemory import InvalidInputError, Memory, Settings
from clawmemory.entities import candidate_names
from clawmemory.tools import call_tool

# Shapes that made a pattern backtrack or rescan: each is (name, text of length ~n).
SHAPES: dict[str, Callable[[int], str]] = {
    "one long word": lambda n: "a" * n,  # the URL scheme pattern retried from every letter
    "scheme characters": lambda n: "a+" * (n // 2),
    "www run": lambda n: "w" * n,
    "dotted word": lambda n: "a" + ".b" * (n // 2) + ".1",
    "url closed by brackets": lambda n: "http://x" + ")" * n,  # URL trimming recounted them
    "url closed by dots": lambda n: "http://x" + "." * n,
    "speaker labels": lambda n: "Ab: " * (n // 4),  # each looked back for the line start
    "one-word sentences": lambda n: "Xyz. " * (n // 5),  # each copied the rest of the text
    "mixed": lambda n: "Dr. Smith said: http://a.b/(c) #tag @me 2024-01-02 " * (n // 50),
}


def _best_of(run: Callable[[], object], times: int = 3) -> float:
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _assert_linear(work: Callable[[int], object], small: int, attempts: int = 3) -> None:
    """4x the input costs at most ~9x the time (quadratic: 16x). Small runs are timed on both
    sides of the big ones, so a burst of load on the machine hits both; a burst can still
    spoil one measurement, so it is taken again (quadratic work fails every attempt)."""
    seen = []
    for _ in range(attempts):
        t_small = _best_of(lambda: work(small))
        t_big = _best_of(lambda: work(4 * small))
        t_small = min(t_small, _best_of(lambda: work(small)))
        if t_big <= 9 * t_small + 0.03:
            return
        seen.append(f"{small}: {t_small:.4f}s, {4 * small}: {t_big:.4f}s")
    raise AssertionError("; ".join(seen))


@pytest.fixture
def wide_mem(tmp_path: Path) -> Memory:
    """Limits raised so that texts long enough to expose quadratic work get through."""
    settings = Settings(embedder={"provider": "none"}, recall={"max_query_chars": 1_000_000})
    mem = Memory.open(tmp_path / "w.db", settings=settings)
    mem.store("Caroline went to New York with Mel on May 3, see http://example.com/a")
    return mem


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_recall_query_parsing_is_linear(wide_mem: Memory, shape: str) -> None:
    make = SHAPES[shape]
    _assert_linear(lambda n: wide_mem.recall(make(n), mode="keyword", touch=False), 12_500)


@pytest.mark.parametrize("shape", list(SHAPES), ids=list(SHAPES))
def test_query_entity_names_are_found_in_linear_time(shape: str) -> None:
    make = SHAPES[shape]
    _assert_linear(lambda n: candidate_names(make(n)), 12_500)


@pytest.mark.parametrize("shape", ["url closed by brackets", "speaker labels",
                                   "one-word sentences", "mixed"])
def test_entity_extraction_on_store_is_linear(tmp_path: Path, shape: str) -> None:
    make = SHAPES[shape]
    settings = Settings(embedder={"provider": "none"})
    with Memory.open(tmp_path / "s.db", settings=settings) as mem:
        _assert_linear(lambda n: mem.store(make(n)), 20_000)  # 4x: near the content limit


def test_context_blocks_are_stripped_in_linear_time() -> None:
    from clawmemory.context import strip_memory_context

    assert strip_memory_context("[Memory context]\n- a\n[/Memory context]\n\nhi") == "hi"
    # Openings that are never closed: a lazy pattern rescanned the rest from each of them.
    _assert_linear(lambda n: strip_memory_context("[Memory context]" * (n // 16)), 50_000)


def test_front_matter_comments_are_found_in_linear_time() -> None:
    from clawmemory.portability.frontmatter import split_front_matter

    parsed = split_front_matter("---\ntitle: tea   # a comment\n---\nbody\n", "m.md")
    assert parsed.fields["title"] == "tea"
    _assert_linear(lambda n: split_front_matter(f"---\ntitle: a{' ' * n}b\n---\nx\n", "m.md"),
                   25_000)


# --- query limits ------------------------------------------------------------------------------
def test_a_query_over_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "q.db", settings=Settings(embedder={"provider": "none"})) as mem:
        mem.store("zebra crossing")
        limit = mem.settings.recall.max_query_chars
        assert limit == 10_000
        assert [h.memory.content for h in mem.recall("zebra" + " " * (limit - 5))] == [
            "zebra crossing"]
        with pytest.raises(InvalidInputError) as refused:
            mem.recall("zebra" + " " * (limit - 4))
        assert str(refused.value) == (
            "query is 10,001 characters; the limit is 10,000 (recall.max_query_chars). "
            "Search with a few specific words.")
        start = time.perf_counter()
        with pytest.raises(InvalidInputError, match=r"recall\.max_query_chars"):
            mem.recall("a" * 4_000_000)  # the whole HTTP body the SDK used to accept
        assert time.perf_counter() - start < 1.0


def test_the_query_limit_is_a_setting(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"}, recall={"max_query_chars": 20})
    with Memory.open(tmp_path / "q.db", settings=settings) as mem:
        assert mem.recall("x" * 20) == []
        result = call_tool(mem, "memory_recall", {"query": "x" * 21})
    assert result.is_error
    assert result.text == ("memory_recall: query is 21 characters; the limit is 20 "
                           "(recall.max_query_chars). Search with a few specific words.")

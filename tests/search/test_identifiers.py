"""Numbers and identifiers survive the keyword sanitiser (ADR 0017), on every backend.

"3.12" used to become "12" (the dot split it, and "3" was dropped as a one-character word), so
a question about Python 3.12 found every memory with a 12 in it. A run of letters and digits
joined by ``.``, ``-``, ``/`` or ``:`` that holds a digit is now one term, searched as the
phrase of its parts; its parts that are not bare numbers are still searched on their own.
"""

from __future__ import annotations

import pytest

from clawmemory import Hit, Memory
from clawmemory.search.sanitize import like_tokens, sanitize_terms


def _contents(hits: list[Hit]) -> list[str]:
    return [h.memory.content for h in hits]


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("Python 3.12", ["python", "3.12"]),
        ("v2.1 notes", ["v2.1", "v2", "notes"]),
        ("on 2024-01-15?", ["on", "2024-01-15"]),
        ("HMAC-SHA256", ["hmac-sha256", "hmac", "sha256"]),
        ("GPT\u20104 at 10:30.", ["gpt-4", "gpt", "at", "10:30"]),  # a Unicode hyphen too
        ("3..12", ["3.12"]),
        # 003 unchanged where no digit joins the parts: hyphens split, one letter is dropped.
        ("state-of-the-art e.g.", ["state", "of", "the", "art"]),
        ("x-ray 3", ["ray"]),
        # More than 8 parts is punctuated text, not an identifier.
        ("a1.b.c.d.e.f.g.h.i", ["a1"]),
    ],
)
def test_the_terms_of_a_query(query: str, terms: list[str]) -> None:
    assert sanitize_terms(query) == terms


def test_the_substring_fallback_keeps_the_whole_number() -> None:
    assert like_tokens("Python 3.12 C") == ["python", "3.12", "c"]


def test_a_version_number_finds_only_that_version(mem: Memory) -> None:
    wanted = mem.store("Upgraded the build to Python 3.12 last week")
    mem.store("Bought 12 eggs and 3 apples")
    mem.store("The 3 pizzas were 12 inches wide")
    hits = mem.recall("3.12", mode="keyword")
    assert [h.memory.id for h in hits] == [wanted]
    assert hits[0].explain.matched_terms == ("3.12",)


def test_a_date_matches_as_a_date(mem: Memory) -> None:
    wanted = mem.store("Board meeting on 2024-01-15 in Berlin")
    mem.store("Budget 2024: 15 items, 01 approved")
    assert _contents(mem.recall("what happened on 2024-01-15", mode="keyword")) == [
        "Board meeting on 2024-01-15 in Berlin"]
    assert mem.recall("2024-01-15", mode="keyword")[0].memory.id == wanted


def test_an_identifier_ranks_the_exact_form_first_and_still_finds_its_parts(
    mem: Memory,
) -> None:
    exact = mem.store("Webhooks are signed with HMAC-SHA256")
    part = mem.store("Rotate the HMAC keys every quarter")
    mem.store("SHA1 is deprecated; 256 bit keys")
    hits = mem.recall("HMAC-SHA256", mode="keyword")
    assert [h.memory.id for h in hits] == [exact, part]
    assert hits[0].explain.matched_terms == ("hmac-sha256", "hmac", "sha256")
    assert hits[1].explain.matched_terms == ("hmac",)


def test_a_release_tag_prefers_the_exact_release(mem: Memory) -> None:
    exact = mem.store("Shipped release v2.1 to production")
    major = mem.store("The v2 API is frozen, 1 endpoint left")
    assert [h.memory.id for h in mem.recall("v2.1", mode="keyword")] == [exact, major]

"""What each example tool call of test_tools.EXAMPLES answers, word for word.

test_tools checks that every dialect tool accepts its example and matches its schema; here each
answer is compared with the exact text an agent reads, and its effect on the store is checked,
so a tool that answers the wrong memory, the wrong number or the wrong direction fails.
``{key}`` in an answer stands for the id of the seeded memory with that key, ``{user turn}`` and
``{assistant turn}`` for the two observed turns, ``{new}`` for the id of a memory the call made.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from test_tools import EXAMPLES, mem, seeded  # noqa: F401  (fixtures)

from clawmemory import Memory
from clawmemory.tools import call_tool

NOT_CONFIGURED = ("The full-text index is up to date; vector search is not configured (no "
                  "embedder configured: keyword and entity recall only), so there was nothing "
                  "to rebuild.")
ALICE = ("Alice (other, mentioned 3 times)\n"
         "- [id:{assistant turn}] [episode] Noted: Alice prefers tea\n"
         "- [id:{user turn}] [episode] Remember that Alice prefers tea\n"
         "- [id:{alice-apollo}] [fact] Alice works on Project Apollo")
STATS = "6 memories (episode: 2, fact: 4); latest recorded 2023-11-14 22:13:23 UTC."

ANSWERS = [  # one per EXAMPLES entry, in order
    "Stored memory [id:{new}] [fact] The CI runs on Fridays (key: ci; tags: ci); linked to "
    "project-setup",
    "- [id:{python-version}] [fact] Project uses Python 3.12 (key: python-version; tags: python;"
    " relevance: 1.03)\n"
    "  why: matched python; keyword[rank=1 bm25=1.03]; reinforcement×1; recency×1; "
    "confidence×1; = 1.03\n"
    "- [id:{project-setup}] [fact] Project setup uses uv and Python (key: project-setup;"
    " relevance: 0.602)\n"
    "  why: matched python; keyword[rank=2 bm25=0.6023]; reinforcement×1; recency×1; "
    "confidence×1; = 0.6023",
    "[id:{python-version}] [fact] Project uses Python 3.12 (key: python-version; tags: python)",
    "4 memories; showing 1-2:\n"
    "- [id:{alice-apollo}] [fact] Alice works on Project Apollo (key: alice-apollo)\n"
    "- [id:{hmac-rule}] [fact] Payment API HMAC signature excludes an empty body (key: "
    "hmac-rule; tags: payments, hmac)",
    "Updated memory [id:{hmac-rule}] [fact] Payment API HMAC signature excludes an empty body "
    "(key: hmac-rule; tags: api)",
    "Forgot memory [id:{project-setup}] [fact] Project setup uses uv and Python (key: "
    "project-setup)",
    "Linked hmac-rule <-> python-version.",
    "Reinforced [id:{hmac-rule}]; score is now 3.",
    "Demoted [id:{hmac-rule}]; score is now -1.",
    "Confirmed [id:{hmac-rule}]; it is now protected from decay.",
    "Corrected: [id:{new}] [fact] HMAC excludes no body (key: hmac-rule; tags: payments, hmac) "
    "replaces [id:{hmac-rule}].",
    "1. [id:{hmac-rule}] [fact] Payment API HMAC signature excludes an empty body (key: "
    "hmac-rule; tags: payments, hmac)",
    STATS,
    ALICE,
    NOT_CONFIGURED,
    "Stored memory 'editor'.",
    "- python-version: Project uses Python 3.12 [links: project-setup]\n"
    "- project-setup: Project setup uses uv and Python [links: python-version]",
    "Forgot memory 'hmac-rule'.",
    "Linked hmac-rule <-> project-setup.",
    "Saved [event] memory (id {new}).",
    "- [fact] Payment API HMAC signature excludes an empty body",
    "Memories 2-3 of 6:\n- [episode] Remember that Alice prefers tea\n"
    "- [fact] Alice works on Project Apollo",
    NOT_CONFIGURED,
    "Stored memory [id:{new}].",
    "[id:{hmac-rule}] Payment API HMAC signature excludes an empty body (tags: payments, hmac; "
    "score: 0)",
    "Reinforced [id:{hmac-rule}]; score is now 3.",
    "Demoted [id:{hmac-rule}]; score is now -1.",
    "Updated memory [id:{hmac-rule}]: HMAC fixed",
    "- [id:{alice-apollo}] Alice works on Project Apollo (confidence 1.00)",
    "Stored memory [id:{new}] [fact] Bob owns the billing service (tags: bob)",
    "Corrected: [id:{new}] [fact] Alice leads Apollo (key: alice-apollo) replaces "
    "[id:{alice-apollo}].",
    "Confirmed [id:{alice-apollo}]; it is now protected from decay.",
    STATS,
    ALICE,
    "[id:{user turn}] user: Remember that Alice prefers tea\n"
    "[id:{assistant turn}] assistant: Noted: Alice prefers tea",
    "Saved 2 facts: [id:{new}], [id:{new}]; skipped 0 duplicates.",
    "Session s1 marked as consolidated.",
    "Session s1 is not consolidated yet.",
    "Facts that may conflict:\n"
    "- [id:{project-setup}] Project setup uses uv and Python (confidence 1.00)\n"
    "- [id:{python-version}] Project uses Python 3.12 (confidence 1.00)",
    "[id:{hmac-rule}] now supersedes [id:{alice-apollo}], whose confidence is lowered to 0.3.",
]


def names(store: Memory) -> dict[str, str]:
    """Placeholder -> id for every memory the seeded store holds before the call."""
    out = {}
    for r in store.list(include_invalid=True, limit=100):
        out[r.key or f"{r.source_role} turn"] = r.id
    return out


def pattern(answer: str, ids: dict[str, str]) -> str:
    parts = re.split(r"(\{[^{}]+\})", answer)
    return "".join(
        "([0-9a-f]{16})" if p == "{new}" else re.escape(ids[p[1:-1]]) if p.startswith("{")
        else re.escape(p)
        for p in parts
    )


def test_every_example_has_its_answer() -> None:
    assert len(ANSWERS) == len(EXAMPLES)


@pytest.mark.parametrize(("dialect", "tool", "args", "answer"),
                         [(*e, a) for e, a in zip(EXAMPLES, ANSWERS, strict=True)],
                         ids=[f"{d}-{t}-{i}" for i, (d, t, _) in enumerate(EXAMPLES)])
def test_every_example_call_answers_exactly(
    seeded: Memory, dialect: str, tool: str, args: dict[str, Any], answer: str  # noqa: F811
) -> None:
    ids = names(seeded)
    before = set(ids.values())
    result = call_tool(seeded, tool, args, dialect=dialect)
    assert not result.is_error, result.text
    match = re.fullmatch(pattern(answer, ids), result.text)
    assert match, f"{result.text!r}\n!=\n{answer!r}"
    # a {new} id is a memory the call stored
    now = {r.id for r in seeded.list(include_invalid=True, limit=100)}
    assert set(match.groups()) <= now - before

"""Knowledge updates in recall (issue 26): the latest statement of a thing first.

A user's history states things that change: an address, a personal record, a preference. When
a recall returns two memories that say different things about the same matter, the newer one
is usually the answer and the older one history. Without a language model (the consolidation
step records such supersessions when one is configured: ``resolve_conflict``), two hits count
as statements of the same thing when

* both are about the question: they share a word of the question (stem-aware);
* they say most of the same thing: at least ``MIN_SHARED`` content words (stopwords, names
  and numbers left out) and ``OVERLAP`` of the shorter one's, so "my 5K personal record is
  27:12" and "I beat my 5K personal record: 25:50" pair up while "I love my new bike" and
  "my bike got a flat" do not;
* each holds a value the other does not: a number or a capitalised word inside a sentence
  ("27:12" and "25:50", "Berlin" and "Hamburg"), so "Mel loves hiking" is no update of "Mel
  went hiking last Friday";
* they lie at least ``MIN_GAP_S`` apart in time (``event_time``, else creation);
* neither was said by another speaker (``source_role``) than the other: the assistant's
  suggestion does not update what the user said.

The newer one then ranks directly ahead of the older one (when it was behind it), and the
older one's explanation names it (``Explanation.superseded_by``). A memory whose
``supersedes`` names another hit (a correction, a consolidated conflict) marks that one too.
Nothing is dropped: the older statement stays, for "what was it before?".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import replace

from clawmemory.model import Hit, event_or_created
from clawmemory.search.sanitize import content_terms, sanitize_terms
from clawmemory.text import tokenize, words

__all__ = ["latest_first"]

OVERLAP = 0.6
MIN_SHARED = 3
MIN_GAP_S = 3_600.0
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
# A capitalised word after a word: "moved to Hamburg"; not "I", not a sentence's first word,
# not a greeting's "Thanks, Mel" (after a comma: who is spoken to is no value).
_NAME = re.compile(r"(?<=\w )([A-Z][\w'-]+)")
_NAMES_AND_NUMBERS = re.compile(r"\b[A-Z][\w'-]*|\d+(?:[.,:/]\d+)*")


def latest_first(hits: list[Hit], query: str) -> list[Hit]:
    """``hits`` with each older statement of a thing placed after its newer one, and marked."""
    if len(hits) < 2:
        return hits
    # The question's words and each hit's topic are stemmed only for a pair that passes the
    # cheap tests (speakers, time apart): the stemming is most of this step's cost, and hits
    # stored within the hour of each other need none.
    asked = functools.cache(
        lambda: frozenset(tokenize(" ".join(content_terms(sanitize_terms(query))))))
    topics = [functools.cache(functools.partial(_topic, h)) for h in hits]
    when = {h.memory.id: event_or_created(h.memory) for h in hits}
    newer: dict[str, str] = {}  # older id -> the id of its newest update among the hits
    for h in hits:
        if h.memory.supersedes in when:
            newer.setdefault(h.memory.supersedes, h.memory.id)
    for i, a in enumerate(hits):
        for j in range(i + 1, len(hits)):
            b = hits[j]
            if not _same_thing(a, b, topics[i], topics[j], asked):
                continue
            old, new = sorted((a.memory.id, b.memory.id), key=when.__getitem__)
            current = newer.get(old)
            if current is None or when[new] > when[current]:
                newer[old] = new
    if not newer:
        return hits
    return _reorder(hits, newer)


def _topic(h: Hit) -> frozenset[str]:
    """The stems of what a memory says, without its values (numbers, names) and stopwords:
    two statements of one thing share these and differ in their values."""
    r = h.memory
    text = _NAMES_AND_NUMBERS.sub(" ", f"{r.key or ''} {r.content}")
    return frozenset(tokenize(" ".join(content_terms(words(text)))))


def _same_thing(a: Hit, b: Hit, topic_a: Callable[[], frozenset[str]],
                topic_b: Callable[[], frozenset[str]], asked: Callable[[], frozenset[str]]) -> bool:
    """Whether ``b`` states the same thing as ``a`` with another value (module docstring); the
    word sets are computed on first use."""
    ra, rb = a.memory, b.memory
    if ra.source_role and rb.source_role and ra.source_role != rb.source_role:
        return False
    if abs(event_or_created(ra) - event_or_created(rb)) < MIN_GAP_S:
        return False
    ta, tb = topic_a(), topic_b()
    shared = ta & tb
    if len(shared) < MIN_SHARED or not shared & asked():
        return False
    if len(shared) < OVERLAP * min(len(ta), len(tb)):
        return False
    va, vb = _values(ra.content), _values(rb.content)
    return bool(va - vb) and bool(vb - va)


def _values(text: str) -> set[str]:
    """The numbers and the capitalised words not opening a sentence: what a statement of a
    changed thing usually changes."""
    out = set(_NUMBER.findall(text))
    out.update(m.group(1).lower() for m in _NAME.finditer(text))
    return out


def _reorder(hits: list[Hit], newer: dict[str, str]) -> list[Hit]:
    """Each newer statement moved directly ahead of the older one it updates (if behind it,
    taking its score: the factor ``latest`` says by how much); the older ones marked."""
    by_id = {h.memory.id: h for h in hits}
    order = [h.memory.id for h in hits]
    for old, new in newer.items():
        if order.index(new) > order.index(old):
            order.remove(new)
            order.insert(order.index(old), new)
            moved, was = by_id[new], by_id[old]
            lift = was.score / moved.score if moved.score > 0 else 1.0
            by_id[new] = Hit(moved.memory, was.score, replace(
                moved.explain, factors={**moved.explain.factors, "latest": lift},
                final=was.score))
    out = []
    for mid in order:
        h = by_id[mid]
        if mid in newer:
            h = Hit(h.memory, h.score, replace(h.explain, superseded_by=newer[mid]))
        out.append(h)
    return out

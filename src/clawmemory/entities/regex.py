"""The always-available provider (004 ``regex``): @mentions, #hashtags, e-mail addresses, URLs
and dates. No dependencies; patterns compile on first use."""

from __future__ import annotations

import re
from functools import cache

from clawmemory.entities.base import EntityType, Mention, resolve_overlaps

__all__ = ["RegexProvider"]

# "May" is a month only when capitalised: "those 3 may help" is not a date.
_MONTH = (
    r"(?:(?i:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)|May)\b\.?"
)
_DAY = r"(?:[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?\b"
_YEAR = r"(?:1[6-9]|2\d)\d{2}\b"

_PATTERNS: tuple[tuple[EntityType, float, str], ...] = (
    (EntityType.URL, 0.99, r"\b(?:https?://|www\.)[^\s<>\"'`]+"),
    (EntityType.EMAIL, 0.99,
     r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
    # Not inside e-mails or paths, and "@5pm" is a time, not a handle.
    (EntityType.MENTION, 0.95, r"(?<![\w@./+-])@(?!\d)\w(?:[\w.-]*\w)?"),
    # "#1" or "#42" is a rank or an issue number, not a hashtag.
    (EntityType.HASHTAG, 0.95, r"(?<![\w#&/])#(?!\d+\b)\w(?:[\w-]*\w)?"),
    (EntityType.DATE, 0.9, r"\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b"),
    (EntityType.DATE, 0.9, rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"),
    (EntityType.DATE, 0.9, rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?"),
    (EntityType.DATE, 0.85, rf"\b{_MONTH}\s+{_YEAR}"),
    (EntityType.DATE, 0.8, r"\b\d{1,2}/\d{1,2}/(?:\d{4}|\d{2})\b|\b\d{1,2}\.\d{1,2}\.\d{4}\b"),
)
_URL_TRAIL = ".,;:!?'\""
_CLOSERS = {")": "(", "]": "[", "}": "{"}


@cache
def _compiled() -> tuple[tuple[EntityType, float, re.Pattern[str]], ...]:
    return tuple((t, c, re.compile(p)) for t, c, p in _PATTERNS)


def _trim_url(text: str) -> str:
    """Drop sentence punctuation after a URL, and closing brackets it did not open.

    Counted once and updated while trimming: recounting per character was quadratic in a URL
    that ends in many brackets (3 s for 100,000)."""
    balance = {c: text.count(c) - text.count(o) for c, o in _CLOSERS.items()}
    end = len(text)
    while end:
        last = text[end - 1]
        unopened = balance.get(last, 0) > 0
        if not (last in _URL_TRAIL or unopened):
            break
        if last in balance:
            balance[last] -= 1
        end -= 1
    return text[:end]


class RegexProvider:
    """Pattern-based mentions with high confidence; non-overlapping (longest span wins)."""

    name = "regex"

    def extract(self, text: str) -> list[Mention]:
        found: list[Mention] = []
        for etype, confidence, pattern in _compiled():
            for m in pattern.finditer(text):
                value = _trim_url(m.group()) if etype is EntityType.URL else m.group()
                if value:
                    end = m.start() + len(value)
                    found.append(Mention(value, etype, m.start(), end, confidence, self.name))
        return resolve_overlaps(found)

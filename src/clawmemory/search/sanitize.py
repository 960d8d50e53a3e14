"""Keyword query sanitising (003): any user text becomes a safe, broad FTS5 query.

1. URLs are stripped (noisy, FTS5-incompatible tokens).
2. Hyphens split words ("state-of-the-art" -> "state of the art").
3. Remaining punctuation and FTS5 special characters are stripped.
4. Single-character tokens are dropped.
5. Each word is quoted for literal matching (``fts_query``), so nothing is read as a column
   name or operator (AND, OR, NOT, NEAR are plain words once quoted).
6. Words are OR-joined for broad matching; BM25 ranks documents matching more of them higher.
"""

from __future__ import annotations

import re

__all__ = ["MAX_TERMS", "like_tokens", "sanitize_terms"]

MAX_TERMS = 32  # bounds query cost; a longer query adds little after this many distinct words
_URL = re.compile(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*://|www\.)\S+")
_HYPHENS = re.compile(r"[-\u2010-\u2015\u2212]")
_NOT_WORD = re.compile(r"[^\w]+")  # \w is unicode-aware: letters and digits of every script


def sanitize_terms(query: str) -> list[str]:
    """The distinct search words of ``query``, lower-cased, in order of first appearance."""
    text = _URL.sub(" ", query)
    text = _HYPHENS.sub(" ", text)
    text = _NOT_WORD.sub(" ", text.replace("_", " "))
    seen: dict[str, None] = {}
    for word in text.lower().split():
        if len(word) > 1 and word not in seen:
            seen[word] = None
    return list(seen)[:MAX_TERMS]


def like_tokens(query: str) -> list[str]:
    """Words for the substring fallback (000): like ``sanitize_terms`` but keeps 1-char words,
    so a query such as "C" or "R" can still find something."""
    text = _NOT_WORD.sub(" ", _HYPHENS.sub(" ", _URL.sub(" ", query)).replace("_", " "))
    seen: dict[str, None] = {w: None for w in text.lower().split()}
    return list(seen)[:MAX_TERMS]

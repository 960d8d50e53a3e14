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
import unicodedata

__all__ = ["MAX_TERMS", "STOPWORDS", "content_terms", "like_tokens", "sanitize_terms"]

MAX_TERMS = 32  # bounds query cost; a longer query adds little after this many distinct words
# A URL is a scheme ("http://", "git+ssh://") or "www." up to the next blank. Every pattern here
# is linear in the query's length: the look-behind lets a scheme be tried only where a run of
# scheme characters begins (group 1 keeps what precedes its first letter, as the plain
# ``[a-zA-Z][a-zA-Z0-9+.-]*://`` would). That plain form retried the run from every letter of
# a long word: quadratic, 5 s for a 100,000-letter word, all of it holding the GIL.
_URL = re.compile(r"(?<![a-zA-Z0-9+.-])([0-9+.-]*)[a-zA-Z][a-zA-Z0-9+.-]*://\S+|www\.\S+")
_HYPHENS = re.compile(r"[-\u2010-\u2015\u2212]")
_NOT_WORD = re.compile(r"[^\w]+")  # \w is unicode-aware: letters and digits of every script


def sanitize_terms(query: str) -> list[str]:
    """The distinct search words of ``query``, lower-cased, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in _words(query):
        if len(word) > 1 and word not in seen:
            seen[word] = None
    return list(seen)[:MAX_TERMS]


def like_tokens(query: str) -> list[str]:
    """Words for the substring fallback (000): like ``sanitize_terms`` but keeps 1-char words,
    so a query such as "C" or "R" can still find something."""
    seen: dict[str, None] = {w: None for w in _words(query)}
    return list(seen)[:MAX_TERMS]


def _drop_url(match: re.Match[str]) -> str:
    return (match.group(1) or "") + " "


def _words(query: str) -> list[str]:
    # NFC first: a decomposed "nai\u0308ve" (as macOS input methods produce) is one word, not
    # "nai" and "ve".
    text = unicodedata.normalize("NFC", query)
    text = _HYPHENS.sub(" ", _URL.sub(_drop_url, text)).replace("_", " ")
    if text.isascii():
        text = _NOT_WORD.sub(" ", text)
    else:
        # A combining mark belongs to its word (\w does not match marks); the index's tokenizer
        # decides what the mark means, exactly as it did for the stored text.
        text = "".join(
            ch if ch.isalnum() or unicodedata.category(ch)[0] == "M" else " " for ch in text
        )
    return text.lower().split()


# Function words of English questions and statements. 003 keeps no stop-word list because its
# agent writes keyword queries; natural-language queries (context injection, questions) are
# dominated by these words, which match most memories and push content words down
# (measured on LoCoMo: docs/benchmarks.md). Used only when content words remain.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "s",
        "t",
        "don",
        "doesn",
        "didn",
        "isn",
        "wasn",
        "weren",
        "ll",
        "ve",
        "re",
        "d",
        "m",
        "o",
        "y",
        "also",
        "ever",
        "much",
        "many",
        "via",
        "yes",
        "yeah",
        "oh",
        "hey",
        "hi",
        "ok",
        "okay",
    ]
)


def content_terms(terms: list[str]) -> list[str]:
    """``terms`` without stop words, unless nothing would be left (then all of them)."""
    kept = [t for t in terms if t not in STOPWORDS]
    return kept or terms

"""Keyword query sanitising (003): any user text becomes a safe, broad FTS5 query.

1. URLs are stripped (noisy, FTS5-incompatible tokens).
2. Numbers and identifiers stay whole (ADR 0017): a run of letters and digits joined by ``.``,
   ``-``, ``/`` or ``:`` that contains a digit ("3.12", "v2.1", "2024-01-15", "HMAC-SHA256")
   is one term, searched as a phrase of its parts (the index splits "3.12" into "3" and "12"
   when it stores text, and a quoted term is split the same way: ``fts_query``). Its parts
   that are not bare numbers ("v2", "hmac", "sha256") are searched on their own too, as
   before, so a memory that names only "HMAC" is still found.
3. Otherwise hyphens split words ("state-of-the-art" -> "state of the art").
4. Remaining punctuation and FTS5 special characters are stripped.
5. Single-character tokens are dropped.
6. Each word is quoted for literal matching (``fts_query``), so nothing is read as a column
   name or operator (AND, OR, NOT, NEAR are plain words once quoted).
7. Words are OR-joined for broad matching; BM25 ranks documents matching more of them higher.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "MAX_LIKE_WORDS", "MAX_TERMS", "STOPWORDS", "content_terms", "is_phrase", "like_tokens",
    "sanitize_terms",
]

MAX_TERMS = 32  # bounds query cost; a longer query adds little after this many distinct words
# The substring fallback (000) is for a short keyword query the index cannot match ("pay" for
# "payment", "C"): it reads every memory's text once per token, so a long query that matched
# nothing (a pasted page, ~1,000 words) cost 16 scans of the namespace. A query with more
# distinct content words than this gets no fallback: what it would find are fragments the
# relevance floor does not count anyway.
MAX_LIKE_WORDS = 8
# A compound of more parts than this is not an identifier but a run of punctuated text: its
# parts are searched as words (and a phrase query stays short).
MAX_COMPOUND_PARTS = 8
# A URL is a scheme ("http://", "git+ssh://") or "www." up to the next blank. Every pattern here
# is linear in the query's length: the look-behind lets a scheme be tried only where a run of
# scheme characters begins (group 1 keeps what precedes its first letter, as the plain
# ``[a-zA-Z][a-zA-Z0-9+.-]*://`` would). That plain form retried the run from every letter of
# a long word: quadratic, 5 s for a 100,000-letter word, all of it holding the GIL.
_URL = re.compile(r"(?<![a-zA-Z0-9+.-])([0-9+.-]*)[a-zA-Z][a-zA-Z0-9+.-]*://\S+|www\.\S+")
_HYPHENS = re.compile(r"[\u2010-\u2015\u2212]")
_JOINERS = ".-/:"  # what joins the parts of a number or identifier
_JOINER_RUN = re.compile(r"[.\-/:]+")
_NOT_WORD = re.compile(r"[^\w.\-/:]+")  # \w is unicode-aware: letters and digits of every script


def sanitize_terms(query: str) -> list[str]:
    """The distinct search terms of ``query``, lower-cased, in order of first appearance: words
    of two characters or more, and whole numbers and identifiers (module docstring)."""
    return _distinct(query, min_len=2)


def like_tokens(query: str) -> list[str]:
    """Words for the substring fallback (000): like ``sanitize_terms`` but keeps 1-char words,
    so a query such as "C" or "R" can still find something."""
    return _distinct(query, min_len=1)


def _distinct(query: str, *, min_len: int) -> list[str]:
    """The first ``MAX_TERMS`` distinct terms: the rest of a long query is not even split."""
    seen: dict[str, None] = {}
    for chunk in _chunks(query):
        for term in _chunk_terms(chunk, min_len=min_len):
            seen.setdefault(term, None)
        if len(seen) >= MAX_TERMS:
            break
    return list(seen)[:MAX_TERMS]


def is_phrase(term: str) -> bool:
    """Whether a term from ``sanitize_terms`` is a number or identifier of several parts (the
    index holds it as a phrase of its parts)."""
    return any(j in term for j in _JOINERS)


def _chunk_terms(chunk: str, min_len: int) -> list[str]:
    """The terms of one blank-free chunk: a compound and its non-numeric parts, or words."""
    parts = [p for p in _JOINER_RUN.split(chunk) if p]
    if 1 < len(parts) <= MAX_COMPOUND_PARTS and any(ch.isdigit() for ch in chunk):
        # Runs of joiners become one ("3..12" is "3.12"); joiners at the ends are no part of it.
        compound = _JOINER_RUN.sub(lambda m: m.group()[0], chunk.strip(_JOINERS))
        return [compound, *(p for p in parts if len(p) > 1 and not p.isdigit())]
    return [p for p in parts if len(p) >= min_len]


def _drop_url(match: re.Match[str]) -> str:
    return (match.group(1) or "") + " "


def _chunks(query: str) -> list[str]:
    """Lower-cased blank-free chunks: word characters and the joiners between them."""
    # NFC first: a decomposed "nai\u0308ve" (as macOS input methods produce) is one word, not
    # "nai" and "ve".
    text = unicodedata.normalize("NFC", query)
    text = _HYPHENS.sub("-", _URL.sub(_drop_url, text)).replace("_", " ")
    if text.isascii():
        text = _NOT_WORD.sub(" ", text)
    else:
        # A combining mark belongs to its word (\w does not match marks); the index's tokenizer
        # decides what the mark means, exactly as it did for the stored text.
        text = "".join(
            ch if ch.isalnum() or ch in _JOINERS or unicodedata.category(ch)[0] == "M" else " "
            for ch in text
        )
    return text.lower().split()


# Function words of English questions and statements. 003 keeps no stop-word list because its
# agent writes keyword queries; natural-language queries (context injection, questions) are
# dominated by these words, which match most memories and push content words down
# (measured on LoCoMo: docs/benchmark-history.md). Used only when content words remain.
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

"""Text analysis shared by every layer that reads words: the keyword tokenizer of the in-memory
backends (close to FTS5's ``porter unicode61 remove_diacritics 2``), the stemmer calibrated
fusion and the lifecycle's duplicate detection use, and FTS5's phrase counting; and the
``[Memory context]`` block of context injection (000) with its token estimate, which the
context builders and the Claude Code hooks share (the hooks must not import the settings).

It sits below the backends and the search pipeline, so both use one definition of a word.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
import sys
import types
import unicodedata
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["CONTEXT_CLOSE", "CONTEXT_OPEN", "TOKENS_PER_WORD", "estimate_tokens",
           "phrase_count", "stem", "stems_starting", "strip_memory_context", "tokenize", "words"]

_WORD = re.compile(r"\w+")
_DIACRITICS = re.compile("[\u0300-\u036f]")  # the Combining Diacritical Marks block


_ALIAS = "clawmemory_snowball_english"  # a private name for snowballstemmer's folder


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    """snowballstemmer's English stemmer, without importing the package itself: its
    ``__init__`` imports all 30 languages (~50 ms, most of a first recall's cost). The
    package's folder is registered under a private name whose ``__init__`` never runs, and only
    the English module (with its two helpers) is imported from it. Anything unexpected falls
    back to the package's own entry point."""
    try:
        spec = importlib.util.find_spec("snowballstemmer")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("snowballstemmer is not a package")
        if _ALIAS not in sys.modules:
            alias = types.ModuleType(_ALIAS)
            alias.__path__ = list(spec.submodule_search_locations)
            sys.modules[_ALIAS] = alias
        english = importlib.import_module(f"{_ALIAS}.english_stemmer")
        return english.EnglishStemmer()
    except (ImportError, AttributeError):
        import snowballstemmer

        return snowballstemmer.stemmer("english")


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    return str(_stemmer().stemWord(word))


def tokenize(text: str) -> list[str]:
    """Lower-cased, stemmed word tokens (close to FTS5's porter unicode61 tokenizer)."""
    return [stem(w) for w in words(text)]


def words(text: str) -> list[str]:
    """The words ``tokenize`` stems, lower-cased and folded, not stemmed yet. A stem always
    starts with its word's first letter (Snowball English only trims and rewrites endings;
    checked on 220k words), so a caller looking for given stems need only stem the words that
    start like one of them."""
    return _WORD.findall(_fold(text.lower()).replace("_", " "))


def stems_starting(text: str, initials: set[str] | frozenset[str]) -> set[str]:
    """The stems of ``text``'s words whose first letter is in ``initials``: every stem of
    ``tokenize(text)`` that starts with one of them, without stemming the other words."""
    return {stem(w) for w in words(text) if w[0] in initials}


def phrase_count(tokens: Sequence[str], phrase: Sequence[str]) -> int:
    """How often ``phrase`` (tokens) occurs in ``tokens`` as consecutive tokens, as FTS5 counts
    a quoted term of several tokens ("3.12" is the phrase "3" "12")."""
    n = len(phrase)
    if not n:
        return 0
    first = phrase[0]
    return sum(1 for i, tok in enumerate(tokens)
               if tok == first and list(tokens[i:i + n]) == list(phrase))


def _fold(text: str) -> str:
    """Drop Latin/Greek/Cyrillic diacritics, as FTS5's ``remove_diacritics 2`` does, so
    "café", "cafe" and a decomposed "cafe\u0301" are one word on every backend."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFC", _DIACRITICS.sub("", unicodedata.normalize("NFD", text)))


# --- the [Memory context] block (000) and the token estimate --------------------------------
TOKENS_PER_WORD = 1.3  # 000/001 fallback token estimate (the estimator itself is pluggable)
CONTEXT_OPEN, CONTEXT_CLOSE = "[Memory context]", "[/Memory context]"
_AFTER_BLOCK = re.compile(r"[ \t]*(?:\r?\n)*")  # the blank tail a block leaves behind


def estimate_tokens(text: str) -> int:
    """Words × 1.3, rounded up: the heuristic 000 and 001 fall back on."""
    return math.ceil(len(text.split()) * TOKENS_PER_WORD)


def strip_memory_context(text: str) -> str:
    """``text`` without any ``[Memory context]...[/Memory context]`` block (000).

    Found with ``str.find``: a lazy ``open.*?close`` pattern rescans to the end of the text
    from every opening that is never closed (26 s for 20,000 of them)."""
    out: list[str] = []
    pos = 0
    while (start := text.find(CONTEXT_OPEN, pos)) != -1:
        end = text.find(CONTEXT_CLOSE, start + len(CONTEXT_OPEN))
        if end == -1:
            break  # no later opening can be closed either
        out.append(text[pos:start])
        tail = _AFTER_BLOCK.match(text, end + len(CONTEXT_CLOSE))
        pos = tail.end() if tail else end + len(CONTEXT_CLOSE)
    out.append(text[pos:])
    return "".join(out)

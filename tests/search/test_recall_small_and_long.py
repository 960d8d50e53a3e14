"""Recall at the two ends a new user meets first: a store of a handful of memories (no
unrelated hits, scores people can read) and a query of a thousand words that match nothing
(bounded work: what is sent to SQLite is counted, not timed).

Real components: a SQLite file, the packaged embedding model where similarity matters, the
``clawmem`` console script in a subprocess for what the CLI prints, and SQLite's own statement
trace (apsw ``exec_trace``) for the work a recall asks of the database.
"""

from __future__ import annotations

import os
import random
import re
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.search.sanitize import MAX_TERMS

SMALL_STORE = ["User prefers dark mode in every editor",
               "Payment API: HMAC signature excludes the empty body",
               "The deploy happens every Tuesday at noon"]
CLAWMEM = Path(sys.executable).parent / "clawmem"


@pytest.fixture
def small(tmp_path: Path, default_embedder: Any) -> Iterator[Memory]:
    """Three memories, the packaged model (plain cosines: too few vectors for a centre)."""
    with Memory(SQLiteStore(tmp_path / "small.db"), Settings(),
                embedder=default_embedder) as mem:
        for text in SMALL_STORE:
            mem.store(text)
        yield mem


def test_a_word_most_memories_hold_does_not_make_an_unrelated_memory_a_hit(
        small: Memory) -> None:
    """"every" is in two of three memories: FTS5 gives it an idf of 1e-6, so it tells them
    apart no more than "the" would. The deploy memory is similar enough to "every day" to
    stay; the dark-mode one (cosine ~0.08) was shown before, on that word alone."""
    hits = [h.memory.content for h in small.recall("every day")]
    assert SMALL_STORE[0] not in hits
    assert hits == [SMALL_STORE[2]]


def test_a_word_that_tells_memories_apart_still_makes_a_hit(small: Memory) -> None:
    assert [h.memory.content for h in small.recall("empty")] == [SMALL_STORE[1]]
    # held by two of three: still found when the query is nothing else (keyword mode, 003)
    found = {h.memory.content for h in small.recall("every", mode="keyword")}
    assert found == {SMALL_STORE[0], SMALL_STORE[2]}


def test_the_cli_prints_a_tiny_keyword_score_in_decimals(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env.update(HOME=str(tmp_path), CLAWMEM_EMBEDDER__PROVIDER="none", COLUMNS="200",
               CLAWMEM_LOG_LEVEL="ERROR")
    db = str(tmp_path / "cli.db")

    def clawmem(*args: str) -> str:
        proc = subprocess.run([str(CLAWMEM), "--db", db, *args], env=env, text=True,
                              capture_output=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    for text in SMALL_STORE:
        clawmem("add", text)
    shown = clawmem("recall", "--mode", "keyword", "--explain", "every day")
    assert "every editor" in shown  # keyword mode: a memory holding a query word is a hit
    assert not re.search(r"\de[-+]\d", shown), shown  # 1e-06: scientific notation
    assert "0.000001" in shown or "0.000002" in shown, shown


# --- a long query -------------------------------------------------------------------------------
def _junk(words: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(7))
                    for _ in range(words))


def _statements(mem: Memory, query: str, mode: str = "hybrid") -> list[tuple[str, Any]]:
    """The SQL statements (and their bindings) one recall ran."""
    store = mem.store_backend
    assert isinstance(store, SQLiteStore)
    seen: list[tuple[str, Any]] = []

    def trace(cursor: Any, sql: str, bindings: Any) -> bool:
        seen.append((sql, bindings))
        return True

    store.conn.exec_trace = trace
    try:
        mem.recall(query, mode=mode)
    finally:
        store.conn.exec_trace = None
    return seen


def _fts_terms(statements: list[tuple[str, Any]]) -> list[int]:
    """How many terms each full-text MATCH of the recall was given."""
    counts = []
    for sql, bindings in statements:
        if "MATCH" in sql:
            counts += [b.count('" OR "') + 1 for b in bindings or ()
                       if isinstance(b, str) and b.startswith('"')]
    return counts


def _substring_scans(statements: list[tuple[str, Any]]) -> int:
    return sum(sql.count("instr(") for sql, _ in statements)


@pytest.fixture
def keyword_mem(tmp_path: Path) -> Iterator[Memory]:
    with Memory(SQLiteStore(tmp_path / "long.db"),
                Settings(embedder={"provider": "none"})) as mem:
        for text in SMALL_STORE:
            mem.store(text)
        yield mem


def test_a_thousand_words_that_match_nothing_send_a_bounded_query(keyword_mem: Memory) -> None:
    query = _junk(1000)
    statements = _statements(keyword_mem, query, mode="keyword")
    terms = _fts_terms(statements)
    assert terms and max(terms) <= MAX_TERMS
    # No substring scan of the namespace: it read every memory once per token (16 tokens).
    assert _substring_scans(statements) == 0
    assert keyword_mem.recall(query, mode="keyword") == []
    # Repeated words are one term.
    repeated = _statements(keyword_mem, "deploy " * 500 + _junk(200), "keyword")
    assert max(_fts_terms(repeated)) <= MAX_TERMS


def test_a_short_fragment_still_gets_the_substring_fallback(keyword_mem: Memory) -> None:
    """The fallback stays for what it is for (000): "pay" finds "Payment"."""
    statements = _statements(keyword_mem, "pay", mode="keyword")
    assert _substring_scans(statements) > 0
    assert [h.memory.content for h in keyword_mem.recall("pay", mode="keyword")] == [
        SMALL_STORE[1]]

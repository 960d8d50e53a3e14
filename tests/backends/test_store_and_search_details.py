"""More behaviours of the store and search modules that mutation testing found unpinned.

Each test pins one behaviour exactly (see tests/core/test_engine_details.py): PostgreSQL's defaults,
its refusal of a foreign schema and its keyword candidates, and the query's words
and time expressions.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
from test_postgres import _options

from clawmemory import Filter, Memory, Settings, StorageError
from clawmemory.backends.postgres.search import SIZE_TTL_S
from clawmemory.backends.postgres.store import PostgresOptions, PostgresStore
from clawmemory.search.sanitize import sanitize_terms
from clawmemory.search.temporal import Period, event_time_from_text, query_periods
from conftest import Clock, postgres_url


# --- PostgreSQL: options, schema ownership ------------------------------------------------------
def test_a_store_opened_without_options_uses_the_documented_postgres_defaults() -> None:
    """``PostgresStore(url)`` (no settings) runs with the ``[postgres]`` defaults of
    docs/configuration.md, every one of them."""
    defaults = Settings().postgres.model_dump()
    assert vars(PostgresOptions()) == defaults


def test_a_foreign_schema_is_refused_naming_five_of_its_tables(
        request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """The message names the schema and five of its tables; a sixth is shown as "..."."""
    for count, shown in ((5, "t1, t2, t3, t4, t5"), (6, "t1, t2, t3, t4, t5, ...")):
        url = postgres_url(request, tmp_path / str(count))
        with psycopg.connect(url, autocommit=True) as conn:
            for i in range(1, count + 1):
                conn.execute(f"CREATE TABLE t{i} (id int)")
            [(schema,)] = conn.execute("SELECT current_schema()").fetchall()
        with pytest.raises(StorageError) as refused:
            PostgresStore(url)
        assert f": schema {schema} is not a clawmemory schema (it holds the tables {shown});" \
            " refusing" in str(refused.value)


# --- PostgreSQL: keyword candidates -------------------------------------------------------------
def test_keyword_candidates_take_the_rarest_words_while_their_rows_add_up_to_the_cap(
        request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> None:
    """``keyword_candidates`` = 100: "gamma" (1 row) and "alpha" (50 rows) add up to 51; with
    "beta" (50 rows) they would be 101, past the cap. So only the gamma and alpha rows are
    ranked and, being enough for the limit, returned, though the short beta rows rank higher."""
    settings = Settings(embedder={"provider": "none"}, postgres={"keyword_candidates": 100})
    store = PostgresStore(postgres_url(request, tmp_path), options=_options(settings))
    mem = Memory(store, settings, clock=clock)
    try:
        gamma = mem.store("gamma")
        alpha = mem.store_many(
            {"content": f"alpha {i} came up once among many other unrelated words"}
            for i in range(50))
        mem.store_many({"content": "beta"} for _ in range(50))
        hits = store.keyword_search("default", ["alpha", "beta", "gamma"], Filter(), limit=2)
        assert [h.info.id for h in hits] == [gamma, alpha[-1]]
    finally:
        mem.close()


# --- the query's words and time expressions -----------------------------------------------------
def test_punctuation_between_accented_words_is_only_a_separator() -> None:
    assert sanitize_terms("café, crème brûlée!") == ["café", "crème", "brûlée"]


def test_the_word_before_a_month_is_looked_for_in_the_forty_characters_before_it() -> None:
    """"in June" names a month even with blanks between; a preposition further back than the
    40 characters looked at does not make "June" a time (it stays a possible name)."""
    now = 1_700_000_000.0  # 2023-11-14
    june = Period("June", 1685577600.0, 1688169600.0)  # June 2023, UTC
    assert query_periods("in" + " " * 38 + "June", now, UTC, ("en",)) == (june,)
    assert query_periods("in" + " " * 39 + "June", now, UTC, ("en",)) == ()



def test_term_counts_are_taken_afresh_once_the_table_grew_past_five_percent(
        request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> None:
    """Past 5,000 rows a term's count is remembered while the table stays within 5% of the
    size it was counted at; grown by more, the word is counted again, so its weight is a
    freshly opened store's."""
    settings = Settings(embedder={"provider": "none"})
    url = postgres_url(request, tmp_path)
    store = PostgresStore(url, options=_options(settings))
    mem = Memory(store, settings, clock=clock)
    try:
        mem.store_many({"content": f"filler note {i}"} for i in range(5_000))
        rare = mem.store("harbour")
        [first] = store.keyword_search("default", ["harbour"], Filter(), limit=1)
        mem.store_many({"content": f"harbour side {i}"} for i in range(300))  # 5,301: +5.7%
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE memories")  # as autovacuum would: before both stores read
        time.sleep(SIZE_TTL_S + 0.1)  # the table's size is remembered this long
        [again] = store.keyword_search("default", ["harbour"], Filter(), limit=1)
        fresh = PostgresStore(url, options=_options(settings))
        [counted] = fresh.keyword_search("default", ["harbour"], Filter(), limit=1)
        fresh.close()
        assert (again.info.id, counted.info.id) == (rare, rare)
        assert again.relevance == counted.relevance < first.relevance
    finally:
        mem.close()


@pytest.mark.parametrize("apostrophe", ["'", "\u2019"])
def test_a_possessive_time_word_is_read_with_either_apostrophe(apostrophe: str) -> None:
    # "yesterday's" as typed on a keyboard or by a phone's curly quotes: both name that day
    now = datetime(2024, 3, 14, 12, tzinfo=UTC).timestamp()
    day = datetime(2024, 3, 13, tzinfo=UTC).timestamp()
    text = f"yesterday{apostrophe}s standup ran long"
    assert event_time_from_text(text, now, UTC, ("en",)) == (day, "yesterday")
    assert query_periods(f"what was in {text}", now, UTC, ("en",)) == (
        Period(text="yesterday", start=day, end=day + 86_400),)

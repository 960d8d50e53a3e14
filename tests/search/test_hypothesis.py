"""Property tests: no query text breaks recall, and any set of records survives a snapshot.

The FTS5 property runs the sanitised query through ``SQLiteStore.keyword_search`` on a real
file, so the quoting in ``fts_query`` is checked against SQLite's own query parser.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from clawmemory import Filter, Memory, MemoryRecord, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.sqlite.store import SQLiteStore, fts_query
from clawmemory.model import KINDS
from clawmemory.search.sanitize import like_tokens, sanitize_terms
from clawmemory.snapshot import new_id
from conftest import START, Clock, backend_params

HOSTILE = ['"', '""', 'NEAR(', "NEAR(a b, 2)", "AND OR NOT", "col:term", "content:x", "key : y",
           "*", "a*", "^", "^start", "-x", "+x", "(", ")", "{a b}", "a:b:c", "\\", "'", "`",
           "😀", "👍🏽", "🏳️‍🌈", "e\u0301\u0302\u0303", "\u0301", "\u200b\u200d", "\x01\x1f\x7f",
           "ﬁ ＡＢＣ", "İstanbul", "ǅ", "a" * 5000, "AND", "OR", "NOT", "NEAR", "x OR", "OR y"]

# Arbitrary Unicode except NUL (refused by validation) and surrogates (not encodable).
QUERY_TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                     max_size=200)
SETTINGS_NO_EMBEDDER = Settings(embedder={"provider": "none"})


@pytest.fixture(scope="module")
def fts_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    """A real SQLite file with a few rows whose words the generated queries can hit."""
    store = SQLiteStore(tmp_path_factory.mktemp("fts") / "memory.db")
    mem = Memory(store, SETTINGS_NO_EMBEDDER, clock=Clock(), embedder=None)
    for text in ("near and or not", "column term content key", "star caret quote",
                 "café naïve résumé", "emoji 😀 party", "hindi हिन्दी भाषा"):
        mem.store(text, key=text.split()[0], tags=["t"])
    yield store
    store.close()


@settings(max_examples=150, deadline=None)
@given(QUERY_TEXT | st.sampled_from(HOSTILE))
def test_sanitize_terms_never_raises(query: str) -> None:
    terms = sanitize_terms(query)
    tokens = like_tokens(query)
    assert all(isinstance(t, str) and len(t) > 1 for t in terms)
    assert all(t and t == t.strip() for t in tokens)
    assert len(terms) <= 32 and len(set(terms)) == len(terms)
    assert all('"' not in t for t in terms)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=QUERY_TEXT | st.sampled_from(HOSTILE)
       | st.lists(st.sampled_from(HOSTILE)).map(" ".join))
@example(query="near")  # proves the harness sees real matches, not only empty results
def test_fts_query_of_sanitized_terms_never_errors(fts_store: SQLiteStore, query: str) -> None:
    terms = sanitize_terms(query)
    hits = fts_store.keyword_search("default", terms, Filter(), limit=10)  # raises on FTS errors
    if query == "near":
        assert len(hits) == 1
    # the substring fallback must be just as safe
    fts_store.like_search("default", like_tokens(query), Filter(), limit=10)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                        min_size=1, max_size=20), max_size=6))
def test_fts_query_quotes_any_term(terms: list[str]) -> None:
    """fts_query alone (not only after sanitising) yields a query FTS5 accepts, and each term
    is matched literally, as a phrase: the text made of the terms is found exactly when it
    holds a word FTS5 indexes, and an unrelated text never is."""
    import apsw

    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x,"
                 " tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE words USING fts5vocab(t, 'instance')")
    conn.execute("INSERT INTO t(rowid, x) VALUES (1, 'zqxjkvw')")
    conn.execute("INSERT INTO t(rowid, x) VALUES (2, ?)", (" ".join(terms),))
    conn.execute("INSERT INTO t(rowid, x) VALUES (3, ?)", (terms[0] if terms else "",))
    indexed = {doc for (doc,) in conn.execute("SELECT DISTINCT doc FROM words")}
    if terms:  # any one term is enough (OR), so the first alone finds row 3
        found = {r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?",
                                            (fts_query(terms),))}
        assert found == indexed - {1}


TEXT = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
               min_size=1, max_size=40)
CONTENT = TEXT.filter(lambda s: s.strip() != "")
KEY = TEXT.map(str.strip).filter(bool)
TAG = TEXT.map(str.strip).filter(bool)
TIME = st.floats(min_value=1e9, max_value=2e9, allow_nan=False)
JSON_SCALAR = (st.none() | st.booleans() | st.integers(-(2**53), 2**53)
               | st.floats(allow_nan=False, allow_infinity=False) | TEXT)
JSON_VALUE = st.recursive(
    JSON_SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6)
METADATA = st.dictionaries(TEXT, JSON_VALUE, max_size=4)


# --- metadata filters ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def meta_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SQLiteStore]:
    store = SQLiteStore(tmp_path_factory.mktemp("meta") / "memory.db")
    yield store
    store.close()


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=TEXT, values=st.lists(JSON_VALUE, min_size=1, max_size=6), data=st.data())
@example(key="k", values=[1e20, [1, 2], {"b": 1}, "True", 2**70], data=None)
def test_sqlite_metadata_filter_matches_the_reference(
    meta_store: SQLiteStore, key: str, values: list[Any], data: Any
) -> None:
    """SQLite's metadata filter agrees with Filter.matches for any key and any JSON values."""
    ns = uuid.uuid4().hex
    recs = [MemoryRecord(id=f"r{i}", namespace=ns, content="x", metadata={key: v},
                         created_at=START, updated_at=START) for i, v in enumerate(values)]
    recs.append(MemoryRecord(id="no-key", namespace=ns, content="x", created_at=START,
                             updated_at=START))
    meta_store.put_many(recs, skip_existing_keys=False)
    candidates = [*values, *(str(v) for v in values), True, False, 1, "1"]
    wanted = [data.draw(st.sampled_from(candidates) | JSON_VALUE)] if data else candidates
    for w in wanted:
        flt = Filter(metadata={key: w})
        want = {r.id for r in recs if flt.matches(r)}
        assert {r.id for r in meta_store.list(ns, flt, limit=100)} == want, w
        assert meta_store.count(ns, flt) == len(want), w


# --- snapshot round trip -------------------------------------------------------------------------



@st.composite
def records(draw: st.DrawFn) -> list[MemoryRecord]:
    n = draw(st.integers(1, 8))
    keys = draw(st.lists(KEY, min_size=n, max_size=n, unique=True))
    out = []
    for i in range(n):
        created = draw(TIME)
        kind = draw(st.sampled_from(sorted(KINDS)))
        out.append(MemoryRecord(
            id=new_id(),
            content=draw(CONTENT),
            key=keys[i] if draw(st.booleans()) else None,
            kind=kind,
            tags=tuple(draw(st.lists(TAG, max_size=4, unique=True))),
            metadata=draw(METADATA),
            source=draw(st.none() | TEXT),
            source_role=draw(st.none() | st.sampled_from(["user", "claw"])),
            source_ids=tuple(draw(st.lists(TEXT, max_size=3))),
            session_id=draw(st.none() | TEXT),
            created_at=created,
            event_time=draw(st.none() | st.floats(-1e10, 1e11, allow_nan=False)),
            updated_at=created + draw(st.floats(0, 1e6)),
            last_accessed=draw(st.none() | TIME),
            access_count=draw(st.integers(0, 10_000)),
            score=draw(st.integers(-50, 50)),
            confidence=draw(st.floats(0, 1)),
            decay_rate=draw(st.floats(0, 1)),
            valid_until=draw(st.none() | TIME),
            supersedes=draw(st.none() | st.sampled_from([r.id for r in out] or ["gone"])),
        ))
    return out


@st.composite
def links_between(draw: st.DrawFn, recs: list[MemoryRecord]) -> list[tuple[str, str, float, str]]:
    if len(recs) < 2:
        return []
    pairs = draw(st.lists(st.tuples(st.integers(0, len(recs) - 1), st.integers(0, len(recs) - 1))
                          .filter(lambda p: p[0] != p[1]), max_size=6,
                          unique_by=lambda p: tuple(sorted(p))))
    return [(recs[a].id, recs[b].id, draw(st.floats(0.1, 10)),
             draw(st.sampled_from(["manual", "synthesis", "co-recall"]))) for a, b in pairs]


@st.composite
def record_sets(draw: st.DrawFn) -> tuple[list[MemoryRecord], list[tuple[str, str, float, str]]]:
    recs = draw(records())
    return recs, draw(links_between(recs))


def _stored(mem: Memory) -> dict[str, dict[str, Any]]:
    out = {}
    for r in mem.list(include_invalid=True, limit=10_000, order="oldest"):
        d = r.to_dict()
        d.pop("namespace")
        out[r.id] = d
    return out


def _links(store: Store, mem: Memory) -> set[tuple[str, str, float, str]]:
    ids = list(_stored(mem))
    seen = set()
    for rid, links in store.links(mem.namespace, ids).items():
        for lk in links:
            lo, hi = sorted((rid, lk.other_id))
            seen.add((lo, hi, lk.strength, lk.origin))
    return seen


@pytest.mark.parametrize("backend", backend_params("sqlite", "memory"), indirect=True)
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=record_sets())
def test_export_import_round_trips_any_records(
    store: Store, data: tuple[list[MemoryRecord], list[tuple[str, str, float, str]]]
) -> None:
    recs, links = data
    # One store for all examples (function-scoped fixture): fresh namespaces keep them apart.
    source_ns, target_ns = f"src-{uuid.uuid4().hex}", f"dst-{uuid.uuid4().hex}"
    source = Memory(store, SETTINGS_NO_EMBEDDER, namespace=source_ns, clock=Clock(),
                    embedder=None)
    store.put_many([r.evolve(namespace=source_ns) for r in recs], skip_existing_keys=False,
                   links=links)
    snapshot = source.export_snapshot()
    json.loads(snapshot)
    # Without the turn-to-turn chain an import adds to episodes of one session (the generated
    # source was written without it): the links must be the source's, no more.
    unchained = Settings(embedder={"provider": "none"}, storage={"sequence_links": False})
    target = Memory(store, unchained, namespace=target_ns,
                    clock=Clock(START + 10**9), embedder=None)
    report = target.import_snapshot(snapshot)
    assert report["created"] == len(recs)
    # Everything but the tenant and the arrival, which is the import's time in the target.
    want = {r.id: {k: v for k, v in r.to_dict().items() if k != "namespace"}
            | {"stored_at": START + 10**9} for r in recs}
    assert _stored(target) == want
    assert _links(store, target) == _links(store, source)
    assert len(_links(store, source)) == len(links)
    # importing again changes nothing
    assert target.import_snapshot(snapshot)["created"] == 0
    assert _stored(target) == want


def test_round_trip_strategy_is_not_vacuous() -> None:
    """The generated data really varies: every kind and both key states appear."""
    seen_kinds: set[str] = set()
    seen_keys: set[bool] = set()

    @settings(max_examples=40, deadline=None)
    @given(records())
    def collect(recs: list[MemoryRecord]) -> None:
        seen_kinds.update(r.kind for r in recs)
        seen_keys.update(r.key is None for r in recs)

    collect()
    assert seen_kinds == set(KINDS) and seen_keys == {True, False}


_WORDS = ["café", "running", "runs", "ran", "naïve", "happy", "happiness", "dying", "die",
          "skies", "sky", "Zoë", "über", "straße", "hoping", "hope", "generously", "généreux",
          "ö", "x", "3.12", "re-run", "naïvely", "ÉCOLE", "ecole", "“quoted”", "it’s"]


@given(st.lists(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=12), min_size=1,
                max_size=6),
       st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4))
@settings(max_examples=300, deadline=None)
def test_matched_terms_equal_stemming_every_word(texts: list[list[str]],
                                                 query: list[str]) -> None:
    """matched_terms stems only the words that start like a query stem (and, for ASCII text,
    only the ones its prefix pattern finds): what it finds must be what stemming every word
    of the text finds, for accented, folded and non-ASCII text alike."""
    from clawmemory.model import MemoryRecord
    from clawmemory.search.fusion import matched_terms
    from clawmemory.text import tokenize

    recs = [MemoryRecord(id=f"r{i}", namespace="n", content=" ".join(t) + " ü")
            for i, t in enumerate(texts)]  # non-ASCII: the path that tokenised every word
    got = matched_terms([(r.id, r.searchable) for r in recs], query)
    first: dict[str, str] = {}  # words of one stem are reported as the first of them
    for t in query:
        if len(toks := tokenize(t)) == 1:
            first.setdefault(toks[0], t)
    for r in recs:
        held = tokenize(r.content)
        want = {t for t in query if len(toks := tokenize(t)) > 1
                and f" {' '.join(toks)} " in f" {' '.join(held)} "}
        want.update(first[s] for s in set(held) if s in first)
        assert got[r.id] == want, (r.content, query)

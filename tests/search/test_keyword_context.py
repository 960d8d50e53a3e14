"""Keyword context (ADR 0036): a dialogue turn is keyword-indexed with the tails of the turns
before it in its session, so "Yes, twice last month!" is found by a question about camping
when the turn before it asked about camping. On every backend; forgetting or editing a quoted
turn takes its words out of the later turns' index."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from clawmemory import Memory
from clawmemory.backends.base import CONTEXT_CHARS, turn_context
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.config import Settings
from conftest import Clock, backend_params, old_database

CONTEXT_BACKENDS = backend_params()  # every backend
NO_MODEL = Settings(embedder={"provider": "none"})


def _dialogue(mem: Memory, session: str = "s1") -> tuple[str, str, str]:
    asked = mem.store("Did you go camping with the kids?", kind="episode", session_id=session)
    answered = mem.store("Yes, twice last month! They loved it.", kind="episode",
                         session_id=session)
    elsewhere = mem.store("I painted a sunrise yesterday.", kind="episode", session_id="s2")
    return asked, answered, elsewhere


def _found(mem: Memory, query: str) -> set[str]:
    return {h.memory.id for h in mem.recall(query, mode="keyword", limit=20)}


@pytest.mark.parametrize("backend", CONTEXT_BACKENDS, indirect=True)
def test_a_turn_is_found_by_the_words_of_the_turn_before_it(
    mem: Memory, settings: Settings
) -> None:
    assert settings.recall.weight_context == 0.3  # the shipped defaults
    assert settings.storage.keyword_context is True
    asked, answered, elsewhere = _dialogue(mem)
    hits = mem.recall("camping", mode="keyword", limit=20)
    assert [h.memory.id for h in hits] == [asked, answered]  # its own words rank first
    assert hits[0].score > hits[1].score
    # The explanation says how the reply was found: no word of its own, via its context.
    assert (hits[0].explain.via, hits[0].explain.matched_terms) == (None, ("camping",))
    assert (hits[1].explain.via, hits[1].explain.matched_terms) == ("context", ())
    assert "via context" in str(hits[1].explain)
    # Not a session's first turn, not a turn of another session, not a keyed episode.
    keyed = mem.store("camping gear list", kind="episode", session_id="s2", key="gear")
    assert _found(mem, "sunrise") == {elsewhere}
    assert keyed in _found(mem, "camping")
    assert _found(mem, "camping") - {asked, answered, keyed} == set()


@pytest.mark.parametrize("backend", CONTEXT_BACKENDS, indirect=True)
def test_forgetting_or_editing_a_turn_takes_its_words_out_of_the_next_turns(
    mem: Memory,
) -> None:
    asked, answered, _ = _dialogue(mem)
    third = mem.store("We should go again in spring.", kind="episode", session_id="s1")
    assert _found(mem, "kids") == {asked, answered, third}  # two turns back still count
    mem.correct(asked, "Did you go fishing with the kids?")  # a new version of the turn
    mem.forget(asked)
    assert _found(mem, "camping") == set()
    assert _found(mem, "kids") == set()
    assert _found(mem, "twice") == {answered, third}  # the next turn now quotes the one left


@pytest.mark.parametrize("backend", CONTEXT_BACKENDS, indirect=True)
def test_a_long_batch_of_turns_gets_its_context_too(mem: Memory) -> None:
    """PostgreSQL writes a batch of 50 or more in one statement, then gives its turns their
    context."""
    ids = mem.store_many({"content": f"turn {i} mentions word{i}", "kind": "episode",
                          "session_id": "long"} for i in range(60))
    assert _found(mem, "word57") == set(ids[57:60])
    assert _found(mem, "word0") == set(ids[:3])


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_context_weighted_zero_finds_nothing(tmp_path: Path, clock: Clock, kind: str) -> None:
    cfg = NO_MODEL.model_copy(update={
        "backend": kind, "db": tmp_path / "w.db" if kind == "sqlite" else None,
        "recall": NO_MODEL.recall.model_copy(update={"weight_context": 0.0})})
    with Memory.open(settings=cfg, clock=clock) as mem:
        asked, _, _ = _dialogue(mem)
        assert _found(mem, "camping") == {asked}


def test_the_context_is_the_tails_of_the_two_turns_before(tmp_path: Path, clock: Clock) -> None:
    db = tmp_path / "ctx.db"
    long = "word " * 60 + "tail"
    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        ids = [mem.store(t, kind="episode", session_id="s") for t in
               ("first turn", long, "third turn", "fourth turn")]
    conn = apsw.Connection(str(db))
    try:
        got = dict(conn.execute("SELECT id, keyword_context FROM memories").fetchall())
    finally:
        conn.close()
    assert got[ids[0]] == ""
    assert got[ids[2]] == turn_context([long, "first turn"])
    assert got[ids[2]] == long[-CONTEXT_CHARS:] + " first turn"
    assert got[ids[3]] == "third turn " + long[-CONTEXT_CHARS:]  # two turns, the newest first


def test_a_store_switched_off_writes_no_context(tmp_path: Path, clock: Clock) -> None:
    off = NO_MODEL.model_copy(update={"db": tmp_path / "off.db", "storage": NO_MODEL.storage
                                      .model_copy(update={"keyword_context": False})})
    with Memory.open(settings=off, clock=clock) as mem:
        asked, _, _ = _dialogue(mem)
        assert _found(mem, "camping") == {asked}


def test_forgetting_a_turn_leaves_none_of_its_words_in_the_file(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "forget.db"
    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        secret = mem.store("my locker code is quokkazebra", kind="episode", session_id="s")
        later = mem.store("noted, I will remember it", kind="episode", session_id="s")
        assert _found(mem, "quokkazebra") == {secret, later}
        mem.forget(secret)
        assert _found(mem, "quokkazebra") == set()
    wal = Path(f"{db}-wal")
    data = db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert b"quokkazebra" not in data.lower()


def test_an_older_store_gets_its_turns_context_when_it_upgrades(
    tmp_path: Path, clock: Clock
) -> None:
    db = tmp_path / "old.db"
    old_database(db, 14)  # the last version without keyword_context
    conn = apsw.Connection(str(db))
    for i, text in enumerate(["Did you go camping?", "Yes, twice!"]):
        conn.execute("INSERT INTO memories (id, namespace, kind, content, session_id,"
                     " created_at, updated_at, stored_at) VALUES (?, 'default', 'episode', ?,"
                     " 's', ?, ?, ?)", (f"t{i}", text, i, i, i))
    conn.close()
    with Memory(SQLiteStore(db), NO_MODEL, clock=clock) as mem:
        assert mem.store_backend.schema_version() >= 15
        assert _found(mem, "camping") == {"t0", "t1"}
        assert _found(mem, "twice") == {"t1"}

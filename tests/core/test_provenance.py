"""Provenance and forgetting (ADR 0010, ADR 0022): a memory's ``source_ids`` are indexed on every
backend, and forgetting a memory forgets every memory derived from it, whatever else it was
derived from (its text may quote the forgotten one), recursively, live or archived, with every
version; the other sources stay, and their consolidated sessions are queued to be consolidated
again. ``forget`` reports what went, in the API, the CLI, REST and the tools. On SQLite nothing
of the forgotten text is left in the file or its WAL, and the LLM response cache, whose answers
may quote it, is scrubbed too."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from test_forget_for_real import file_bytes

from clawmemory import Memory, NotFoundError, Settings
from clawmemory.backends.base import Store
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.config import EmbedderSettings, LLMSettings
from clawmemory.core.lifecycle import knowledge_decay
from clawmemory.llm.cache import ResponseCache
from clawmemory.model import MemoryRecord
from clawmemory.tools import call_tool
from conftest import DAY, Clock, backend_params


def ids(records: Iterable[MemoryRecord]) -> set[str]:
    return {r.id for r in records}


def gone(mem: Memory, *mids: str) -> bool:
    """Neither live (``get`` finds every version) nor archived (the archive listing)."""
    archived = {e.record.id for e in mem.archived(limit=10_000)}
    for mid in mids:
        if mid in archived:
            return False
        try:
            mem.get(mid)
        except NotFoundError:
            continue
        return False
    return True


def test_derived_lists_what_names_a_memory_among_its_sources(mem: Memory) -> None:
    e1 = mem.store("Ada: I moved to Lisbon", kind="episode", session_id="s1")
    e2 = mem.store("Ada: I adopted a cat", kind="episode", session_id="s1")
    f1 = mem.store("Ada lives in Lisbon", source_ids=[e1], source="consolidation")
    f2 = mem.store("Ada lives in Lisbon with a cat", source_ids=[e1, e2])
    mem.store("Unrelated note")
    assert ids(mem.derived(e1)) == {f1, f2}
    assert ids(mem.derived(e2)) == {f2}
    assert mem.derived(f1) == []
    with pytest.raises(NotFoundError):
        mem.derived("no-such-memory")


def test_forgetting_a_source_forgets_everything_derived_from_it(mem: Memory) -> None:
    e1 = mem.store("Ada: my locker code is 4471", kind="episode", session_id="s1")
    e2 = mem.store("Ada: the locker is in hall B", kind="episode", session_id="s1")
    alone = mem.store("Ada's locker code is 4471", source_ids=[e1])
    both = mem.store("Ada's locker in hall B opens with 4471", source_ids=[e1, e2])
    keep = mem.store("Ada likes tea")

    done = mem.forget(e1)

    assert (done.id, done.versions, set(done.derived), done.deleted) == (
        e1, (), {alone, both}, 3)
    assert gone(mem, e1, alone, both)  # `both` quotes e1, though e2 backs part of it
    assert mem.recall("4471", mode="keyword", include_invalid=True) == []
    assert mem.get(e2).content == "Ada: the locker is in hall B"
    assert mem.get(keep).content == "Ada likes tea"
    assert done.reopened_sessions == ()  # s1 was never consolidated: nothing to do again


def test_forget_queues_the_consolidated_sessions_of_the_other_sources(mem: Memory) -> None:
    from clawmemory.core.ingest import mark_session_consolidated, pending_sessions

    e1 = mem.store("Ada: my locker code is 4471", kind="episode", session_id="s1")
    e2 = mem.store("Ada: the locker is in hall B", kind="episode", session_id="s2")
    mem.store("Ada's locker in hall B opens with 4471", source_ids=[e1, e2])
    for s in ("s1", "s2"):
        mark_session_consolidated(mem, s)

    done = mem.forget(e1)

    assert done.reopened_sessions == ("s2",)  # s1's only episode here is gone
    assert pending_sessions(mem) == ["s2"]
    assert "1 session(s) will be consolidated again" in done.summary()
    assert e2 in {r.id for r in mem.list(kind="episode")}


@pytest.mark.parametrize(("dialect", "tool", "args"), [
    ("unified", "memory_forget", "id"), ("ptrclaw", "memory_forget", "key")])
def test_an_agents_forget_tool_reaches_what_was_derived(
    mem: Memory, dialect: str, tool: str, args: str
) -> None:
    episode = mem.store("Jo: my new phone number is 555-0199", kind="episode", session_id="s",
                        key="jo-phone-turn")
    fact = mem.store("Jo's phone number is 555-0199", source_ids=[episode])
    result = call_tool(mem, tool, {args: "jo-phone-turn"}, dialect=dialect)
    assert not result.is_error, result.text
    assert gone(mem, episode, fact)


def test_forgetting_recurses_through_derived_memories(mem: Memory) -> None:
    episode = mem.store("Bo: I am allergic to peanuts", kind="episode", session_id="s")
    fact = mem.store("Bo is allergic to peanuts", source_ids=[episode])
    note = mem.store("Never suggest peanut dishes to Bo", source_ids=[fact], source="synthesis")
    other = mem.store("Bo cooks on Sundays")
    backed = mem.store("Bo's weekly cooking plans", kind="reflection", source_ids=[note, other])

    done = mem.forget(episode)

    assert gone(mem, episode, fact, note, backed)  # `backed` may quote `note`: it goes too
    assert set(done.derived) == {fact, note, backed}
    assert mem.get(other).content == "Bo cooks on Sundays"


def test_a_source_that_is_not_stored_does_not_keep_a_memory(mem: Memory) -> None:
    episode = mem.store("Cy: my son is called Dax", kind="episode", session_id="s")
    fact = mem.store("Cy's son is Dax", source_ids=[episode, "imported-ep-without-record"])
    mem.forget(episode)
    assert gone(mem, fact)


def test_a_forgotten_derived_memory_takes_its_corrections(mem: Memory, clock: Clock) -> None:
    episode = mem.store("Di: I work at Initech", kind="episode", session_id="s")
    fact = mem.store("Di works at Initech", source_ids=[episode])
    clock.advance(1)
    newer = mem.correct(fact, "Di works at Initrode")
    assert newer.source_ids == (episode, fact)

    mem.forget(episode)

    assert gone(mem, episode, fact, newer.id)
    assert mem.list(include_invalid=True) == []


def test_forgetting_a_derived_memory_leaves_its_sources(mem: Memory) -> None:
    episode = mem.store("Ed: I run marathons", kind="episode", session_id="s")
    fact = mem.store("Ed runs marathons", source_ids=[episode])
    mem.forget(fact)
    assert mem.get(episode).content == "Ed: I run marathons"


def test_archived_memories_derive_and_are_derived_from(mem: Memory, clock: Clock) -> None:
    """Archived derived memories go with their source; an archived source still backs."""
    e1 = mem.store("Flo: my bank is Zorg", kind="episode", session_id="s")
    e2 = mem.store("Flo banks online", kind="fact")
    archived_alone = mem.store("Flo banks at Zorg", source_ids=[e1])
    archived_both = mem.store("Flo banks online at Zorg", source_ids=[e1, e2])
    assert ids(mem.derived(e1)) == {archived_alone, archived_both}
    clock.advance(31 * DAY)  # the facts are idle: the nightly purge archives them (episodes stay)
    idle_purge = mem.settings.model_copy(update={"lifecycle": mem.settings.lifecycle.model_copy(
        update={"knowledge_survival_chance": 0.0})})
    knowledge_decay(Memory(mem.store_backend, idle_purge, clock=clock))
    assert {e.record.id for e in mem.archived()} == {e2, archived_alone, archived_both}
    assert mem.derived(e1) == []  # live ones only

    mem.forget(e1)

    assert gone(mem, e1, archived_alone, archived_both)
    assert {e.record.id for e in mem.archived()} == {e2}  # the other source stays


def test_the_index_follows_replacements(mem: Memory) -> None:
    """A store-level replace that changes source_ids (resolve_conflict, imports) re-indexes."""
    a = mem.store("source A", kind="episode", session_id="s")
    b = mem.store("source B", kind="episode", session_id="s")
    fact = mem.store("derived", source_ids=[a])
    mem.store_backend.replace(mem.get(fact).evolve(source_ids=(b,)))
    assert mem.derived(a) == [] and ids(mem.derived(b)) == {fact}


def test_namespaces_do_not_share_provenance(mem: Memory) -> None:
    other = mem.with_namespace("other")
    e = mem.store("mine", kind="episode", session_id="s")
    theirs = other.store("theirs, naming my id", source_ids=[e])
    mem.forget(e)
    assert other.get(theirs).content == "theirs, naming my id"


@pytest.mark.parametrize("backend", backend_params("json"), indirect=True)
def test_json_provenance_survives_a_reopen(
    mem: Memory, open_store: Callable[[], Store], settings: Settings, clock: Clock
) -> None:
    e = mem.store("Gus: my PIN is 9917", kind="episode", session_id="s")
    f = mem.store("Gus's PIN is 9917", source_ids=[e])
    mem.close()
    again = Memory(open_store(), settings, clock=clock)
    assert ids(again.derived(e)) == {f}
    again.forget(e)
    assert gone(again, f)


# --- SQLite: the index, an upgrade, the bytes ----------------------------------------------------
def test_an_upgraded_database_indexes_the_provenance_it_already_holds(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = SQLiteStore(db)
    mem = Memory(store, Settings(embedder=EmbedderSettings(provider="none")))
    e = mem.store("Hal: I collect stamps", kind="episode", session_id="s")
    f = mem.store("Hal collects stamps", source_ids=[e])
    archived = mem.store("Hal's stamp albums", source_ids=[e])
    store.archive(mem.namespace, [archived], at=0.0)
    with store.write():  # back to the schema before it: no index, no triggers
        for trigger in ("ai", "ad", "au", "archive_ai", "archive_ad"):
            store.conn.execute(f"DROP TRIGGER memory_sources_{trigger}")
        store.conn.execute("DROP TABLE memory_sources")
        store.conn.execute("DROP INDEX memories_archive_ns_id")
        store.conn.execute("DELETE FROM schema_version WHERE version = 10")
    store.close()

    upgraded = SQLiteStore(db)
    assert upgraded.query("SELECT COUNT(*) FROM schema_version WHERE version = 10") == [(1,)]
    assert {(r.id, a) for r, a in upgraded.derived("default", [e])} == {
        (f, False), (archived, True)}


def test_forget_of_a_source_leaves_no_byte_of_what_was_derived(tmp_path: Path) -> None:
    db = tmp_path / "derived.db"
    cache = tmp_path / "home" / "response_cache.json"
    cfg = Settings(embedder=EmbedderSettings(provider="none"), llm=LLMSettings(cache_path=cache))
    mem = Memory(SQLiteStore(db), cfg)
    mem.store_many({"content": f"ordinary note {i} about gardening"} for i in range(200))
    episode = mem.store("Ivy: the safe combination is Quorndoodle", kind="episode",
                        session_id="s")
    fact = mem.store("Ivy's safe combination is Florbinate", source_ids=[episode], tags=["safe"])
    note = mem.store("Remind Ivy: Wuzzlewhip", key="ivy-safe", source_ids=[fact])
    cached = ResponseCache(cache)
    cached.put("m", "system", "what is the combination?", "It is Quorndoodle.")
    assert all(w in file_bytes(db) for w in (b"quorndoodle", b"florbinate", b"wuzzlewhip"))
    assert b"Quorndoodle" in cache.read_bytes()

    mem.forget(episode)

    data = file_bytes(db)
    for word in (b"quorndoodle", b"florbinate", b"wuzzlewhip", b"ivy-safe"):
        assert word not in data, f"{word!r} is still in the file"
    assert gone(mem, fact, note)
    assert mem.count() == 200
    assert not cache.exists()
    assert cached.get("m", "system", "what is the combination?") is None

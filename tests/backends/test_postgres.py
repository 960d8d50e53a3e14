"""What is particular to the PostgreSQL backend (the shared contract runs on it through
``conftest.BACKENDS``): selection by address, forget leaving no row behind, tenant policies,
several processes and several service replicas on one database, and migrations.

Every test runs against a real PostgreSQL with pgvector (the ``postgres_server`` fixture)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
import pytest

from clawmemory import Memory, Settings
from clawmemory.auth import Keys, key_store_for
from clawmemory.backends.postgres.store import PostgresStore
from clawmemory.core.ingest import register_session
from clawmemory.errors import ConfigError, NotFoundError, StorageError
from clawmemory.history import History
from clawmemory.llm.base import Message
from conftest import Clock, postgres_url

CLAWMEM = [sys.executable, "-c", "import sys\nfrom clawmemory.interfaces.cli import main\n"
           "sys.exit(main())\n"]
SECRETS = ("Xanthoplectra", "Quibbleworth", "Vortigaunt", "Zyzzogeton")
OTHER = ("Bramblethorn", "Wickerbasket", "Pumpernickel")


class HashEmbedder:
    """Deterministic unit vectors from a text hash: real vector rows without a model."""

    name = "test-hash-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], np.uint8) for t in texts]
        out = np.asarray(rows, dtype=np.float32) + 1.0
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.embed([text])[0]
        return row


@pytest.fixture
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return postgres_url(request, tmp_path)


def table_rows(url: str) -> dict[str, list[str]]:
    """Every row of every table of the test's schema, as text."""
    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema ="
            " current_schema() AND table_type = 'BASE TABLE'").fetchall()]
        return {t: [r[0] for r in conn.execute(f"SELECT t::text FROM {t} t").fetchall()]
                for t in tables}


def fill(mem: Memory, words: Sequence[str], clock: Clock) -> list[str]:
    """Every kind of row a tenant leaves: records with tags, metadata and a key, links, a
    correction chain, a derived memory, an archived memory, entities, vectors, a queued vector,
    history messages and a summary, the session ledger, a maintenance run."""
    first, second, third, *_ = words
    ids = [
        mem.store(f"{first} met {second} at the {third} pier", key=f"{first}-key",
                  tags=[first.lower()], metadata={"code": second}, source=third),
        mem.store(f"Notes about {second} and {third}", kind="preference"),
    ]
    mem.link(ids[0], ids[1])
    mem.correct(ids[1], f"Corrected notes about {second} and {third}")
    ids.append(mem.store(f"Derived from {first}", source_ids=[ids[0]]))
    old = mem.store(f"Old news about {first} and {third}")
    assert mem.store_backend.archive(mem.namespace, [old], at=clock.now) == 1
    mem.components.vector_writes = "queue"  # one memory left waiting for its vector
    ids.append(mem.store(f"Queued note on {second}"))
    mem.components.vector_writes = "sync"
    mem.store_backend.record_run(mem.namespace, "decay", clock.now, clock.now, "failed", {},
                                 f"failed on {first}")
    with History(mem) as history:
        conv = history.conversation(f"chat:{third}:", session_id=f"s-{third}")
        conv.append(Message("user", f"I am {first}"))
        history.store.set_summary(conv.key, f"talked with {second}", covers=1)
    register_session(mem, f"s-{third}")
    return ids


def mentions(rows: dict[str, list[str]], words: Sequence[str]) -> dict[str, int]:
    """Per table, how many rows hold any of ``words``."""
    out = {}
    for table, texts in rows.items():
        n = sum(1 for t in texts if any(w.lower() in t.lower() for w in words))
        if n:
            out[table] = n
    return out


# --- selection by address ----------------------------------------------------------------------
def test_memory_open_takes_a_postgresql_address(url: str) -> None:
    with Memory.open(url, settings=Settings(embedder={"provider": "none"})) as mem:
        rid = mem.store("the red kayak is in the shed")
        assert mem.stats()["backend"] == "postgres"
        assert isinstance(mem.store_backend, PostgresStore)
    with Memory.open(url, settings=Settings(embedder={"provider": "none"})) as mem:
        assert [h.memory.id for h in mem.recall("kayak")] == [rid]


@pytest.mark.parametrize("address", ["mysql://user@host/db", "ftp://example.com/memory",
                                     "sqlite://memory.db", "redis://localhost:6379/0"])
def test_an_address_no_backend_can_use_is_an_error_and_creates_nothing(
        address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    scheme = address.split("://", maxsplit=1)[0]
    with pytest.raises(ConfigError, match=f"{scheme}:// addresses are not supported"):
        Memory.open(address)
    with pytest.raises(ConfigError, match=f"{scheme}:// addresses are not supported"):
        Memory.open(address, settings=Settings())  # the settings given: no validation pass
    if scheme == "mysql":  # and through the command line (a process start: once is enough)
        done = subprocess.run([*CLAWMEM, "--db", address, "add", "hello"], check=False,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "CLAWMEM_HOME": str(tmp_path / "h")})
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            f"error: invalid setting db: {scheme}:// addresses are not supported; give a file"
            " path or a postgresql:// address (a clawmemory server's http(s):// address goes"
            " to --url or Memory.open)"]
    assert list(tmp_path.iterdir()) == []  # no folder named after it, nor a home


def test_a_folded_address_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match="turned into a file path"):
        Memory.open(Path("postgresql://localhost/db"))
    assert list(tmp_path.iterdir()) == []


def test_backend_and_address_must_agree(url: str) -> None:
    with pytest.raises(ConfigError, match='needs a postgresql:// address'):
        Settings(backend="postgres")
    with pytest.raises(ConfigError, match="cannot use a postgresql:// address"):
        Settings(backend="json", db=url)


def test_an_unreachable_server_is_a_clear_storage_error(tmp_path: Path) -> None:
    address = f"postgresql://nobody@/db?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StorageError, match=r"cannot open PostgreSQL database postgresql://"):
        Memory.open(address)


def test_the_cli_works_on_a_postgresql_address(url: str, tmp_path: Path) -> None:
    env = {**os.environ, "CLAWMEM_HOME": str(tmp_path / "home"),
           "CLAWMEM_EMBEDDER__PROVIDER": "none"}

    def clawmem(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*CLAWMEM, "--db", url, "--json", *args], check=False,
                              capture_output=True, text=True, timeout=120, env=env)

    missing = clawmem("stats")
    assert missing.returncode == 1 and "no clawmemory store at postgresql://" in missing.stderr
    added = json.loads(clawmem("add", "the blue canoe is at the lake").stdout)
    hits = json.loads(clawmem("recall", "canoe").stdout)["hits"]
    assert [h["memory"]["id"] for h in hits] == [added["id"]]
    assert json.loads(clawmem("stats").stdout)["backend"] == "postgres"


# --- forget -------------------------------------------------------------------------------------
def test_forget_namespace_leaves_no_row_of_the_tenant(url: str, clock: Clock) -> None:
    store = PostgresStore(url)
    a = Memory(store, Settings(), namespace="tenant-ozymandias", clock=clock,
               embedder=HashEmbedder())
    b = a.with_namespace("tenant-b")
    fill(a, SECRETS, clock)
    fill(b, OTHER, clock)
    before = mentions(table_rows(url), SECRETS)
    for table in ("memories", "entities", "memories_archive", "messages",
                  "summaries", "sessions", "maintenance_runs"):
        assert before.get(table), (table, before)
    namespaced = {t: n for t, n in mentions(table_rows(url), ["tenant-ozymandias"]).items()}
    assert {"links", "vec_memories", "vector_queue", "memory_sources", "memory_entities",
            "vector_centres"} <= set(namespaced)
    a.forget_namespace()
    after = table_rows(url)
    assert mentions(after, [*SECRETS, "tenant-ozymandias"]) == {}
    assert mentions(after, OTHER)["memories"] == 5  # the other tenant keeps everything
    assert b.count(include_invalid=True) == 5
    store.close()


def test_forget_one_memory_leaves_no_row_of_it(url: str, clock: Clock) -> None:
    store = PostgresStore(url)
    mem = Memory(store, Settings(), clock=clock, embedder=HashEmbedder())
    mem.store_many({"content": f"ordinary note {i} about gardening"} for i in range(50))
    secret = mem.store("The vault word is Quizzaciously, said Marguerite", key="vault")
    derived = mem.store("Summary: Marguerite keeps a vault word", source_ids=[secret])
    mem.link(secret, derived)
    newer = mem.correct("vault", "The vault word is Quizzaciously-2, said Marguerite")
    assert set(mentions(table_rows(url), [secret])) >= {
        "memories", "links", "memory_sources", "memory_entities"}
    assert len(table_rows(url)["vec_memories"]) == 53
    mem.forget(newer.id)  # every version, and what was derived from it alone
    rows = table_rows(url)
    assert mentions(rows, ["quizzaciously", "marguerite", secret, derived, newer.id]) == {}
    assert mem.count() == 50
    assert len(rows["vec_memories"]) == 50
    store.close()


def data_files_holding(server: str, words: Sequence[str]) -> dict[str, int]:
    """Every file under the server's data directory that holds one of ``words`` in any case
    (a tsvector keeps lower-cased lexemes), with how many times."""
    with psycopg.connect(server) as conn:
        row = conn.execute("SHOW data_directory").fetchone()
    assert row is not None
    found: dict[str, int] = {}
    for path in Path(row[0]).rglob("*"):
        if path.is_file():
            data = path.read_bytes().lower()
            n = sum(data.count(w.lower().encode()) for w in words)
            if n:
                found[str(path.relative_to(row[0]))] = n
    return found


@pytest.fixture
def purging_server(postgres_server: str) -> str:
    """The session's server set up as docs/postgres.md tells a user who must purge forgotten
    text: WAL segments are deleted, not renamed for reuse with their old bytes."""
    with psycopg.connect(postgres_server, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET wal_recycle = off")
        conn.execute("SELECT pg_reload_conf()")
    return postgres_server


def test_forgotten_text_leaves_the_data_directory_within_one_default_maintenance_run(
        url: str, purging_server: str, clock: Clock) -> None:
    postgres_server = purging_server
    markers = ("Zq81kv93wander", "Xr52pm17lantern", "Wt64bn28harbour")
    with Memory(PostgresStore(url), Settings(), clock=clock, embedder=HashEmbedder()) as mem:
        mem.store_many({"content": f"ordinary note {i} about gardening"} for i in range(300))
        mem.store(f"The vault word is {markers[0]}", key="vault")
        mem.correct("vault", f"The vault word is {markers[1]}")  # a second version
        other = mem.store(f"{markers[2]} is the name of the boat")
        mem.update(other, content=f"{markers[2]} is the name of the old boat")  # a dead row
        assert {h.memory.key for h in mem.recall(markers[1], limit=3)} >= {"vault"}
        mem.flush()  # the access counts: one more row version each
        with psycopg.connect(postgres_server, autocommit=True) as conn:
            conn.execute("ANALYZE")
            conn.execute("CHECKPOINT")  # in the table files, not only the WAL
        assert any(f.startswith("base/") for f in data_files_holding(postgres_server, markers))
        mem.forget("vault")
        mem.forget(other)
        assert mem.preview_maintenance("repair")[0]["counts"]["purge_pending"] == 1
        runs = {r.job: r for r in mem.maintain()}  # the default: every job once
        assert data_files_holding(postgres_server, markers) == {}
        assert runs["repair"].outcome == "ok"
        assert runs["repair"].counts["purged_tables"] >= 6
        assert "wal_recycle_on" not in runs["repair"].counts
        assert mem.count() == 300
        assert "purged_tables" not in mem.maintain("repair")[0].counts  # nothing pending


def test_a_purge_an_old_snapshot_holds_back_stays_pending_until_the_next_run(
        url: str, purging_server: str, clock: Clock) -> None:
    postgres_server = purging_server
    store = PostgresStore(url)
    with Memory(store, Settings(), clock=clock, embedder=HashEmbedder()) as mem:
        mem.store_many({"content": f"ordinary note {i}"} for i in range(20))
        secret = mem.store("The locker code is Yb39qd71, said Ottoline")
        # A transaction that took its snapshot before the forget (on another table: it must
        # not hold a lock the rewrite waits for) may still read the deleted row.
        with psycopg.connect(postgres_server, autocommit=True) as old:
            old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            old.execute("SELECT 1 FROM pg_class LIMIT 1")
            mem.forget(secret)
            held = mem.maintain("repair")[0].counts
            old.execute("COMMIT")
        assert held["purge_deferred"] == 1
        assert store.purge_pending()
        again = mem.maintain("repair")[0].counts
        assert "purge_deferred" not in again and again["purged_tables"] >= 6
        assert data_files_holding(postgres_server, ["Yb39qd71"]) == {}


# --- tenant policies (row-level security) ------------------------------------------------------
def test_a_role_bound_to_one_tenant_cannot_read_or_write_another(url: str) -> None:
    owner = PostgresStore(url)
    settings = Settings(embedder={"provider": "none"})
    alice = Memory(owner, settings, namespace="alice")
    alice.store("alice's holiday is in Lisbon")
    Memory(owner, settings, namespace="bob").store("bob's salary is 91000")
    owner.bind_tenant_role("tenant_alice", "alice")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS tenant_alice")
        conn.execute("CREATE ROLE tenant_alice LOGIN")
        schema = conn.execute("SELECT current_schema()").fetchone()
        assert schema is not None
        conn.execute(f"GRANT USAGE ON SCHEMA {schema[0]} TO tenant_alice")
        conn.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema[0]}"
                     " TO tenant_alice")
    as_alice = url.replace("postgresql://postgres:@", "postgresql://tenant_alice@")
    with psycopg.connect(as_alice) as conn:  # the wall itself, below clawmemory's filters
        assert conn.execute("SELECT DISTINCT namespace FROM memories").fetchall() == [("alice",)]
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security"):
            conn.execute("INSERT INTO memories (id, namespace, kind, content, created_at,"
                         " updated_at, fts) VALUES ('x', 'bob', 'fact', 'planted', 0, 0, '')")
    store = PostgresStore(as_alice)
    try:
        assert Memory(store, settings, namespace="bob").count() == 0
        assert Memory(store, settings, namespace="bob").recall("salary") == []
        assert [h.memory.content for h in Memory(store, settings, namespace="alice").recall(
            "Lisbon")] == ["alice's holiday is in Lisbon"]
        with pytest.raises(StorageError, match="row-level security"):
            Memory(store, settings, namespace="bob").store("planted by alice")
    finally:
        store.close()
    assert Memory(owner, settings, namespace="bob").count() == 1
    owner.close()


# --- schema -------------------------------------------------------------------------------------
def test_migrations_are_recorded_once_and_a_foreign_schema_is_refused(
        url: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    for _ in range(2):
        PostgresStore(url).close()
    with psycopg.connect(url) as conn:
        versions = conn.execute("SELECT version, description FROM schema_version ORDER BY 1")
        assert versions.fetchall() == [(1, "001_initial.sql"), (2, "002_tenant_policies.sql"),
                                       (3, "003_event_time_index.sql"), (4, "004_api_keys.sql"),
                                       (5, "005_entity_links_by_recency.sql"),
                                       (6, "006_no_text_in_statistics.sql"),
                                       (7, "007_narrative_and_task.sql"),
                                       (8, "008_keyword_context.sql")]
    other = postgres_url(request, tmp_path / "other")
    with psycopg.connect(other, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int)")
    with pytest.raises(StorageError, match=r"not a clawmemory schema .*invoices"):
        PostgresStore(other)
    with psycopg.connect(other) as conn:
        assert conn.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema"
                            " = current_schema()").fetchone() == (1,)


def test_a_schema_from_before_narrative_and_task_upgrades_in_place(
        url: str, clock: Clock) -> None:
    """Migration 007 on a schema at version 6 holding a memory: the columns arrive empty, with
    their indexes, and can be set and filtered on at once."""
    with Memory(PostgresStore(url), Settings(embedder={"provider": "none"}), clock=clock) as mem:
        old = mem.store("the dragon lair is under the mountain", key="lair")
    with psycopg.connect(url) as conn:  # back to schema 6, the memory kept
        conn.execute("DROP INDEX memories_ns_narrative")
        conn.execute("DROP INDEX memories_ns_task")
        conn.execute("ALTER TABLE memories DROP COLUMN narrative_id, DROP COLUMN task_id")
        conn.execute("DELETE FROM schema_version WHERE version = 7")
    with Memory(PostgresStore(url), Settings(embedder={"provider": "none"}), clock=clock) as mem:
        assert (mem.get(old).narrative_id, mem.get(old).task_id) == (None, None)
        assert mem.store("the dragon lair is under the lake", key="lair", narrative_id=7,
                         task_id="t-1") == old
        assert [r.id for r in mem.list(narrative_id="7")] == [old]
        assert [h.memory.id for h in mem.recall("dragon", task_id="t-1")] == [old]
    with psycopg.connect(url) as conn:
        names = {r[0] for r in conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'")}
        assert {"memories_ns_narrative", "memories_ns_task"} <= names
        assert conn.execute("SELECT max(version) FROM schema_version").fetchone() == (8,)


def test_a_schema_from_before_keyword_context_gives_its_turns_their_context(
        url: str, clock: Clock) -> None:
    """Migration 008 on a schema at version 7 holding a dialogue: each turn gets the words of
    the turns before it (ADR 0036), and a turn forgotten afterwards leaves the next one's."""
    no_model = Settings(embedder={"provider": "none"})
    with Memory(PostgresStore(url), no_model, clock=clock) as mem:
        asked, answered = mem.store_many([
            {"content": "Did you go camping?", "kind": "episode", "session_id": "s"},
            {"content": "Yes, twice!", "kind": "episode", "session_id": "s"}])
    with psycopg.connect(url) as conn:  # back to schema 7, the dialogue kept
        conn.execute("DROP TRIGGER memories_requote_ad ON memories")
        conn.execute("DROP TRIGGER memories_requote_au ON memories")
        conn.execute("DROP FUNCTION clawmem_requote(), clawmem_turn_context(text, text, bigint)")
        conn.execute("ALTER TABLE memories DROP COLUMN keyword_context, DROP COLUMN fts_context")
        conn.execute("DELETE FROM schema_version WHERE version = 8")
    with Memory(PostgresStore(url), no_model, clock=clock) as mem:
        assert [h.memory.id for h in mem.recall("camping", mode="keyword")] == [asked, answered]
        mem.forget(asked)
        assert mem.recall("camping", mode="keyword") == []
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT keyword_context FROM memories").fetchall() == [("",)]


def test_read_commands_create_nothing(url: str) -> None:
    with pytest.raises(NotFoundError, match="no clawmemory store at postgresql://"):
        Memory.open(url, create=False)
    assert table_rows(url) == {}


# --- replicas -----------------------------------------------------------------------------------
def test_two_stores_on_one_database_see_each_others_writes_and_vectors(
        url: str, clock: Clock) -> None:
    """What two service replicas rely on: no cache in one process goes stale when the other
    writes (keyword, vector and entity search, forget)."""
    a = Memory(PostgresStore(url), Settings(), clock=clock, embedder=HashEmbedder())
    b = Memory(PostgresStore(url), Settings(), clock=clock, embedder=HashEmbedder())
    try:
        first = a.store("first memory about tulips")
        assert [h.memory.id for h in b.recall("first memory about tulips", mode="vector")][
            :1] == [first]
        new = a.store("second memory about volcanoes near Reykjavik")
        assert b.recall("second memory about volcanoes near Reykjavik",
                        mode="vector")[0].memory.id == new
        assert b.recall("volcanoes", mode="keyword")[0].memory.id == new
        assert b.entity_info("Reykjavik")["memories"][0].id == new
        b.forget(new)
        assert all(h.memory.id != new for h in a.recall("volcanoes Reykjavik", mode="hybrid"))
    finally:
        a.close()
        b.close()


def test_the_vector_index_is_used_above_the_exact_threshold(url: str, clock: Clock) -> None:
    settings = Settings(postgres={"exact_search_rows": 100})
    store = PostgresStore(url, options=_options(settings))
    mem = Memory(store, settings, clock=clock, embedder=HashEmbedder())
    texts = [f"note {i} about {w}" for i, w in enumerate(["tide", "kelp", "reef", "gull"] * 60)]
    mem.store_many({"content": t} for t in texts)
    exact = Memory(PostgresStore(url), Settings(), clock=clock, embedder=HashEmbedder())
    try:
        for query in ("note 7 about reef", "note 100 about tide", "gull"):
            approx = [h.memory.id for h in mem.recall(query, mode="vector", limit=5)]
            assert approx == [h.memory.id for h in exact.recall(query, mode="vector",
                                                                limit=5)]
        with store.connection() as conn, conn.transaction():
            conn.execute("SET LOCAL enable_sort = off")  # as the search sets it
            plan = "\n".join(r[0] for r in conn.execute(
                "EXPLAIN SELECT seq FROM vec_memories v WHERE v.namespace = 'default' ORDER BY"
                " v.embedding <=> (SELECT embedding FROM vec_memories LIMIT 1) LIMIT 20"))
        assert "vec_memories_hnsw" in plan
    finally:
        mem.close()
        exact.close()


def _options(settings: Settings) -> Any:
    from clawmemory.backends.postgres.store import PostgresOptions

    return PostgresOptions(**settings.postgres.model_dump())


# --- copy between backends ----------------------------------------------------------------------
def snapshot(mem: Memory) -> dict[str, Any]:
    """Everything a tenant has, as values to compare across backends."""
    records = mem.list(include_invalid=True, limit=1000, order="oldest")
    ids = [r.id for r in records]
    layer = mem.components.entity_layer()
    assert layer is not None
    with History(mem) as history:
        keys = history.store.keys()
        messages = {k: [m.content for m in history.store.all(k)] for k in keys}
        summaries = {k: history.store.summary(k) for k in keys}
    vectors = mem.components.vectors()
    assert vectors is not None
    return {
        "records": [r.to_dict() for r in records],
        "archive": [e.to_dict() for e in mem.archived(limit=100)],
        "links": {k: sorted((x.other_id, x.strength, x.origin) for x in v)
                  for k, v in mem.store_backend.links(mem.namespace, ids).items()},
        "entities": {k: [(p.canonical_name, p.type, p.aliases, p.mention_count) for p in v]
                     for k, v in layer[0].entities_of(mem.namespace, ids).items()},
        "messages": messages, "summaries": summaries,
        "runs": [(r.job, r.outcome, r.message) for r in mem.store_backend.runs(
            mem.namespace, 10)],
        "queued": mem.stats()["vectors_queued"],
        "vector": [(h.memory.id, round(h.explain.lists["vector"]["cosine"], 5))
                   for h in mem.recall("notes about the pier", mode="vector", limit=10,
                                       touch=False)],
    }


def test_clawmem_copy_moves_everything_to_postgresql_and_back(
        url: str, tmp_path: Path, clock: Clock) -> None:
    from clawmemory.backends.sqlite.store import SQLiteStore

    source = tmp_path / "agent.db"
    mems = {}
    for ns, words in (("default", SECRETS), ("tenant-b", OTHER)):
        mem = Memory(SQLiteStore(source), Settings(), namespace=ns, clock=clock,
                     embedder=HashEmbedder())
        mem.store_many({"content": f"filler note {i} about the pier"} for i in range(60))
        fill(mem, words, clock)
        mems[ns] = snapshot(mem)
        mem.close()
    with Memory.open(source, settings=Settings(embedder={"provider": "none"})) as mem:
        keys = Keys(key_store_for(mem.store_backend))
        kept, secret = keys.create(["tenant-b"], "read", label="b's agent")
        gone, revoked = keys.create(["default"], "admin")
        keys.revoke(gone.id)
    env = {**os.environ, "CLAWMEM_HOME": str(tmp_path / "home")}
    back = tmp_path / "back.db"
    for a, b in ((str(source), url), (url, str(back))):
        done = subprocess.run([*CLAWMEM, "--json", "copy", "--from", a, "--to", b],
                              check=False, capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)["namespaces"]
        assert report["default"]["memories"] == 65 and report["default"]["vectors"] == 64, report
        assert report["default"]["queued"] == 1 and report["tenant-b"]["archived"] == 1
    for where in (url, str(back)):
        for ns, expected in mems.items():
            with Memory.open(where, namespace=ns, clock=clock, embedder=HashEmbedder()) as mem:
                assert snapshot(mem) == expected, (where, ns)
        with Memory.open(where, embedder=HashEmbedder()) as mem:
            copied = Keys(key_store_for(mem.store_backend))
            assert [(k.id, k.role.value, k.namespaces, k.label, k.revoked_at is None)
                    for k in copied.list()] == [
                (kept.id, "read", ("tenant-b",), "b's agent", True),
                (gone.id, "admin", ("default",), None, False)]
            assert copied.verify(secret) is not None and copied.verify(revoked) is None
    again = subprocess.run([*CLAWMEM, "copy", "--from", str(source), "--to", url],
                           check=False, capture_output=True, text=True, timeout=300, env=env)
    assert again.returncode == 2
    assert again.stderr == ("error: the destination already holds memories; copy into an"
                            " empty store\n")


# --- many processes -----------------------------------------------------------------------------
WORKER = """
import json, sys, time, traceback
from clawmemory import Memory, Settings

url, worker, count, start_at, role = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \\
    float(sys.argv[4]), sys.argv[5]
settings = Settings(embedder={"provider": "none"}, postgres={"pool_max_size": 2})
while time.time() < start_at:
    time.sleep(0.001)
ids, errors, recalls, first = [], [], 0, None
try:
    mem = Memory.open(url, settings=settings)
    deadline = time.time() + 120
    for i in range(count):
        first = first or time.time()
        try:
            if role == "writer":
                ids.append(mem.store(f"worker {worker} item {i}", tags=[f"w{worker}"],
                                     metadata={"worker": worker, "i": i},
                                     session_id=f"s{worker}", kind="episode"))
            else:
                mem.recall(f"worker item {i}", limit=5)
                recalls += 1
        except Exception:
            errors.append(traceback.format_exc())
    mem.close()
except Exception:
    errors.append(traceback.format_exc())
print(json.dumps({"ids": ids, "errors": errors, "recalls": recalls, "first": first,
                  "last": time.time()}))
"""


def test_eight_processes_storing_while_others_recall_lose_nothing(url: str) -> None:
    writers, per_writer, readers = 8, 300, 2
    PostgresStore(url).close()  # the schema exists; the children race on everything else
    start_at = time.time() + 4.0
    roles = ["writer"] * writers + ["reader"] * readers
    children = [subprocess.Popen(
        [sys.executable, "-c", WORKER, url, str(n), str(per_writer), str(start_at), role],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n, role in enumerate(roles)]
    results = []
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["errors"] == [], result["errors"][0]
        results.append(result)
    assert max(r["first"] for r in results) < min(r["last"] for r in results)  # overlapped
    assert sum(r["recalls"] for r in results) == readers * per_writer
    ids = [i for r in results for i in r["ids"]]
    assert len(ids) == len(set(ids)) == writers * per_writer
    with Memory.open(url, settings=Settings(embedder={"provider": "none"})) as mem:
        assert mem.count() == writers * per_writer
        assert {r.id for r in mem.list(limit=10_000)} == set(ids)
        assert mem.count(tags=["w3"]) == per_writer
        assert {h.memory.content for h in mem.recall("item 217", limit=20)} >= {
            f"worker {w} item 217" for w in range(writers)}
        # each session is one chain of turns: concurrent writers never forked it
        for w in range(writers):
            turns = mem.list(session_id=f"s{w}", order="oldest", limit=1000)
            links = mem.store_backend.links(mem.namespace, [t.id for t in turns])
            assert sum(1 for t in turns for lk in links[t.id]
                       if lk.origin == "sequence") == 2 * (per_writer - 1)


# --- service replicas ---------------------------------------------------------------------------
def test_two_serve_replicas_on_one_database_see_each_others_writes(
        url: str, tmp_path: Path) -> None:
    """One client, two ``clawmem serve`` processes on one database, round-robin: what one
    stores the other recalls at once (keyword and vector), what one forgets the other no
    longer finds. Served with the default local embedder: no process keeps a vector cache
    that the other's writes could leave stale."""
    import anyio
    import mcp_types as types
    from mcp.client import Client
    from test_serving import served

    def text(result: types.CallToolResult) -> str:
        assert not result.is_error, result
        return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))

    facts = [("tulip", "The tulips bloom in the north garden in April"),
             ("kayak", "The red kayak needs a new paddle before summer"),
             ("violin", "Grandfather's violin is stored in the attic")]

    async def scenario(urls: list[str]) -> None:
        async with Client(urls[0]) as one, Client(urls[1]) as two:
            replicas = (one, two)
            for n, (key, content) in enumerate(facts):
                writer, reader = replicas[n % 2], replicas[(n + 1) % 2]
                stored = text(await writer.call_tool("memory_store", {
                    "content": content, "key": key}))
                assert key in stored
                for mode in ("keyword", "vector"):
                    found = text(await reader.call_tool("memory_recall", {
                        "query": content, "mode": mode, "limit": 1}))
                    assert content in found, (mode, found)
            text(await two.call_tool("memory_forget", {"id": "kayak"}))
            for mode in ("keyword", "vector", "hybrid"):
                found = text(await one.call_tool("memory_recall", {
                    "query": "red kayak paddle", "mode": mode, "limit": 5}))
                assert facts[1][1] not in found and "key: kayak" not in found, (mode, found)

    with served(tmp_path, "127.0.0.1", "127.0.0.1", db=url,
                env={"CLAWMEM_EMBEDDER__PROVIDER": "local"}) as urls:
        anyio.run(scenario, urls)


def test_connection_settings_apply_without_losing_the_address_options(url: str) -> None:
    settings = Settings(embedder={"provider": "none"},
                        postgres={"statement_timeout_ms": 1500, "pool_max_size": 3})
    store = PostgresStore(url, options=_options(settings))
    try:
        assert store.query("SHOW statement_timeout") == [("1500ms",)]
        schema = store.query("SELECT current_schema()")[0][0]
        assert schema.startswith("t_")  # the address's search_path still applies
        with pytest.raises(StorageError, match="statement timeout"):
            store.query("SELECT pg_sleep(3)")
    finally:
        store.close()


class SmallEmbedder(HashEmbedder):
    name = "test-hash-8"
    dimension = 8

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return super().embed(texts)[:, :8] / np.sqrt(0.5)


def test_another_embedder_disables_vectors_until_reindex(
        url: str, clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    with Memory(PostgresStore(url), Settings(), clock=clock, embedder=HashEmbedder()) as mem:
        mem.store("the quick brown fox")
        mem.with_namespace("bob").store("bob's note about violins")
    store = PostgresStore(url)
    with Memory(store, Settings(), clock=clock, embedder=SmallEmbedder()) as mem:
        assert mem.recall("quick fox")  # keyword recall still works
        assert "vector search disabled" in mem.stats()["vectors"]
        assert "holds 16-d vectors from 'test-hash-16'" in mem.stats()["vectors"]
        assert mem.reindex() == 2  # every namespace
        assert mem.recall("quick fox", mode="vector")[0].memory.content == "the quick brown fox"
        assert mem.with_namespace("bob").recall("violins", mode="vector")
        assert store.query("SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE"
                            " attrelid = 'vec_memories'::regclass AND attname = 'embedding'"
                            ) == [("vector(8)",)]


def test_api_keys_live_in_postgresql_so_every_replica_checks_the_same_keys(url: str) -> None:
    import httpx

    from rest_server import serving

    quiet = Settings(embedder={"provider": "none"})
    with Memory.open(url, settings=quiet) as one, Memory.open(url, settings=quiet) as two:
        one.with_namespace("alice").store("Alice likes tea", key="drink")
        with serving(one) as first, serving(two) as second:
            assert httpx.get(f"{second}/v1/stats").status_code == 200  # no key yet: loopback
            record, key = Keys(key_store_for(one.store_backend)).create(["alice"], "read")
            auth = {"Authorization": f"Bearer {key}"}
            for base in (first, second):
                assert httpx.get(f"{base}/v1/stats").status_code == 401
                got = httpx.get(f"{base}/v1/memories/drink", headers=auth)
                assert got.json()["content"] == "Alice likes tea"
            Keys(key_store_for(two.store_backend)).revoke(record.id)
            assert httpx.get(f"{first}/v1/stats", headers=auth).status_code == 401


def test_keyword_candidates_bound_the_rows_ranked_and_keep_the_best_first(
    url: str, clock: Clock
) -> None:
    """Ranking a row means reading it, so a keyword recall ranks at most `keyword_candidates`
    rows whatever the words (ADR 0015). A question made only of words more common than that
    ranks the rows holding all of them first, then rows of its rarest word."""
    settings = Settings(postgres={"keyword_candidates": 100})
    store = PostgresStore(url, options=_options(settings))
    mem = Memory(store, settings, clock=clock)
    both = [mem.store(f"apple banana smoothie number {i}") for i in range(5)]
    apple = mem.store_many({"content": f"apple pie slice {i}"} for i in range(250))
    mem.store_many({"content": f"banana bread loaf {i}"} for i in range(300))
    rare = mem.store("apple tart with quince")
    try:
        hits = mem.recall("apple banana", mode="keyword", limit=10)
        assert sorted(h.memory.id for h in hits[:5]) == sorted(both)
        assert {h.memory.id for h in hits[5:]} <= set(apple) | {rare}  # apple is the rarer
        assert len(hits) == 10
        # a rare word still picks its rows exactly, whatever the common words beside it
        assert [h.memory.id for h in mem.recall("quince apple", mode="keyword", limit=1)] \
            == [rare]
    finally:
        mem.close()


def test_candidate_plans_read_rare_words_first_then_all_common_words_together() -> None:
    from clawmemory.backends.base import candidate_plans as _candidate_plans

    # rare terms (counts 3 and 40 of 10,000 rows) pick the rows, all terms score them
    assert _candidate_plans([0, 1, 2], [3, 40, 5000], 10_000, 100) == [
        ("|", [0, 1]), ("|", [0, 1, 2])]
    # every term rare enough together: one plan, any term
    assert _candidate_plans([0, 1], [3, 40], 10_000, 100) == [("|", [0, 1])]
    # even the rarest is past the cap: all of the two rarest (expected 250 × 0.3 = 75 rows),
    # then the rarest alone, then any
    assert _candidate_plans([0, 1, 2], [250, 3000, 6000], 10_000, 100) == [
        ("&", [0, 1]), ("|", [0]), ("|", [0, 1, 2])]
    # two are not enough (expected 600 × 0.6 = 360 > 100): the three rarest
    assert _candidate_plans([0, 1, 2], [600, 600, 700], 1000, 100) == [
        ("&", [0, 1, 2]), ("|", [0]), ("|", [0, 1, 2])]
    # one common word: its rows, bounded
    assert _candidate_plans([0], [5000], 10_000, 100) == [("|", [0])]

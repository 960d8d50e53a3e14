"""Forgetting is for real, with no extra call: after ``forget`` (one memory, with every version
of it, live or archived), ``forget_namespace`` or ``clawmem forget --all``, not one byte of the
forgotten text is left in the SQLite file or its WAL, in any table, index or free page. Another
tenant in the same file keeps everything.

Each test goes through the path a user takes (``Memory``, the CLI) and then reads the files'
bytes; nothing calls ``vacuum()`` or another internal helper to help the guarantee along."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from clawmemory import Memory, NotFoundError, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.config import EmbedderSettings, LifecycleSettings, StorageSettings
from clawmemory.core.ingest import register_session
from clawmemory.core.jobs import run_job
from clawmemory.history import History
from clawmemory.llm.base import Message
from conftest import DAY, Clock

CLAWMEM = Path(sys.executable).parent / "clawmem"
NS_A = "tenant-ozymandias"  # a namespace name is text about the tenant too
A_SECRETS = ("Xanthoplectra", "Quibbleworth", "Vortigaunt", "zyzzogeton", "hemidemisemi")
B_SECRETS = ("Bramblethorn", "Wickerbasket", "Pumpernickel", "Gobbledygook")


class HashEmbedder:
    """A deterministic stand-in for an embedding model: unit vectors from a text hash, so the
    test has real rows in vec_memories without loading a model, and knows each vector's bytes."""

    name = "test-hash-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:16], np.uint8) for t in texts]
        out = np.asarray(rows, dtype=np.float32) + 1.0
        unit: npt.NDArray[np.float32] = (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(
            np.float32)
        return unit

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        row: npt.NDArray[np.float32] = self.embed([text])[0]
        return row


def count(store: SQLiteStore, sql: str, *args: object) -> int:
    return int(store.query(sql, args)[0][0])


def file_bytes(db: Path) -> bytes:
    """The database file and its WAL (if any), lower-cased: FTS keeps lower-cased tokens."""
    data = db.read_bytes()
    wal = Path(f"{db}-wal")
    if wal.exists():
        data += wal.read_bytes()
    return data.lower()


def raw_bytes(db: Path) -> bytes:
    wal = Path(f"{db}-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def archiving(base: Settings) -> Settings:
    """Settings under which the nightly decay job archives every prunable memory (003 size
    pruning with a 1-byte limit): the way a user's memories reach the archive."""
    return base.model_copy(update={"lifecycle": LifecycleSettings(
        max_size_bytes=1, prune_percent=100.0)})


def fill_tenant(mem: Memory, secrets: Sequence[str], clock: Clock) -> list[str]:
    """Every kind of row a tenant can leave behind, each holding its secret words. Returns the
    ids of the live memories."""
    first, second, third, *rest = secrets
    doomed = [mem.store(f"archived memory mentioning {w} in {first}", kind="fact") for w in rest]
    archive_all = Memory(mem.store_backend, archiving(mem.settings), namespace=mem.namespace,
                         clock=clock, components=mem.components)
    assert run_job(archive_all, "decay").counts["prune_archived"] == len(doomed)
    ids = [
        mem.store(f"{first} {second} met at the {third} pier", key=f"{first}-meeting",
                  tags=[first.lower()], metadata={"code": second}, source=third),
        mem.store(f"Notes about {second} and {third}", kind="preference"),
        mem.store(f"{first} said the password is {second}", kind="conversation",
                  session_id=f"s-{third}"),
        mem.store(f"{third} {first} event", kind="event"),
    ]
    assert mem.link(ids[0], ids[1])
    assert mem.link(ids[1], ids[-1])
    mem.correct(ids[1], f"Corrected notes about {second} and {third}")
    clock.advance(DAY)
    run_job(mem, "decay")
    mem.store_backend.record_run(mem.namespace, "decay", clock.now, clock.now, "failed", {},
                                 f"failed on {first}")
    store = mem.store_backend
    assert isinstance(store, SQLiteStore)
    with History(mem) as history:  # history messages, a summary, the session ledger
        conv = history.conversation(f"chat:{third}:", session_id=f"s-{third}")
        conv.append(Message("user", f"I am {first}"))
        history.store.set_summary(conv.key, f"talked with {second}", covers=1)
    assert register_session(mem, f"s-{third}")
    return ids


def tenant_view(mem: Memory) -> tuple[object, ...]:
    """What a tenant has: records, links, entities, archive, runs."""
    records = mem.list(include_invalid=True, limit=1000)
    ids = [r.id for r in records]
    layer = mem.components.entity_layer()
    assert layer is not None
    archived = mem.recall(" ".join(B_SECRETS + A_SECRETS), archive=True, limit=100)
    return ([r.to_dict() for r in records], mem.store_backend.links(mem.namespace, ids),
            layer[0].entities_of(mem.namespace, ids), [h.memory.id for h in archived],
            mem.store_backend.runs(mem.namespace, 100))


@pytest.fixture
def tenants(tmp_path: Path, clock: Clock) -> tuple[Memory, Memory, SQLiteStore, Path]:
    db = tmp_path / "shared.db"
    store = SQLiteStore(db)
    a = Memory(store, Settings(), namespace=NS_A, clock=clock, embedder=HashEmbedder())
    b = a.with_namespace("tenant-b")
    fill_tenant(a, A_SECRETS, clock)
    fill_tenant(b, B_SECRETS, clock)
    return a, b, store, db


def test_everything_of_the_tenant_is_really_there_first(
    tenants: tuple[Memory, Memory, SQLiteStore, Path],
) -> None:
    """Guards the main tests against passing vacuously: each kind of row exists for tenant A,
    and the file holds every secret before anything is forgotten."""
    a, _, store, db = tenants
    ns = (a.namespace,)
    assert a.stats()["vectors"] == "ok"
    for sql in (
        "SELECT COUNT(*) FROM memories WHERE namespace = ?",
        "SELECT COUNT(*) FROM memories WHERE namespace = ? AND valid_until IS NOT NULL",
        "SELECT COUNT(*) FROM vec_memories WHERE namespace = ?",
        "SELECT COUNT(*) FROM vec_log WHERE namespace = ?",
        "SELECT COUNT(*) FROM links WHERE namespace = ?",
        "SELECT COUNT(*) FROM entities WHERE namespace = ?",
        "SELECT COUNT(*) FROM memory_entities WHERE namespace = ?",
        "SELECT COUNT(*) FROM memories_archive WHERE namespace = ?",
        "SELECT COUNT(*) FROM maintenance_runs WHERE namespace = ?",
        "SELECT COUNT(*) FROM messages WHERE namespace = ?",
        "SELECT COUNT(*) FROM summaries WHERE namespace = ?",
        "SELECT COUNT(*) FROM sessions WHERE namespace = ?",
    ):
        assert count(store, sql, *ns) > 0, sql
    assert a.recall(A_SECRETS[0]) != []
    assert a.recall(A_SECRETS[3], archive=True) != []
    data = file_bytes(db)
    assert all(s.lower().encode() in data for s in (*A_SECRETS, NS_A))


@pytest.mark.parametrize("how", ["same-memory", "fresh-process"])
def test_forget_namespace_leaves_no_byte_of_the_tenant(
    tenants: tuple[Memory, Memory, SQLiteStore, Path], how: str, clock: Clock
) -> None:
    a, b, store, db = tenants
    b_before = tenant_view(b)
    if how == "fresh-process":
        # As `clawmem forget --all` does it: nothing loaded, no embedder, a new connection.
        store.close()
        store = SQLiteStore(db)
        cfg = Settings(embedder=EmbedderSettings(provider="none"))
        a = Memory(store, cfg, namespace=NS_A, clock=clock)
        b = Memory(store, cfg, namespace="tenant-b", clock=clock)

    removed = a.forget_namespace()

    assert removed == 5  # the live records (one invalidated by its correction); archive apart
    data = file_bytes(db)
    for secret in (*A_SECRETS, NS_A):
        assert secret.lower().encode() not in data, f"{secret!r} is still in the file"
    for secret in B_SECRETS:
        assert secret.lower().encode() in data
    assert a.recall(A_SECRETS[0]) == [] and a.list(include_invalid=True) == []
    assert a.recall(A_SECRETS[3], archive=True) == []
    assert store.runs(a.namespace, 10) == []
    assert NS_A not in store.namespaces()
    assert tenant_view(b) == b_before
    assert {h.memory.namespace for h in b.recall(B_SECRETS[0])} == {"tenant-b"}
    assert b.recall(B_SECRETS[3], archive=True) != []


def test_the_forgotten_tenant_leaves_nothing_in_any_table(
    tenants: tuple[Memory, Memory, SQLiteStore, Path],
) -> None:
    a, _, store, _ = tenants
    a.forget_namespace()
    tables = [r[0] for r in store.query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%namespace%'")]
    assert {"memories", "links", "entities", "memories_archive", "vec_log"} <= set(tables)
    for table in tables:
        assert count(store, f"SELECT COUNT(*) FROM {table} WHERE namespace = ?", NS_A) == 0, table


# --- one memory among many -----------------------------------------------------------------------
# Eight digits: a shorter number turns up by chance in the file (timestamps written as text).
PIN = "My PIN is 44719082 and the vault word is Quizzaciously"


@pytest.fixture
def crowd(tmp_path: Path, clock: Clock) -> tuple[Memory, Path]:
    """300 memories of one tenant and a few of another, then a secret, all with vectors."""
    db = tmp_path / "crowd.db"
    mem = Memory(SQLiteStore(db), Settings(), clock=clock, embedder=HashEmbedder())
    mem.store_many({"content": f"ordinary note number {i} about gardening"} for i in range(300))
    mem.with_namespace("other").store("the other tenant's Quizzaciously note")
    return mem, db


def _vector_bytes(text: str) -> bytes:
    return HashEmbedder().embed([text])[0].tobytes()


def test_forget_one_memory_among_many_leaves_no_byte_of_it(
    crowd: tuple[Memory, Path],
) -> None:
    mem, db = crowd
    mem.store(PIN, key="pin", tags=["secret"])
    vector = _vector_bytes(f"pin: {PIN}")  # a key is embedded with its content
    assert b"44719082" in file_bytes(db) and vector in raw_bytes(db)

    forgotten = mem.forget("pin")

    assert forgotten.content == PIN
    data = file_bytes(db)
    assert b"44719082" not in data, "the forgotten text is still in the file"
    assert vector not in raw_bytes(db), "the forgotten vector is still in the file"
    assert b"quizzaciously" in data  # the other tenant's note is untouched
    assert mem.count() == 300
    assert mem.recall("gardening", limit=3) != []
    with pytest.raises(NotFoundError):
        mem.get("pin")


def test_forget_leaves_no_byte_of_a_memorys_narrative_and_task_ids(
    crowd: tuple[Memory, Path],
) -> None:
    """narrative_id and task_id are ids, not text, but they name someone's story and work:
    forgetting a memory (every version of it) leaves neither in the file, its index included."""
    mem, db = crowd
    mem.store("the heist plan", key="plan", narrative_id="arc-Snorkelwhistle",
              task_id="task-Brindlemoor")
    mem.correct("plan", "the heist plan, revised")
    assert b"snorkelwhistle" in file_bytes(db) and b"brindlemoor" in file_bytes(db)
    assert len(mem.list(narrative_id="arc-Snorkelwhistle", include_invalid=True)) == 2

    mem.forget("plan")

    data = file_bytes(db)
    assert b"snorkelwhistle" not in data and b"brindlemoor" not in data
    assert mem.list(narrative_id="arc-Snorkelwhistle", include_invalid=True) == []
    assert mem.count() == 300


def test_forget_takes_every_version_of_a_corrected_memory(crowd: tuple[Memory, Path]) -> None:
    """004 correct_fact keeps the old version (invalidated); forgetting the memory forgets the
    whole chain, whichever version is named."""
    mem, db = crowd
    mem.store("My PIN word is Zebulonic", key="pin")
    mem.correct("pin", "My PIN word is Quetzalish")
    middle = mem.correct("pin", "My PIN word is Xylophagous")
    assert len(mem.history("pin")) == 3

    mem.forget(middle.supersedes or "")  # the middle version, by id

    data = file_bytes(db)
    for word in (b"zebulonic", b"quetzalish", b"xylophagous"):
        assert word not in data
    assert mem.recall("PIN", include_invalid=True, mode="keyword") == []
    assert mem.list(include_invalid=True, limit=1000, kind="fact") != []  # the crowd stays
    assert mem.count(include_invalid=True) == 300


def test_an_archived_memory_can_be_forgotten_by_id_and_leaves_nothing(
    tmp_path: Path, clock: Clock
) -> None:
    db, mirror = tmp_path / "a.db", tmp_path / "mirror"
    cfg = Settings(storage=StorageSettings(mirror_dir=mirror))
    mem = Memory(SQLiteStore(db), cfg, clock=clock, embedder=HashEmbedder())
    rid = mem.store("the Zorblax launch code is 0091", kind="fact")
    assert any("Zorblax" in p.read_text() for p in mirror.rglob("*.md"))
    archive_all = Memory(mem.store_backend, archiving(cfg), clock=clock,
                         components=mem.components)
    assert run_job(archive_all, "decay").counts["prune_archived"] == 1
    assert [h.memory.id for h in mem.recall("Zorblax", archive=True)] == [rid]

    assert mem.forget(rid).id == rid

    assert mem.recall("Zorblax", archive=True) == []
    assert b"zorblax" not in file_bytes(db)
    assert not any("Zorblax" in p.read_text() for p in mirror.rglob("*.md"))
    with pytest.raises(NotFoundError):
        mem.forget(rid)


def test_forget_leaves_nothing_in_the_notes_folder_either(tmp_path: Path, clock: Clock) -> None:
    """With storage.mirror_dir set, no file under the notes folder (notes, the state file that
    tracks them, a note moved by hand, a sync's leftovers) holds a forgotten memory's text or
    its id: the folder is part of the promise, not a copy beside it."""
    db, notes = tmp_path / "a.db", tmp_path / "notes"
    cfg = Settings(storage=StorageSettings(mirror_dir=notes))
    mem = Memory(SQLiteStore(db), cfg, clock=clock, embedder=HashEmbedder())
    rid = mem.store("the Vortigaunt vault combination is 4471", key="vault")
    clock.advance(60)
    new = mem.correct("vault", "the Vortigaunt vault combination is 4472")
    other = mem.store("the Bramblethorn garden gate code is 9100")
    mem.link(new.id, other)
    (notes / "default" / "moved").mkdir()
    note = next(p for p in notes.rglob("*.md") if f"id: {new.id}" in p.read_text())
    note.rename(notes / "default" / "moved" / "vault.md")  # moved by hand, not synced yet
    mem.sync_notes()  # the state file now names the moved note

    def files() -> dict[Path, bytes]:
        return {p: p.read_bytes().lower() for p in notes.rglob("*") if p.is_file()}

    everything = b"".join(files().values())
    assert b"vortigaunt" in everything and new.id.encode() in everything

    mem.forget("vault")

    left = files()
    assert left, "the other memory's note and the state file stay"
    for path, data in left.items():
        for word in (b"vortigaunt", b"4471", b"4472", rid.encode(), new.id.encode()):
            assert word not in data, f"{path} still holds {word!r}"
    assert b"bramblethorn" in b"".join(left.values())
    assert b"vortigaunt" not in file_bytes(db)
    mem.close()


# --- through the command line --------------------------------------------------------------------
def _cli(db: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env |= {"CLAWMEM_HOME": str(home), "CLAWMEM_CONFIG": str(home / "absent.toml"),
            "CLAWMEM_EMBEDDER__PROVIDER": "none", "CLAWMEM_LOG_LEVEL": "ERROR"}
    return subprocess.run([str(CLAWMEM), "--db", str(db), *args], capture_output=True,
                          text=True, env=env, timeout=120, check=False)


def test_cli_forget_of_a_corrected_key_leaves_neither_version(tmp_path: Path) -> None:
    """The issue's reproduction: add, correct, forget, then recall --include-invalid."""
    db, home = tmp_path / "cli.db", tmp_path / "home"
    for args in (("add", "My PIN word is Zebulonic", "--key", "pin"),
                 ("add", "Tea at four o'clock"),
                 ("correct", "pin", "My PIN word is Quetzalish"), ("forget", "pin")):
        done = _cli(db, *args, home=home)
        assert done.returncode == 0, done.stderr
    recalled = _cli(db, "--json", "recall", "PIN", "--include-invalid", home=home)
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)["hits"] == []
    data = file_bytes(db)
    assert b"zebulonic" not in data and b"quetzalish" not in data and b"four" in data


def test_cli_forget_all_leaves_no_byte_of_the_namespace(tmp_path: Path, clock: Clock) -> None:
    db, home = tmp_path / "all.db", tmp_path / "home"
    with Memory(SQLiteStore(db), Settings(embedder=EmbedderSettings(provider="none")),
                clock=clock) as mem:
        fill_tenant(mem, A_SECRETS, clock)
        mem.with_namespace("keep").store("Brouhaha stays")

    done = _cli(db, "forget", "--all", "--yes", home=home)

    assert done.returncode == 0, done.stderr
    data = file_bytes(db)
    for secret in A_SECRETS:
        assert secret.lower().encode() not in data
    assert b"brouhaha" in data

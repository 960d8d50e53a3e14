"""Forgetting a namespace is for real: after ``forget_namespace()`` and ``vacuum()`` not one byte
of the tenant's text is left in the SQLite file (or its WAL), in any table or index: records,
full-text shadow tables, vectors, entities, links, archive, history, sessions, maintenance runs.
Another tenant in the same file keeps everything."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings
from clawmemory.history import History
from clawmemory.ingest import register_session
from clawmemory.lifecycle import recall_archive
from clawmemory.llm.base import Message
from clawmemory.maintenance import run_job
from clawmemory.store.sqlite import SQLiteStore
from conftest import DAY, Clock

NS_A = "tenant-ozymandias"  # a namespace name is text about the tenant too
A_SECRETS = ("Xanthoplectra", "Quibbleworth", "Vortigaunt", "zyzzogeton", "hemidemisemi")
B_SECRETS = ("Bramblethorn", "Wickerbasket", "Pumpernickel")


class HashEmbedder:
    """A deterministic stand-in for an embedding model: unit vectors from a text hash, so the
    test has real rows in vec_memories without loading a model."""

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
    return int(store._query(sql, args)[0][0])


def fill_tenant(mem: Memory, secrets: Sequence[str], clock: Clock) -> None:
    """Every kind of row a tenant can leave behind, each holding its secret words."""
    first, second, third, *rest = secrets
    ids = [
        mem.store(f"{first} {second} met at the {third} pier", key=f"{first}-meeting",
                  tags=[first.lower()], metadata={"code": second}, source=third),
        mem.store(f"Notes about {second} and {third}", kind="preference"),
        mem.store(f"{first} said the password is {second}", kind="conversation",
                  session_id=f"s-{third}"),
        *(mem.store(f"archived memory mentioning {w} in {first}", kind="fact") for w in rest),
        mem.store(f"{third} {first} event", kind="event"),
    ]
    assert mem.link(ids[0], ids[1])
    assert mem.link(ids[1], ids[-1])
    archived = ids[3:-1] or [ids[-1]]
    assert mem.store_backend.archive(mem.namespace, archived, at=clock.now) == len(archived)
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


def tenant_view(mem: Memory) -> tuple[object, ...]:
    """What a tenant has: records, links, entities, archive size, runs."""
    records = mem.list(include_invalid=True, limit=1000)
    ids = [r.id for r in records]
    layer = mem.components.entity_layer()
    assert layer is not None
    return ([r.to_dict() for r in records], mem.store_backend.links(mem.namespace, ids),
            layer[0].entities_of(mem.namespace, ids),
            mem.store_backend.archive_count(mem.namespace),
            mem.store_backend.runs(mem.namespace, 100))


def file_bytes(db: Path) -> bytes:
    """The database file and its WAL (if any), lower-cased: FTS keeps lower-cased tokens."""
    data = db.read_bytes()
    wal = Path(f"{db}-wal")
    if wal.exists():
        data += wal.read_bytes()
    return data.lower()


@pytest.fixture
def tenants(tmp_path: Path, clock: Clock) -> tuple[Memory, Memory, SQLiteStore, Path]:
    db = tmp_path / "shared.db"
    store = SQLiteStore(db)
    a = Memory(store, Settings(), namespace=NS_A, clock=clock, embedder=HashEmbedder())
    b = a.with_namespace("tenant-b")
    fill_tenant(a, A_SECRETS, clock)
    fill_tenant(b, B_SECRETS, clock)
    return a, b, store, db


def test_everything_of_the_tenant_was_really_there_first(
    tenants: tuple[Memory, Memory, SQLiteStore, Path],
) -> None:
    """Guards the main test against passing vacuously: each kind of row exists for tenant A."""
    a, _, store, db = tenants
    ns = (a.namespace,)
    assert a.stats()["vectors"] == "ok"
    for sql in (
        "SELECT COUNT(*) FROM memories WHERE namespace = ?",
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
    assert recall_archive(a, A_SECRETS[3]) != []
    store.vacuum()
    data = file_bytes(db)
    assert all(s.lower().encode() in data for s in (*A_SECRETS, NS_A))


@pytest.mark.parametrize("how", ["same-memory", "fresh-process"])
def test_forget_namespace_then_vacuum_leaves_no_byte_of_the_tenant(
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
    store.vacuum()

    assert removed == 4  # the live records; the archived ones went with the archive
    data = file_bytes(db)
    for secret in (*A_SECRETS, NS_A):
        assert secret.lower().encode() not in data, f"{secret!r} is still in the file"
    for secret in B_SECRETS:
        assert secret.lower().encode() in data
    assert a.recall(A_SECRETS[0]) == [] and a.list(include_invalid=True) == []
    assert recall_archive(a, A_SECRETS[3]) == []
    assert store.runs(a.namespace, 10) == []
    assert NS_A not in store.namespaces()
    assert tenant_view(b) == b_before
    assert {h.memory.namespace for h in b.recall(B_SECRETS[0])} == {"tenant-b"}
    assert recall_archive(b, B_SECRETS[2]) != []


def test_the_forgotten_tenant_leaves_nothing_in_any_table(
    tenants: tuple[Memory, Memory, SQLiteStore, Path],
) -> None:
    a, _, store, _ = tenants
    a.forget_namespace()
    tables = [r[0] for r in store._query(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%namespace%'")]
    assert {"memories", "links", "entities", "memories_archive", "vec_log"} <= set(tables)
    for table in tables:
        assert count(store, f"SELECT COUNT(*) FROM {table} WHERE namespace = ?", NS_A) == 0, table

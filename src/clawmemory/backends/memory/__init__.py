"""The in-memory backend: everything in Python dicts with a real BM25 index, for tests and
throw-away agents. History and the session ledger are kept in this process too."""

from __future__ import annotations

from clawmemory.backends.base import Backend, Clock, HistoryStore, Store, keyword_weights
from clawmemory.backends.memory.entities import MemoryEntityIndex
from clawmemory.backends.memory.history import ProcessHistories, ProcessLedger
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.config import Settings
from clawmemory.vectors.base import VectorStore

__all__ = ["MemoryStore", "in_process_parts", "open_store", "parts"]


def open_store(settings: Settings, *, create: bool, read_only: bool) -> Store:
    return MemoryStore(weights=keyword_weights(settings),
                       keyword_context=settings.storage.keyword_context)


def in_process_parts(store: MemoryStore, name: str) -> Backend:
    """The parts of a store held in this process (this backend and the JSON file's): vectors
    in RAM, and history and sessions that do not outlive the process (docs/history.md)."""
    histories = ProcessHistories()
    ledger = ProcessLedger()

    def vectors(centre_min_rows: int, centre_min_norm: float) -> VectorStore | None:
        # Imported here: the vectors module loads numpy, which a keyword-only command (and
        # every cold `clawmem` that never embeds) must not pay for.
        from clawmemory.backends.memory.vectors import MemoryVectors

        return MemoryVectors(store, centre_min_rows, centre_min_norm)

    def history(namespace: str, clock: Clock) -> HistoryStore:
        return histories.get(namespace)

    def forget_namespace(namespace: str) -> None:
        histories.drop(namespace)
        ledger.drop(namespace)

    return Backend(
        name=name,
        records=store,
        vectors=vectors,
        queue=None,
        entities=MemoryEntityIndex(exists=lambda ns, mid: store.get(ns, mid) is not None),
        history=history,
        sessions=ledger,
        keys=None,  # keys in one process's RAM would protect nothing
        sql=None,
        forget_namespace=forget_namespace,
    )


def parts(store: Store) -> Backend:
    assert isinstance(store, MemoryStore)
    return in_process_parts(store, "memory")

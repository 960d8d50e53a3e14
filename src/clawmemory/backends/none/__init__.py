"""The none backend (000 NoneMemory): memory disabled; every operation succeeds and keeps
nothing, and nothing is loaded for it (no embedding model)."""

from __future__ import annotations

from clawmemory.backends.base import Backend, Clock, HistoryStore, Store
from clawmemory.backends.memory.history import NullHistoryStore, ProcessLedger
from clawmemory.backends.none.store import NoneStore
from clawmemory.config import Settings

__all__ = ["NoneStore", "open_store", "parts"]


def open_store(settings: Settings, *, create: bool, read_only: bool) -> Store:
    return NoneStore()


def parts(store: Store) -> Backend:
    ledger = ProcessLedger()

    def history(namespace: str, clock: Clock) -> HistoryStore:
        return NullHistoryStore()

    return Backend(
        name="none",
        records=store,
        vectors=None,
        queue=None,
        entities=None,
        history=history,
        sessions=ledger,
        keys=None,
        sql=None,
        forget_namespace=ledger.drop,
        disabled=True,
    )

"""``LocalMemory``: what code below the ``Memory`` façade may ask of a local engine beyond the
public ``MemoryAPI`` (its store and its collaborators). The façade implements it; nothing
below the façade imports the façade."""

from __future__ import annotations

from typing import Protocol

from clawmemory.api import MemoryAPI
from clawmemory.backends.base import Store
from clawmemory.core.composition import Parts

__all__ = ["LocalMemory"]


class LocalMemory(MemoryAPI, Protocol):  # pragma: no mutate block (a protocol: no behaviour)
    """A ``MemoryAPI`` over a local store, with the collaborators it is composed of."""

    @property
    def store_backend(self) -> Store: ...

    @property
    def parts(self) -> Parts: ...

    def with_namespace(self, namespace: str) -> LocalMemory: ...

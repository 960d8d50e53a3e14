"""``CachedEmbedder``: an LRU cache of query vectors in front of any embedder.

Agents recall with the same few queries again and again (every turn's context enrichment, a
retried tool call), and embedding a query costs milliseconds locally or a network round trip
remotely. Only ``embed_query`` is cached: stored content is embedded once and rarely repeats.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clawmemory.embed.base import Embedder
from clawmemory.errors import ConfigError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_QUERY_CACHE_SIZE", "CachedEmbedder"]

DEFAULT_QUERY_CACHE_SIZE = 1024


class CachedEmbedder:
    """Wraps ``inner``; ``embed_query`` answers repeated texts (exact match) from an LRU cache
    of ``capacity`` vectors. Thread-safe. Cached vectors are returned read-only, so a caller
    cannot change what the next caller gets."""

    def __init__(self, inner: Embedder, capacity: int = DEFAULT_QUERY_CACHE_SIZE) -> None:
        if capacity < 1:
            raise ConfigError(f"query cache capacity must be at least 1, got {capacity}")
        self.inner = inner
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.inner.embed(texts)

    def __getattr__(self, name: str) -> object:
        # Optional capabilities of the wrapped embedder (``embed_in_context``) stay visible.
        if name == "embed_in_context":
            return getattr(self.inner, name)
        raise AttributeError(name)

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        with self._lock:
            vector = self._entries.get(text)
            if vector is not None:
                self._entries.move_to_end(text)
                self.hits += 1
                return vector
            self.misses += 1
        # Embed outside the lock: a slow model or network call must not stall hits on other
        # threads. Two threads missing on the same text both compute it; the result is equal.
        import numpy as np

        vector = np.array(self.inner.embed_query(text), dtype=np.float32, copy=True)
        vector.setflags(write=False)
        with self._lock:
            self._entries[text] = vector
            self._entries.move_to_end(text)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return vector

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def close(self) -> None:
        """Close the wrapped embedder if it holds resources (an HTTP connection pool)."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

"""The embedding boundary: a narrow ``Embedder`` protocol and the helpers every implementation
shares to honour it.

Contract: ``embed`` returns a float32 array of shape ``(len(texts), dimension)`` whose rows are
L2-normalised, so the engine and the vector indexes can use a plain dot product as cosine
similarity. Implementations enforce this themselves (with :func:`as_unit_rows`) rather than
trusting a provider, because one unnormalised provider would silently skew hybrid ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from clawmemory.errors import EmbeddingError

if TYPE_CHECKING:  # numpy is imported where vectors are made, so `import clawmemory` stays light
    import numpy as np
    import numpy.typing as npt

__all__ = ["EmbedProvider", "Embedder", "as_unit_rows"]


class EmbedProvider(StrEnum):
    """The closed set of embedding providers the factory knows."""

    LOCAL = "local"
    OPENAI = "openai"
    OLLAMA = "ollama"
    NONE = "none"


# Deliberately not @runtime_checkable: on Python 3.11 isinstance() against a protocol reads
# every member, and reading ``dimension`` can load a model or call a provider.
class Embedder(Protocol):
    """Turns text into unit vectors. Implementations are thread-safe; calls may block for a
    long time (model load, network), so callers make them outside any lock (000)."""

    @property
    def name(self) -> str:
        """Identifies the vector space (provider and model); recorded next to stored vectors so
        a different model is detected instead of being compared against old vectors."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector. May load the model or call the provider to find out."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """One L2-normalised float32 row per text, in order: shape ``(len(texts), dimension)``."""
        ...

    def embed_query(self, text: str) -> npt.NDArray[np.float32]:
        """The vector of one search query: shape ``(dimension,)``."""
        ...


def as_unit_rows(
    vectors: npt.ArrayLike, *, count: int, dimension: int | None, source: str
) -> npt.NDArray[np.float32]:
    """Check that ``vectors`` is ``count`` finite rows of ``dimension`` (any, if None) and return
    them as contiguous float32 unit rows. ``source`` names the provider in error messages.

    A zero row stays zero (cosine with it is undefined; a dot product of 0 ranks it last)."""
    import numpy as np

    try:
        arr = np.asarray(vectors, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"{source} returned vectors that are not numeric arrays") from exc
    if arr.ndim != 2 or arr.shape[0] != count:
        raise EmbeddingError(
            f"{source} returned {arr.shape[0] if arr.ndim else 0} vectors of shape"
            f" {arr.shape[1:]} for {count} texts"
        )
    if dimension is not None and arr.shape[1] != dimension:
        raise EmbeddingError(
            f"{source} returned {arr.shape[1]}-dimensional vectors, expected {dimension}"
        )
    if count and arr.shape[1] == 0:
        raise EmbeddingError(f"{source} returned empty vectors")
    if not np.isfinite(arr).all():
        raise EmbeddingError(f"{source} returned vectors containing NaN or infinity")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    # Divide only where the norm is positive so a zero row does not become NaN.
    unit = np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)
    return np.ascontiguousarray(unit, dtype=np.float32)

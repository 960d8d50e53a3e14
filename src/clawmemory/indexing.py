"""Deprecated: moved to ``clawmemory.core.indexing``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.core.indexing import VectorWorker, drain_queue, fill_vectors

__all__ = ["VectorWorker", "drain_queue", "fill_vectors"]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.indexing", DeprecationWarning, stacklevel=2)

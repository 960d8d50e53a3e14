"""Deprecated: moved to ``clawmemory.core.indexing``. Kept for one release."""

from __future__ import annotations

from clawmemory.core.indexing import VectorWorker, drain_queue, fill_vectors

__all__ = ["VectorWorker", "drain_queue", "fill_vectors"]

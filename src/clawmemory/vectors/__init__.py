"""Vector storage and search: ``VectorStore`` (base), an in-RAM matrix index (matrix), the
SQLite/sqlite-vec store (sqlite) and the in-memory/JSON store (memory)."""

from __future__ import annotations

from clawmemory.vectors.base import QueueEntry, VectorQueue, VectorStore

__all__ = ["QueueEntry", "VectorQueue", "VectorStore"]

"""Deprecated: ``Memory`` moved to ``clawmemory.memory`` (``from clawmemory import Memory`` is
unchanged). Kept for one release."""

from __future__ import annotations

from clawmemory.memory import ImportReport, Memory

__all__ = ["ImportReport", "Memory"]

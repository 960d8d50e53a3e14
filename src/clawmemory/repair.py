"""Deprecated: moved to ``clawmemory.core.repair``. Kept for one release."""

from __future__ import annotations

from clawmemory.core.repair import (
    repair,
)

__all__ = [
    "repair",
]

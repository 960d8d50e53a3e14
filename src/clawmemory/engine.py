"""Deprecated: ``Memory`` moved to ``clawmemory.memory`` (``from clawmemory import Memory`` is
unchanged). Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.memory import ImportReport, Memory

__all__ = ["ImportReport", "Memory"]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.memory", DeprecationWarning, stacklevel=2)

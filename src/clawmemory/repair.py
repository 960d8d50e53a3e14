"""Deprecated: moved to ``clawmemory.core.repair``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.core.repair import (
    repair,
)

__all__ = [
    "repair",
]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.repair", DeprecationWarning, stacklevel=2)

"""Deprecated: the service half of ``Memory`` is ``clawmemory.core.graph`` and the façade's
maintenance methods now; ``ALL_JOBS`` is ``clawmemory.api.ALL_JOBS``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.api import ALL_JOBS

__all__ = ["ALL_JOBS"]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.graph", DeprecationWarning, stacklevel=2)

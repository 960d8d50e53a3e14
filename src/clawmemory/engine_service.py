"""Deprecated: the service half of ``Memory`` is ``clawmemory.core.graph`` and the façade's
maintenance methods now; ``ALL_JOBS`` is ``clawmemory.api.ALL_JOBS``. Kept for one release."""

from __future__ import annotations

from clawmemory.api import ALL_JOBS

__all__ = ["ALL_JOBS"]

"""Deprecated: the import/export half of ``Memory`` is ``clawmemory.core.transfers`` now;
``ImportReport`` and ``ALREADY_PRESENT`` live in ``clawmemory.model``. Kept for one release."""

from __future__ import annotations

from clawmemory.model import ALREADY_PRESENT, ImportReport

__all__ = ["ALREADY_PRESENT", "ImportReport"]

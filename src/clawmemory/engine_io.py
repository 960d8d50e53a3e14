"""Deprecated: the import/export half of ``Memory`` is ``clawmemory.core.transfers`` now;
``ImportReport`` and ``ALREADY_PRESENT`` live in ``clawmemory.model``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.model import ALREADY_PRESENT, ImportReport

__all__ = ["ALREADY_PRESENT", "ImportReport"]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.transfers", DeprecationWarning, stacklevel=2)

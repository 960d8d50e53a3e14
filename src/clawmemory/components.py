"""Deprecated: ``Components`` moved to ``clawmemory.core.legacy`` (``Memory.parts`` replaces
it); ``document_text`` to ``clawmemory.core.vectors``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.core.legacy import Components
from clawmemory.core.vectors import document_text

__all__ = ["Components", "document_text"]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.legacy", DeprecationWarning, stacklevel=2)

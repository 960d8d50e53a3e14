"""Deprecated: moved to ``clawmemory.core.lifecycle``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.core.lifecycle import (
    DECAYED_AT,
    Change,
    Counts,
    Report,
    confidence_decay,
    hygiene_purge,
    idle_since,
    knowledge_decay,
    prune,
    prune_weight,
    recall_archive,
    restore,
    run_decay,
    scan,
)

__all__ = [
    "DECAYED_AT",
    "Change",
    "Counts",
    "Report",
    "confidence_decay",
    "hygiene_purge",
    "idle_since",
    "knowledge_decay",
    "prune",
    "prune_weight",
    "recall_archive",
    "restore",
    "run_decay",
    "scan",
]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.lifecycle", DeprecationWarning, stacklevel=2)

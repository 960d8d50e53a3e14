"""Deprecated: moved to ``clawmemory.core.ingest``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.core.ingest import (
    SessionLedger,
    is_session_consolidated,
    mark_session_consolidated,
    observe,
    pending_sessions,
    register_session,
    reopen_sessions,
    session_ledger,
)

__all__ = [
    "SessionLedger",
    "is_session_consolidated",
    "mark_session_consolidated",
    "observe",
    "pending_sessions",
    "register_session",
    "reopen_sessions",
    "session_ledger",
]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.ingest", DeprecationWarning, stacklevel=2)

"""Deprecated: moved to ``clawmemory.core.ingest``. Kept for one release."""

from __future__ import annotations

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

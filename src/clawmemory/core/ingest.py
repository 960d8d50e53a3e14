"""Hot-path ingestion (004 A12) and the session ledger consolidation works from.

``observe`` stores each user and agent message as an ``episode`` verbatim: no LLM call, no
extraction, one transaction (the record, its link to the previous turn, its entity links from
the fast regex NER, its vector-queue row); the engine's background worker embeds it afterwards. The
first message of a session registers the session as pending consolidation; the consolidator
later reads its episodes and marks it done (tools/consolidator.py).

Session state lives in the store's ``sessions`` table on SQLite. The other backends have no
such table, so their ledger is kept in this process only (one per store object) — enough for
the in-memory backend, and said plainly for the JSON one: its pending list does not survive a
restart. The ledger moves behind the ``Store`` protocol once the engine grows session methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from clawmemory.backends.base import SessionLedger
from clawmemory.backends.registry import backend_of
from clawmemory.errors import InvalidInputError
from clawmemory.validation import check_content, check_label, check_provenance_id

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

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

EPISODE_SOURCE = "conversation"  # 003 provenance tag for raw dialogue


def session_ledger(mem: LocalMemory) -> SessionLedger:
    """The session ledger of ``mem``'s store (its ``sessions`` table, or kept in this process
    for the in-RAM backends: said in the module docstring)."""
    return backend_of(mem.store_backend).sessions


def _session(session_id: object) -> str:
    if not isinstance(session_id, str) or not session_id.strip():
        raise InvalidInputError("session_id must be non-empty text")
    return check_label(session_id, "session_id") or ""


def register_session(mem: LocalMemory, session_id: str) -> bool:
    """Register a session as pending consolidation; True when it was not known before."""
    return session_ledger(mem).ensure(mem.namespace, _session(session_id), mem.clock())


def pending_sessions(mem: LocalMemory, exclude_session_id: str | None = None) -> list[str]:
    """Sessions not consolidated yet, oldest first (004 get_pending_consolidations)."""
    return session_ledger(mem).pending(mem.namespace, exclude_session_id)


def mark_session_consolidated(mem: LocalMemory, session_id: str) -> bool:
    """Record that a session was consolidated; False when it already was."""
    return session_ledger(mem).mark(mem.namespace, _session(session_id), mem.clock())


def reopen_sessions(mem: LocalMemory, session_ids: Sequence[str]) -> tuple[str, ...]:
    """Mark consolidated sessions pending again (a fact derived from them was forgotten, ADR
    0022); returns those that were consolidated."""
    ledger = session_ledger(mem)
    return tuple(s for s in session_ids if ledger.reopen(mem.namespace, s))


def is_session_consolidated(mem: LocalMemory, session_id: str) -> bool:
    return session_ledger(mem).consolidated_at(mem.namespace, _session(session_id)) is not None


def observe(
    mem: LocalMemory, role: str, content: str, session_id: str,
    *, kind: Literal["episode", "conversation"] = "episode",
    narrative_id: str | int | None = None, task_id: str | int | None = None,
) -> str:
    """Store one dialogue turn as an ``episode`` and return its id (004 hot path).

    ``role`` is ``"user"`` or the agent's name. The session is registered for consolidation
    on its first message; ``narrative_id``/``task_id`` (003 provenance) go on the turn.
    Everything is checked before the first write.

    ``kind="conversation"``: 000's ``auto_save`` instead, the turn as a ``conversation``
    entry, which the hygiene purge takes out of the live set once unused for
    ``lifecycle.hygiene_max_age_s``; the session is not registered (consolidation reads
    episodes)."""
    if not isinstance(role, str) or not role.strip():
        raise InvalidInputError("role must be non-empty text ('user' or the agent's name)")
    if kind not in ("episode", "conversation"):
        raise InvalidInputError(f"kind must be 'episode' or 'conversation', not {kind!r}")
    check_label(role, "role")
    sid = _session(session_id)
    check_content(content, mem.settings.storage.max_content_chars)
    narrative = check_provenance_id(narrative_id, "narrative_id")
    task = check_provenance_id(task_id, "task_id")
    if kind == "episode":
        register_session(mem, sid)
    record = mem.parts.writes.new_record(
        content, key=None, kind=kind, tags=(), metadata=None, session_id=sid,
        narrative_id=narrative, task_id=task, event_time=mem.clock(), source=EPISODE_SOURCE,
        source_role=role.strip(), source_ids=(), confidence=1.0,
    )
    # Returns once the episode, its links and its queue row are committed: the vector follows
    # in the background worker (ADR 0013), keyword recall sees the episode at once.
    return mem.parts.writes.write([record], background=True)[0].id

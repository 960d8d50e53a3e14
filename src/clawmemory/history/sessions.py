"""Sessions (000 ``SessionManager``) and the 004 consolidation trigger.

A ``SessionManager`` maps session ids (a chat id, a UUID) to the objects that serve them, an
agent or a ``Conversation``, built by the caller's ``factory``. ``get`` creates a session on
its first message and refreshes ``last_active`` on every later one; ``evict_idle`` removes
sessions idle for longer than ``history.session_idle_s`` (one hour). Subscribers hear about it:

- ``SessionCreated`` when a session is created (000 SessionCreatedEvent);
- ``SessionEvicted`` just before a session is removed, with the object, so a subscriber can
  end it properly (store its summary: ``Conversation.end``) (000 SessionEvictedEvent);
- ``SessionCompleted`` for each earlier session still waiting for consolidation, when a
  session id never seen before arrives (004: the extension registers the new session in
  ``sessions_consolidations`` and emits ``memory.session_completed`` for the others). Needs the
  ``Memory`` whose session ledger to use (``ingest.register_session``/``pending_sessions``).

Subscribers run in the thread that caused the event, after the manager's lock is released (a
subscriber may call the manager); they should hand slow work (consolidation asks an LLM) to
another thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from clawmemory.core.ingest import pending_sessions, register_session
from clawmemory.errors import InvalidInputError
from clawmemory.validation import check_label

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "SessionCompleted",
    "SessionCreated",
    "SessionEvent",
    "SessionEvicted",
    "SessionManager",
    "Subscriber",
]

log = logging.getLogger("clawmemory.history")
S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class SessionCreated:
    session_id: str
    session: object


@dataclass(frozen=True, slots=True)
class SessionEvicted:
    session_id: str
    session: object
    idle_s: float
    reason: str  # "idle" (evict_idle) or "ended" (evict)


@dataclass(frozen=True, slots=True)
class SessionCompleted:
    """004 ``memory.session_completed``: this session is over and not consolidated yet."""

    session_id: str
    next_session_id: str  # the new session whose arrival completed it


SessionEvent = SessionCreated | SessionEvicted | SessionCompleted
Subscriber = Callable[[SessionEvent], None]


@dataclass
class _Slot(Generic[S]):
    session: S
    last_active: float


class SessionManager(Generic[S]):
    """Sessions by id, created on demand and evicted when idle. Thread-safe."""

    def __init__(
        self,
        factory: Callable[[str], S],
        *,
        mem: LocalMemory | None = None,
        idle_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``factory(session_id)`` builds a session. ``mem``: whose session ledger drives the
        004 consolidation trigger (None: no ``SessionCompleted`` events). ``idle_s``: the
        default of ``evict_idle`` (``mem.settings.history.session_idle_s``, else one hour)."""
        self._factory = factory
        self._mem = mem
        default_idle = mem.settings.history.session_idle_s if mem is not None else 3600.0
        self.idle_s = default_idle if idle_s is None else idle_s
        self._clock = clock
        self._slots: dict[str, _Slot[S]] = {}
        self._subscribers: list[Subscriber] = []
        self._lock = threading.RLock()

    # --- events -------------------------------------------------------------------------------
    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` with every event from now on; returns the unsubscribe call."""
        with self._lock:
            self._subscribers.append(subscriber)

        def unsubscribe() -> None:
            with self._lock:
                if subscriber in self._subscribers:
                    self._subscribers.remove(subscriber)

        return unsubscribe

    def _publish(self, events: list[SessionEvent]) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for event in events:
            for subscriber in subscribers:
                try:
                    subscriber(event)
                except Exception:
                    # An event bus: one failing subscriber must neither stop the others nor
                    # break the message that caused the event. Nothing is written here.
                    log.exception("session event subscriber failed on %s", event)

    # --- sessions -----------------------------------------------------------------------------
    def get(self, session_id: str) -> S:
        """The session for ``session_id``, created (and announced) on first use; either way
        its ``last_active`` becomes now."""
        sid = _session_id(session_id)
        events: list[SessionEvent] = []
        with self._lock:
            slot = self._slots.get(sid)
            if slot is not None:
                slot.last_active = self._clock()
                return slot.session
            session = self._factory(sid)
            self._slots[sid] = _Slot(session, self._clock())
            events.append(SessionCreated(sid, session))
            events.extend(self._completed_by(sid))
        self._publish(events)
        return session

    def _completed_by(self, sid: str) -> list[SessionEvent]:
        """004: a session id seen for the first time completes every pending earlier one."""
        if self._mem is None:
            return []
        if not register_session(self._mem, sid):
            return []
        return [SessionCompleted(old, sid) for old in pending_sessions(self._mem, sid)]

    def touch(self, session_id: str) -> bool:
        """Refresh ``last_active`` without creating; False when there is no such session."""
        with self._lock:
            slot = self._slots.get(_session_id(session_id))
            if slot is not None:
                slot.last_active = self._clock()
            return slot is not None

    def evict_idle(self, max_idle_s: float | None = None) -> list[str]:
        """Remove sessions idle for longer than ``max_idle_s`` (default ``idle_s``), announcing
        each (``SessionEvicted``) before it goes. Returns their ids."""
        limit = self.idle_s if max_idle_s is None else max_idle_s
        with self._lock:
            now = self._clock()
            idle = [(sid, slot, now - slot.last_active) for sid, slot in self._slots.items()
                    if now - slot.last_active > limit]
        events: list[SessionEvent] = [SessionEvicted(sid, slot.session, age, "idle")
                                      for sid, slot, age in idle]
        self._publish(events)
        with self._lock:
            for sid, slot, _ in idle:
                if self._slots.get(sid) is slot and now - slot.last_active > limit:
                    del self._slots[sid]  # not if a message revived it meanwhile
        return [sid for sid, _, _ in idle]

    def evict(self, session_id: str) -> bool:
        """End one session now (``SessionEvicted`` with reason "ended"); False if unknown."""
        sid = _session_id(session_id)
        with self._lock:
            slot = self._slots.get(sid)
            if slot is None:
                return False
            age = self._clock() - slot.last_active
        self._publish([SessionEvicted(sid, slot.session, age, "ended")])
        with self._lock:
            if self._slots.get(sid) is slot:
                del self._slots[sid]
        return True

    def last_active(self, session_id: str) -> float | None:
        with self._lock:
            slot = self._slots.get(session_id)
            return slot.last_active if slot is not None else None

    def session_ids(self) -> list[str]:
        with self._lock:
            return list(self._slots)

    def __contains__(self, session_id: object) -> bool:
        with self._lock:
            return session_id in self._slots

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)


def _session_id(value: object) -> str:
    sid = check_label(value, "session_id")
    if sid is None:
        raise InvalidInputError("session_id must be non-empty text")
    return sid

"""Sessions (000 SessionManager: get-or-create, last_active, idle eviction, events) and the
004 consolidation trigger (a new session id completes the earlier unconsolidated ones)."""

from __future__ import annotations

import threading

import pytest

from clawmemory import InvalidInputError, Memory
from clawmemory.core.ingest import mark_session_consolidated, pending_sessions
from clawmemory.history import (
    Conversation,
    History,
    SessionCompleted,
    SessionCreated,
    SessionEvent,
    SessionEvicted,
    SessionManager,
)
from clawmemory.llm.base import Message
from conftest import Clock


class Session:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id


@pytest.fixture
def clock() -> Clock:
    return Clock(start=0.0)


@pytest.fixture
def events() -> list[SessionEvent]:
    return []


@pytest.fixture
def manager(clock: Clock, events: list[SessionEvent]) -> SessionManager[Session]:
    sessions: SessionManager[Session] = SessionManager(Session, clock=clock)
    sessions.subscribe(events.append)
    return sessions


def test_get_creates_a_session_once_and_announces_it(
    manager: SessionManager[Session], events: list[SessionEvent], clock: Clock
) -> None:
    first = manager.get("chat-1")
    clock.advance(30)
    assert manager.get("chat-1") is first
    assert manager.last_active("chat-1") == 30.0
    assert events == [SessionCreated("chat-1", first)]
    assert len(manager) == 1 and "chat-1" in manager and manager.session_ids() == ["chat-1"]


def test_idle_sessions_are_evicted_and_announced_before_removal(
    manager: SessionManager[Session], events: list[SessionEvent], clock: Clock
) -> None:
    present: list[bool] = []
    manager.subscribe(lambda e: present.append(e.session_id in manager)
                      if isinstance(e, SessionEvicted) else None)
    idle = manager.get("idle")
    clock.advance(3000)
    manager.get("busy")
    clock.advance(601)  # idle: 3601 s > 3600; busy: 601 s
    assert manager.evict_idle() == ["idle"]
    assert events[-1] == SessionEvicted("idle", idle, 3601.0, "idle")
    assert present == [True]  # subscribers still see the session while they are told
    assert manager.session_ids() == ["busy"]
    clock.advance(2999)
    assert manager.evict_idle() == []  # busy has been idle 3600 s: not more than 3600
    assert manager.evict_idle(max_idle_s=60) == ["busy"] and len(manager) == 0


def test_a_message_refreshes_last_active(
    manager: SessionManager[Session], clock: Clock
) -> None:
    manager.get("chat")
    clock.advance(3500)
    assert manager.touch("chat") and not manager.touch("unknown")
    clock.advance(3500)
    assert manager.evict_idle() == []
    clock.advance(101)
    assert manager.evict_idle() == ["chat"]


def test_the_idle_limit_comes_from_the_settings(mem: Memory, clock: Clock) -> None:
    cfg = mem.settings.model_copy(update={"history": mem.settings.history.model_copy(
        update={"session_idle_s": 10.0})})
    sessions = SessionManager(Session, mem=Memory(mem.store_backend, cfg), clock=clock)
    assert sessions.idle_s == 10.0
    sessions.get("a")
    clock.advance(11)
    assert sessions.evict_idle() == ["a"]


def test_evict_ends_one_session(
    manager: SessionManager[Session], events: list[SessionEvent], clock: Clock
) -> None:
    s = manager.get("chat")
    clock.advance(5)
    assert manager.evict("chat") and not manager.evict("chat")
    assert events[-1] == SessionEvicted("chat", s, 5.0, "ended")


def test_concurrent_gets_create_each_session_once(clock: Clock) -> None:
    made: list[str] = []
    lock = threading.Lock()

    def factory(sid: str) -> Session:
        with lock:
            made.append(sid)
        return Session(sid)

    sessions = SessionManager(factory, clock=clock)
    got: list[Session] = []

    def work() -> None:
        for i in range(50):
            got.append(sessions.get(f"chat-{i % 5}"))

    workers = [threading.Thread(target=work) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert sorted(made) == [f"chat-{i}" for i in range(5)]
    assert len({id(s) for s in got}) == 5 and len(got) == 400


def test_a_failing_subscriber_does_not_stop_the_others(
    manager: SessionManager[Session], events: list[SessionEvent],
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(event: SessionEvent) -> None:
        raise RuntimeError("subscriber bug")

    def late(event: SessionEvent) -> None:
        events.append(event)

    manager.subscribe(broken)
    unsubscribe_late = manager.subscribe(late)
    manager.get("chat")
    assert len(events) == 2  # both working subscribers heard it
    assert "session event subscriber failed" in caplog.text
    unsubscribe_late()
    manager.get("other")
    assert len(events) == 3


def test_a_subscriber_may_call_the_manager(manager: SessionManager[Session]) -> None:
    manager.subscribe(lambda e: manager.get("companion")
                      if isinstance(e, SessionCreated) and e.session_id == "chat" else None)
    manager.get("chat")
    assert sorted(manager.session_ids()) == ["chat", "companion"]


def test_session_ids_are_checked(manager: SessionManager[Session]) -> None:
    with pytest.raises(InvalidInputError, match="session_id"):
        manager.get("  ")


# --- 004: consolidation trigger -------------------------------------------------------------------
def test_a_new_session_completes_the_earlier_unconsolidated_ones(
    mem: Memory, clock: Clock
) -> None:
    events: list[SessionEvent] = []
    sessions = SessionManager(Session, mem=mem, clock=clock)
    sessions.subscribe(lambda e: events.append(e) if isinstance(e, SessionCompleted) else None)
    sessions.get("s1")
    assert events == []  # nothing earlier
    clock.advance(1)
    sessions.get("s2")
    assert events == [SessionCompleted("s1", "s2")]
    assert mark_session_consolidated(mem, "s1")
    clock.advance(1)
    sessions.get("s3")
    assert events[1:] == [SessionCompleted("s2", "s3")]
    assert pending_sessions(mem) == ["s2", "s3"]
    # A known session coming back (after eviction) is not new: it completes nothing.
    sessions.evict("s1")
    sessions.get("s1")
    assert len(events) == 2


def test_conversations_as_sessions_store_their_summary_when_evicted(
    mem: Memory, clock: Clock
) -> None:
    """How an agent wires it: sessions are conversations; ending one stores its summary."""
    with History(mem, summarizer=lambda ms: f"{len(ms)} messages about the garden.") as history:
        sessions: SessionManager[Conversation] = SessionManager(
            lambda sid: history.conversation(f"cli:{sid}:", session_id=sid), clock=clock)
        ended: list[str | None] = []
        sessions.subscribe(lambda e: ended.append(e.session.end())  # type: ignore[attr-defined]
                           if isinstance(e, SessionEvicted) else None)
        sessions.get("s1").append(Message("user", "The tomatoes are ripe."))
        clock.advance(3601)
        assert sessions.evict_idle() == ["s1"]
    assert ended[0] is not None
    assert mem.get(ended[0]).content == "1 messages about the garden."

"""Agents by session (000 ``SessionManager``) with 004's consolidation on session switch.

``AgentSessions`` gives each session id its ``Agent`` (created on first use, evicted after
``history.session_idle_s`` idle, 000), all sharing one ``History`` and LLM. It listens to the
manager's events:

- ``SessionEvicted`` (idle, or ended by ``end(session_id)``): the agent stores the session's
  summary as a memory (003, ``agent.summary_on_end``); a session *ended* (the user switched
  away) is also queued for consolidation;
- ``SessionCompleted`` (a session id never seen before arrived, 004): each earlier session
  still pending that no live agent serves is queued for consolidation. A live one is left
  alone: it is still going on (000 serves many chats at once), and the nightly job takes it
  once idle.

Consolidation runs in one background thread (it asks a model), each session as a recorded
``consolidate`` job run (``clawmem runs``), so a failure is recorded and seen: ``runs`` lists
them, ``wait()`` blocks until the queue is done, and a failed run is also logged as a warning
(``log_failures=False``: only collected, for a caller that reports them itself).

A model that cannot be reached (``LLMUnavailableError``: refused, unknown host, timed out) fails
fast for the rest of the turn: once the answer, a session-end summary or a consolidation met it,
the sessions still queued are not tried (each would wait out the same retries), they stay
pending and are listed in ``untried``; the next turn (``process``, ``end``) tries again.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from clawmemory.agent.loop import Agent, AgentReply, agent_history
from clawmemory.backends.base import RunRecord
from clawmemory.cognition.steps import consolidate_these
from clawmemory.core.jobs import JobContext, run_job
from clawmemory.errors import ClawMemoryError, LLMUnavailableError
from clawmemory.history import (
    SessionCompleted,
    SessionEvent,
    SessionEvicted,
    SessionManager,
    persistence_key,
)
from clawmemory.history.writer import wait_drained
from clawmemory.llm.base import LLM

if TYPE_CHECKING:
    from clawmemory.core.jobs import JobContext
    from clawmemory.core.local import LocalMemory
    from clawmemory.memory import Memory

__all__ = ["AgentSessions", "ConsolidationWorker"]

log = logging.getLogger("clawmemory.agent")


class ConsolidationWorker:
    """Consolidates the sessions it is given, each as a recorded job run: in one background
    thread, or (``background=False``) in the thread that calls ``wait``, after whatever it
    was doing (a command line answers first, then consolidates)."""

    def __init__(self, mem: Memory, llm: LLM, *, background: bool = True,
                 log_failures: bool = True) -> None:
        self.mem = mem
        self.llm = llm
        self.background = background
        self.log_failures = log_failures
        self.runs: list[RunRecord] = []
        self.untried: list[str] = []  # dropped while the model was unavailable; still pending
        self._down: LLMUnavailableError | None = None
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, session_id: str) -> bool:
        """Queue a session; False when it was queued before (and did not fail)."""
        with self._lock:
            if session_id in self._seen:
                return False
            self._seen.add(session_id)
            if self._thread is None and self.background:
                self._thread = threading.Thread(target=self._work, daemon=True,
                                                name="clawmemory-consolidation")
                self._thread.start()
        self._queue.put(session_id)
        return True

    def _work(self) -> None:
        while (session_id := self._queue.get()) is not None:
            try:
                self._consolidate(session_id)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def hold(self, exc: LLMUnavailableError) -> None:
        """The model is unavailable for the rest of this turn: queued sessions are not tried."""
        self._down = exc

    def reset(self) -> None:
        """A new turn: the model may be back."""
        self._down = None

    def take_untried(self) -> list[str]:
        """``untried`` since the last call, emptied."""
        with self._lock:
            untried, self.untried = self.untried, []
        return untried

    def _step(self, session_id: str) -> Callable[[LocalMemory, JobContext], dict[str, int]]:
        """The consolidate step for one session, holding the queue when the model is down."""
        step = consolidate_these([session_id])

        def consolidate(mem: LocalMemory, ctx: JobContext) -> dict[str, int]:
            try:
                return step(mem, ctx)
            except LLMUnavailableError as exc:
                self.hold(exc)
                raise

        return consolidate

    def _consolidate(self, session_id: str) -> None:
        if self._down is not None:
            with self._lock:
                self._seen.discard(session_id)  # still pending: a later switch tries again
                self.untried.append(session_id)
            return
        ctx = JobContext(llm=self.llm, steps={"consolidate": self._step(session_id)})
        try:
            run = run_job(self.mem, "consolidate", ctx)
        except Exception:  # a bug: run_job recorded it; the worker must go on
            log.exception("consolidation of session %s failed", session_id)
            with self._lock:
                self._seen.discard(session_id)
            return
        with self._lock:
            self.runs.append(run)
            if run.outcome == "failed":
                self._seen.discard(session_id)  # a later switch may try again
        if run.outcome == "failed" and self.log_failures:
            log.warning("consolidation of session %s failed: %s", session_id, run.message)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until every queued session is done; False if ``timeout`` passed first."""
        if not self.background:
            while not self._queue.empty():
                session_id = self._queue.get()
                try:
                    if session_id is not None:
                        self._consolidate(session_id)
                finally:
                    self._queue.task_done()
            return True
        return wait_drained(self._queue, timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Finish the queue and stop the thread."""
        done = self.wait(timeout)
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)
        return done


class AgentSessions:
    """Agents by session id, idle eviction, session events and consolidation on switch."""

    def __init__(
        self,
        mem: Memory,
        llm: LLM,
        *,
        channel: str = "agent",
        clock: Callable[[], float] = time.monotonic,
        background: bool = True,
        log_failures: bool = True,
    ) -> None:
        """``channel``: the first part of each conversation's persistence key (001),
        ``<channel>:<session_id>:``. ``clock``: the idle clock (000 ``last_active``).
        ``background=False``: consolidations wait for ``wait()`` and run in its thread.
        ``log_failures=False``: failed consolidations and session-end summaries are only
        collected (``runs``, ``problems``), not also logged: the caller says each once."""
        self.mem = mem
        self.llm = llm
        self.channel = channel
        self.log_failures = log_failures
        self.history = agent_history(mem, llm)
        self.worker = ConsolidationWorker(mem, llm, background=background,
                                          log_failures=log_failures)
        self.problems: list[str] = []  # failures of session-end summaries, one line each
        self.manager: SessionManager[Agent] = SessionManager(self._new_agent, mem=mem,
                                                             clock=clock)
        self.manager.subscribe(self._on_event)

    def _new_agent(self, session_id: str) -> Agent:
        return Agent(self.mem, self.llm, session_id=session_id, history=self.history,
                     key=persistence_key(self.channel, session_id))

    def agent(self, session_id: str) -> Agent:
        """The session's agent (created, and announced, on first use)."""
        return self.manager.get(session_id)

    def process(self, session_id: str, text: str) -> AgentReply:
        """Answer a message of a session (000: the session's agent processes it). A model
        that cannot be reached also holds this turn's consolidations (module docstring)."""
        self.worker.reset()
        try:
            return self.agent(session_id).process(text)
        except LLMUnavailableError as exc:
            self.worker.hold(exc)
            raise

    def end(self, session_id: str) -> bool:
        """End a session now (the user switched away): its summary is stored and it is queued
        for consolidation. False when no agent serves it."""
        self.worker.reset()
        return self.manager.evict(session_id)

    def evict_idle(self, max_idle_s: float | None = None) -> list[str]:
        """000 ``evict_idle``: remove sessions idle for longer than ``history.session_idle_s``."""
        return self.manager.evict_idle(max_idle_s)

    def subscribe(self, callback: Callable[[SessionEvent], None]) -> Callable[[], None]:
        """Hear the session events too (``SessionCreated``, ``SessionEvicted``,
        ``SessionCompleted``); returns the unsubscribe call."""
        return self.manager.subscribe(callback)

    @property
    def runs(self) -> list[RunRecord]:
        """The consolidation runs done so far (each also recorded in the store)."""
        return list(self.worker.runs)

    def take_untried(self) -> list[str]:
        """The sessions not consolidated because the model was unavailable since the last
        call (they stay pending), and forget them."""
        return self.worker.take_untried()

    def _on_event(self, event: SessionEvent) -> None:
        consolidate = self.mem.settings.agent.consolidate_on_switch
        if isinstance(event, SessionEvicted) and isinstance(event.session, Agent):
            self._end(event.session)
            if consolidate and event.reason == "ended":
                self.worker.submit(event.session_id)
        elif (isinstance(event, SessionCompleted) and consolidate
              and event.session_id not in self.manager):
            self.worker.submit(event.session_id)

    def _end(self, agent: Agent) -> None:
        try:
            agent.end()
        except ClawMemoryError as exc:
            if isinstance(exc, LLMUnavailableError):
                self.worker.hold(exc)
            line = f"session {agent.session_id}: summary at session end failed: {exc}"
            if self.log_failures:
                log.warning("%s", line)
            self.problems.append(line)
        agent.close()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the queued consolidations are done."""
        return self.worker.wait(timeout)

    def close(self, timeout: float | None = None) -> None:
        """Finish queued consolidations, write queued messages, stop the threads. Live
        sessions are not ended (a later process restores them from the history)."""
        self.worker.close(timeout)
        self.history.close(timeout)

    def __enter__(self) -> AgentSessions:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

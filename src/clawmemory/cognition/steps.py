"""The cognition steps of the maintenance jobs (``core.jobs.JobContext.steps``).

``default_steps()`` is what a ``JobContext`` installs unless told otherwise: the nightly
``consolidate`` job consolidates every session due (``consolidation.sessions_due``) and the
weekly ``reflect`` job writes the reflection when 004's guards allow (a run the guards stop is
recorded as ``skipped`` with the reason). ``consolidate_these(ids)`` is the step the agent runs
when a session switch completes sessions (004), so those runs are recorded like the nightly
ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from clawmemory.cognition.consolidation import consolidate_pending, consolidate_sessions
from clawmemory.cognition.reflection import NotDue, reflect
from clawmemory.core.jobs import Skipped
from clawmemory.errors import LLMNotConfiguredError

if TYPE_CHECKING:
    from clawmemory.core.jobs import JobContext
    from clawmemory.core.local import LocalMemory
    from clawmemory.llm.base import LLM

__all__ = ["consolidate_step", "consolidate_these", "default_steps", "reflect_step"]

Counts = dict[str, int]
Step = Callable[["LocalMemory", "JobContext"], Counts]


def _llm(ctx: JobContext) -> LLM:
    if ctx.llm is None:  # run_job skips LLM jobs without one; a direct call must not crash
        raise LLMNotConfiguredError("this step needs an LLM ([llm] provider)")
    return ctx.llm


def consolidate_step(mem: LocalMemory, ctx: JobContext) -> Counts:
    """Nightly 004 consolidation of every session due."""
    return consolidate_pending(mem, _llm(ctx)).counts()


def consolidate_these(session_ids: Sequence[str]) -> Step:
    """A consolidate step for the given sessions only (the session-switch trigger)."""
    chosen = list(session_ids)

    def consolidate_switched(mem: LocalMemory, ctx: JobContext) -> Counts:
        return consolidate_sessions(mem, _llm(ctx), chosen).counts()

    return consolidate_switched


def reflect_step(mem: LocalMemory, ctx: JobContext) -> Counts:
    """Weekly 004 reflection; skipped (with the reason) when its guards say no."""
    try:
        return reflect(mem, _llm(ctx)).counts()
    except NotDue as exc:
        raise Skipped(str(exc)) from None


def default_steps() -> dict[str, Step]:
    return {"consolidate": consolidate_step, "reflect": reflect_step}

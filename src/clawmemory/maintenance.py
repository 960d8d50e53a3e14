"""Deprecated: moved to ``clawmemory.core.jobs``. Kept for one release."""

from __future__ import annotations

import warnings

from clawmemory.core.jobs import (
    JOBS,
    NO_LLM,
    NO_LLM_HINT,
    Job,
    JobContext,
    JobPreview,
    RunRecord,
    ScheduledJob,
    Scheduler,
    Skipped,
    Step,
    crontab_trigger,
    find_job,
    install_default_steps,
    no_llm,
    preview_all,
    preview_job,
    run_all,
    run_job,
)

__all__ = [
    "JOBS",
    "NO_LLM",
    "NO_LLM_HINT",
    "Job",
    "JobContext",
    "JobPreview",
    "RunRecord",
    "ScheduledJob",
    "Scheduler",
    "Skipped",
    "Step",
    "crontab_trigger",
    "find_job",
    "install_default_steps",
    "no_llm",
    "preview_all",
    "preview_job",
    "run_all",
    "run_job",
]

warnings.warn(f"{__name__} is deprecated and goes in the next release;"
              " use clawmemory.core.jobs", DeprecationWarning, stacklevel=2)

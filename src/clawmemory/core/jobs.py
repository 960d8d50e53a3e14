"""Scheduled maintenance (003, 004): a table of jobs, a runner that records every run, and a
``Scheduler`` (APScheduler 3 cron triggers) for ``clawmem daemon``.

=============  =============  =========  ====================================================
job            default cron   needs LLM  what it does
=============  =============  =========  ====================================================
enrich         0 2 * * *      no [1]     004 accurate NER for memories with few entities
consolidate    0 3 * * *      yes        004 session consolidation (the LLM layer plugs in)
decay          0 4 * * *      no         000 hygiene + idle purge, 004 decay, 003 pruning [2]
reflect        0 3 * * 0      yes        004 weekly reflection (the LLM layer plugs in)
repair         15 * * * *     no         embed queued memories (ADR 0013), rebuild missing
                                         entity links and turn-to-turn chains (repair.py);
                                         PostgreSQL: purge forgotten text from its files
=============  =============  =========  ====================================================

[1] enrichment needs spaCy or an LLM; with neither it is skipped and says so.
[2] by default nothing is deleted: purged and pruned memories move to the archive, where they
    stay searchable and restorable (``lifecycle.py`` has the table of what each step does).

``preview_job`` / ``preview_all`` (``clawmem maintain --dry-run``) show what a run would do,
memory by memory, and write nothing: not even the run record.

Every run, whatever its outcome (ok, skipped, failed), is recorded in the store's
``maintenance_runs`` with its start, end, counts and a one-line message. Cron expressions come
from ``settings.maintenance`` (``CLAWMEM_MAINTENANCE__DECAY="30 4 * * *"``).

The LLM: ``JobContext.llm`` is the configured ``LLM`` (``make_llm(settings.llm)``; built by the
runner when no context is given), and ``JobContext.steps`` maps a job name to the function that
does its LLM work. With no LLM configured the jobs that need one are recorded as "skipped: no
LLM configured (...how to configure one...)" and nothing else breaks (001: degrade gracefully);
a misconfigured one (a key variable unset) fails them with the fix. Each run's LLM calls are
metered: ``llm_calls``, ``prompt_tokens`` and ``completion_tokens`` (``llm_failures`` when calls
failed) join the run's counts, whatever its outcome. The steps installed by default are
``clawmemory.cognition.steps.default_steps()`` (004 consolidation and reflection): the
composition root installs them (``install_default_steps``), as the core does not import the
cognition layer above it.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from clawmemory.backends.base import RunRecord
from clawmemory.core import lifecycle
from clawmemory.entities import accurate_extra, make_pipeline
from clawmemory.entities.base import EntityIndex
from clawmemory.entities.pipeline import NERPipeline
from clawmemory.entities.spacy_provider import spacy_missing
from clawmemory.errors import ClawMemoryError, ConfigError, InvalidInputError
from clawmemory.llm.base import LLM
from clawmemory.llm.factory import close_llm, make_llm
from clawmemory.llm.usage import MeteredLLM
from clawmemory.model import Filter, MemoryRecord

if TYPE_CHECKING:
    from clawmemory.config import Settings
    from clawmemory.core.local import LocalMemory

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

log = logging.getLogger("clawmemory")

NO_LLM = "skipped: no LLM configured"
NO_LLM_HINT = "set [llm] provider in the config file or CLAWMEM_LLM__PROVIDER; see docs/llm.md"
ENRICHED_AT = "enriched_at"  # metadata key (004 attributes.enriched_at)
ENRICH_KINDS = ("fact", "episode")  # 004 get_memories_for_entity_enrichment(kinds=...)

Counts = dict[str, int]


class Skipped(Exception):  # noqa: N818 - it is an outcome, not an error
    """Raised by a job that cannot run here; the message says why (starts with "skipped:")."""


Step = Callable[["LocalMemory", "JobContext"], Counts]
_step_loaders: list[Callable[[], Mapping[str, Step]]] = []


def install_default_steps(load: Callable[[], Mapping[str, Step]]) -> None:
    """Set what gives the LLM steps a ``JobContext`` gets unless told otherwise (called when a
    context is made). The cognition layer sits above the core, so the core does not import
    it: the composition root (``clawmemory.memory``, imported with ``clawmemory``) installs
    ``cognition.steps.default_steps`` here."""
    _step_loaders[:] = [load]


def _cognition_steps() -> dict[str, Step]:
    """The LLM steps installed by default: 004 consolidation and reflection."""
    return {name: step for load in _step_loaders for name, step in load().items()}


@dataclass(frozen=True)
class JobContext:
    """What a run may use beyond the memory: the random source (seed it for exact tests), the
    LLM (None = not configured), the LLM steps by job name, and ``llm_problem``: why the
    configured LLM could not be built (jobs that would use it fail with this message)."""

    rng: random.Random | None = None
    llm: LLM | None = None
    steps: Mapping[str, Step] = field(
        default_factory=_cognition_steps)
    llm_problem: str | None = None

    @classmethod
    def from_settings(cls, settings: Settings, **fields: Any) -> JobContext:
        """The context ``settings`` describe: their ``[llm]`` built with ``make_llm``. Close it
        with ``close()`` when done."""
        try:
            return cls(llm=make_llm(settings.llm), **fields)
        except ConfigError as exc:
            return cls(llm_problem=str(exc), **fields)

    def close(self) -> None:
        close_llm(self.llm)


def no_llm(reason: str = "") -> str:
    """The message of a run skipped for want of an LLM."""
    return f"{NO_LLM}{reason} ({NO_LLM_HINT})"


def _no_accurate_ner() -> str:
    """Why enrichment is skipped: no LLM, and what spaCy lacks (spaCy itself or only its
    model), with both fixes."""
    missing = spacy_missing()
    if missing is None:  # not reached: an installed spaCy joins the accurate pipeline
        return no_llm()
    what, fix = missing
    return f"{NO_LLM} and {what} ({NO_LLM_HINT}; or {fix})"


def _usable_llm(ctx: JobContext) -> LLM | None:
    """The context's LLM; a misconfigured one fails the job with its fix."""
    if ctx.llm_problem is not None:
        raise ConfigError(ctx.llm_problem)
    return ctx.llm


JobFn = Callable[["LocalMemory", JobContext], Counts]


PreviewFn = Callable[["LocalMemory", JobContext], lifecycle.Report]


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    needs_llm: bool  # skipped with NO_LLM when JobContext.llm is None
    run: JobFn
    description: str
    preview: PreviewFn | None = None  # what a run would do, writing nothing; None: cannot tell


@dataclass(frozen=True, slots=True)
class JobPreview:
    """What one job would do now (``preview_job``): its outcome and counts as a run would
    record them, and each memory it would change with the reason."""

    namespace: str
    job: str
    outcome: str  # ok | skipped | failed, as a run would end
    counts: Counts
    changes: tuple[lifecycle.Change, ...]
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "job": self.job, "outcome": self.outcome,
                "counts": dict(self.counts), "message": self.message,
                "changes": [c.to_dict() for c in self.changes]}


# --- the jobs ------------------------------------------------------------------------------------
def _decay(mem: LocalMemory, ctx: JobContext) -> Counts:
    return lifecycle.run_decay(mem, ctx.rng).counts


def _preview_decay(mem: LocalMemory, ctx: JobContext) -> lifecycle.Report:
    return lifecycle.run_decay(mem, ctx.rng, dry_run=True)


def _enrich_candidates(
    mem: LocalMemory, ctx: JobContext
) -> tuple[NERPipeline, EntityIndex, list[MemoryRecord]]:
    """The accurate NER pipeline, the entity index and the memories a run would enrich."""
    layer = mem.parts.entities.layer()
    if layer is None:
        raise Skipped("skipped: entities are off for this store")
    accurate = make_pipeline("accurate", llm=_usable_llm(ctx))
    if not accurate_extra(accurate):
        raise Skipped(_no_accurate_ner())
    index = layer.entity_index
    cfg = mem.settings.maintenance
    fresh = [r for r in lifecycle.scan(mem, Filter(kinds=ENRICH_KINDS))
             if ENRICHED_AT not in r.metadata]
    linked = index.entities_of(mem.namespace, [r.id for r in fresh])
    chosen = [r for r in fresh if len(linked[r.id]) <= cfg.enrich_max_entities]
    return accurate, index, chosen[: cfg.enrich_batch]


def _preview_enrich(mem: LocalMemory, ctx: JobContext) -> lifecycle.Report:
    _, _, chosen = _enrich_candidates(mem, ctx)
    most = mem.settings.maintenance.enrich_max_entities
    why = f"at most {most} entity links and never enriched: entities extracted again"
    return lifecycle.Report({"enriched": len(chosen)},
                            [lifecycle.Change("enrich", "enrich", r, why) for r in chosen])


def _enrich(mem: LocalMemory, ctx: JobContext) -> Counts:
    """004: re-extract entities with the accurate strategy (spaCy and/or LLM) for memories that
    have few entity links and were never enriched, then stamp ``metadata["enriched_at"]``.
    Adds entity links; changes no memory's text and removes nothing."""
    accurate, index, chosen = _enrich_candidates(mem, ctx)
    now, links, stamped = mem.clock(), 0, []
    try:
        for r in chosen:
            # strict: a failing LLM fails the run; the memory is not stamped as enriched
            found = accurate.extract(r.content, strict=True)
            links += len(index.link_mentions(mem.namespace, r.id, found))
            stamped.append(r.evolve(metadata={**r.metadata, ENRICHED_AT: now}))
    except ClawMemoryError as exc:
        mem.store_backend.replace_many(stamped)  # keep what was done before the failure
        raise type(exc)(f"{exc} (enriched {len(stamped)} memories before the failure)") from exc
    mem.store_backend.replace_many(stamped)
    return {"enriched": len(stamped), "entity_links": links}


def _repair(mem: LocalMemory, ctx: JobContext) -> Counts:
    """Derived rows (repair.py); on PostgreSQL also the purge of forgotten text from the
    server's files, when a forget asked for one (backends/postgres/purge.py)."""
    counts = mem.repair()
    purge = getattr(mem.store_backend, "purge_forgotten", None)
    return {**counts, **purge()} if callable(purge) else counts


def _preview_repair(mem: LocalMemory, ctx: JobContext) -> lifecycle.Report:
    """What repair will embed; the links it rebuilds are found by the run itself (it reads
    each session's turns), and none of them changes a memory. On PostgreSQL: whether it will
    purge forgotten text from the server's files (``purge_pending``)."""
    counts = {"vectors_queued": mem.parts.vectors.queued(None)}
    pending = getattr(mem.store_backend, "purge_pending", None)
    if callable(pending) and pending():
        counts["purge_pending"] = 1
    return lifecycle.Report(counts)


def _llm_step(name: str) -> JobFn:
    def run(mem: LocalMemory, ctx: JobContext) -> Counts:
        step = ctx.steps.get(name)
        if step is None:
            raise Skipped(f"skipped: no {name} step is installed for the configured LLM")
        return step(mem, ctx)

    return run


JOBS: Mapping[str, Job] = {
    j.name: j
    for j in (
        Job("enrich", False, _enrich, "Entity enrichment with accurate NER (004): adds entity"
            " links.", _preview_enrich),
        Job("consolidate", True, _llm_step("consolidate"),
            "Session consolidation into facts (004)."),
        Job("decay", False, _decay,
            "Hygiene and idle purges (000) and size pruning (003) move memories to the archive"
            " (purge = \"delete\": the purges delete); confidence decay (004) lowers"
            " confidence, invalidating (not deleting) under the threshold.", _preview_decay),
        Job("reflect", True, _llm_step("reflect"), "Weekly reflection (004)."),
        Job("repair", False, _repair,
            "Embed queued memories; rebuild missing entity links and turn chains.",
            _preview_repair),
    )
}


def find_job(name: str) -> Job:
    found = JOBS.get(str(name).strip().lower())
    if found is None:
        raise InvalidInputError(f"unknown job {name!r} (expected one of: {', '.join(JOBS)})")
    return found


# --- running -------------------------------------------------------------------------------------
def _summary(counts: Counts) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "nothing to do"


def run_job(mem: LocalMemory, name: str, ctx: JobContext | None = None) -> RunRecord:
    """Run one job now on ``mem``'s namespace and record the run. ``ctx`` None: the context the
    settings describe (their ``[llm]``), built and closed here. A job that cannot run here is
    recorded as ``skipped``; one that fails with a clawmemory error as ``failed`` (returned, not
    raised, so the other jobs still run). Any other exception is a bug: it is recorded as
    ``failed`` and raised. The run's LLM usage joins its counts whatever the outcome."""
    chosen = find_job(name)
    with _context(mem, ctx) as context:
        return _run(mem, chosen, context)


def _run(mem: LocalMemory, chosen: Job, context: JobContext) -> RunRecord:
    meter = MeteredLLM(context.llm) if context.llm is not None else None
    if meter is not None:
        context = replace(context, llm=meter)
    started = mem.clock()
    counts: Counts = {}
    bug: Exception | None = None
    try:
        if chosen.needs_llm and _usable_llm(context) is None:
            raise Skipped(no_llm())
        counts = chosen.run(mem, context)
        outcome, message = "ok", ""
    except Skipped as exc:
        outcome, message = "skipped", str(exc)
    except ClawMemoryError as exc:
        outcome, message = "failed", str(exc)
    except Exception as exc:
        outcome, message, bug = "failed", f"internal error: {type(exc).__name__}: {exc}", exc
    if meter is not None:
        counts = {**counts, **meter.counts()}
    if outcome == "ok":
        message = _summary(counts)
    run = mem.store_backend.record_run(
        mem.namespace, chosen.name, started, mem.clock(), outcome, counts, message
    )
    if bug is not None:
        raise bug
    return run


def run_all(mem: LocalMemory, ctx: JobContext | None = None) -> list[RunRecord]:
    """Every job once, in table order (enrichment before consolidation, as 004 wants)."""
    with _context(mem, ctx) as context:
        return [_run(mem, job, context) for job in JOBS.values()]


@contextmanager
def _context(mem: LocalMemory, ctx: JobContext | None) -> Iterator[JobContext]:
    """``ctx``, or one built from ``mem``'s settings and closed afterwards."""
    if ctx is not None:
        yield ctx
        return
    built = JobContext.from_settings(mem.settings)
    try:
        yield built
    finally:
        built.close()


def preview_job(mem: LocalMemory, name: str, ctx: JobContext | None = None) -> JobPreview:
    """What ``run_job`` would do now, memory by memory, without writing anything (no run is
    recorded). ``ctx`` None: the context the settings describe (their ``[llm]``), as for a
    run. An LLM job is never run for a preview: what it does depends on the model's answers,
    so it says which model a run would ask. A misconfigured LLM is the ``failed`` outcome a
    run would record, with its fix."""
    chosen = find_job(name)
    with _context(mem, ctx) as context:
        return _preview(mem, chosen, context)


def _preview(mem: LocalMemory, chosen: Job, context: JobContext) -> JobPreview:
    report = lifecycle.Report()
    try:
        if chosen.needs_llm:
            raise Skipped(_llm_preview(chosen.name, context))
        if chosen.preview is None:
            raise Skipped(f"skipped: {chosen.name} cannot be previewed")
        report = chosen.preview(mem, context)
        outcome, message = "ok", _summary(report.counts)
    except Skipped as exc:
        outcome, message = "skipped", str(exc)
    except ConfigError as exc:  # the LLM the settings name cannot be built: a run fails so
        outcome, message = "failed", str(exc)
    return JobPreview(mem.namespace, chosen.name, outcome, report.counts,
                      tuple(report.changes), message)


_LLM_WORK = {  # what an LLM job asks the model to do (docs/llm.md)
    "consolidate": "extract the facts of finished sessions",
    "reflect": "write the week's reflection from its facts and episodes",
}


def _llm_preview(name: str, context: JobContext) -> str:
    """The preview of an LLM job: why it would be skipped, or what a run would ask of which
    model (a preview never calls it)."""
    llm = _usable_llm(context)  # ConfigError: misconfigured
    if llm is None:
        return no_llm()
    if name not in context.steps:
        return f"skipped: no {name} step is installed for the configured LLM"
    model = getattr(llm, "model", "") or "the configured model"
    work = _LLM_WORK.get(name, f"run its {name} step")
    return (f"skipped: not previewed: a run would ask the configured LLM ({model}) to {work};"
            " what it changes depends on the answers, so a preview does not call it")


def preview_all(mem: LocalMemory, ctx: JobContext | None = None) -> list[JobPreview]:
    """``preview_job`` for every job, in table order (one LLM context for all of them)."""
    with _context(mem, ctx) as context:
        return [_preview(mem, job, context) for job in JOBS.values()]


# --- scheduling ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ScheduledJob:
    name: str
    cron: str
    next_run: datetime | None


class Scheduler:
    """Runs the jobs on their cron schedules with APScheduler 3, one job at a time, for one
    namespace or (``namespaces=None``) for every namespace the store has when the job fires.

    ``start()`` returns at once (a background thread runs the jobs); ``run_forever(stop)`` blocks
    until ``stop`` is set, then shuts down. A job that raises is logged; the schedule goes on.
    """

    def __init__(
        self,
        mem: LocalMemory,
        *,
        namespaces: Sequence[str] | None = None,
        ctx: JobContext | None = None,
    ) -> None:
        self.mem = mem
        self.namespaces = None if namespaces is None else list(namespaces)
        self._owns_ctx = ctx is None  # built from the settings here: closed on shutdown
        self.ctx = ctx or JobContext.from_settings(mem.settings)
        self._scheduler = _background_scheduler(mem.settings.maintenance.timezone)
        self.crons: dict[str, str] = {}
        if mem.settings.maintenance.enabled:
            for name in JOBS:
                self._add(name, str(getattr(mem.settings.maintenance, name)).strip())

    def _add(self, name: str, cron: str) -> None:
        if not cron:
            return  # "" leaves this job unscheduled
        try:
            trigger = crontab_trigger(cron, self._scheduler.timezone)
        except ValueError as exc:
            raise ConfigError(f"invalid setting maintenance.{name}: {cron!r}: {exc}") from exc
        # One worker and coalescing: a missed or overlapping firing runs once, never in parallel.
        self._scheduler.add_job(self.fire, trigger, args=[name], id=name, name=name,
                                coalesce=True, max_instances=1, misfire_grace_time=3600)
        self.crons[name] = cron

    def jobs(self) -> list[ScheduledJob]:
        """The scheduled jobs in table order and when each fires next."""
        now = datetime.now(self._scheduler.timezone)
        return [ScheduledJob(j.id, self.crons[j.id], j.trigger.get_next_fire_time(None, now))
                for j in sorted(self._scheduler.get_jobs(), key=lambda j: list(JOBS).index(j.id))]

    def trigger(self, name: str) -> Any:
        """The APScheduler trigger of a scheduled job (for inspection)."""
        found = self._scheduler.get_job(name)
        if found is None:
            raise InvalidInputError(f"job {name!r} is not scheduled")
        return found.trigger

    def fire(self, name: str) -> list[RunRecord]:
        """What the scheduler calls: run ``name`` in each namespace, logging instead of raising."""
        names = self.namespaces if self.namespaces is not None else (
            self.mem.store_backend.namespaces())
        done = []
        for ns in names:
            try:
                run = run_job(self.mem.with_namespace(ns), name, self.ctx)
            except Exception:
                log.exception("maintenance job %s failed in namespace %r", name, ns)
                continue
            log.info("maintenance %s in %r: %s (%s)", name, ns, run.outcome, run.message)
            done.append(run)
        return done

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self, wait: bool = True) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=wait)
        if self._owns_ctx:
            self.ctx.close()

    def run_forever(self, stop: threading.Event) -> None:
        """Run the schedule until ``stop`` is set (by a signal handler, say)."""
        self.start()
        try:
            while not stop.wait(1.0):
                pass
        finally:
            self.shutdown()


_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # crontab numbering: 0 = Sunday


def crontab_trigger(cron: str, timezone: Any) -> Any:
    """An APScheduler ``CronTrigger`` for a five-field crontab expression.

    Not ``CronTrigger.from_crontab``: APScheduler 3 numbers weekdays from Monday (0 = Monday)
    and passes crontab's numbers through, so 004's weekly ``0 3 * * 0`` would fire on Mondays.
    The weekday field is translated to day names first. As in APScheduler, a restricted
    day-of-month and a restricted weekday must both match (cron would accept either)."""
    from apscheduler.triggers.cron import CronTrigger

    fields = cron.split()
    if len(fields) != 5:
        raise ValueError(f"expected 5 fields (minute hour day month weekday), got {len(fields)}")
    minute, hour, day, month, weekday = fields
    return CronTrigger(minute=minute, hour=hour, day=day, month=month,
                       day_of_week=_weekday_names(weekday), timezone=timezone)


def _weekday_names(field: str) -> str:
    """Crontab's weekday field (numbers 0-7, 0 and 7 = Sunday; sun..sat; ranges, lists, steps)
    as APScheduler day names."""
    if field == "*":
        return field
    days: set[int] = set()
    for part in field.lower().split(","):
        span, _, step = part.partition("/")
        first, _, last = span.partition("-")
        lo = 0 if span == "*" else _weekday(first)
        hi = 6 if span == "*" else _weekday(last) if last else 6 if step else lo
        if hi < lo or (step and not step.isdigit()) or step == "0":
            raise ValueError(f"bad weekday field {field!r}")
        days.update(d % 7 for d in range(lo, hi + 1, int(step or 1)))
    return ",".join(_WEEKDAYS[d] for d in sorted(days))


def _weekday(token: str) -> int:
    if token.isdigit() and 0 <= int(token) <= 7:
        return int(token)
    if token in _WEEKDAYS:  # cron takes the first three letters of English day names
        return _WEEKDAYS.index(token)
    raise ValueError(f"bad weekday {token!r}")


def _background_scheduler(timezone: str | None) -> Any:
    try:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler
    except ImportError as exc:
        raise ConfigError(
            "scheduled maintenance needs APScheduler 3: pip install 'clawmemory[scheduler]'"
        ) from exc
    options: dict[str, Any] = {"executors": {"default": ThreadPoolExecutor(1)}}
    if timezone:
        options["timezone"] = timezone
    try:
        return BackgroundScheduler(**options)
    except Exception as exc:  # an unknown time zone name
        raise ConfigError(f"invalid setting maintenance.timezone: {timezone!r}: {exc}") from exc

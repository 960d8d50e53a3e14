"""``clawmem maintain``, ``clawmem daemon`` and ``clawmem runs``: scheduled maintenance from the
command line. ``register(app)`` adds them to the ``clawmem`` app; they reuse ``cli.py``'s global
options, output (``--json``) and error boundary, so they behave like every other command.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clawmemory.engine import Memory
from clawmemory.interfaces.cli import (
    EXIT_FAILED,
    _console,
    _emit,
    _globals,
    _guarded,
    _line,
    _open,
    _print,
    _print_json,
)
from clawmemory.maintenance import JOBS, ScheduledJob, Scheduler, run_all, run_job
from clawmemory.store.base import RunRecord

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = ["register"]

ALL = "all"
_JOB_NAMES = ", ".join(JOBS)

AllNamespacesOpt = Annotated[bool, typer.Option(
    "--all-namespaces", help="Every namespace in the store, not just the selected one.")]


COMMANDS = ("maintain", "daemon", "runs")


# --- rendering -----------------------------------------------------------------------------------
def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _runs_table(runs: Sequence[RunRecord]) -> Table:
    from rich.table import Table
    from rich.text import Text

    several = len({r.namespace for r in runs}) > 1
    table = Table(title_justify="left")
    for column in ("namespace", "job", "outcome", "started (UTC)", "took", "result")[
            0 if several else 1:]:
        table.add_column(column, no_wrap=column != "result")
    styles = {"ok": "green", "skipped": "yellow", "failed": "red"}
    for r in runs:
        cells: list[RenderableType] = [
            r.job, Text(r.outcome, style=styles.get(r.outcome, "")), _when(r.started_at),
            f"{r.finished_at - r.started_at:.1f}s", Text(r.message)]
        table.add_row(*([r.namespace] if several else []), *cells)
    return table


def _schedule_table(jobs: Sequence[ScheduledJob]) -> Table:
    from rich.table import Table

    table = Table(title="maintenance schedule", title_justify="left")
    for column in ("job", "cron", "next run", "what it does"):
        table.add_column(column)
    for j in jobs:
        next_run = j.next_run.isoformat(timespec="minutes") if j.next_run else "-"
        table.add_row(j.name, j.cron, next_run, JOBS[j.name].description)
    return table


def _render_runs(runs: Sequence[RunRecord], empty: str) -> Callable[[Console], None]:
    if not runs:
        return _line(empty)
    return _print(lambda: _runs_table(runs))


# --- commands ------------------------------------------------------------------------------------
def _each_namespace(mem: Memory, every: bool) -> Iterator[Memory]:
    if not every:
        yield mem
        return
    for ns in mem.store_backend.namespaces():
        yield mem.with_namespace(ns)


def maintain_cmd(
    ctx: typer.Context,
    *,
    job: Annotated[str, typer.Argument(
        metavar="[JOB]", help=f"One of: {_JOB_NAMES}; or {ALL} (default).")] = ALL,
    all_namespaces: AllNamespacesOpt = False,
) -> None:
    """Run maintenance now (one job, or all) and show the recorded runs.

    Jobs that need an LLM are skipped and say so. Exit code 3 when a job failed.

    Example: clawmem --db agent.db maintain decay
    """
    runs: list[RunRecord] = []
    with _open(ctx) as mem:
        for view in _each_namespace(mem, all_namespaces):
            runs.extend(run_all(view) if job == ALL else [run_job(view, job)])
    _emit(ctx, {"runs": [r.to_dict() for r in runs]}, _render_runs(runs, "no namespaces"))
    if any(r.outcome == "failed" for r in runs):
        raise typer.Exit(EXIT_FAILED)


def runs_cmd(
    ctx: typer.Context,
    *,
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, help="Most runs to show.")] = 20,
    job: Annotated[str | None, typer.Option(help=f"Only this job: {_JOB_NAMES}.")] = None,
) -> None:
    """Show recent maintenance runs of the namespace, newest first.

    Example: clawmem runs --job decay --limit 5
    """
    with _open(ctx, create=False) as mem:
        runs = mem.store_backend.runs(mem.namespace, limit, job=job)
    _emit(ctx, {"runs": [r.to_dict() for r in runs]},
          _render_runs(runs, "no maintenance runs recorded"))


def daemon_cmd(ctx: typer.Context, *, all_namespaces: AllNamespacesOpt = False) -> None:
    """Run maintenance on its schedule in the foreground until Ctrl-C or SIGTERM.

    Schedules come from the config file's \\[maintenance] section (cron syntax). With --json the
    schedule is printed as one JSON document.

    Example: clawmem --db agent.db daemon --all-namespaces
    """
    with _open(ctx) as mem:
        scheduler = Scheduler(mem, namespaces=None if all_namespaces else [mem.namespace])
        jobs = scheduler.jobs()
        stop = threading.Event()
        # Handlers first: a supervisor may signal as soon as it has read the schedule.
        with _stop_on_signals(stop):
            _announce(ctx, jobs, None if all_namespaces else mem.namespace)
            if not jobs:
                return
            scheduler.run_forever(stop)
    if not _globals(ctx).json:
        typer.echo("stopped", err=True)


def _announce(ctx: typer.Context, jobs: Sequence[ScheduledJob], namespace: str | None) -> None:
    """Print the schedule; flushed at once, since a supervisor reads it from a pipe."""
    data = {"namespaces": None if namespace is None else [namespace],
            "schedule": [{"job": j.name, "cron": j.cron,
                          "next_run": j.next_run.isoformat() if j.next_run else None}
                         for j in jobs]}
    where = "all namespaces" if namespace is None else f"namespace {namespace!r}"
    if _globals(ctx).json:
        _print_json(data)
    elif jobs:
        console = _console()
        console.print(_schedule_table(jobs))
        console.print(f"running for {where}; Ctrl-C to stop", markup=False)
    else:
        typer.echo("nothing scheduled (maintenance.enabled is false or every cron is empty)")
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add ``maintain``, ``daemon`` and ``runs`` to ``app`` behind the CLI's error boundary,
    replacing earlier commands of those names (so registering twice is harmless)."""
    app.registered_commands = [c for c in app.registered_commands if c.name not in COMMANDS]
    app.command("maintain")(_guarded(maintain_cmd))
    app.command("daemon")(_guarded(daemon_cmd))
    app.command("runs")(_guarded(runs_cmd))


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """SIGTERM and SIGINT set ``stop`` (the scheduler then shuts down cleanly, finishing a job
    that is running); the previous handlers come back afterwards."""

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous: dict[signal.Signals, Any] = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)

"""``clawmem maintain``, ``clawmem daemon``, ``clawmem runs`` and ``clawmem restore``: scheduled
maintenance and the archive it fills, from the command line. ``register(app)`` adds them to the
``clawmem`` app; they reuse ``common``'s global options, output (``--json``) and error boundary,
so they behave like every other command.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clawmemory.backends.base import RunRecord
from clawmemory.core.jobs import (
    JOBS,
    ScheduledJob,
    Scheduler,
)
from clawmemory.errors import NotFoundError
from clawmemory.interfaces.cli.common import (
    EXIT_FAILED,
    EXIT_NOT_FOUND,
    clip,
    emit,
    fail,
    globals_of,
    guarded,
    new_console,
    open_memory,
    plain,
    print_json,
    rendered,
)
from clawmemory.memory import Memory

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = ["register"]

ALL = "all"
_JOB_NAMES = ", ".join(JOBS)

AllNamespacesOpt = Annotated[bool, typer.Option(
    "--all-namespaces", help="Every namespace in the store, not just the selected one.")]


COMMANDS = ("maintain", "daemon", "runs", "restore")
PREVIEW_ROWS = 20  # changes shown per job in a --dry-run table; --json lists every one


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


def _preview_table(preview: Mapping[str, Any]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column in ("step", "action", "id", "kind", "memory"):
        table.add_column(column, no_wrap=column != "memory")
    for c in preview["changes"][:PREVIEW_ROWS]:
        memory = Text(f"{c['key']}: " if c["key"] else "", style="bold")
        memory.append(clip(c["content"], 50))
        memory.append(f"\nwhy: {c['reason']}", style="dim")  # under it: 80 columns are few
        table.add_row(c["step"], c["action"], c["id"], c["kind"], memory)
    return table


def _render_previews(previews: Sequence[Mapping[str, Any]]) -> Callable[[Console], None]:
    def render(console: Console) -> None:
        if not previews:
            console.print("no namespaces", markup=False)
        for p in previews:
            verb = "would" if p["outcome"] == "ok" else "is"
            console.print(f"{p['namespace']}: {p['job']} {verb}: {p['message']}", markup=False)
            if p["changes"]:
                console.print(_preview_table(p))
            if len(p["changes"]) > PREVIEW_ROWS:
                console.print(f"... and {len(p['changes']) - PREVIEW_ROWS} more (--json lists"
                              " all)", markup=False)
        console.print("dry run: nothing was changed", markup=False)

    return render


def _render_runs(runs: Sequence[RunRecord], empty: str) -> Callable[[Console], None]:
    if not runs:
        return plain(empty)
    return rendered(lambda: _runs_table(runs))


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
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show what each job would do, memory by memory (id, kind, key or"
        " first words, why), and change nothing.")] = False,
) -> None:
    """Run maintenance now (one job, or all) and show the recorded runs.

    What the decay job does to data, by default (\\[lifecycle] purge = "archive"):
    conversation memories unused for 7 days (hygiene) and facts unused for 30
    days that lose the 5% survival roll (idle purge) move to the archive, where
    they stay searchable (recall --archive), listed (list --archive) and
    restorable (clawmem restore). Confidence decays; a memory under the
    threshold is invalidated, never deleted. When the live data passes
    max_size_bytes, the lowest-ranked 1% moves to the archive. With
    purge = "delete" the hygiene and idle purges delete instead.
    Enrichment only adds entity links.

    Jobs that need an LLM are skipped and say so. Exit code 3 when a job failed.

    Example: clawmem --db agent.db maintain decay --dry-run
    """
    if dry_run:
        _preview(ctx, job, all_namespaces)
        return
    runs: list[RunRecord] = []
    with open_memory(ctx, local=all_namespaces) as mem:
        for view in _each_namespace(mem, all_namespaces):
            runs.extend(view.maintain(job))
    emit(ctx, {"runs": [r.to_dict() for r in runs]}, _render_runs(runs, "no namespaces"))
    if any(r.outcome == "failed" for r in runs):
        raise typer.Exit(EXIT_FAILED)


def _preview(ctx: typer.Context, job: str, all_namespaces: bool) -> None:
    previews: list[dict[str, Any]] = []
    with open_memory(ctx, local=all_namespaces) as mem:
        for view in _each_namespace(mem, all_namespaces):
            previews.extend(view.preview_maintenance(job))
    emit(ctx, {"dry_run": True, "previews": previews},
         _render_previews(previews))


def restore_cmd(
    ctx: typer.Context,
    *,
    ids: Annotated[list[str], typer.Argument(
        metavar="ID...", help="Ids of archived memories (clawmem list --archive shows them).")],
) -> None:
    """Bring archived memories back into recall, re-indexed.

    Maintenance moves the memories it retires to the archive (see clawmem
    maintain --help). A restored memory keeps every field; its idle clock
    starts again now, so the next run does not archive it straight back. If
    its key was taken meanwhile, it comes back without one. Exit code 1 when
    an id is not in the archive (the others are still restored).

    Example: clawmem restore 3f2a9c0d1e4b5a67 9c1d2e3f4a5b6c7d
    """
    restored, missing = [], []
    with open_memory(ctx) as mem:
        for id_ in ids:
            try:
                restored.append(mem.restore(id_))
            except NotFoundError:
                missing.append(id_)
    lines = "\n".join(f"restored {r.id}" for r in restored) or "nothing restored"
    emit(ctx, {"restored": [r.to_dict() for r in restored], "missing": missing}, plain(lines))
    if missing:
        fail(f"not in the archive of namespace {mem.namespace!r}: {', '.join(missing)}",
             EXIT_NOT_FOUND)


def runs_cmd(
    ctx: typer.Context,
    *,
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, help="Most runs to show.")] = 20,
    job: Annotated[str | None, typer.Option(help=f"Only this job: {_JOB_NAMES}.")] = None,
) -> None:
    """Show recent maintenance runs of the namespace, newest first.

    Example: clawmem runs --job decay --limit 5
    """
    with open_memory(ctx, create=False) as mem:
        runs = mem.runs(limit, job=job)
    emit(ctx, {"runs": [r.to_dict() for r in runs]},
         _render_runs(runs, "no maintenance runs recorded"))


def daemon_cmd(ctx: typer.Context, *, all_namespaces: AllNamespacesOpt = False) -> None:
    """Run maintenance on its schedule in the foreground until Ctrl-C or SIGTERM.

    Schedules come from the config file's \\[maintenance] section (cron syntax). With --json the
    schedule is printed as one JSON document.

    Example: clawmem --db agent.db daemon --all-namespaces
    """
    with open_memory(ctx, local=True) as mem:
        scheduler = Scheduler(mem, namespaces=None if all_namespaces else [mem.namespace])
        jobs = scheduler.jobs()
        stop = threading.Event()
        # Handlers first: a supervisor may signal as soon as it has read the schedule.
        with _stop_on_signals(stop):
            _announce(ctx, jobs, None if all_namespaces else mem.namespace)
            if not jobs:
                return
            scheduler.run_forever(stop)
    if not globals_of(ctx).json:
        typer.echo("stopped", err=True)


def _announce(ctx: typer.Context, jobs: Sequence[ScheduledJob], namespace: str | None) -> None:
    """Print the schedule; flushed at once, since a supervisor reads it from a pipe."""
    data = {"namespaces": None if namespace is None else [namespace],
            "schedule": [{"job": j.name, "cron": j.cron,
                          "next_run": j.next_run.isoformat() if j.next_run else None}
                         for j in jobs]}
    where = "all namespaces" if namespace is None else f"namespace {namespace!r}"
    if globals_of(ctx).json:
        print_json(data)
    elif jobs:
        console = new_console()
        console.print(_schedule_table(jobs))
        console.print(f"running for {where}; Ctrl-C to stop", markup=False)
    else:
        typer.echo("nothing scheduled (maintenance.enabled is false or every cron is empty)")
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add ``maintain``, ``daemon``, ``runs`` and ``restore`` to ``app`` behind the CLI's error
    boundary, replacing earlier commands of those names (so registering twice is harmless)."""
    app.registered_commands = [c for c in app.registered_commands if c.name not in COMMANDS]
    app.command("maintain")(guarded(maintain_cmd))
    app.command("daemon")(guarded(daemon_cmd))
    app.command("runs")(guarded(runs_cmd))
    app.command("restore")(guarded(restore_cmd))


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

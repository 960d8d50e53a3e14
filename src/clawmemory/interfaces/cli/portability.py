"""``clawmem export`` and ``clawmem import`` for every storage format of the specifications.

Registered onto the main app by ``register(app)``, replacing any ``export``/``import`` defined
before, and built from the CLI's shared helpers (``common``: global options, ``open_memory``,
``emit``, the ``guarded`` error boundary), so the commands behave like every other ``clawmem``
command::

    clawmem export --format json --out backup.json
    clawmem export --format markdown --out notes/
    clawmem import ~/openclaw --from openclaw --dry-run
    clawmem --json import agent/memory.db --from sclaw --no-messages
    clawmem sync                        # read the notes folder (storage.mirror_dir) back

The whole source is read and checked first, then written in one transaction. A source that is
not the format exits 2 with ``error: FILE:LINE: ...`` or ``error: FILE: table T, row N ...``
and writes nothing; an item that cannot be used (a bad note in a folder, a tool message in a
chat export) is skipped, and the summary says what was skipped and why. Ids already present
are skipped too, so importing twice is harmless.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clawmemory import private
from clawmemory.backends.registry import open_store
from clawmemory.config import load_settings
from clawmemory.errors import ImportFormatError, InvalidInputError, StorageError
from clawmemory.history.importing import HistoryImport, import_history
from clawmemory.interfaces.cli.common import (
    emit,
    globals_of,
    guarded,
    open_memory,
    plain,
    read_source_text,
)
from clawmemory.model import Filter
from clawmemory.portability import (
    SOURCE_ALIASES,
    SOURCES,
    export_markdown,
    read_source,
    source_format,
)

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

    from clawmemory.memory import Memory
    from clawmemory.model import ImportReport

__all__ = ["ExportFormat", "register"]

COMMANDS = ("export", "import", "copy", "sync")


class ExportFormat(StrEnum):
    JSON = "json"
    MARKDOWN = "markdown"


def _source(value: str) -> str:
    """The ``--from`` value as the format's name (an older name is accepted as an alias)."""
    try:
        return source_format(value).name
    except InvalidInputError as exc:
        raise typer.BadParameter(str(exc)) from exc


# Shown under ``import --help``: which --from name reads what, and what PATH must be.
_FORMATS_EPILOG = "Formats (--from):\n\n" + "\n\n".join(
    f"{s.name}: {s.spec}; PATH is {s.path}." for s in SOURCES.values()) + (
    "\n\nOlder names still accepted: " + ", ".join(
        f"{old} ({new})" for old, new in SOURCE_ALIASES.items()) + ".")


def register(app: typer.Typer) -> None:
    """Add ``export``, ``import`` and ``copy`` to ``app``, replacing earlier commands of those
    names."""
    app.registered_commands = [
        c for c in app.registered_commands if _command_name(c) not in COMMANDS
    ]
    app.command("export")(guarded(export_cmd))
    app.command("import", epilog=_FORMATS_EPILOG)(guarded(import_cmd))
    app.command("copy")(guarded(copy_cmd))
    app.command("sync")(guarded(sync_cmd))


def _command_name(info: Any) -> str | None:
    if info.name:
        return str(info.name)
    callback = getattr(info, "callback", None)
    return callback.__name__.lower().replace("_", "-") if callback else None


# --- progress ------------------------------------------------------------------------------------
class _Bar:
    """The importer's ``progress(done, total)`` callback, drawn as a rich bar on stderr (stdout
    may carry JSON). Without a rich Progress it does nothing."""

    def __init__(self, progress: RichProgress | None) -> None:
        self.progress = progress
        self.task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self.progress is None:
            return
        if self.task is None:
            self.task = self.progress.add_task("reading", total=total)
        self.progress.update(self.task, completed=done, total=total)

    def phase(self, description: str) -> None:
        """A step of unknown length (the write transaction): a spinner with a label."""
        if self.progress is not None:
            if self.task is not None:
                self.progress.update(self.task, visible=False)
            self.task = self.progress.add_task(description, total=None)


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[_Bar]:
    if not enabled:
        yield _Bar(None)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
               MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        yield _Bar(progress)


def _show_progress(ctx: typer.Context, wanted: bool | None) -> bool:
    """Explicit --progress/--no-progress, else only for a person at a terminal."""
    if wanted is not None:
        return wanted
    return not globals_of(ctx).json and sys.stderr.isatty()


# --- export --------------------------------------------------------------------------------------
def export_cmd(
    ctx: typer.Context,
    *,
    fmt: Annotated[ExportFormat, typer.Option(
        "--format", "-f", case_sensitive=False,
        help="json: one snapshot file (lossless, default). markdown: DevClaw's folder of"
        " notes, a folder per kind with one note per memory.")] = ExportFormat.JSON,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", metavar="PATH",
        help="json: the file (default: stdout). markdown: a new or empty folder (required).")
    ] = None,
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress", help="Progress bar on stderr (default: on a terminal).")
    ] = None,
) -> None:
    """Write every memory of the namespace as a JSON snapshot or a Markdown folder.

    Example: clawmem export --format markdown --out notes/
    """
    if fmt is ExportFormat.MARKDOWN:
        if out is None:
            raise InvalidInputError("--format markdown needs --out FOLDER")
        bar_wanted = _show_progress(ctx, progress)
        with open_memory(ctx, create=False, local=True) as mem, _progress_bar(bar_wanted) as bar:
            count = export_markdown(mem, out, progress=bar)
        data = {"path": str(out), "format": fmt.value, "entries": count}
        emit(ctx, data, plain(f"exported {count} memories to {out}/"))
        return
    with open_memory(ctx, create=False) as mem:
        text = mem.export_snapshot() + "\n"
        count = mem.count(include_invalid=True)
    if out is None or str(out) == "-":
        sys.stdout.write(text)  # the snapshot is already JSON: --json changes nothing here
        return
    try:
        private.atomic_write(out, text.encode("utf-8"), parents=False)  # 0600: it is every memory
    except StorageError as exc:
        raise InvalidInputError(str(exc)) from exc
    data = {"path": str(out), "format": fmt.value, "entries": count}
    emit(ctx, data, plain(f"exported {count} memories to {out}"))


# --- sync ----------------------------------------------------------------------------------------
def sync_cmd(
    ctx: typer.Context,
    *,
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress", help="Progress bar on stderr (default: on a terminal).")
    ] = None,
) -> None:
    """Read the namespace's notes folder (storage.mirror_dir) back into memory.

    An edited note becomes a new version (clawmem history shows the old text), a note without
    an id a new memory (its id is written into it), a deleted note forgets its memory, a moved
    or renamed note is followed and [[wikilinks]] become links. When a note and its memory
    both changed, both versions are kept (a conflict, reported). Notes that cannot be read
    are reported and left as they are. See docs/markdown-notes.md.

    Example: clawmem sync --json
    """
    with open_memory(ctx, local=True) as mem, _progress_bar(_show_progress(ctx, progress)) as bar:
        report = mem.sync_notes(progress=bar)
    lines = [f"synced {report.folder}: " + (", ".join(
        f"{n} {name}" for name, n in report.counts().items() if n) or "nothing to do")]
    for what, items in (("conflict", report.conflicts), ("skipped", report.skipped)):
        lines += [f"  {what}: {c.path}: {c.detail}" for c in items]
    emit(ctx, report.to_dict(), lambda _console: typer.echo("\n".join(lines)))  # unwrapped


# --- import --------------------------------------------------------------------------------------
def import_cmd(
    ctx: typer.Context,
    *,
    path: Annotated[str, typer.Argument(
        metavar="PATH", help="The file or folder to import; - reads a JSON snapshot from stdin.")],
    source: Annotated[str, typer.Option(
        "--from", metavar="FORMAT", callback=_source,
        help="What PATH is: " + ", ".join(SOURCES) + " (each is described below).")] = "json",
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Check everything and report the counts; write nothing.")] = False,
    messages: Annotated[bool | None, typer.Option(
        "--messages/--no-messages",
        help="sclaw only: import the conversation history, as episodes and as each"
             " session's chat history (default: yes).")
    ] = None,
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress", help="Progress bar on stderr (default: on a terminal).")
    ] = None,
) -> None:
    """Import memories from another agent's storage or a chat export.

    The summary says what was skipped and why. Ids already in the namespace are skipped, so
    importing the same source twice adds nothing.

    Example: clawmem import ~/.openclaw/workspace --from openclaw --dry-run
    """
    options: dict[str, Any] = {}
    if messages is not None:
        if source not in {"sclaw", "sclaw-db"}:
            raise InvalidInputError("--messages/--no-messages only apply to --from sclaw")
        options["include_messages"] = messages
    with open_memory(ctx) as mem, _progress_bar(_show_progress(ctx, progress)) as bar:
        report, name, history = _run_import(mem, path, source, dry_run, bar, options)
    data = {**report, "archived": report.archived, "dry_run": dry_run, "source": name,
            "format": source, "skips": report.skips}
    if history is not None:
        data["history"] = history.to_dict()
    verb = "would import" if dry_run else "imported"
    archived = f", {report.archived} into the archive" if report.archived else ""
    lines = [f"{verb} {report['created']} memories ({report['skipped']} skipped,"
             f" {report['links']} links{archived}) from {name} ({source})"]
    lines += [_skip_line(s) for s in report.skips]
    if history is not None:
        lines.append(_history_line(history, dry_run))
    # soft_wrap: a long path stays on its line (the terminal wraps it, not rich)
    emit(ctx, data, lambda console: console.print("\n".join(lines), markup=False,
                                                  soft_wrap=True))


def _history_line(history: HistoryImport, dry_run: bool) -> str:
    """``  chat history: 12 messages of 2 sessions (clawmem chat --session ID resumes one)``"""
    verb = "would add" if dry_run else "added"
    present = (f"; {history.present} already had a history here, left as they are"
               if history.present else "")
    return (f"  chat history: {verb} {history.messages} messages of {history.conversations}"
            f" sessions{present} (clawmem chat --session ID resumes one)")


def _skip_line(group: dict[str, Any]) -> str:
    """``  skipped 12: system message (e.g. conversations.json: conversation 3, message 0)``"""
    examples = group["examples"]
    where = f" (e.g. {examples[0]})" if examples else ""
    return f"  skipped {group['count']}: {group['reason']}{where}"


def _run_import(mem: Memory, path: str, source: str, dry_run: bool,
                bar: _Bar, options: dict[str, Any]
                ) -> tuple[ImportReport, str, HistoryImport | None]:
    if path == "-":
        if source not in {"json", "ptrclaw", "ptrclaw-json"}:
            raise InvalidInputError(f"stdin (-) holds a JSON snapshot; {source} needs a path")
        text, name = read_source_text(path)
        return mem.import_snapshot(text, source=name, dry_run=dry_run), name, None
    parsed = read_source(source, path, namespace=mem.namespace, now=mem.clock(),
                  max_chars=mem.settings.storage.max_content_chars, progress=bar, **options)
    if not parsed.records and parsed.skipped:
        # Every item was left out: exit 0 with "imported 0" would read as success, and is
        # what a file given under the wrong --from used to do.
        reasons = Counter(s.reason for s in parsed.skipped).most_common(3)
        why = "; ".join(f"{n} {reason}" for reason, n in reasons)
        raise ImportFormatError(f"nothing to import: all {len(parsed.skipped)} items were"
                                f" skipped ({why}); is --from {source} right?", path=path)
    bar.phase("checking" if dry_run else "writing")
    report = mem.import_records(parsed, dry_run=dry_run)
    history = import_history(mem, parsed.history, dry_run=dry_run) if parsed.history else None
    return report, path, history


# --- copy between backends ----------------------------------------------------------------------
def copy_cmd(
    ctx: typer.Context,
    source: Annotated[str, typer.Option(
        "--from", metavar="PATH|URL", help="The store to copy: a SQLite file or a"
        " postgresql:// address.")],
    destination: Annotated[str, typer.Option(
        "--to", metavar="PATH|URL", help="An empty store to copy into (created if needed).")],
    progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress",
        help="Show a progress bar (default: only at a terminal, never with --json).")] = None,
) -> None:
    """Copy a whole store to another backend: every namespace's memories, archive, links,
    entities, history, sessions, maintenance runs, vectors and vector queue. The destination
    must be empty; afterwards every count is compared (a difference exits 2).

    Example: clawmem copy --from agent.db --to postgresql://clawmem@db.internal/memory
    """
    # Lazy for cold start: the store copy needs numpy (~0.2 s), no other command here does.
    from clawmemory.backends.transfer import COUNTED, copy_store

    src = open_store(load_settings(db=source), create=False, read_only=True)
    try:
        dst = open_store(load_settings(db=destination))
        try:
            total = sum(src.count(ns, Filter(include_invalid=True)) for ns in src.namespaces())
            with _progress_bar(_show_progress(ctx, progress)) as bar:
                done = [0]

                def tick(n: int) -> None:
                    done[0] += n
                    bar(done[0], total)

                report = copy_store(src, dst, tick)
        finally:
            dst.close()
    finally:
        src.close()
    lines = [f"copied {len(report)} namespace(s); counts match:"] + [
        f"  {ns}: " + ", ".join(f"{c[k]} {k}" for k in COUNTED if c[k])
        for ns, c in report.items()]
    emit(ctx, {"namespaces": report}, plain("\n".join(lines)))

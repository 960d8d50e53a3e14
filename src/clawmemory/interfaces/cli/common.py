"""What every ``clawmem`` command shares: the global options, the error boundary, opening the
memory, argument translation, output (tables for people, ``--json`` for programs) and the
options several commands take.

The command modules of this package (``memories``, ``retrieval``, ``lifecycle``, ...) build on
these names; ``app`` registers them. Nothing here imports a command module, so the imports of
the package go one way: ``app`` -> command modules -> ``common`` -> ``base``. The exit codes,
the global options and the one-line error live in ``base`` (the command line is parsed before
anything here loads) and are re-exported.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, cast

import typer

from clawmemory.config import Backend, Settings, load_settings
from clawmemory.core.vectors import VectorWrites
from clawmemory.errors import (
    AccessDeniedError,
    AuthenticationError,
    ClawMemoryError,
    ConfigError,
    ImportFormatError,
    InvalidInputError,
    NotFoundError,
)
from clawmemory.interfaces.cli.base import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    GlobalOptions,
    fail,
    internal_error,
    say_error,
)
from clawmemory.memory import Memory
from clawmemory.model import KIND_ALIASES, KINDS, Hit, MemoryRecord, legible
from clawmemory.resolver import MemoryResolver

if TYPE_CHECKING:  # rich is imported lazily: --json output never needs it
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = [
    "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "KIND_NAMES",
    "GlobalOptions", "IdArg", "InvalidOpt", "KindsOpt", "MetaOpt", "NarrativeOpt", "SessionOpt",
    "TagOpt", "TagsOpt", "TaskOpt", "clip", "confirmed", "emit", "fail", "fields_table",
    "globals_of", "guarded", "hits_table", "internal_error", "join_tags", "new_console",
    "open_agent", "open_local", "open_memory", "parse_meta", "plain", "print_hits",
    "print_json", "read_source_text", "records_table", "rendered", "say_error", "settings_of",
    "show_value",
    "text_arg",
]

# First match wins; anything else in the tree (storage, embedder, LLM) is EXIT_FAILED.
_EXIT_CODES: tuple[tuple[type[ClawMemoryError], int], ...] = (
    (NotFoundError, EXIT_NOT_FOUND),
    (InvalidInputError, EXIT_USAGE),
    (ImportFormatError, EXIT_USAGE),
    (ConfigError, EXIT_USAGE),
    # A server's 401/403 (--url): the command was given no, a wrong or a too weak key, which
    # the user fixes on the command line like any other usage error; nothing failed.
    (AuthenticationError, EXIT_USAGE),
    (AccessDeniedError, EXIT_USAGE),
)

KIND_NAMES = ", ".join([*KINDS, *KIND_ALIASES])
_TIME_FIELDS = frozenset({"created_at", "updated_at", "last_accessed", "event_time",
                          "valid_until", "newest", "oldest"})
_CLIP = 60  # characters of content shown in a table cell

P = ParamSpec("P")

# --- options several commands take --------------------------------------------------------------
TagOpt = Annotated[list[str] | None, typer.Option(
    "--tag", "-t", metavar="TAG", help="A tag (repeatable).")]
TagsOpt = Annotated[str | None, typer.Option(
    "--tags", metavar="A,B", help="Comma-separated tags.")]
MetaOpt = Annotated[list[str] | None, typer.Option(
    "--meta", "-m", metavar="KEY=VALUE", help="Metadata pair (repeatable).")]
KindsOpt = Annotated[list[str] | None, typer.Option(
    "--kind", "-k", metavar="KIND", help=f"Only this kind (repeatable): {KIND_NAMES}.")]
SessionOpt = Annotated[str | None, typer.Option("--session", help="Session id.")]
NarrativeOpt = Annotated[str | None, typer.Option(
    "--narrative", metavar="ID",
    help="Narrative id: the narrative active when the memory was made (narrative_id).")]
TaskOpt = Annotated[str | None, typer.Option(
    "--task", metavar="ID", help="Task id: the task that produced the memory (task_id).")]
IdArg = Annotated[str, typer.Argument(metavar="ID_OR_KEY", help="Memory id or key.")]
InvalidOpt = Annotated[bool, typer.Option(
    "--include-invalid", help="Also show invalidated (corrected) memories.")]


def settings_of(g: GlobalOptions) -> Settings:
    """Settings from the file and environment with the global options on top (None = not
    given); the namespace only when given."""
    return load_settings(db=g.db, namespace=g.namespace,
                         backend=g.backend.value if g.backend else None, profile=g.profile,
                         agent={"agent_name": g.agent} if g.agent is not None else None)


# --- error boundary ------------------------------------------------------------------------------
def exit_code(exc: ClawMemoryError) -> int:
    return next((code for kind, code in _EXIT_CODES if isinstance(exc, kind)), EXIT_FAILED)


def guarded(fn: Callable[P, None]) -> Callable[P, None]:
    """The command boundary: the engine's errors become one stderr line and an exit code."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            fn(*args, **kwargs)
        except ClawMemoryError as exc:
            if os.environ.get("CLAWMEM_DEBUG"):
                traceback.print_exception(exc)
            fail(str(exc), exit_code(exc))
        except typer.Abort:  # a prompt hit end of input or Ctrl-D
            fail("aborted; nothing was changed", EXIT_NOT_FOUND)
        except (typer.Exit, typer.TyperException, BrokenPipeError):
            raise  # click's own signals and usage errors; main() renders those
        except Exception as exc:
            fail(internal_error(exc), EXIT_INTERNAL)

    return run


# --- argument translation -----------------------------------------------------------------------
def globals_of(ctx: typer.Context) -> GlobalOptions:
    return ctx.ensure_object(GlobalOptions)


@contextmanager
def open_memory(
    ctx: typer.Context, *, create: bool = True, defer_vectors: bool = False, local: bool = False
) -> Iterator[Memory]:
    """The command's Memory. Commands that only read (or forget) pass ``create=False``: they
    never create a store where there was none. ``defer_vectors``: writes only queue their
    vectors, so the command never loads the embedding model (the server, `maintain` or
    `backfill` fill them). With ``--url`` / ``CLAWMEM_URL`` it is the server's memory
    (``RemoteMemory``: nothing is loaded here); ``local``: the command needs the database
    itself and refuses a URL."""
    g = globals_of(ctx)
    if g.url:
        if local:
            raise ConfigError(f"`{ctx.command_path}` works where the database is; it"
                              " cannot run through a server (unset --url / CLAWMEM_URL)")
        # Lazy for cold start: the remote client pulls in httpx (~150 ms), local commands never.
        from clawmemory.client.remote import RemoteMemory

        with RemoteMemory(g.url, api_key=g.api_key, namespace=g.namespace) as remote:
            # A MemoryAPI, not a Memory: the commands that reach past MemoryAPI are `local`.
            yield cast("Memory", remote)
        return
    backend = g.backend.value if g.backend else None
    with open_local(g.db, g.namespace, backend, create=create, agent=g.agent,
                    vector_writes="queue" if defer_vectors else "sync",
                    profile=g.profile) as mem:
        yield mem


@contextmanager
def open_local(
    db: str | Path | None, namespace: str | None, backend: str | None, *, create: bool = True,
    vector_writes: VectorWrites = "sync", agent: str | None = None,
    profile: str | None = None,
) -> Iterator[Memory]:
    """Settings from the file and environment, with the command line on top (None = not given).
    ``vector_writes="queue"``: writes leave their vectors to the background worker (a one-shot
    command that stores must not load the model). ``agent``: ``agent.agent_name``; under
    ``storage.layout = "per-agent"`` the memory is that agent's own (``open_agent``)."""
    settings = load_settings(db=db, namespace=namespace, backend=backend, profile=profile,
                             agent={"agent_name": agent} if agent is not None else None)
    # One command, then exit: nothing to warm ahead of it (the servers warm up at start).
    settings = settings.model_copy(update={
        "embedder": settings.embedder.model_copy(update={"warm_at_open": False})})
    configure_logging(settings.log_level)
    if settings.storage.layout == "per-agent":
        with open_agent(settings, create=create, vector_writes=vector_writes) as mem:
            yield mem
        return
    with Memory.open(settings=settings, create=create, vector_writes=vector_writes) as mem:
        yield mem


@contextmanager
def open_agent(
    settings: Settings, *, create: bool = True, vector_writes: VectorWrites = "sync"
) -> Iterator[Memory]:
    """The memory of the agent ``agent.agent_name`` names, through the per-agent resolver
    (001). An agent whose memory is disabled gets the ``none`` backend: the command runs,
    remembers and finds nothing, creates no file, and one line on stderr says so."""
    name = settings.agent.agent_name
    with MemoryResolver(settings, create=create, vector_writes=vector_writes) as agents:
        mem = agents.resolve(name)
        if mem is not None:
            yield mem
            return
    sys.stderr.write(f"warning: memory is disabled for agent {name} (agents.{name}.memory):"
                     " nothing is remembered or recalled\n")
    sys.stderr.flush()
    with Memory.open(settings=settings.model_copy(update={"backend": Backend.NONE.value}),
                     vector_writes=vector_writes) as off:
        yield off


def configure_logging(level_name: str) -> None:
    level = logging.getLevelNamesMapping().get(str(level_name).upper())
    if level is None:
        raise ConfigError(f"invalid setting log_level: unknown level {level_name!r}")
    logging.basicConfig(level=level, format="clawmem: %(levelname)s: %(message)s")


def read_stdin(what: str) -> str:
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{what} on stdin is not UTF-8 text: {exc.reason}") from exc


def text_arg(value: str) -> str:
    """``-`` means stdin; one trailing newline (from echo or a heredoc) is not content."""
    if value != "-":
        return value
    text = read_stdin("content")
    return text[:-1] if text.endswith("\n") else text


def join_tags(repeated: Sequence[str] | None, joined: str | None) -> list[str]:
    return [*(repeated or ()), *(joined.split(",") if joined else ())]


def parse_meta(pairs: Sequence[str] | None) -> dict[str, str] | None:
    if not pairs:
        return None
    result: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InvalidInputError(f"--meta expects KEY=VALUE, got {pair!r}")
        result[name.strip()] = value
    return result


def read_source_text(file: str) -> tuple[str, str]:
    """The text of an import source and the name errors should give it."""
    if file == "-":
        try:
            return read_stdin("the snapshot"), "<stdin>"
        except InvalidInputError as exc:
            raise ImportFormatError(str(exc), path="<stdin>") from exc
    try:
        return Path(file).read_text(encoding="utf-8"), file
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text ({exc.reason})", path=file) from exc
    except OSError as exc:
        raise ImportFormatError(f"cannot read: {exc.strerror or exc}", path=file) from exc


# --- rendering -----------------------------------------------------------------------------------
def emit(ctx: typer.Context, data: Any, render: Callable[[Console], None]) -> None:
    """JSON on stdout with --json, else whatever ``render`` draws."""
    if globals_of(ctx).json:
        print_json(data)
    else:
        render(new_console())


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def new_console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def plain(text: str) -> Callable[[Console], None]:
    return lambda console: console.print(text, markup=False)


def clip(text: str, width: int = _CLIP) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def show_value(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name in _TIME_FIELDS and isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False) if value else "-"
    return str(value)


def fields_table(data: Mapping[str, Any]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in data.items():
        table.add_row(name, Text(show_value(name, value)))
    return table


def records_table(records: Sequence[MemoryRecord], archived: Sequence[Any] = ()) -> Table:
    """Memories as a table; ``archived``: their ArchiveEntry values, for an archived column."""
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column in ("id", "kind", "score", *["archived (UTC)"] * bool(archived), "content"):
        table.add_column(column, no_wrap=column != "content")
    when = [show_value("created_at", e.archived_at)[:16].replace("T", " ") for e in archived]
    for n, r in enumerate(records):
        content = Text(clip(r.content) + ("" if r.is_valid else " (invalidated)"))
        # key and tags ride under the content: an 80-column terminal has no room for columns
        details = [f"key: {r.key}"] * bool(r.key) + [f"tags: {', '.join(r.tags)}"] * bool(r.tags)
        if details:
            content.append("\n" + " · ".join(details), style="dim")
        table.add_row(r.id, r.kind, str(r.score), *when[n : n + 1], content)
    return table


def hits_table(hits: Sequence[Hit], explain: bool) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=explain)
    for column in ("#", "id", "score", "kind", "content"):
        table.add_column(column, no_wrap=column != "content")
    for rank, hit in enumerate(hits, 1):
        content = Text(clip(hit.memory.content))
        if explain:
            content.append("\nwhy: " + str(hit.explain), style="dim")
        table.add_row(str(rank), hit.memory.id, legible(hit.score), hit.memory.kind, content)
    return table


def print_hits(hits: Sequence[Hit], explain: bool) -> Callable[[Console], None]:
    def render(console: Console) -> None:
        if hits:
            console.print(hits_table(hits, explain))
        else:
            console.print("no memories matched", markup=False)

    return render


def rendered(build: Callable[[], RenderableType]) -> Callable[[Console], None]:
    """Render what ``build`` makes; built only when shown, so --json never imports rich."""
    return lambda console: console.print(build())


def confirmed(question: str) -> bool:
    """Ask on stderr (stdout may be JSON); end of input means no."""
    try:
        answer = typer.confirm(question, err=True)
    except typer.Abort:
        answer = False
    if not sys.stdin.isatty():  # a piped answer is not echoed: end the prompt's line
        sys.stderr.write("\n")
    return answer

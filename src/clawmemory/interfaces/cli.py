"""``clawmem``: the command-line adapter over ``Memory``.

Every command translates its arguments into one or two ``Memory`` calls and renders the result,
as a rich table for people or as JSON (``--json``) for programs. Errors from the engine's tree
(``ClawMemoryError``) are turned into one ``error: ...`` line on stderr and an exit code by one
wrapper (``_guarded``), so no command has its own try/except.

More commands live in ``clawmemory.interfaces.cli_*`` modules (``export``/``import`` in
``cli_portability``, maintenance in ``cli_lifecycle``, the MCP server in ``cli_mcp``): each has a
``register(app)`` hook, called by ``main()``, and builds on the helpers here (``_open``,
``_emit``, ``_guarded``, ...), so every command shares the global options, the output modes and
the error boundary. Exit codes:

    0   success
    1   not found (no memory with that id or key), or a confirmation was declined
    2   usage or input error: bad option, invalid content, unknown kind, bad --meta,
        unreadable or malformed import file, invalid configuration, a server's 401/403
    3   the operation failed: storage (I/O, locked, newer schema), embedder or LLM error
    70  internal error (a bug): rerun with CLAWMEM_DEBUG=1 to see the traceback
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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, ParamSpec, cast

import typer

from clawmemory.backends.base import ORDERS
from clawmemory.config import Backend, load_settings
from clawmemory.engine import Memory
from clawmemory.errors import (
    AccessDeniedError,
    AuthenticationError,
    ClawMemoryError,
    ConfigError,
    ImportFormatError,
    InvalidInputError,
    NotFoundError,
)
from clawmemory.interfaces.cli_argv import GlobalOptionsGroup
from clawmemory.interfaces.cli_time import (
    AsOfOpt,
    CreatedSinceOpt,
    CreatedUntilOpt,
    SinceOpt,
    UntilOpt,
    times,
)
from clawmemory.model import KIND_ALIASES, KINDS, Hit, MemoryRecord, as_kind, legible

if TYPE_CHECKING:  # rich is imported lazily: --json output never needs it
    from rich.console import Console, RenderableType
    from rich.table import Table

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK", "EXIT_USAGE", "app",
           "main", "register_extensions"]

log = logging.getLogger("clawmemory")

EXIT_OK = 0
EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
EXIT_FAILED = 3
EXIT_INTERNAL = 70  # sysexits.h EX_SOFTWARE

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

_KIND_NAMES = ", ".join([*KINDS, *KIND_ALIASES])
_TIME_FIELDS = frozenset({"created_at", "updated_at", "last_accessed", "event_time",
                          "valid_until", "newest", "oldest"})
_CLIP = 60  # characters of content shown in a table cell

P = ParamSpec("P")

app = typer.Typer(
    name="clawmem",
    help="clawmemory: local-first long-term memory for LLM agents.\n\n"
    "Global options (--db, --namespace, --backend, --json, --url, --api-key) go before or"
    " after the command. Environment: CLAWMEM_DB, CLAWMEM_NAMESPACE,"
    " CLAWMEM_BACKEND, CLAWMEM_URL, CLAWMEM_API_KEY, CLAWMEM_CONFIG, CLAWMEM_HOME,"
    " CLAWMEM_DEBUG.\n\n"
    "Example: clawmem recall \"dark theme\" --db agent.db --json",
    cls=GlobalOptionsGroup,
    add_completion=False,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@dataclass(frozen=True)
class _Globals:
    """The global options (given before or after the command)."""

    db: str | None = None  # a file path or a postgresql:// address
    namespace: str | None = None
    backend: Backend | None = None
    json: bool = False
    url: str | None = None  # a clawmemory server to talk to instead of a local store
    api_key: str | None = None


# --- error boundary ------------------------------------------------------------------------------
def _exit_code(exc: ClawMemoryError) -> int:
    return next((code for kind, code in _EXIT_CODES if isinstance(exc, kind)), EXIT_FAILED)


def _say_error(message: str) -> None:
    # One line, always: scripts and tests read the first line of stderr.
    sys.stderr.write("error: " + (" ".join(message.splitlines()) or "unknown error") + "\n")
    sys.stderr.flush()


def _fail(message: str, code: int) -> NoReturn:
    _say_error(message)
    raise typer.Exit(code)


def _internal(exc: BaseException) -> str:
    """The line for an exception nobody anticipated (a bug); the traceback only on request."""
    if os.environ.get("CLAWMEM_DEBUG"):
        traceback.print_exception(exc)
    return (f"internal error: {type(exc).__name__}: {exc}"
            " (rerun with CLAWMEM_DEBUG=1 for the traceback)")


def _guarded(fn: Callable[P, None]) -> Callable[P, None]:
    """The command boundary: the engine's errors become one stderr line and an exit code."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            fn(*args, **kwargs)
        except ClawMemoryError as exc:
            if os.environ.get("CLAWMEM_DEBUG"):
                traceback.print_exception(exc)
            _fail(str(exc), _exit_code(exc))
        except typer.Abort:  # a prompt hit end of input or Ctrl-D
            _fail("aborted; nothing was changed", EXIT_NOT_FOUND)
        except (typer.Exit, typer.TyperException, BrokenPipeError):
            raise  # click's own signals and usage errors; main() renders those
        except Exception as exc:
            _fail(_internal(exc), EXIT_INTERNAL)

    return run


def _command(name: str) -> Callable[[Callable[P, None]], Callable[P, None]]:
    """Register a command under ``name`` behind the error boundary."""

    def register(fn: Callable[P, None]) -> Callable[P, None]:
        app.command(name)(_guarded(fn))
        return fn

    return register


# --- argument translation -----------------------------------------------------------------------
def _globals(ctx: typer.Context) -> _Globals:
    return ctx.ensure_object(_Globals)


@contextmanager
def _open(
    ctx: typer.Context, *, create: bool = True, defer_vectors: bool = False, local: bool = False
) -> Iterator[Memory]:
    """The command's Memory. Commands that only read (or forget) pass ``create=False``: they
    never create a store where there was none. ``defer_vectors``: writes only queue their
    vectors, so the command never loads the embedding model (the server, `maintain` or
    `backfill` fill them). With ``--url`` / ``CLAWMEM_URL`` it is the server's memory
    (``RemoteMemory``: nothing is loaded here); ``local``: the command needs the database
    itself and refuses a URL."""
    g = _globals(ctx)
    if g.url:
        if local:
            raise ConfigError(f"`{ctx.command_path}` works where the database is; it"
                              " cannot run through a server (unset --url / CLAWMEM_URL)")
        from clawmemory.client.remote import RemoteMemory

        with RemoteMemory(g.url, api_key=g.api_key, namespace=g.namespace) as remote:
            # A MemoryAPI, not a Memory: the commands that reach past MemoryAPI are `local`.
            yield cast("Memory", remote)
        return
    backend = g.backend.value if g.backend else None
    with _open_memory(g.db, g.namespace, backend, create=create) as mem:
        if defer_vectors:
            mem.components.vector_writes = "queue"
        yield mem


@contextmanager
def _open_memory(
    db: str | Path | None, namespace: str | None, backend: str | None, *, create: bool = True
) -> Iterator[Memory]:
    """Settings from the file and environment, with the command line on top (None = not given)."""
    settings = load_settings(db=db, namespace=namespace, backend=backend)
    _configure_logging(settings.log_level)
    with Memory.open(settings=settings, create=create) as mem:
        yield mem


def _configure_logging(level_name: str) -> None:
    level = logging.getLevelNamesMapping().get(str(level_name).upper())
    if level is None:
        raise ConfigError(f"invalid setting log_level: unknown level {level_name!r}")
    logging.basicConfig(level=level, format="clawmem: %(levelname)s: %(message)s")


def _read_stdin(what: str) -> str:
    try:
        return sys.stdin.buffer.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{what} on stdin is not UTF-8 text: {exc.reason}") from exc


def _text_arg(value: str) -> str:
    """``-`` means stdin; one trailing newline (from echo or a heredoc) is not content."""
    if value != "-":
        return value
    text = _read_stdin("content")
    return text[:-1] if text.endswith("\n") else text


def _tags(repeated: Sequence[str] | None, joined: str | None) -> list[str]:
    return [*(repeated or ()), *(joined.split(",") if joined else ())]


def _meta(pairs: Sequence[str] | None) -> dict[str, str] | None:
    if not pairs:
        return None
    result: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise InvalidInputError(f"--meta expects KEY=VALUE, got {pair!r}")
        result[name.strip()] = value
    return result


def _read_source(file: str) -> tuple[str, str]:
    """The text of an import source and the name errors should give it."""
    if file == "-":
        try:
            return _read_stdin("the snapshot"), "<stdin>"
        except InvalidInputError as exc:
            raise ImportFormatError(str(exc), path="<stdin>") from exc
    try:
        return Path(file).read_text(encoding="utf-8"), file
    except UnicodeDecodeError as exc:
        raise ImportFormatError(f"not UTF-8 text ({exc.reason})", path=file) from exc
    except OSError as exc:
        raise ImportFormatError(f"cannot read: {exc.strerror or exc}", path=file) from exc


# --- rendering -----------------------------------------------------------------------------------
def _emit(ctx: typer.Context, data: Any, render: Callable[[Console], None]) -> None:
    """JSON on stdout with --json, else whatever ``render`` draws."""
    if _globals(ctx).json:
        _print_json(data)
    else:
        render(_console())


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


def _console() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def _line(text: str) -> Callable[[Console], None]:
    return lambda console: console.print(text, markup=False)


def _clip(text: str, width: int = _CLIP) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _show(name: str, value: Any) -> str:
    if value is None:
        return "-"
    if name in _TIME_FIELDS and isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False) if value else "-"
    return str(value)


def _fields_table(data: Mapping[str, Any]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in data.items():
        table.add_row(name, Text(_show(name, value)))
    return table


def _records_table(records: Sequence[MemoryRecord], archived: Sequence[Any] = ()) -> Table:
    """Memories as a table; ``archived``: their ArchiveEntry values, for an archived column."""
    from rich.table import Table
    from rich.text import Text

    table = Table()
    for column in ("id", "kind", "score", *["archived (UTC)"] * bool(archived), "content"):
        table.add_column(column, no_wrap=column != "content")
    when = [_show("created_at", e.archived_at)[:16].replace("T", " ") for e in archived]
    for n, r in enumerate(records):
        content = Text(_clip(r.content) + ("" if r.is_valid else " (invalidated)"))
        # key and tags ride under the content: an 80-column terminal has no room for columns
        details = [f"key: {r.key}"] * bool(r.key) + [f"tags: {', '.join(r.tags)}"] * bool(r.tags)
        if details:
            content.append("\n" + " · ".join(details), style="dim")
        table.add_row(r.id, r.kind, str(r.score), *when[n : n + 1], content)
    return table


def _hits_table(hits: Sequence[Hit], explain: bool) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(show_lines=explain)
    for column in ("#", "id", "score", "kind", "content"):
        table.add_column(column, no_wrap=column != "content")
    for rank, hit in enumerate(hits, 1):
        content = Text(_clip(hit.memory.content))
        if explain:
            content.append("\nwhy: " + str(hit.explain), style="dim")
        table.add_row(str(rank), hit.memory.id, legible(hit.score), hit.memory.kind, content)
    return table


def _print_hits(hits: Sequence[Hit], explain: bool) -> Callable[[Console], None]:
    def render(console: Console) -> None:
        if hits:
            console.print(_hits_table(hits, explain))
        else:
            console.print("no memories matched", markup=False)

    return render


def _print(build: Callable[[], RenderableType]) -> Callable[[Console], None]:
    """Render what ``build`` makes; built only when shown, so --json never imports rich."""
    return lambda console: console.print(build())


# --- global options ------------------------------------------------------------------------------
def _show_version(value: bool) -> None:
    if value:
        from clawmemory import __version__

        typer.echo(f"clawmem {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    ctx: typer.Context,
    *,
    db: Annotated[str | None, typer.Option(
        "--db", envvar="CLAWMEM_DB", metavar="PATH|URL",
        help="Database file, or a postgresql:// address (docs/postgres.md). Default:"
        " ~/.clawmemory/memory.db (or $CLAWMEM_HOME).")] = None,
    namespace: Annotated[str | None, typer.Option(
        "--namespace", "-n", envvar="CLAWMEM_NAMESPACE", metavar="NS",
        help="Namespace (tenant) to work in. Default: default.")] = None,
    backend: Annotated[Backend | None, typer.Option(
        "--backend", envvar="CLAWMEM_BACKEND", case_sensitive=False,
        help="Storage backend. Default: sqlite.")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Machine output: one JSON document on stdout.")] = False,
    url: Annotated[str | None, typer.Option(
        "--url", envvar="CLAWMEM_URL", metavar="URL",
        help="Talk to a clawmemory server (clawmem serve) instead of a local database,"
        " e.g. http://127.0.0.1:8765.")] = None,
    api_key: Annotated[str | None, typer.Option(
        "--api-key", envvar="CLAWMEM_API_KEY", metavar="KEY",
        help="The server's API key (clawmem keys create), with --url.")] = None,
    version: Annotated[bool, typer.Option(
        "--version", callback=_show_version, is_eager=True,
        help="Print the version and exit.")] = False,
) -> None:
    if url is not None and not url.startswith(("http://", "https://")):
        _fail(f"--url must be an http:// or https:// address, not {url!r}", EXIT_USAGE)
    ctx.obj = _Globals(db=db, namespace=namespace, backend=backend, json=as_json, url=url,
                       api_key=api_key)
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())


# --- writing -------------------------------------------------------------------------------------
TagOpt = Annotated[list[str] | None, typer.Option(
    "--tag", "-t", metavar="TAG", help="A tag (repeatable).")]
TagsOpt = Annotated[str | None, typer.Option(
    "--tags", metavar="A,B", help="Comma-separated tags.")]
MetaOpt = Annotated[list[str] | None, typer.Option(
    "--meta", "-m", metavar="KEY=VALUE", help="Metadata pair (repeatable).")]
KindsOpt = Annotated[list[str] | None, typer.Option(
    "--kind", "-k", metavar="KIND", help=f"Only this kind (repeatable): {_KIND_NAMES}.")]
SessionOpt = Annotated[str | None, typer.Option("--session", help="Session id.")]
IdArg = Annotated[str, typer.Argument(metavar="ID_OR_KEY", help="Memory id or key.")]
InvalidOpt = Annotated[bool, typer.Option(
    "--include-invalid", help="Also show invalidated (corrected) memories.")]


@_command("add")
def add_cmd(
    ctx: typer.Context,
    *,
    content: Annotated[str, typer.Argument(
        metavar="CONTENT", help="The memory text, or - to read it from stdin.")],
    key: Annotated[str | None, typer.Option(
        help="Human-readable key, unique per namespace; an existing key is updated.")] = None,
    kind: Annotated[str, typer.Option("--kind", "-k", help=f"One of: {_KIND_NAMES}.")] = "fact",
    tag: TagOpt = None,
    tags: TagsOpt = None,
    meta: MetaOpt = None,
    session: SessionOpt = None,
    source: Annotated[str | None, typer.Option(
        help="Provenance tag, e.g. conversation or agent.")] = None,
    event_time: Annotated[str | None, typer.Option(
        "--event-time", metavar="ISO", help="When it happened, ISO-8601.")] = None,
) -> None:
    """Store a memory and print its id.

    Example: clawmem add "User prefers dark mode" --kind preference --tag ui
    """
    with _open(ctx, defer_vectors=True) as mem:
        memory_id = mem.store(_text_arg(content), key=key, kind=as_kind(kind),
                              tags=_tags(tag, tags), metadata=_meta(meta), session_id=session,
                              source=source, event_time=event_time)
    _emit(ctx, {"id": memory_id, "key": key}, _line(memory_id))


@_command("update")
def update_cmd(
    ctx: typer.Context,
    *,
    id_or_key: IdArg,
    content: Annotated[str | None, typer.Option(
        help="New text, or - to read it from stdin.")] = None,
    tags: Annotated[str | None, typer.Option(
        metavar="A,B", help="Replace the tags (comma-separated; \"\" clears them).")] = None,
    kind: Annotated[str | None, typer.Option(help=f"New kind: {_KIND_NAMES}.")] = None,
    key: Annotated[str | None, typer.Option(help="New key.")] = None,
) -> None:
    """Change a memory in place; its id and score are kept.

    Example: clawmem update hmac-rule --content "HMAC covers the raw body" --tags api,security
    """
    changes: dict[str, Any] = {name: value for name, value in
                               (("tags", tags), ("kind", kind), ("key", key)) if value is not None}
    if content is not None:
        changes["content"] = _text_arg(content)
    if not changes:
        raise InvalidInputError("nothing to update: give --content, --tags, --kind or --key")
    with _open(ctx, defer_vectors=True) as mem:
        record = mem.update(id_or_key, **changes)
    _emit(ctx, record.to_dict(), _line(f"updated {record.id}"))


@_command("forget")
def forget_cmd(
    ctx: typer.Context,
    *,
    id_or_key: Annotated[str | None, typer.Argument(
        metavar="[ID_OR_KEY]", help="Memory id or key.")] = None,
    everything: Annotated[bool, typer.Option(
        "--all", help="Delete every memory of the namespace.")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask before --all.")] = False,
) -> None:
    """Delete one memory for good (every version of it, live or archived), or with --all
    the whole namespace.

    Nothing derived from it is left (index rows, links, vectors, mirror notes), and none of
    its bytes stay in the database file or its write-ahead log.

    Example: clawmem forget hmac-rule
    """
    if everything == (id_or_key is not None):
        raise InvalidInputError("give either the id or key of one memory, or --all")
    with _open(ctx, create=False) as mem:
        if id_or_key is not None:
            done = mem.forget(id_or_key)
            _emit(ctx, done.to_dict(), _line(done.summary()))
            return
        count = mem.count(include_invalid=True)
        if not yes and not _confirmed(
                f"Delete all {count} memories in namespace {mem.namespace!r}?"):
            _fail("aborted; nothing was deleted", EXIT_NOT_FOUND)
        deleted = mem.forget_namespace()
        data = {"deleted": deleted, "namespace": mem.namespace}
        _emit(ctx, data, _line(f"forgot {deleted} memories in namespace {mem.namespace!r}"))


def _confirmed(question: str) -> bool:
    """Ask on stderr (stdout may be JSON); end of input means no."""
    try:
        answer = typer.confirm(question, err=True)
    except typer.Abort:
        answer = False
    if not sys.stdin.isatty():  # a piped answer is not echoed: end the prompt's line
        sys.stderr.write("\n")
    return answer


# --- feedback and correction ---------------------------------------------------------------------
WeightOpt = Annotated[int | None, typer.Option(
    min=0, help="Points to add or take (default from settings: reinforce 3, demote 1).")]


@_command("reinforce")
def reinforce_cmd(ctx: typer.Context, id_or_key: IdArg, weight: WeightOpt = None) -> None:
    """Say a memory helped: its score goes up and it ranks higher in recall.

    Example: clawmem reinforce hmac-rule
    """
    with _open(ctx) as mem:
        record = mem.reinforce(id_or_key, weight)
    _emit(ctx, record.to_dict(), _line(f"reinforced {record.id}: score {record.score}"))


@_command("demote")
def demote_cmd(ctx: typer.Context, id_or_key: IdArg, weight: WeightOpt = None) -> None:
    """Say a memory is wrong or stale: its score goes down.

    Example: clawmem demote 3f2a9c0d1e4b5a67
    """
    with _open(ctx) as mem:
        record = mem.demote(id_or_key, weight)
    _emit(ctx, record.to_dict(), _line(f"demoted {record.id}: score {record.score}"))


@_command("correct")
def correct_cmd(
    ctx: typer.Context,
    *,
    id_or_key: IdArg,
    new_content: Annotated[str, typer.Argument(
        metavar="NEW_CONTENT", help="The corrected text, or - to read it from stdin.")],
    tags: Annotated[str | None, typer.Option(
        metavar="A,B", help="Tags of the corrected memory (default: the old ones).")] = None,
    reason: Annotated[str | None, typer.Option(help="Why it was corrected.")] = None,
) -> None:
    """Replace a memory with a corrected one; the old one is kept, invalidated (see history).

    Example: clawmem correct hmac-rule "HMAC covers the raw body, even when empty" --reason "API v2"
    """
    with _open(ctx, defer_vectors=True) as mem:
        record = mem.correct(id_or_key, _text_arg(new_content), tags=tags, reason=reason)
    _emit(ctx, record.to_dict(), _line(f"corrected {record.supersedes} -> {record.id}"))


@_command("confirm")
def confirm_cmd(ctx: typer.Context, id_or_key: IdArg) -> None:
    """Protect a memory for good: it never decays and its confidence is 1.

    Example: clawmem confirm hmac-rule
    """
    with _open(ctx) as mem:
        record = mem.confirm(id_or_key)
    _emit(ctx, record.to_dict(), _line(f"confirmed {record.id}"))


@_command("history")
def history_cmd(ctx: typer.Context, id_or_key: IdArg) -> None:
    """Show the chain of corrections through a memory, oldest first.

    Example: clawmem history hmac-rule
    """
    with _open(ctx, create=False) as mem:
        chain = mem.history(id_or_key)
    data = {"id": chain[-1].id, "chain": [r.to_dict() for r in chain]}
    _emit(ctx, data, _print(lambda: _records_table(chain)))


# --- reading -------------------------------------------------------------------------------------
@_command("recall")
def recall_cmd(
    ctx: typer.Context,
    *,
    query: Annotated[str, typer.Argument(
        metavar="QUERY", help="What to look for, in plain words.")],
    limit: Annotated[int | None, typer.Option(
        "--limit", "-l", help="Most hits to return (default from settings: 5).")] = None,
    kind: KindsOpt = None,
    tag: TagOpt = None,
    tags: TagsOpt = None,
    session: SessionOpt = None,
    meta: MetaOpt = None,
    include_invalid: InvalidOpt = False,
    explain: Annotated[bool, typer.Option(
        "--explain", "-e", help="Show why each memory matched and how it was scored.")] = False,
    mode: Annotated[str | None, typer.Option(
        "--mode", help="keyword, vector, hybrid or auto (default: hybrid when an embedder"
        " works, else keyword).")] = None,
    depth: Annotated[int, typer.Option(
        "--depth", help="1 adds the linked neighbours of the hits.")] = 0,
    archive: Annotated[bool, typer.Option(
        "--archive", help="Search the archive instead: what maintenance moved out of recall"
        " (clawmem restore brings a memory back).")] = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    created_since: CreatedSinceOpt = None,
    created_until: CreatedUntilOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """Find the memories most relevant to a query, best first.

    Example: clawmem recall "dark theme" --explain --since "2 weeks ago"
    """
    with _open(ctx, create=False) as mem:
        if not archive and (mode or "").lower() != "keyword" and not _globals(ctx).url:
            from clawmemory.interfaces.cli_retrieval import catch_up_vectors

            catch_up_vectors(mem)
        hits: list[Hit] = mem.recall(query, limit=limit, kind=kind or None, tags=_tags(tag, tags),
                          session_id=session, metadata=_meta(meta),
                          include_invalid=include_invalid, mode=mode, depth=depth,
                          archive=archive, **times(since, until, created_since,
                                                   created_until, as_of))
        namespace = mem.namespace
    data = {"query": query, "namespace": namespace, "hits": [h.to_dict() for h in hits]}
    _emit(ctx, data, _print_hits(hits, explain))


@_command("get")
def get_cmd(ctx: typer.Context, id_or_key: IdArg) -> None:
    """Show one memory, every field.

    Example: clawmem get hmac-rule
    """
    with _open(ctx, create=False) as mem:
        record = mem.get(id_or_key)
    _emit(ctx, record.to_dict(), _print(lambda: _fields_table(record.to_dict())))


@_command("list")
def list_cmd(
    ctx: typer.Context,
    *,
    kind: KindsOpt = None,
    tag: TagOpt = None,
    tags: TagsOpt = None,
    session: SessionOpt = None,
    meta: MetaOpt = None,
    limit: Annotated[int, typer.Option("--limit", "-l", help="Most memories to show.")] = 20,
    offset: Annotated[int, typer.Option(help="Skip this many first.")] = 0,
    order: Annotated[str, typer.Option(help=f"One of: {', '.join(ORDERS)}.")] = "newest",
    include_invalid: InvalidOpt = False,
    archive: Annotated[bool, typer.Option(
        "--archive", help="List the archive instead (what maintenance moved there), most"
        " recently archived first; takes only --limit and --offset.")] = False,
    since: SinceOpt = None,
    until: UntilOpt = None,
    created_since: CreatedSinceOpt = None,
    created_until: CreatedUntilOpt = None,
    as_of: AsOfOpt = None,
) -> None:
    """List memories, newest first, with optional filters.

    Example: clawmem list --kind preference --tag ui --limit 10 --since yesterday
    """
    when = times(since, until, created_since, created_until, as_of)
    if archive:
        if (kind or tag or tags or session or meta or include_invalid or order != "newest"
                or any(v is not None for v in when.values())):
            raise InvalidInputError("--archive takes only --limit and --offset")
        _list_archive(ctx, limit, offset)
        return
    with _open(ctx, create=False) as mem:
        records = mem.list(kind=kind or None, tags=_tags(tag, tags), session_id=session,
                           metadata=_meta(meta), include_invalid=include_invalid,
                           limit=limit, offset=offset, order=order, **when)
        namespace = mem.namespace
    data = {"namespace": namespace, "offset": offset, "count": len(records),
            "memories": [r.to_dict() for r in records]}
    if records:
        _emit(ctx, data, _print(lambda: _records_table(records)))
    else:
        _emit(ctx, data, _line("no memories"))


def _list_archive(ctx: typer.Context, limit: int, offset: int) -> None:
    with _open(ctx) as mem:
        entries = mem.archived(limit=limit, offset=offset)
    data = {"namespace": mem.namespace, "offset": offset, "count": len(entries),
            "archive": True, "memories": [e.to_dict() for e in entries]}
    _emit(ctx, data, _print(lambda: _records_table([e.record for e in entries], entries))
          if entries else _line("the archive is empty"))


@_command("stats")
def stats_cmd(ctx: typer.Context) -> None:
    """Show counts by kind, links, size and the database path.

    Example: clawmem --db agent.db stats
    """
    with _open(ctx, create=False) as mem:
        stats = mem.stats()
    _emit(ctx, stats, _print(lambda: _fields_table(stats)))


# --- entry point ---------------------------------------------------------------------------------
def register_extensions(target: typer.Typer) -> None:
    """Add the commands of every ``clawmemory.interfaces.cli_*`` module (its ``register(app)``
    hook) to ``target``. main() calls it, so importing this module stays free of side effects;
    a hook replaces commands of its names, so calling it twice is harmless."""
    import importlib
    import pkgutil

    import clawmemory.interfaces as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if not info.name.startswith("cli_"):
            continue
        try:
            module = importlib.import_module(f"{package.__name__}.{info.name}")
        except ImportError as exc:  # one broken add-on must not take every command down
            sys.stderr.write(f"warning: clawmem commands from {info.name} unavailable: {exc}\n")
            continue
        hook = getattr(module, "register", None)
        if callable(hook):
            hook(target)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``clawmem`` console script. Returns the exit code."""
    register_extensions(app)
    command = typer.main.get_command(app)
    try:
        result = command.main(args=None if argv is None else list(argv), prog_name="clawmem",
                              standalone_mode=False)
    except typer.TyperException as exc:  # click's usage errors: bad option, missing argument
        usage_ctx = getattr(exc, "ctx", None)
        hint = f" (see '{usage_ctx.command_path} --help')" if usage_ctx is not None else ""
        _say_error(exc.format_message() + hint)
        return exc.exit_code
    except typer.Abort:
        _say_error("aborted")
        return EXIT_NOT_FOUND
    except Exception as exc:  # outside any command, e.g. while parsing: still one line
        _say_error(_internal(exc))
        return EXIT_INTERNAL
    return result if isinstance(result, int) else EXIT_OK

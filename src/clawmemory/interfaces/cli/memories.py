"""The memory commands of ``clawmem``: writing (add, update, forget), feedback and correction
(reinforce, demote, correct, confirm, history) and reading (recall, get, list, stats).

Every command translates its arguments into one or two ``Memory`` calls and renders the result,
as a rich table for people or as JSON (``--json``) for programs; errors from the engine's tree
become one ``error: ...`` line and an exit code through ``common.guarded``. ``register(app)``
adds them to the ``clawmem`` app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from clawmemory.backends.base import ORDERS
from clawmemory.errors import InvalidInputError
from clawmemory.interfaces.cli.common import (
    EXIT_NOT_FOUND,
    KIND_NAMES,
    IdArg,
    InvalidOpt,
    KindsOpt,
    MetaOpt,
    NarrativeOpt,
    SessionOpt,
    TagOpt,
    TagsOpt,
    TaskOpt,
    confirmed,
    emit,
    fail,
    fields_table,
    globals_of,
    guarded,
    join_tags,
    open_memory,
    parse_meta,
    plain,
    print_hits,
    records_table,
    rendered,
    text_arg,
)
from clawmemory.interfaces.cli.retrieval import catch_up_vectors
from clawmemory.interfaces.cli.times import (
    AsOfOpt,
    CreatedSinceOpt,
    CreatedUntilOpt,
    SinceOpt,
    UntilOpt,
    times,
)
from clawmemory.model import Hit, as_kind

__all__ = ["COMMANDS", "register"]


# --- writing -------------------------------------------------------------------------------------
def add_cmd(
    ctx: typer.Context,
    *,
    content: Annotated[str, typer.Argument(
        metavar="CONTENT", help="The memory text, or - to read it from stdin.")],
    key: Annotated[str | None, typer.Option(
        help="Human-readable key, unique per namespace; an existing key is updated.")] = None,
    kind: Annotated[str, typer.Option("--kind", "-k", help=f"One of: {KIND_NAMES}.")] = "fact",
    tag: TagOpt = None,
    tags: TagsOpt = None,
    meta: MetaOpt = None,
    session: SessionOpt = None,
    narrative: NarrativeOpt = None,
    task: TaskOpt = None,
    source: Annotated[str | None, typer.Option(
        help="Provenance tag, e.g. conversation or agent.")] = None,
    event_time: Annotated[str | None, typer.Option(
        "--event-time", metavar="ISO", help="When it happened, ISO-8601.")] = None,
) -> None:
    """Store a memory and print its id.

    Example: clawmem add "User prefers dark mode" --kind preference --tag ui
    """
    with open_memory(ctx, defer_vectors=True) as mem:
        memory_id = mem.store(text_arg(content), key=key, kind=as_kind(kind),
                              tags=join_tags(tag, tags), metadata=parse_meta(meta),
                              session_id=session, narrative_id=narrative, task_id=task,
                              source=source, event_time=event_time)
    emit(ctx, {"id": memory_id, "key": key}, plain(memory_id))


def update_cmd(
    ctx: typer.Context,
    *,
    id_or_key: IdArg,
    content: Annotated[str | None, typer.Option(
        help="New text, or - to read it from stdin.")] = None,
    tags: Annotated[str | None, typer.Option(
        metavar="A,B", help="Replace the tags (comma-separated; \"\" clears them).")] = None,
    kind: Annotated[str | None, typer.Option(help=f"New kind: {KIND_NAMES}.")] = None,
    key: Annotated[str | None, typer.Option(help="New key.")] = None,
) -> None:
    """Change a memory in place; its id and score are kept.

    Example: clawmem update hmac-rule --content "HMAC covers the raw body" --tags api,security
    """
    changes: dict[str, Any] = {name: value for name, value in
                               (("tags", tags), ("kind", kind), ("key", key)) if value is not None}
    if content is not None:
        changes["content"] = text_arg(content)
    if not changes:
        raise InvalidInputError("nothing to update: give --content, --tags, --kind or --key")
    with open_memory(ctx, defer_vectors=True) as mem:
        record = mem.update(id_or_key, **changes)
    emit(ctx, record.to_dict(), plain(f"updated {record.id}"))


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
    with open_memory(ctx, create=False) as mem:
        if id_or_key is not None:
            done = mem.forget(id_or_key)
            emit(ctx, done.to_dict(), plain(done.summary()))
            return
        count = mem.count(include_invalid=True)
        if not yes and not confirmed(
                f"Delete all {count} memories in namespace {mem.namespace!r}?"):
            fail("aborted; nothing was deleted", EXIT_NOT_FOUND)
        deleted = mem.forget_namespace()
        data = {"deleted": deleted, "namespace": mem.namespace}
        emit(ctx, data, plain(f"forgot {deleted} memories in namespace {mem.namespace!r}"))


# --- feedback and correction ---------------------------------------------------------------------
WeightOpt = Annotated[int | None, typer.Option(
    min=0, help="Points to add or take (default from settings: reinforce 3, demote 1).")]


def reinforce_cmd(ctx: typer.Context, id_or_key: IdArg, weight: WeightOpt = None) -> None:
    """Say a memory helped: its score goes up and it ranks higher in recall.

    Example: clawmem reinforce hmac-rule
    """
    with open_memory(ctx) as mem:
        record = mem.reinforce(id_or_key, weight)
    emit(ctx, record.to_dict(), plain(f"reinforced {record.id}: score {record.score}"))


def demote_cmd(ctx: typer.Context, id_or_key: IdArg, weight: WeightOpt = None) -> None:
    """Say a memory is wrong or stale: its score goes down.

    Example: clawmem demote 3f2a9c0d1e4b5a67
    """
    with open_memory(ctx) as mem:
        record = mem.demote(id_or_key, weight)
    emit(ctx, record.to_dict(), plain(f"demoted {record.id}: score {record.score}"))


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
    with open_memory(ctx, defer_vectors=True) as mem:
        record = mem.correct(id_or_key, text_arg(new_content), tags=tags, reason=reason)
    emit(ctx, record.to_dict(), plain(f"corrected {record.supersedes} -> {record.id}"))


def confirm_cmd(ctx: typer.Context, id_or_key: IdArg) -> None:
    """Protect a memory for good: it never decays and its confidence is 1.

    Example: clawmem confirm hmac-rule
    """
    with open_memory(ctx) as mem:
        record = mem.confirm(id_or_key)
    emit(ctx, record.to_dict(), plain(f"confirmed {record.id}"))


def history_cmd(ctx: typer.Context, id_or_key: IdArg) -> None:
    """Show the chain of corrections through a memory, oldest first.

    Example: clawmem history hmac-rule
    """
    with open_memory(ctx, create=False) as mem:
        chain = mem.history(id_or_key)
    data = {"id": chain[-1].id, "chain": [r.to_dict() for r in chain]}
    emit(ctx, data, rendered(lambda: records_table(chain)))


# --- reading -------------------------------------------------------------------------------------
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
    narrative: NarrativeOpt = None,
    task: TaskOpt = None,
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
    with open_memory(ctx, create=False) as mem:
        if not archive and (mode or "").lower() != "keyword" and not globals_of(ctx).url:
            catch_up_vectors(mem)
        hits: list[Hit] = mem.recall(query, limit=limit, kind=kind or None,
                                     tags=join_tags(tag, tags), session_id=session,
                                     narrative_id=narrative, task_id=task,
                                     metadata=parse_meta(meta), include_invalid=include_invalid,
                                     mode=mode, depth=depth, archive=archive,
                                     **times(since, until, created_since, created_until, as_of))
        namespace = mem.namespace
    data = {"query": query, "namespace": namespace, "hits": [h.to_dict() for h in hits]}
    emit(ctx, data, print_hits(hits, explain))


def get_cmd(ctx: typer.Context, id_or_key: IdArg) -> None:
    """Show one memory, every field.

    Example: clawmem get hmac-rule
    """
    with open_memory(ctx, create=False) as mem:
        record = mem.get(id_or_key)
    emit(ctx, record.to_dict(), rendered(lambda: fields_table(record.to_dict())))


def list_cmd(
    ctx: typer.Context,
    *,
    kind: KindsOpt = None,
    tag: TagOpt = None,
    tags: TagsOpt = None,
    session: SessionOpt = None,
    narrative: NarrativeOpt = None,
    task: TaskOpt = None,
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
        if (kind or tag or tags or session or narrative or task or meta or include_invalid
                or order != "newest" or any(v is not None for v in when.values())):
            raise InvalidInputError("--archive takes only --limit and --offset")
        _list_archive(ctx, limit, offset)
        return
    with open_memory(ctx, create=False) as mem:
        records = mem.list(kind=kind or None, tags=join_tags(tag, tags), session_id=session,
                           narrative_id=narrative, task_id=task, metadata=parse_meta(meta),
                           include_invalid=include_invalid, limit=limit, offset=offset,
                           order=order, **when)
        namespace = mem.namespace
    data = {"namespace": namespace, "offset": offset, "count": len(records),
            "memories": [r.to_dict() for r in records]}
    if records:
        emit(ctx, data, rendered(lambda: records_table(records)))
    else:
        emit(ctx, data, plain("no memories"))


def _list_archive(ctx: typer.Context, limit: int, offset: int) -> None:
    with open_memory(ctx) as mem:
        entries = mem.archived(limit=limit, offset=offset)
    data = {"namespace": mem.namespace, "offset": offset, "count": len(entries),
            "archive": True, "memories": [e.to_dict() for e in entries]}
    emit(ctx, data, rendered(lambda: records_table([e.record for e in entries], entries))
         if entries else plain("the archive is empty"))


def stats_cmd(ctx: typer.Context) -> None:
    """Show counts by kind, links, size and the database path.

    Example: clawmem --db agent.db stats
    """
    with open_memory(ctx, create=False) as mem:
        stats = mem.stats()
    emit(ctx, stats, rendered(lambda: fields_table(stats)))


# In the order ``clawmem --help`` lists them.
COMMANDS: tuple[tuple[str, Callable[..., None]], ...] = (
    ("add", add_cmd),
    ("update", update_cmd),
    ("forget", forget_cmd),
    ("reinforce", reinforce_cmd),
    ("demote", demote_cmd),
    ("correct", correct_cmd),
    ("confirm", confirm_cmd),
    ("history", history_cmd),
    ("recall", recall_cmd),
    ("get", get_cmd),
    ("list", list_cmd),
    ("stats", stats_cmd),
)


def register(app: typer.Typer) -> None:
    """Add the memory commands to ``app`` behind the error boundary, replacing earlier
    commands of those names (so registering twice is harmless)."""
    names = {name for name, _ in COMMANDS}
    app.registered_commands = [c for c in app.registered_commands if c.name not in names]
    for name, fn in COMMANDS:
        app.command(name)(guarded(fn))

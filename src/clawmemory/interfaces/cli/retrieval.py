"""CLI commands for the retrieval layer: vectors (reindex, backfill), the link graph and entities.

Registered by ``app.main()`` through ``register(app)``, like every command module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from clawmemory.interfaces.cli.common import (
    IdArg,
    emit,
    fields_table,
    guarded,
    open_memory,
    plain,
    records_table,
    rendered,
)

if TYPE_CHECKING:
    from rich.console import Console

log = logging.getLogger("clawmemory")

__all__ = ["catch_up_vectors", "register"]

if TYPE_CHECKING:
    from clawmemory.memory import Memory

# A recall that loads the model anyway embeds this many queued memories first (~4 ms each), so
# `clawmem add` then `clawmem recall` finds the new memory by meaning too; more waits for
# `clawmem backfill`, the server or `maintain`.
CATCH_UP_LIMIT = 200


def catch_up_vectors(mem: Memory) -> None:
    """Embed what `clawmem add` queued, when there is little of it and the model works."""
    waiting = mem.parts.vectors.queued(mem.namespace)
    if not waiting or mem.parts.vectors.vectors() is None:
        return
    if waiting > CATCH_UP_LIMIT:
        log.warning("%d memories wait for their vector; `clawmem backfill` embeds them (until"
                    " then recall finds them by keyword)", waiting)
        return
    mem.backfill()

COMMANDS = ("reindex", "backfill", "link", "unlink", "neighbors", "entity")


def _progress(label: str) -> tuple[Callable[[int, int], None], Callable[[], None]]:
    """A rich progress bar on stderr (stdout stays clean for --json): (update, close)."""
    from rich.console import Console
    from rich.progress import Progress

    bar = Progress(console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=None)
    bar.start()

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return update, bar.stop


def reindex_cmd(ctx: typer.Context) -> None:
    """Drop every stored vector and embed all memories again with the current embedder.

    Needed after changing the embedding model (recall warns that vector search is disabled
    until then). Shows a progress bar.

    Example: clawmem --db agent.db reindex
    """
    with open_memory(ctx) as mem:
        update, close = _progress("embedding")
        try:
            done = mem.reindex(progress=update)
        finally:
            close()
        status = mem.stats()["vectors"]
    emit(ctx, {"embedded": done, "vectors": status}, plain(f"embedded {done} memories"))


def backfill_cmd(ctx: typer.Context) -> None:
    """Embed only the memories that have no vector yet (stored while no embedder worked).

    Example: clawmem --db agent.db backfill
    """
    with open_memory(ctx) as mem:
        update, close = _progress("embedding")
        try:
            done = mem.backfill(progress=update)
        finally:
            close()
    emit(ctx, {"embedded": done}, plain(f"embedded {done} memories"))


StrengthOpt = Annotated[float, typer.Option(
    "--strength", help="Link strength; a linked pair keeps the larger of its own and this.")]


def link_cmd(ctx: typer.Context, a: IdArg, b: IdArg, strength: StrengthOpt = 1.0) -> None:
    """Link two memories both ways. Fails when either does not exist.

    Example: clawmem link user-prefers-python project-uses-python
    """
    with open_memory(ctx) as mem:
        mem.get(a), mem.get(b)  # a clear "not found" for a missing end
        linked = mem.link(a, b, strength=strength)
    emit(ctx, {"linked": linked, "a": a, "b": b}, plain(f"linked {a} <-> {b}"))


def unlink_cmd(ctx: typer.Context, a: IdArg, b: IdArg) -> None:
    """Remove the link between two memories.

    Example: clawmem unlink user-prefers-python project-uses-python
    """
    with open_memory(ctx) as mem:
        removed = mem.unlink(a, b)
    text = f"unlinked {a} <-> {b}" if removed else f"{a} and {b} were not linked"
    emit(ctx, {"unlinked": removed, "a": a, "b": b}, plain(text))


def neighbors_cmd(
    ctx: typer.Context, id_or_key: IdArg,
    limit: Annotated[int, typer.Option("--limit", "-l", help="Most neighbours.")] = 10,
) -> None:
    """Show the memories linked to one memory, strongest link first.

    Example: clawmem neighbors user-prefers-python
    """
    with open_memory(ctx, create=False) as mem:
        records = mem.neighbors(id_or_key, limit)
    emit(ctx, [r.to_dict() for r in records], rendered(lambda: records_table(records)))


def entity_cmd(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Entity name or alias, any case.")],
    limit: Annotated[int, typer.Option("--limit", "-l", help="Most memories.")] = 20,
) -> None:
    """Everything known about an entity: type, aliases, mentions and its memories.

    Example: clawmem entity Caroline
    """
    with open_memory(ctx, create=False) as mem:
        info = mem.entity_info(name, limit=limit)
    records = info.pop("memories")
    data = {**info, "memories": [r.to_dict() for r in records]}

    def render(console: Console) -> None:
        console.print(fields_table(info))
        if records:
            console.print(records_table(records))

    emit(ctx, data, render)


def register(app: typer.Typer) -> None:
    """Add the retrieval commands to ``app`` (replacing earlier ones of the same names)."""
    app.registered_commands = [c for c in app.registered_commands if c.name not in COMMANDS]
    for name, fn in (("reindex", reindex_cmd), ("backfill", backfill_cmd), ("link", link_cmd),
                     ("unlink", unlink_cmd), ("neighbors", neighbors_cmd),
                     ("entity", entity_cmd)):
        app.command(name)(guarded(fn))

"""``clawmem demo``: a short end-to-end tour on a temporary database (store, recall with
explanations, reinforce, forget). ``register(app)`` adds it to the ``clawmem`` app."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from clawmemory.errors import NotFoundError
from clawmemory.interfaces.cli.common import (
    globals_of,
    guarded,
    hits_table,
    new_console,
    open_local,
    print_json,
    records_table,
)
from clawmemory.memory import Memory
from clawmemory.model import Hit, Kind

if TYPE_CHECKING:
    from rich.console import RenderableType

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``, replacing an earlier command of that name."""
    app.registered_commands = [c for c in app.registered_commands if c.name != "demo"]
    app.command("demo")(guarded(demo_cmd))


_DEMO_MEMORIES: tuple[tuple[str, Kind, tuple[str, ...], str | None], ...] = (
    ("User prefers dark mode in every editor", "preference", ("ui",), None),
    ("Payment API: the HMAC signature excludes an empty request body", "fact", ("api",),
     "hmac-rule"),
    ("The staging database is reset every Monday at 06:00 UTC", "fact", ("ops",), None),
    ("Deploy of 2024-03-02 failed because the migration timed out", "event", ("ops",), None),
)


def demo_cmd(ctx: typer.Context) -> None:
    """Run a short end-to-end demo: store, recall with explanations, reinforce, forget.

    It uses a temporary database that is deleted afterwards; your --db is not touched.

    Example: clawmem demo
    """
    quiet = globals_of(ctx).json
    console = None if quiet else new_console()

    def show(renderable: RenderableType) -> None:
        if console is not None:
            console.print(renderable)

    with tempfile.TemporaryDirectory(prefix="clawmem-demo-") as tmp, \
            open_local(Path(tmp) / "demo.db", "demo", "sqlite") as mem:
        report = _demo(mem, show)
    if quiet:
        print_json(report)


def _demo(mem: Memory, show: Callable[[RenderableType], None]) -> dict[str, Any]:
    from rich.text import Text

    show(Text("1. store: four memories in a temporary database", style="bold"))
    ids = [mem.store(content, kind=kind, tags=tags, key=key)
           for content, kind, tags, key in _DEMO_MEMORIES]
    show(records_table(mem.list(order="oldest")))
    query = "which editor theme does a user prefer"
    hits: list[Hit] = mem.recall(query, limit=3)
    show(Text(f"\n2. recall {query!r}, with explanations", style="bold"))
    show(hits_table(hits, explain=True))
    reinforced = mem.reinforce("hmac-rule")
    show(Text(f"\n3. reinforce 'hmac-rule' (it helped): score {reinforced.score}; recall"
              " 'HMAC signature' now ranks it with a reinforcement factor", style="bold"))
    boosted: list[Hit] = mem.recall("HMAC signature", limit=1)
    show(hits_table(boosted, explain=True))
    forgotten = mem.forget("hmac-rule")
    after: list[Hit] = mem.recall("HMAC signature", limit=3)
    show(Text(f"\n4. forget 'hmac-rule' ({forgotten.id}): hard delete", style="bold"))
    try:
        mem.get("hmac-rule")
        gone = False
    except NotFoundError as exc:
        gone = not any(h.memory.id == forgotten.id for h in after)
        show(Text(f"get 'hmac-rule' -> {exc}; recall 'HMAC signature' -> {len(after)} hits;"
                  f" {mem.count()} memories left", style="green" if gone else "red"))
    return {"stored": ids, "recall": {"query": query, "hits": [h.to_dict() for h in hits]},
            "reinforced": reinforced.to_dict(), "forgotten": forgotten.id,
            "recall_after_forget": [h.to_dict() for h in after], "gone": gone,
            "remaining": mem.count()}

"""``clawmem config``: the effective settings and where each came from, and the profiles.

    clawmem config show                      every setting, its value and its origin
    clawmem config show --profile ptrclaw    ... as 000 PtrClaw's profile makes them
    clawmem config show --changed            only what differs from clawmemory's defaults
    clawmem config profiles                  the profiles and what each one sets
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from clawmemory.config import config_path
from clawmemory.interfaces.cli.common import emit, globals_of, guarded, rendered
from clawmemory.origins import settings_origins
from clawmemory.profiles import PROFILES

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["register"]

config_app = typer.Typer(
    name="config",
    help="The effective settings and where each came from; the specification profiles.\n\n"
    "Example: clawmem config show --profile ptrclaw --changed",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``config`` group to ``app``, replacing an earlier one."""
    app.registered_groups = [g for g in app.registered_groups if g.name != "config"]
    app.add_typer(config_app, name="config")


def _plain(value: Any) -> Any:
    """A value as JSON holds it (paths as text; secrets never shown)."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump())
    return value.value if hasattr(value, "value") and not isinstance(value, str | int) else value


def _shown(path: str, value: Any) -> Any:
    # A key given as a setting is the user's secret: the origin says where it is, not what.
    secret = path.endswith("api_key") and value
    return "***" if secret else _plain(value)


def _table(rows: list[dict[str, Any]], title: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column in ("setting", "value", "from"):
        table.add_column(column, overflow="fold")
    for row in rows:
        value = row["value"]
        shown = json.dumps(value) if not isinstance(value, str) else value
        table.add_row(row["setting"], shown, row["from"])
    return table


@config_app.command("show")
@guarded
def show_cmd(
    ctx: typer.Context,
    changed: Annotated[bool, typer.Option(
        "--changed", help="Only settings that differ from clawmemory's defaults.")] = False,
) -> None:
    """Print every effective setting, its value, and where it came from: given on the command
    line, a CLAWMEM_* variable, a profile's own variable or file (MEMORY_*, DEVCLAW_*), the
    config file, the profile, or the default. The global --profile chooses the profile.

    Example: clawmem config show --profile ptrclaw --changed
    """
    g = globals_of(ctx)
    settings, origins = settings_origins(db=g.db, namespace=g.namespace,
                                         backend=g.backend.value if g.backend else None,
                                         profile=g.profile)
    rows = []
    for path, origin in origins.items():
        if changed and origin == "default":
            continue
        value: Any = settings
        for name in path.split("."):
            value = getattr(value, name)
        rows.append({"setting": path, "value": _shown(path, value), "from": origin})
    title = f"profile {settings.profile} (config file: {config_path()})"
    emit(ctx, {"profile": settings.profile, "config_file": str(config_path()),
               "settings": rows}, rendered(lambda: _table(rows, title)))


@config_app.command("profiles")
@guarded
def profiles_cmd(ctx: typer.Context) -> None:
    """List the profiles: the specification each follows and what it sets.

    Example: clawmem config profiles
    """
    data = [{"name": p.name, "specification": p.spec, "summary": p.summary,
             "sets": _plain(dict(p.defaults))} for p in PROFILES.values()]

    def build() -> Table:
        from rich.table import Table

        table = Table()
        for column in ("profile", "specification", "what it does"):
            table.add_column(column, overflow="fold")
        for p in data:
            table.add_row(p["name"], p["specification"], p["summary"])
        return table

    emit(ctx, {"profiles": data}, rendered(build))

"""``clawmem keys``: create, list and revoke the API keys of ``clawmem serve`` (ADR 0016).

Keys live in the database (sqlite or postgres backend), so a running server sees a new or revoked
key on its next request. Once any key exists, every request to the server needs one, and the
first key's creation says so (and how to reach ``default`` again)::

    clawmem keys create --namespace alice --role write --label "alice's agent"
    clawmem keys list
    clawmem keys revoke 3f2a9c0d1e4b
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from clawmemory.auth import ApiKey, Keys, Role, key_store_for
from clawmemory.interfaces.cli.common import (
    emit,
    guarded,
    open_memory,
    plain,
    rendered,
    show_value,
)

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["register"]

keys_app = typer.Typer(
    name="keys",
    help="API keys of the server: each is bound to namespaces with a role (read, write,"
    " admin). Once any key exists, every REST, inspector and MCP request needs one.\n\n"
    "Example: clawmem keys create --namespace alice --role write",
    no_args_is_help=True,
)


def register(app: typer.Typer) -> None:
    """Add the ``keys`` group to ``app``, replacing an earlier one (registering twice is
    harmless)."""
    app.registered_groups = [g for g in app.registered_groups if g.name != "keys"]
    app.add_typer(keys_app, name="keys")


def _table(keys: list[ApiKey]) -> Table:
    from rich.table import Table

    table = Table()
    for column in ("id", "role", "namespaces", "label", "created", "revoked"):
        table.add_column(column)
    for k in keys:
        revoked = show_value("created_at", k.revoked_at)[:16] if k.revoked_at else "-"
        table.add_row(k.id, k.role.value, ", ".join(k.namespaces), k.label or "-",
                      show_value("created_at", k.created_at)[:16], revoked)
    return table


@keys_app.command("create")
@guarded
def create_cmd(
    ctx: typer.Context,
    *,
    namespace: Annotated[list[str], typer.Option(
        "--namespace", "-n", metavar="NS", help="A namespace the key may use (repeatable; the"
        " first is the one a request that names none works in).")],
    role: Annotated[Role, typer.Option(
        case_sensitive=False, help="read: look only; write: also store, change and forget"
        " memories; admin: also forget a whole namespace and run maintenance.")] = Role.WRITE,
    label: Annotated[str | None, typer.Option(help="A note for `keys list`.")] = None,
) -> None:
    """Create an API key and print it as the last line. It is shown only now: the database
    keeps a digest of it.

    Example: clawmem keys create --namespace alice --role write
    """
    with open_memory(ctx, local=True) as mem:
        keys = Keys(key_store_for(mem.store_backend))
        first = not keys.required()
        record, secret = keys.create(namespace, role, label)
    if first:
        sys.stderr.write(_first_key_notice(record.namespaces))
    data = {**record.to_dict(), "key": secret}
    emit(ctx, data, plain(f"created key {record.id} ({record.role.value} on "
                           f"{', '.join(record.namespaces)}); it is shown only once:\n{secret}"))


def _first_key_notice(namespaces: Sequence[str]) -> str:
    """What the first active key changes, said on stderr when it is created (stdout's last line
    stays the key): until now a loopback server let its own user into every namespace without
    a key; from now on nothing gets in without one, ``default`` included."""
    lines = [
        "note: this is the first active API key of this database. From now on `clawmem serve`"
        " on it answers only requests that send a key (REST, inspector and MCP), and a key"
        f" reaches only its own namespaces (this one: {', '.join(namespaces)}).",
    ]
    if "default" not in namespaces:
        lines.append("'default' and every other namespace no key is bound to are now out of"
                     " reach through the server; to get back into 'default':"
                     " clawmem keys create --namespace default --role write")
    lines.append("The CLI on the database itself needs no key. List the keys: clawmem keys"
                 " list; revoke one: clawmem keys revoke ID (with no active key left, a server"
                 " on loopback needs none again).")
    return "\n".join(lines) + "\n"


@keys_app.command("list")
@guarded
def list_cmd(ctx: typer.Context) -> None:
    """List the API keys (ids, roles, namespaces; never the keys themselves).

    Example: clawmem keys list
    """
    with open_memory(ctx, create=False, local=True) as mem:
        keys = Keys(key_store_for(mem.store_backend)).list()
    emit(ctx, {"keys": [k.to_dict() for k in keys]},
         rendered(lambda: _table(keys)) if keys else plain("no API keys"))


@keys_app.command("revoke")
@guarded
def revoke_cmd(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(metavar="ID", help="The key's id (or the key).")],
) -> None:
    """Revoke an API key: the server refuses it from its next request on.

    Example: clawmem keys revoke 3f2a9c0d1e4b
    """
    with open_memory(ctx, create=False, local=True) as mem:
        record = Keys(key_store_for(mem.store_backend)).revoke(key_id)
    emit(ctx, record.to_dict(), plain(f"revoked key {record.id}"))


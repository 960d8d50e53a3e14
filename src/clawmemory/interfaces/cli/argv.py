"""Global options anywhere on the line: ``clawmem recall "x" --json`` is ``clawmem --json recall
"x"``.

click only parses a group's options before the subcommand's name. ``GlobalOptionsGroup`` (the
class of the ``clawmem`` app) moves the group's own options found after the command in front of
it before click parses anything, so the two spellings are one parse and behave alike, errors
included. Moved are only options the command does not define itself (``keys create
--namespace NS`` keeps its own ``--namespace``); a value that belongs to one of the command's
options (``--key --json`` stores the key ``--json``) and everything after ``--`` stay where
they are. The last occurrence of an option wins, as everywhere in click.

typer carries its own copy of click, so parameters and commands are told apart by what click
says they are (``param_type_name``, ``get_command``), not by click's classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperGroup

__all__ = ["GlobalOptionsGroup", "hoist_global_options"]


@dataclass(frozen=True)
class _Options:
    """The option names of one command, and which of them take a value."""

    names: frozenset[str]
    valued: frozenset[str]

    @classmethod
    def of(cls, params: Iterable[Any]) -> _Options:
        names: set[str] = set()
        valued: set[str] = set()
        for param in params:
            if param.param_type_name != "option":
                continue
            spelled = {*param.opts, *param.secondary_opts}
            names |= spelled
            if not param.is_flag and not param.count:
                valued |= spelled
        return cls(frozenset(names), frozenset(valued))

    def match(self, token: str) -> str | None:
        """The option ``token`` spells (``--db`` or ``--db=x``), if it is one of these."""
        name = token.split("=", 1)[0] if token.startswith("--") else token
        return name if name in self.names else None

    def takes_next(self, token: str) -> bool:
        """Whether the token after ``token`` is its value (``--db x``, not ``--db=x``)."""
        return "=" not in token and self.match(token) in self.valued


def _is_group(command: Any) -> bool:
    return callable(getattr(command, "get_command", None))


def _split_command(group: Any, ctx: typer.Context, args: Sequence[str],
                   own: _Options) -> tuple[int, Any]:
    """Where the command path ends in ``args`` and the command it names (None: no command,
    an unknown one, or ``--`` first; click reports those itself)."""
    i = 0
    command: Any = None
    current: Any = group
    while i < len(args):
        token = args[i]
        if token == "--":
            return i, None
        if token.startswith("-"):
            i += 2 if own.takes_next(token) and current is group else 1
            continue
        found = current.get_command(ctx, token) if _is_group(current) else None
        if found is None:
            return i, None
        command = current = found
        i += 1
        if not _is_group(found):
            break
    return i, command


def hoist_global_options(group: Any, ctx: typer.Context,
                         args: Sequence[str]) -> list[str]:
    """``args`` with the group's options that follow the command moved in front of it."""
    own = _Options.of(group.params)
    end, command = _split_command(group, ctx, args, own)
    if command is None:
        return list(args)
    leaf = _Options.of(command.params)
    kept: list[str] = []
    hoisted: list[str] = []
    rest = list(args[end:])
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--":
            kept += rest[i:]
            break
        width = 1
        if leaf.match(token):
            width += leaf.takes_next(token)
            kept += rest[i:i + width]
        elif own.match(token):
            width += own.takes_next(token)
            hoisted += rest[i:i + width]
        else:
            kept.append(token)
        i += width
    path_start = _path_start(args[:end], own)
    return [*args[:path_start], *hoisted, *args[path_start:end], *kept]


def _path_start(head: Sequence[str], own: _Options) -> int:
    """The index of the command's name within the tokens before the command's arguments."""
    i = 0
    while i < len(head) and head[i].startswith("-"):
        i += 2 if own.takes_next(head[i]) else 1
    return i


class GlobalOptionsGroup(TyperGroup):
    """The ``clawmem`` group: its options are accepted before or after the command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # click's own Context
        return super().parse_args(ctx, hoist_global_options(self, ctx, args))

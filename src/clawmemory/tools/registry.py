"""The one tool registry, and the single door through which an agent calls it.

``OPERATIONS`` defines every operation once (name, description, pydantic input model,
handler). ``tools_for(dialect)`` lists what a dialect exposes, each with its JSON schema derived
from the operation's model through the dialect's table row. ``call_tool`` validates, calls and
formats, and never raises: refusals (``ClawMemoryError``, bad arguments) and unexpected
failures alike come back as ``ToolResult(is_error=True)`` with one clear sentence. Arguments are
checked in full before the handler runs, and handlers check before they write, so a refused
call changes nothing.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from clawmemory.errors import ClawMemoryError, InvalidInputError
from clawmemory.tools.base import ToolResult, ToolSpec
from clawmemory.tools.consolidator import CONSOLIDATOR_OPERATIONS
from clawmemory.tools.dialects import (
    DEFAULT_DIALECT,
    DIALECTS,
    DialectEntry,
    Dispatch,
    ToolMap,
    resolve_dialect,
)
from clawmemory.tools.operations import MEMORY_OPERATIONS

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "OPERATIONS",
    "DialectTool",
    "ToolResult",
    "ToolSpec",
    "call_tool",
    "dialect_names",
    "operation",
    "tools_for",
]

log = logging.getLogger("clawmemory.tools")

OPERATIONS: Mapping[str, ToolSpec] = {
    op.name: op for op in (*MEMORY_OPERATIONS, *CONSOLIDATOR_OPERATIONS)
}


class ToolCallError(Exception):
    """Arguments a dialect tool refuses; becomes an is_error result (never escapes)."""


@dataclass(frozen=True, slots=True)
class DialectTool:
    """One tool as a dialect exposes it: what an MCP server or a function-calling API lists."""

    dialect: str
    name: str
    description: str
    input_schema: Mapping[str, Any]
    operations: tuple[str, ...]  # the registry operations it can call
    writes: bool  # whether any of them changes the store


def operation(name: str) -> ToolSpec:
    """The registry operation called ``name``; InvalidInputError when there is none."""
    try:
        return OPERATIONS[name]
    except KeyError:
        raise InvalidInputError(f"no tool operation named {name!r}") from None


def dialect_names() -> list[str]:
    return list(DIALECTS)


def tools_for(dialect: str = DEFAULT_DIALECT) -> list[DialectTool]:
    """Every tool of ``dialect`` (a name like ``ptrclaw`` or a spec number like ``000``)."""
    try:
        key = resolve_dialect(dialect)
    except KeyError:
        raise InvalidInputError(_unknown_dialect(dialect)) from None
    return [copy.deepcopy(t) for t in _tools(key)]


@functools.cache
def _tools(dialect: str) -> tuple[DialectTool, ...]:
    return tuple(_dialect_tool(dialect, e) for e in DIALECTS[dialect])


@functools.cache
def _entries(dialect: str) -> Mapping[str, DialectEntry]:
    return {e.name: e for e in DIALECTS[dialect]}


def _unknown_dialect(name: str) -> str:
    return f"unknown tool dialect {name!r} (known: {', '.join(DIALECTS)})"


# --- schemas ------------------------------------------------------------------------------------
def _names(m: ToolMap) -> Mapping[str, str]:
    """Dialect argument name -> operation argument name."""
    if m.args is not None:
        return m.args
    fields = operation(m.op).input_model.model_fields
    return {f: f for f in fields if f not in m.fixed}


def _route_schema(m: ToolMap) -> tuple[dict[str, Any], list[str]]:
    base = operation(m.op).input_schema()
    props: Mapping[str, Any] = base.get("properties", {})
    needed = set(base.get("required", ()))
    out: dict[str, Any] = {}
    for name, core in _names(m).items():
        prop = dict(props[core])
        if name in m.choices:
            prop = {"type": "string", "enum": list(m.choices[name]),
                    **({"description": prop["description"]} if "description" in prop else {})}
        override = m.schema.get(name, {})
        if {"type", "anyOf", "enum"} & set(override):  # a new type replaces the old one
            prop = {k: v for k, v in prop.items() if k not in ("type", "anyOf", "items", "enum")}
        prop.update(override)
        if name in m.defaults:
            prop["default"] = m.defaults[name]
        out[name] = prop
    required = [n for n, core in _names(m).items() if core in needed and n not in m.defaults]
    required += [n for n in m.required if n not in required]
    return out, required


def _merge_shared(props: dict[str, Any], name: str, prop: dict[str, Any]) -> None:
    """An argument several actions share keeps the first action's wording; a default they
    disagree on is dropped rather than shown wrongly for some of them."""
    first = props.setdefault(name, prop)
    if first is not prop and first.get("default") != prop.get("default"):
        first.pop("default", None)


def _dialect_tool(dialect: str, entry: DialectEntry) -> DialectTool:
    target = entry.target
    if isinstance(target, ToolMap):
        props, required = _route_schema(target)
        routes = {"": target}
    else:
        routes = dict(target.routes)
        props = {target.selector: {"type": "string", "enum": list(routes),
                                   "description": "What to do: " + ", ".join(routes) + "."}}
        for route in routes.values():
            for name, prop in _route_schema(route)[0].items():
                _merge_shared(props, name, prop)
        required = [target.selector]
    ops = tuple(dict.fromkeys(r.op for r in routes.values()))
    description = entry.description or operation(ops[0]).description
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    writes = any(operation(o).writes for o in ops)
    return DialectTool(dialect, entry.name, description, schema, ops, writes)


# --- calling ------------------------------------------------------------------------------------
def call_tool(
    mem: LocalMemory, name: str, args: Mapping[str, Any] | str | None = None, *,
    dialect: str = DEFAULT_DIALECT,
) -> ToolResult:
    """Call ``name`` as ``dialect`` defines it. ``args`` is a mapping or the JSON text of one
    (OpenAI hands tool arguments over as a JSON string: pass it as it came). Never raises:
    every failure is an ``is_error`` result whose text is one sentence the model can act
    on."""
    try:
        return _call(mem, name, args, dialect)
    except Exception as exc:  # a bug in the argument handling itself: still a result
        log.exception("tool %s failed", name)
        return _error(f"{name} failed unexpectedly ({type(exc).__name__}); see the "
                      "clawmemory log.")


def _call(mem: LocalMemory, name: str, args: Mapping[str, Any] | str | None,
          dialect: str) -> ToolResult:
    try:
        key = resolve_dialect(dialect)
    except KeyError:
        return _error(_unknown_dialect(dialect) + ".")
    entry = _entries(key).get(name)
    if entry is None:
        known = ", ".join(_entries(key))
        return _error(f"Unknown tool {name!r} in the {key} dialect (available: {known}).")
    try:
        route, op, core_args = _translate(entry, args)
    except ToolCallError as exc:
        return _error(str(exc))
    try:
        parsed = op.input_model.model_validate(core_args)
    except ValidationError as exc:
        return _error(_validation_message(name, exc, {v: k for k, v in _names(route).items()}))
    return _run(mem, name, route, op, parsed)


def _run(mem: LocalMemory, name: str, route: ToolMap, op: ToolSpec, parsed: Any) -> ToolResult:
    try:
        result = op.handler(mem, parsed)
    except ClawMemoryError as exc:
        return _error(f"{name}: {_sentence(str(exc))}")
    except Exception as exc:  # a bug or a driver failure: report it, never crash the agent loop
        log.exception("tool %s failed", name)
        return _error(f"{name} failed unexpectedly ({type(exc).__name__}: {exc}); see the "
                      "clawmemory log.")
    if route.format is None or result.is_error:
        return result
    try:
        return ToolResult(route.format(result.data), result.data)
    except Exception:  # the write happened: never hide its result behind a formatting bug
        log.exception("formatting the result of %s failed", name)
        return result


def _error(text: str) -> ToolResult:
    return ToolResult(text, {"error": text}, is_error=True)


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _translate(
    entry: DialectEntry, args: Mapping[str, Any] | str | None
) -> tuple[ToolMap, ToolSpec, dict[str, Any]]:
    if isinstance(args, str):
        args = _json_arguments(entry.name, args)
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise ToolCallError(f"Arguments of {entry.name} must be a JSON object.")
    # Models often send null for optional arguments they do not use: null means "not given".
    given = {str(k): v for k, v in args.items() if v is not None}
    route = _pick_route(entry, given)
    names = _names(route)
    _check_names(entry, route, given, names)
    core: dict[str, Any] = {}
    for name, value in given.items():
        core[names[name]] = _check_choice(entry.name, route, name, value)
    for name, value in route.defaults.items():
        core.setdefault(names[name], value)
    core.update(route.fixed)
    return route, operation(route.op), core


def _json_arguments(tool: str, text: str) -> Any:
    """Arguments sent as JSON text; "" means none (some models send it for a tool without
    parameters)."""
    if not text.strip():
        return {}
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise ToolCallError(f"Arguments of {tool} must be a JSON object; this text is not"
                            f" JSON ({detail}).") from None


def _pick_route(entry: DialectEntry, given: dict[str, Any]) -> ToolMap:
    target = entry.target
    if isinstance(target, ToolMap):
        return target
    actions = ", ".join(target.routes)
    action = given.pop(target.selector, None)
    if action is None:
        raise ToolCallError(
            f"{entry.name} needs the argument '{target.selector}' (one of: {actions}).")
    route = target.routes.get(str(action).strip().lower()) if isinstance(action, str) else None
    if route is None:
        shown = repr(action[:40]) if isinstance(action, str) else type(action).__name__
        raise ToolCallError(
            f"{entry.name}: '{target.selector}' must be one of {actions}, not {shown}.")
    return route


def _check_names(
    entry: DialectEntry, route: ToolMap, given: Mapping[str, Any], names: Mapping[str, str]
) -> None:
    for name in given:
        if name in names:
            continue
        if isinstance(entry.target, Dispatch) and any(
            name in _names(r) for r in entry.target.routes.values()
        ):
            raise ToolCallError(f"{entry.name}: the argument '{name}' is not used by this "
                                f"{entry.target.selector}.")
        expected = ", ".join(names) or "none"
        raise ToolCallError(
            f"{entry.name} got an unexpected argument '{name}' (expected: {expected}).")
    for name in route.required:
        if name not in given and name not in route.defaults:
            raise ToolCallError(f"{entry.name} needs the argument '{name}'.")


def _check_choice(tool: str, route: ToolMap, name: str, value: Any) -> Any:
    choices = route.choices.get(name)
    if choices is None:
        return value
    folded = value.strip().lower() if isinstance(value, str) else value
    if folded not in choices:
        raise ToolCallError(
            f"Invalid argument '{name}' for {tool}: must be one of {', '.join(choices)}.")
    return folded


def _validation_message(tool: str, exc: ValidationError, back: Mapping[str, str]) -> str:
    errors = exc.errors()
    first = errors[0]
    path = [p for p in first["loc"] if isinstance(p, int) or _is_field(p)]
    if path:
        path[0] = back.get(str(path[0]), str(path[0]))
    where = ".".join(str(p) for p in path)
    msg = str(first["msg"]).removeprefix("Value error, ")
    fields = {tuple(e["loc"][:1]) for e in errors}
    more = f" (and {len(fields) - 1} more problems)" if len(fields) > 1 else ""
    if not where:
        return f"Invalid arguments for {tool}: {msg}{more}."
    if first["type"] == "missing":
        return f"{tool} needs the argument '{where}'{more}."
    return f"Invalid argument '{where}' for {tool}: {msg}{more}."


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "list", "dict", "none"})


def _is_field(part: Any) -> bool:
    # pydantic puts union branch tags ("list[str]", "str", "FactIn") into error locations;
    # our argument names are lower-case identifiers that name no type.
    return (isinstance(part, str) and part.isidentifier() and part.islower()
            and part not in _TYPE_TAGS)

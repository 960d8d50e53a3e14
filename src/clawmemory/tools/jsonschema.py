"""JSON schemas made portable: pydantic's model schema without ``$ref``, titles or ``null``
branches, which every function-calling API accepts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["clean_schema"]


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic model schema made portable: ``$ref``s inlined, titles dropped, optional
    fields shown as their type (absence, not ``null``, means "not given")."""
    defs = schema.get("$defs", {})
    top = {k: v for k, v in schema.items() if k != "$defs"}
    cleaned: dict[str, Any] = _clean(top, defs)
    return cleaned


def _clean(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_clean(n, defs) for n in node]
    if not isinstance(node, Mapping):
        return node
    if "$ref" in node:
        target = defs[str(node["$ref"]).rsplit("/", 1)[-1]]
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _clean({**target, **extra}, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title":
            continue
        if key == "properties":
            out[key] = {name: _clean(prop, defs) for name, prop in value.items()}
        else:
            out[key] = _clean(value, defs)
    return _drop_null(out)


def _drop_null(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if branches is None:
        return node
    kept = [b for b in branches if b != {"type": "null"}]
    if len(kept) == len(branches):
        return node
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if rest.get("default", 0) is None:
        del rest["default"]
    return {**kept[0], **rest} if len(kept) == 1 else {"anyOf": kept, **rest}

"""What crosses the tool boundary: a tool's result, one registry operation, and the shared
helpers operations use to describe memories in results.

An operation's ``handler(mem, args)`` receives a validated pydantic model and returns a
``ToolResult``; it raises ``ClawMemoryError`` for refusals. ``call_tool`` (registry.py) turns
every raise into an ``is_error`` result, so nothing escapes to an agent loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StringConstraints

from clawmemory.model import Hit, MemoryRecord
from clawmemory.tools.jsonschema import clean_schema

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = [
    "MAX_RESULTS",
    "Handler",
    "IdRef",
    "ToolArgs",
    "ToolResult",
    "ToolSpec",
    "hit_data",
    "record_data",
]

# 002: "limit: Max results (default: 20, max: 100)". Every dialect shares the cap; a larger
# limit is refused rather than clamped, so an agent paging with offset never skips records.
MAX_RESULTS = 100


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returns: ``text`` for the model, ``data`` (JSON-serialisable) for
    programs, and ``is_error`` when the call was refused or failed (nothing was written)."""

    text: str
    data: Mapping[str, Any] = field(default_factory=dict)
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "data": dict(self.data), "is_error": self.is_error}


class ToolArgs(BaseModel):
    """Base of every operation's input model: unknown arguments are refused, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Handler = Callable[["LocalMemory", Any], ToolResult]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One operation of the registry, defined once: dialects only rename and format it."""

    name: str
    description: str
    input_model: type[ToolArgs]
    handler: Handler
    writes: bool  # whether a successful call changes the store (for read-only exposure)

    def input_schema(self) -> dict[str, Any]:
        """The input model as a plain JSON schema (no $refs, titles or null branches)."""
        return clean_schema(self.input_model.model_json_schema())


def _as_text(value: Any) -> Any:
    # 003 ids are integers ("[id:3]"); agents pass them back as numbers. Ours are text.
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value


IdRef = Annotated[
    str, BeforeValidator(_as_text), StringConstraints(strip_whitespace=True, min_length=1)
]


def record_data(record: MemoryRecord) -> dict[str, Any]:
    """A memory as JSON-ready data."""
    return record.to_dict()


def hit_data(hit: Hit, links: list[str] | None = None) -> dict[str, Any]:
    """A recall hit as JSON-ready data: the memory, its relevance and why it matched."""
    data = record_data(hit.memory)
    data["relevance"] = hit.score
    data["why"] = str(hit.explain)
    data["via"] = hit.explain.via
    if links is not None:
        data["links"] = links
    return data

"""Tool schemas for function-calling APIs (the cleanup that makes pydantic's JSON schema plain
enough for every one of them is ``jsonschema.clean_schema``).

    openai_tools("ptrclaw")   # [{"type": "function", "function": {name, description, parameters}}]
    anthropic_tools("koshi")  # [{"name", "description", "input_schema"}]
"""

from __future__ import annotations

from typing import Any

from clawmemory.tools.jsonschema import clean_schema
from clawmemory.tools.registry import tools_for

__all__ = ["anthropic_tools", "clean_schema", "openai_tools"]


def openai_tools(dialect: str = "unified") -> list[dict[str, Any]]:
    """The dialect's tools in OpenAI (and OpenAI-compatible) function-calling form."""
    return [
        {"type": "function",
         "function": {"name": t.name, "description": t.description,
                      "parameters": dict(t.input_schema)}}
        for t in tools_for(dialect)
    ]


def anthropic_tools(dialect: str = "unified") -> list[dict[str, Any]]:
    """The dialect's tools in Anthropic Messages API form."""
    return [
        {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
        for t in tools_for(dialect)
    ]

"""Memory tools for LLM agents: one registry, the five specifications' dialects as tables.

    from clawmemory.tools import call_tool, tools_for, openai_tools

    result = call_tool(mem, "memory_recall", {"query": "python version"}, dialect="ptrclaw")
    result.text, result.data, result.is_error

Dialects: ``unified`` (default), ``ptrclaw`` (000), ``devclaw`` (002), ``koshi`` (003),
``sandbox`` (004), ``consolidator`` (004's consolidator agent). See docs/tools.md.
"""

from clawmemory.tools.base import MAX_RESULTS, ToolResult, ToolSpec
from clawmemory.tools.dialects import DEFAULT_DIALECT, DIALECTS
from clawmemory.tools.registry import (
    OPERATIONS,
    DialectTool,
    call_tool,
    dialect_names,
    operation,
    tools_for,
)
from clawmemory.tools.schemas import anthropic_tools, openai_tools

__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "MAX_RESULTS",
    "OPERATIONS",
    "DialectTool",
    "ToolResult",
    "ToolSpec",
    "anthropic_tools",
    "call_tool",
    "dialect_names",
    "openai_tools",
    "operation",
    "tools_for",
]

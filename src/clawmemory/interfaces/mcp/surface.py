"""What an MCP client sees besides the registry's tools: which tools of the default dialect are
offered, their annotations, what a store may be given, the resources and the prompts (ADR 0019).

- The default (``unified``) dialect offers a small set, ``CORE_TOOLS``: recall, store, update,
  correct, forget and list. Every other tool of the dialect (feedback, links, entities, the
  admin tool ``memory_index``) only with ``clawmem mcp --all-tools``. The seed dialects keep
  their exact tool lists.
- Every tool carries the four hints: read-only, destructive, idempotent, and ``openWorldHint``
  false (a tool only touches the local store).
- ``memory_store`` and ``memory_update`` of the default dialect take only the kinds a person
  stores (``USER_KINDS``); episodes, conversations, summaries and reflections are the engine's.
- Resources: ``memory://{id}`` (one memory by id or key, as JSON) and ``memory://recent`` (the
  newest memories). Prompts: ``recall_about`` ("what do you remember about X").
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types

from clawmemory.errors import ClawMemoryError, NotFoundError
from clawmemory.model import normalize_kind
from clawmemory.tools.operations import render_record

if TYPE_CHECKING:
    from clawmemory.memory import Memory
    from clawmemory.tools import DialectTool

__all__ = [
    "CORE_TOOLS",
    "RECENT_URI",
    "USER_KINDS",
    "kind_refusal",
    "offered",
    "prompt",
    "prompts",
    "read_resource",
    "resource_templates",
    "resources",
    "tool_annotations",
]

CORE_TOOLS = ("memory_recall", "memory_store", "memory_update", "memory_correct",
              "memory_forget", "memory_list")
USER_KINDS = ("fact", "preference", "event", "core")
RECENT_URI = "memory://recent"
RECENT_COUNT = 20  # memories memory://recent shows
_URI_PREFIX = "memory://"

# Operations that can take away what was there: deleting, overwriting in place, unlinking.
_DESTRUCTIVE = frozenset({"memory_forget", "memory_update", "memory_link", "resolve_conflict"})
# Writes that a repeat with the same arguments leaves as the first call left them.
_IDEMPOTENT_WRITES = frozenset({"memory_forget", "memory_update", "memory_confirm",
                                "memory_index", "mark_session_consolidated"})


def offered(tools: Sequence[DialectTool], dialect: str, all_tools: bool) -> list[DialectTool]:
    """The tools a client lists: the core set for the default dialect unless ``all_tools``."""
    if dialect != "unified" or all_tools:
        return list(tools)
    by_name = {t.name: t for t in tools}
    return [by_name[name] for name in CORE_TOOLS if name in by_name]


def tool_annotations(tool: DialectTool) -> types.ToolAnnotations:
    """The four hints, derived from the operations the tool can call."""
    destructive = tool.writes and any(op in _DESTRUCTIVE for op in tool.operations)
    idempotent = not tool.writes or all(op in _IDEMPOTENT_WRITES for op in tool.operations)
    return types.ToolAnnotations(read_only_hint=not tool.writes, destructive_hint=destructive,
                                 idempotent_hint=idempotent, open_world_hint=False)


def user_schema(tool: DialectTool, dialect: str) -> dict[str, Any]:
    """The input schema a client sees: the default dialect's ``kind`` of a write lists only
    ``USER_KINDS``."""
    schema: dict[str, Any] = copy.deepcopy(dict(tool.input_schema))
    kind = schema.get("properties", {}).get("kind")
    if dialect == "unified" and tool.writes and isinstance(kind, dict) and "enum" in kind:
        kind["enum"] = list(USER_KINDS)
        kind["description"] = "What it is: " + ", ".join(USER_KINDS) + " (default fact)."
    return schema


def kind_refusal(tool: DialectTool, dialect: str, arguments: Any) -> str | None:
    """The sentence refusing a kind the default dialect's writes do not take, else None."""
    if dialect != "unified" or not tool.writes or not isinstance(arguments, Mapping):
        return None
    kind = arguments.get("kind")
    if not isinstance(kind, str):
        return None
    try:
        name = normalize_kind(kind)
    except (ClawMemoryError, ValueError):
        return None  # an unknown kind: the registry's own check words the refusal
    if name in USER_KINDS:
        return None
    return (f"Invalid argument 'kind' for {tool.name}: must be one of {', '.join(USER_KINDS)}"
            f" ({name} memories are made by clawmemory itself).")


# --- resources -----------------------------------------------------------------------------------
def resources() -> list[types.Resource]:
    return [types.Resource(uri=RECENT_URI, name="recent",
                           description=f"The {RECENT_COUNT} newest memories, one per line.",
                           mime_type="text/plain")]


def resource_templates() -> list[types.ResourceTemplate]:
    return [types.ResourceTemplate(uri_template="memory://{id}", name="memory",
                                   description="One memory by id or key, every field, as JSON.",
                                   mime_type="application/json")]


def read_resource(mem: Memory, uri: str) -> types.ReadResourceResult:
    """The contents of ``uri``; NotFoundError (a ClawMemoryError) when nothing has it."""
    if uri == RECENT_URI:
        records = mem.list(limit=RECENT_COUNT, order="newest")
        text = "\n".join(render_record(r) for r in records) or "No memories yet."
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="text/plain", text=text)])
    if not uri.startswith(_URI_PREFIX) or not uri[len(_URI_PREFIX):].strip("/"):
        raise NotFoundError(f"no resource {uri!r} (memory://ID or {RECENT_URI})")
    record = mem.get(uri[len(_URI_PREFIX):].strip("/"))
    text = json.dumps(record.to_dict(), ensure_ascii=False, indent=2)
    return types.ReadResourceResult(contents=[types.TextResourceContents(
        uri=uri, mime_type="application/json", text=text)])


# --- prompts -------------------------------------------------------------------------------------
_RECALL_ABOUT = "recall_about"


def prompts() -> list[types.Prompt]:
    return [types.Prompt(
        name=_RECALL_ABOUT, title="What do you remember about…",
        description="Ask the assistant what it remembers about a topic, person or project.",
        arguments=[types.PromptArgument(name="topic", description="What to remember about.",
                                        required=True)])]


def prompt(name: str, arguments: Mapping[str, str] | None, recall_tool: str | None
           ) -> types.GetPromptResult | None:
    """The prompt ``name`` filled in, or None when there is no such prompt."""
    if name != _RECALL_ABOUT:
        return None
    topic = (arguments or {}).get("topic", "").strip() or "me"
    search = f" Search your memory with {recall_tool} first," if recall_tool else ""
    text = (f"What do you remember about {topic}?{search} then answer from what you find,"
            " citing the memories' ids; say so plainly when nothing is remembered.")
    return types.GetPromptResult(
        description=f"What the assistant remembers about {topic}",
        messages=[types.PromptMessage(role="user",
                                      content=types.TextContent(type="text", text=text))])

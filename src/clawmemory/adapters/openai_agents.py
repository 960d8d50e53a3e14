"""The OpenAI Agents SDK (``openai-agents``): memory tools and a session kept by clawmemory.

    from agents import Agent, Runner
    from clawmemory import Memory
    from clawmemory.adapters.openai_agents import ClawMemorySession, memory_tools

    mem = Memory.open("agent.db")
    agent = Agent(name="Assistant", instructions="...", tools=memory_tools(mem))
    session = ClawMemorySession(mem, "user-42")
    result = await Runner.run(agent, "Remember that I take tea without sugar", session=session)

- ``memory_tools(mem, dialect=...)``: the dialect's memory tools as ``FunctionTool`` values.
  Each call goes through ``clawmemory.tools.call_tool`` with the arguments exactly as the model
  sent them (a JSON string); a refused call comes back to the model as its error sentence, so
  it can correct itself. The engine runs in a worker thread, off the event loop.
- ``ClawMemorySession(mem, session_id)``: the SDK's ``Session`` protocol (``get_items``,
  ``add_items``, ``pop_item``, ``clear_session``) over clawmemory's conversation history store,
  under the history key ``openai-agents:<session_id>:``. Items are kept losslessly: a plain
  ``{"role", "content"}`` message as a history message, anything else (assistant output
  messages, function calls and their outputs, reasoning) as a history message carrying the item
  in its metadata, readable by every clawmemory interface. ``clear_session`` forgets the
  session's messages for real (secure delete, like every forget).

The SDK sends traces of every run to OpenAI unless told not to; clawmemory never does, and
this adapter changes nothing about the SDK's settings: ``agents.set_tracing_disabled(True)``
keeps your memory out of those traces.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from clawmemory.adapters._common import missing
from clawmemory.history import history_store, persistence_key
from clawmemory.llm.base import Message, ToolCall
from clawmemory.tools import DEFAULT_DIALECT, call_tool, tools_for

try:
    from agents import FunctionTool, RunContextWrapper
    from agents.memory import SessionSettings
    from agents.memory.session_settings import resolve_session_limit
except ImportError as exc:  # the extra is not installed
    raise missing("OpenAI Agents", "openai-agents", "openai-agents") from exc

if TYPE_CHECKING:
    from agents.items import TResponseInputItem

    from clawmemory.history import HistoryStore
    from clawmemory.memory import Memory

__all__ = ["CHANNEL", "ITEM", "ClawMemorySession", "memory_tools"]

CHANNEL = "openai-agents"  # the channel part of the history key
ITEM = "openai_agents_item"  # message metadata key holding an item that is not plain text
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


# --- tools --------------------------------------------------------------------------------------
def memory_tools(mem: Memory, *, dialect: str = DEFAULT_DIALECT) -> list[FunctionTool]:
    """The dialect's memory tools for an ``Agent(tools=...)``."""
    return [
        FunctionTool(
            name=tool.name,
            description=tool.description,
            params_json_schema=dict(tool.input_schema),
            on_invoke_tool=_invoker(mem, tool.name, dialect),
            # Strict schemas need every property required; clawmemory's optional arguments
            # are optional, and call_tool checks every argument anyway.
            strict_json_schema=False,
        )
        for tool in tools_for(dialect)
    ]


def _invoker(mem: Memory, name: str, dialect: str) -> Any:
    async def invoke(ctx: RunContextWrapper[Any], arguments: str) -> str:
        result = await asyncio.to_thread(call_tool, mem, name, arguments, dialect=dialect)
        return result.text

    return invoke


# --- session ------------------------------------------------------------------------------------
class ClawMemorySession:
    """An Agents SDK ``Session`` whose items live in clawmemory's history store."""

    session_settings: SessionSettings | None = None

    def __init__(self, mem: Memory, session_id: str, *,
                 session_settings: SessionSettings | None = None) -> None:
        self.mem = mem
        self.session_id = session_id
        self.session_settings = session_settings
        self.key = persistence_key(CHANNEL, session_id)
        self._store: HistoryStore = history_store(mem)
        self._max_chars = mem.settings.storage.max_content_chars

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; with a limit, the latest ``limit`` of them."""
        wanted = resolve_session_limit(limit, self.session_settings)
        messages = await asyncio.to_thread(
            self._store.all if wanted is None else self._store.recent,
            *((self.key,) if wanted is None else (self.key, wanted)))
        return [to_item(m) for m in messages]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append the items in order (all checked first: a bad one adds none of them)."""
        messages = [to_message(item) for item in items]

        def write() -> None:
            # The engine's own write transaction: all or none.
            with self.mem.parts.writes.transaction():
                for message in messages:
                    self._store.append(self.key, message)

        await asyncio.to_thread(write)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (the history is append-only: the others are
        written back in the same transaction, so a crash leaves the session as it was)."""

        def pop() -> Message | None:
            with self.mem.parts.writes.transaction():  # one transaction for the rewrite
                messages = self._store.all(self.key)
                if not messages:
                    return None
                self._store.purge(self.key)
                for message in messages[:-1]:
                    self._store.append(self.key, message)
                return messages[-1]

        last = await asyncio.to_thread(pop)
        return None if last is None else to_item(last)

    async def clear_session(self) -> None:
        """Forget every item of the session."""
        await asyncio.to_thread(self._store.purge, self.key)


def to_message(item: Any) -> Message:
    """An SDK input item as a history message (the item itself kept when it is more than a
    plain role and text)."""
    if not isinstance(item, dict):
        raise TypeError(f"a session item must be a dict, not {type(item).__name__}")
    role = _ROLES.get(str(item.get("role")))
    content = item.get("content")
    if role is not None and isinstance(content, str) and set(item) <= {"role", "content"}:
        return Message(role, content)  # type: ignore[arg-type]  # a key of _ROLES' values
    kind = str(item.get("type") or "message")
    if kind == "function_call_output" and item.get("call_id"):
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        return Message("tool", text, tool_call_id=str(item["call_id"]),
                       metadata={ITEM: item})
    if kind == "function_call" and item.get("call_id") and item.get("name"):
        call = ToolCall(str(item["call_id"]), str(item["name"]), _arguments(item))
        return Message("assistant", "", tool_calls=(call,), metadata={ITEM: item})
    text = _text(content) or f"[{kind}]"
    return Message(role or "assistant", text, metadata={ITEM: item})  # type: ignore[arg-type]


def to_item(message: Message) -> Any:
    """A history message as an SDK input item (written by this adapter or by any other
    clawmemory interface)."""
    item = message.metadata.get(ITEM)
    if isinstance(item, dict):
        return item
    if message.role == "tool":
        return {"type": "function_call_output", "call_id": message.tool_call_id or "",
                "output": message.content}
    return {"role": message.role, "content": message.content}


def _arguments(item: dict[str, Any]) -> dict[str, Any]:
    try:
        parsed = json.loads(item.get("arguments") or "{}")
    except (TypeError, ValueError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _text(content: Any) -> str:
    """The text of a message's content: a string, or parts with ``text`` (input_text,
    output_text, summary_text...)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p["text"]) for p in content
                         if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""

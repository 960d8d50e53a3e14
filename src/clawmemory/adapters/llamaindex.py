"""LlamaIndex: clawmemory as a long-term memory block (``llama_index.core.memory``).

    from llama_index.core.memory import Memory as ChatMemory
    from clawmemory import Memory
    from clawmemory.adapters.llamaindex import ClawMemoryBlock

    block = ClawMemoryBlock(memory=Memory.open("agent.db"), session_id="chat-42")
    chat_memory = ChatMemory.from_defaults(session_id="chat-42", memory_blocks=[block])
    agent = FunctionAgent(llm=..., tools=[...])
    await agent.run("What do I drink in the morning?", memory=chat_memory)

A ``BaseMemoryBlock[str]``:

- **in** (``aget``): the text of the last ``context_messages`` chat messages is the query;
  clawmemory's recall returns the ``limit`` most relevant memories, one ``- content`` line
  each, which LlamaIndex puts into the prompt inside ``<memory><clawmemory>...``.
- **out** (``aput``): messages LlamaIndex moves out of its short-term window are kept: each
  user or assistant message with text becomes an ``episode`` of the session (``observe``, the
  004 hot path: no LLM call), the session being the message's ``session_id`` (set by
  LlamaIndex), else the block's. What the consolidator or ``recall`` later finds there is the
  conversation itself. ``store_messages=False`` makes the block read-only.

Recall and writes run in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from clawmemory.adapters._common import missing
from clawmemory.memory import Memory

try:
    from llama_index.core.base.llms.types import ChatMessage, TextBlock
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.memory import BaseMemoryBlock
except ImportError as exc:  # the extra is not installed
    raise missing("LlamaIndex", "llama-index-core", "llamaindex") from exc

__all__ = ["DEFAULT_SESSION", "ClawMemoryBlock"]

DEFAULT_SESSION = "llamaindex"  # the session of messages that name none
_ROLES = {"user": "user", "assistant": "assistant"}


class ClawMemoryBlock(BaseMemoryBlock[str]):
    """Recall from clawmemory into the prompt; the conversation's turns into clawmemory."""

    name: str = Field(default="clawmemory", description="The block's name in the prompt.")
    memory: Memory = Field(description="The clawmemory Memory to recall from and write to.",
                           exclude=True)
    limit: int = Field(default=5, ge=1, le=100, description="Memories recalled per turn.")
    context_messages: int = Field(default=3, ge=1,
                                  description="Recent messages that make up the query.")
    session_id: str | None = Field(default=None,
                                   description="Session of the turns kept (else LlamaIndex's).")
    store_messages: bool = Field(default=True,
                                 description="Keep the messages LlamaIndex flushes as episodes.")

    async def _aget(self, messages: list[ChatMessage] | None = None,
                    **block_kwargs: Any) -> str:
        query = "\n".join(t for t in map(_text, (messages or [])[-self.context_messages:]) if t)
        if not query.strip():
            return ""
        query = query[-self.memory.settings.recall.max_query_chars:]  # newest words first
        hits = await asyncio.to_thread(self.memory.recall, query, limit=self.limit)
        return "\n".join(f"- {h.memory.content}" for h in hits)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        if not self.store_messages:
            return
        turns = []
        for message in messages:
            role = _ROLES.get(str(getattr(message.role, "value", message.role)))
            text = _text(message)
            if role is not None and text.strip():
                session = message.additional_kwargs.get("session_id") or self.session_id
                turns.append((role, text, str(session or DEFAULT_SESSION)))
        for role, text, session in turns:
            await asyncio.to_thread(self.memory.observe, role, text, session)


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))

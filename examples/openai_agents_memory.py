"""The OpenAI Agents SDK with clawmemory: memory tools for the agent, and the conversation kept
as a session in the same memory file.

    pip install "clawmemory[openai-agents]"
    export OPENAI_API_KEY=sk-...
    python examples/openai_agents_memory.py "Remember that I take my tea without sugar"
    python examples/openai_agents_memory.py "How do I take my tea?"

Memories and the session live in ``CLAWMEM_DB`` (default: ./agent-memory.db); the session id
is ``CLAWMEM_SESSION`` (default: demo). Any OpenAI-compatible server works through
``OPENAI_BASE_URL`` (the chat-completions API is used, so local servers work too).
"""

from __future__ import annotations

import asyncio
import os
import sys

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

from clawmemory import Memory
from clawmemory.adapters.openai_agents import ClawMemorySession, memory_tools


async def main(question: str) -> None:
    set_tracing_disabled(True)  # the SDK would otherwise send run traces to OpenAI
    model = OpenAIChatCompletionsModel(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"),
                                       openai_client=AsyncOpenAI())
    with Memory.open(os.environ.get("CLAWMEM_DB", "agent-memory.db")) as mem:
        agent = Agent(name="Assistant", model=model, tools=memory_tools(mem),
                      instructions="Store what the user asks you to remember; recall before"
                                   " answering questions about the user.")
        session = ClawMemorySession(mem, os.environ.get("CLAWMEM_SESSION", "demo"))
        result = await Runner.run(agent, question, session=session)
        print(result.final_output)


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What do you remember about me?"))

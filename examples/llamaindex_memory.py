"""LlamaIndex with clawmemory as a long-term memory block: what the chat memory holds for the
next model call (no model needed to run it; give the memory to an agent with
``agent.run(..., memory=chat_memory)``).

    pip install "clawmemory[llamaindex]"
    clawmem --db agent-memory.db add "The user's cat is called Miso"
    python examples/llamaindex_memory.py "What is my cat called?"

Memories live in ``CLAWMEM_DB`` (default: ./agent-memory.db, the file ``--db`` names above;
a plain ``clawmem add`` writes to ~/.clawmemory/memory.db, which this script does not read).
"""

from __future__ import annotations

import asyncio
import os
import sys

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import Memory as ChatMemory

from clawmemory import Memory
from clawmemory.adapters.llamaindex import ClawMemoryBlock


async def main(question: str) -> None:
    with Memory.open(os.environ.get("CLAWMEM_DB", "agent-memory.db")) as mem:
        block = ClawMemoryBlock(memory=mem, session_id="llamaindex-demo")
        chat_memory = ChatMemory.from_defaults(session_id="llamaindex-demo",
                                               memory_blocks=[block],
                                               tokenizer_fn=str.split)  # no tokenizer download
        await chat_memory.aput(ChatMessage(role="user", content=question))
        for message in await chat_memory.aget():  # what the model would be sent
            print(f"[{message.role.value}] {message.content}")


if __name__ == "__main__":
    asyncio.run(main(" ".join(sys.argv[1:]) or "What do you remember about me?"))

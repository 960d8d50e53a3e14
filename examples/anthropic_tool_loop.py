"""A complete tool-calling loop: a Claude model with clawmemory's memory tools.

    pip install clawmemory anthropic
    export ANTHROPIC_API_KEY=sk-ant-...
    python examples/anthropic_tool_loop.py "Remember that I take my tea without sugar"
    python examples/anthropic_tool_loop.py "How do I take my tea?"

The model sees the memory tools (``anthropic_tools()``); each ``tool_use`` block is run with
``call_tool`` and answered with a ``tool_result`` block (``is_error`` when clawmemory refused
the call, so the model can correct itself) until the model stops asking for tools. Memories
live in ``CLAWMEM_DB`` (default: ./agent-memory.db).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from anthropic import Anthropic

from clawmemory import Memory
from clawmemory.tools import anthropic_tools, call_tool

MODEL = os.environ.get("ANTHROPIC_MODEL", "claude-sonnet-4-5")
MAX_STEPS = 8  # tool rounds before giving up: a model that never stops calling tools ends here
SYSTEM = ("You have a long-term memory. Store what the user asks you to remember and facts"
          " worth keeping; recall before answering questions about the user.")


def run(question: str, mem: Memory, client: Anthropic) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    tools = anthropic_tools()
    for _ in range(MAX_STEPS):
        reply = client.messages.create(model=MODEL, max_tokens=1024, system=SYSTEM,
                                       messages=messages, tools=tools)
        uses = [block for block in reply.content if block.type == "tool_use"]
        if not uses:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        results = []
        for use in uses:
            result = call_tool(mem, use.name, use.input)  # input is already a dict here
            results.append({"type": "tool_result", "tool_use_id": use.id,
                            "content": result.text, "is_error": result.is_error})
        messages.append({"role": "user", "content": results})
    return "(stopped: too many tool calls)"


def main() -> int:
    question = " ".join(sys.argv[1:]) or "What do you remember about me?"
    with Memory.open(os.environ.get("CLAWMEM_DB", "agent-memory.db")) as mem:
        print(run(question, mem, Anthropic()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

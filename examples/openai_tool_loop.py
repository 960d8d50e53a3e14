"""A complete tool-calling loop: an OpenAI chat model with clawmemory's memory tools.

    pip install clawmemory openai
    export OPENAI_API_KEY=sk-...            # any OpenAI-compatible server: set OPENAI_BASE_URL
    python examples/openai_tool_loop.py "Remember that I take my tea without sugar"
    python examples/openai_tool_loop.py "How do I take my tea?"

The model sees the memory tools (``openai_tools()``); each tool call it makes is run with
``call_tool``, which takes the arguments as the JSON string the API returns, and its result
goes back as a ``tool`` message until the model answers in text. Memories live in
``CLAWMEM_DB`` (default: ./agent-memory.db).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from openai import OpenAI

from clawmemory import Memory
from clawmemory.tools import call_tool, openai_tools

MODEL = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
MAX_STEPS = 8  # tool rounds before giving up: a model that never stops calling tools ends here
SYSTEM = ("You have a long-term memory. Store what the user asks you to remember and facts"
          " worth keeping; recall before answering questions about the user.")


def run(question: str, mem: Memory, client: OpenAI) -> str:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                         {"role": "user", "content": question}]
    tools = openai_tools()
    for _ in range(MAX_STEPS):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            # call.function.arguments is a JSON string: call_tool takes it as it is.
            result = call_tool(mem, call.function.name, call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result.text})
    return "(stopped: too many tool calls)"


def main() -> int:
    question = " ".join(sys.argv[1:]) or "What do you remember about me?"
    with Memory.open(os.environ.get("CLAWMEM_DB", "agent-memory.db")) as mem:
        print(run(question, mem, OpenAI()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""clawmemory inside the agent frameworks, each behind its own optional extra.

- ``adapters.openai_agents`` (``pip install 'clawmemory[openai-agents]'``):
  ``memory_tools(mem)``, the memory tools as function tools, and ``ClawMemorySession``, an
  Agents SDK ``Session`` kept in clawmemory's history store.
- ``adapters.langgraph`` (``pip install 'clawmemory[langgraph]'``): ``ClawMemoryStore``, a
  LangGraph ``BaseStore`` over clawmemory namespaces.
- ``adapters.llamaindex`` (``pip install 'clawmemory[llamaindex]'``): ``ClawMemoryBlock``, a
  LlamaIndex ``BaseMemoryBlock``: recall in, the conversation's turns out.

Importing this package imports no framework; importing one of the modules without its
framework installed raises ``ConfigError`` with the ``pip install`` line. docs/adapters.md has
a runnable example of each and the framework versions they were tested with.
"""

from __future__ import annotations

__all__: list[str] = []

"""The reference agent (DESIGN.md "a reference agent loop that wires memory into a chat loop"):
000's ``Agent::process`` pipeline (``loop.Agent``) and the session manager around it with
004's consolidation on session switch (``sessions.AgentSessions``). ``clawmem chat`` is its
command line; docs/agent.md describes both.

    from clawmemory import Memory, load_settings
    from clawmemory.agent import AgentSessions
    from clawmemory.llm import make_llm

    with Memory.open() as mem, AgentSessions(mem, make_llm(mem.settings.llm)) as sessions:
        print(sessions.process("s-1", "I moved to Lisbon last week").text)
"""

from clawmemory.agent.loop import Agent, AgentReply, ToolUse, agent_history
from clawmemory.agent.sessions import AgentSessions, ConsolidationWorker

__all__ = ["Agent", "AgentReply", "AgentSessions", "ConsolidationWorker", "ToolUse",
           "agent_history"]

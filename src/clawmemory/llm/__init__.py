"""The LLM layer: the ``LLM`` protocol and its values (``base``)."""

from clawmemory.llm.base import LLM, ROLES, Completion, Message, Role, ToolCall, Usage

__all__ = ["LLM", "ROLES", "Completion", "Message", "Role", "ToolCall", "Usage"]

"""The LLM layer (docs/llm.md): one narrow ``LLM`` protocol, its providers, and what every step
that needs a model builds on.

- ``base``: ``LLM`` (``chat(messages, *, tools, temperature, max_tokens) -> Completion``) and the
  frozen values crossing it: ``Message``, ``ToolCall``, ``Usage``, ``Completion``;
- ``factory.make_llm(settings.llm)``: the configured provider (``openai`` = any
  OpenAI-compatible server, ``anthropic``), None when none is configured;
- ``openai``, ``anthropic``: one module per wire format; ``transport``: their shared HTTP
  (timeouts, retries with backoff and jitter, one-line ``LLMError``s);
- ``parse``: ``extract_json`` (fenced or not, prose around it) and ``ask_json`` (ask, parse,
  check, one corrective turn, else ``LLMError``);
- ``prompts``: every prompt, in one file;
- ``usage.MeteredLLM``: token accounting per job run; ``cache``: the 000 response cache.
"""

from clawmemory.llm.base import LLM, ROLES, Completion, Message, Role, ToolCall, Usage
from clawmemory.llm.cache import CachedLLM, ResponseCache
from clawmemory.llm.factory import close_llm, make_llm
from clawmemory.llm.parse import ask_json, extract_json
from clawmemory.llm.usage import MeteredLLM

__all__ = [
    "LLM",
    "ROLES",
    "CachedLLM",
    "Completion",
    "Message",
    "MeteredLLM",
    "ResponseCache",
    "Role",
    "ToolCall",
    "Usage",
    "ask_json",
    "close_llm",
    "extract_json",
    "make_llm",
]

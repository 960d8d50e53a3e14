"""Token accounting: ``MeteredLLM`` wraps any ``LLM`` and adds up what its calls cost, so a job
run (core/jobs.py) or an agent turn can record the tokens it spent."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from clawmemory.llm.base import LLM, Completion, Message, Usage

__all__ = ["MeteredLLM"]


class MeteredLLM:
    """Counts calls that returned and their ``Usage``. Thread-safe. Failed calls count in
    ``failures`` (a provider reports no usage for them)."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner
        self.model = inner.model
        self.calls = 0
        self.failures = 0
        self.usage = Usage()
        self._lock = threading.Lock()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> Completion:
        try:
            answer = self.inner.chat(messages, tools=tools, temperature=temperature,
                                     max_tokens=max_tokens)
        except BaseException:
            with self._lock:
                self.failures += 1
            raise
        with self._lock:
            self.calls += 1
            self.usage += answer.usage
        return answer

    def counts(self) -> dict[str, int]:
        """What a job run records: ``llm_calls``, ``prompt_tokens``, ``completion_tokens``
        (and ``llm_failures`` when any call failed); empty when the LLM was not called."""
        with self._lock:
            if not self.calls and not self.failures:
                return {}
            out = {"llm_calls": self.calls, "prompt_tokens": self.usage.prompt_tokens,
                   "completion_tokens": self.usage.completion_tokens}
            if self.failures:
                out["llm_failures"] = self.failures
            return out

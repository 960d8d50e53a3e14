"""The reference agent: 000's ``Agent::process`` over clawmemory.

    reply = Agent(mem, llm, session_id="s-1").process("I moved to Lisbon")

Each message goes through 000's pipeline:

1. **store** the message as an ``episode`` (004 hot path; ``agent.observe``), or as a
   ``conversation`` entry (000 ``auto_save``; ``agent.observe_kind``), its id kept in the
   history message's metadata so what is derived from it names it as a source;
2. **enrich**: recall for the message and put a ``[Memory context]`` block in front of it for
   this call only (``context.enrich``; ``agent.context_style`` picks 000's block, 002's
   layer, 004's facts of earlier sessions or none; the history keeps what the user wrote, so
   a memory forgotten later is not copied into the transcript);
3. **soul block** in the system prompt (``context.soul_block``: identity from ``core`` entries);
4. **response cache** get (000; off by default): an identical system prompt and message are
   answered from the cache without calling the model;
5. **provider** call with the memory tools (``agent.tools_dialect``, 000's four by default) in
   a tool loop of at most ``agent.max_tool_rounds`` rounds: a model still calling tools after
   that gives no answer and the turn fails with an ``LLMError`` saying so;
6. **synthesis** every ``cognition.synthesis_interval`` user messages of the conversation,
   counted in its stored history so that one-shot processes count together (and 001
   extraction per exchange when ``cognition.extraction`` is on);
7. **compaction** when 000's trigger fires: first 002's memory-flush turn (the model saves what
   is durable in the messages about to go, with the memory tools) and 000's forced synthesis,
   then the LLM summary;
8. **response cache** put (only for answers that called no tool: a turn that changed memory
   must not be replayed without its effect).

A provider failure raises ``LLMError`` (the user's message stays in the history). A failure of
a step after the answer (synthesis, extraction, compaction summary) does not lose the answer:
it is in ``AgentReply.problems``, one line each.

Hatching (000): ``start_hatching()``; the following messages build the soul on
``prompts.HATCH_SYSTEM`` (no tools, no enrichment) in a conversation of their own, until the
model writes the ``<soul>`` block; then the soul is stored, synthesis runs on the hatching
conversation, and the agent goes back to its conversation, soul block included.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from clawmemory.cognition.base import EPISODE_ID, episode_ids
from clawmemory.cognition.extraction import (
    FactExtractor,
    LLMExtractor,
    NopExtractor,
    remember_exchange,
)
from clawmemory.cognition.flush import memory_flush_hook
from clawmemory.cognition.hatching import parse_soul, store_soul, strip_soul
from clawmemory.cognition.summary import llm_summarizer
from clawmemory.cognition.synthesis import synthesis_hook, synthesize
from clawmemory.config import AgentSettings
from clawmemory.context import enrich, soul_block
from clawmemory.core.ingest import observe
from clawmemory.errors import ClawMemoryError, InvalidInputError, LLMError
from clawmemory.history import Compaction, Conversation, History, persistence_key
from clawmemory.history.compaction import PreDiscardHook
from clawmemory.llm.base import LLM, Completion, Message, ToolCall, Usage
from clawmemory.llm.cache import CachedLLM, ResponseCache
from clawmemory.llm.prompts import AGENT_SYSTEM, HATCH_SYSTEM, JSON_CORRECTION
from clawmemory.model import MemoryRecord
from clawmemory.tools.registry import call_tool, tools_for

if TYPE_CHECKING:
    from clawmemory.memory import Memory

__all__ = ["Agent", "AgentReply", "ToolUse", "agent_history"]

HATCH_SUFFIX = "#hatch"  # the hatching conversation's key: the agent's key + this
TURN_KINDS = ("episode", "conversation")  # what ``agent.observe_kind`` stores messages as


@dataclass(frozen=True, slots=True)
class ToolUse:
    """One tool call the model made during a turn, and what it got back."""

    name: str
    arguments: Mapping[str, Any]
    result: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class AgentReply:
    """What one message produced: the answer and everything that happened around it."""

    text: str
    session_id: str
    tool_uses: tuple[ToolUse, ...] = ()
    cached: bool = False  # answered from the response cache
    usage: Usage = field(default_factory=Usage)
    synthesized: tuple[str, ...] = ()  # note ids stored by synthesis this turn
    extracted: tuple[str, ...] = ()  # fact ids stored by extraction this turn
    compaction: Compaction | None = None
    hatching: bool = False  # the agent is (still) hatching
    soul: tuple[str, ...] = ()  # the soul entries stored this turn (hatching finished)
    problems: tuple[str, ...] = ()  # steps after the answer that failed, one line each

    def to_dict(self) -> dict[str, Any]:
        return {
            "reply": self.text, "session": self.session_id, "cached": self.cached,
            "tool_calls": [{"name": u.name, "arguments": dict(u.arguments),
                            "is_error": u.is_error} for u in self.tool_uses],
            "usage": {"prompt_tokens": self.usage.prompt_tokens,
                      "completion_tokens": self.usage.completion_tokens},
            "synthesized": list(self.synthesized), "extracted": list(self.extracted),
            "compacted": self.compaction is not None, "hatching": self.hatching,
            "soul": list(self.soul), "problems": list(self.problems),
        }


def agent_history(mem: Memory, llm: LLM) -> History:
    """A ``History`` wired as the agent needs it: the LLM compaction summary (000/001) and,
    before anything is discarded, 002's memory-flush turn and 000's forced synthesis (each
    when switched on)."""
    cfg = mem.settings
    hooks: list[PreDiscardHook] = []
    if cfg.agent.memory_flush:
        hooks.append(memory_flush_hook(mem, llm, dialect=cfg.agent.tools_dialect,
                                       max_rounds=cfg.agent.max_tool_rounds,
                                       max_chars=cfg.cognition.max_input_chars))
    if cfg.cognition.synthesis:
        hooks.append(synthesis_hook(mem, llm))
    return History(mem, summarizer=llm_summarizer(llm,
                                                  max_chars=mem.settings.cognition.max_input_chars),
                   hooks=hooks)


def _neutral_tools(dialect: str) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "parameters": dict(t.input_schema)}
            for t in tools_for(dialect)]


def _with_ids(answer: Completion, turn: int) -> Completion:
    """Tool calls without an id (a provider may omit it) get one: a tool result must name the
    call it answers."""
    if all(c.id for c in answer.tool_calls):
        return answer
    calls = tuple(c if c.id else ToolCall(f"call_{turn}_{n}", c.name, c.arguments)
                  for n, c in enumerate(answer.tool_calls, 1))
    return replace(answer, tool_calls=calls)


def _with_context(messages: list[Message], enriched: str) -> list[Message]:
    """The messages with the last user message's content replaced by its enriched text."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            messages[i] = replace(messages[i], content=enriched)
            break
    return messages


class Agent:
    """One session's agent. Thread-safe (one message at a time)."""

    def __init__(
        self,
        mem: Memory,
        llm: LLM,
        *,
        session_id: str,
        history: History | None = None,
        key: str | None = None,
        settings: AgentSettings | None = None,
        cache: ResponseCache | None = None,
        extractor: FactExtractor | None = None,
    ) -> None:
        """``history``: shared by the agents of one process (``agent_history``), made here
        when omitted (and closed by ``close``). ``key``: the conversation's persistence key
        (001), ``agent:<session_id>:`` by default. ``cache``: the 000 response cache, by
        default the configured LLM's (``[llm] response_cache``). ``extractor``: 001's, by
        default the LLM one when ``cognition.extraction`` is on, else ``NopExtractor``."""
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError("session_id must be non-empty text")
        self.mem = mem
        self.llm = llm
        self.session_id = session_id.strip()
        self.settings = settings or mem.settings.agent
        self._owns_history = history is None
        self.history = history if history is not None else agent_history(mem, llm)
        self.key = key or persistence_key("agent", self.session_id)
        self.conversation = self.history.conversation(self.key, session_id=self.session_id)
        self.tools = _neutral_tools(self.settings.tools_dialect)
        self.cache = cache if cache is not None else (
            llm.cache if isinstance(llm, CachedLLM) else None)
        self.extractor = extractor or (
            LLMExtractor(llm, max_chars=mem.settings.cognition.max_input_chars)
            if mem.settings.cognition.extraction else NopExtractor())
        self._hatch: Conversation | None = None
        # Synthesis every N user messages (000) counts the conversation's stored user
        # messages, so one-shot processes (`clawmem chat -m`) count together: the last
        # multiple of N the log had reached when this agent was made is taken as done.
        users = self.conversation.user_messages
        self._synthesized_at = users - users % mem.settings.cognition.synthesis_interval
        self._lock = threading.RLock()

    # --- the pipeline ---------------------------------------------------------------------------
    def process(self, text: str) -> AgentReply:
        """Answer one user message (000 ``Agent::process``)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError("the message is empty")
        with self._lock:
            if self._hatch is not None:
                return self._hatch_turn(text)
            return self._turn(text)

    def system_prompt(self) -> str:
        """The system prompt of the next call: the configured one and the soul block (000)."""
        soul = soul_block(self.mem)
        base = self.settings.system_prompt or AGENT_SYSTEM
        return f"{base}\n\n{soul}" if soul else base

    def _turn(self, text: str) -> AgentReply:
        user_episode = self._observe("user", text)
        cfg = self.settings
        enriched = enrich(self.mem, text, cfg.context_style, limit=cfg.enrich_limit,
                          depth=cfg.enrich_depth, session_id=self.session_id,
                          exclude=self._own_episode)
        system = self.system_prompt()
        self.conversation.system = system
        self.conversation.append(Message("user", text, metadata=_episode(user_episode)))
        hit = self.cache.get(self.llm.model, system, enriched) if self.cache else None
        uses: list[ToolUse] = []
        if hit is not None:
            answer, usage = hit, Usage()
        else:
            answer, uses, usage = self._tool_loop(enriched)
        answer_episode = self._observe(cfg.agent_name, answer)
        self.conversation.append(Message("assistant", answer, metadata=_episode(answer_episode)))
        problems: list[str] = []
        synthesized = self._maybe_synthesize(problems)
        extracted = self._extract(text, answer, [user_episode, answer_episode], problems)
        compaction = self._compact(problems)
        if self.cache is not None and hit is None and not uses:
            self.cache.put(self.llm.model, system, enriched, answer)
        return AgentReply(answer, self.session_id, tuple(uses), hit is not None, usage,
                          synthesized, extracted, compaction, problems=tuple(problems))

    def _tool_loop(self, enriched: str) -> tuple[str, list[ToolUse], Usage]:
        rounds = self.settings.max_tool_rounds
        uses: list[ToolUse] = []
        usage = Usage()
        for turn in range(rounds + 1):
            messages = _with_context(self.conversation.assemble(), enriched)
            answer = self.llm.chat(messages, tools=self.tools if rounds else (),
                                   temperature=self.settings.temperature)
            usage += answer.usage
            self.conversation.record_usage(answer.usage)
            if not answer.tool_calls:
                if not answer.text.strip():
                    raise LLMError("the model answered with no text and no tool call")
                return answer.text.strip(), uses, usage
            if turn == rounds:
                break
            answer = _with_ids(answer, turn)
            self.conversation.append(answer.as_message())
            for call in answer.tool_calls:
                result = call_tool(self.mem, call.name, call.arguments,
                                   dialect=self.settings.tools_dialect)
                uses.append(ToolUse(call.name, dict(call.arguments), result.text,
                                    result.is_error))
                self.conversation.append(Message("tool", result.text, tool_call_id=call.id,
                                                 name=call.name))
        raise LLMError(f"the model was still calling tools after {rounds} rounds "
                       "(agent.max_tool_rounds) and gave no answer")

    def _own_episode(self, record: MemoryRecord) -> bool:
        """This session's own turns: the history has them, enrichment leaves them out."""
        return record.kind in TURN_KINDS and record.session_id == self.session_id

    def _observe(self, role: str, text: str) -> str | None:
        """Store the message as an episode (004), or as a conversation entry (000
        ``auto_save``: ``agent.observe_kind``); its id, None when ``agent.observe`` is off."""
        if not self.settings.observe:
            return None
        return observe(self.mem, role, text, self.session_id, kind=self.settings.observe_kind)

    # --- after the answer ------------------------------------------------------------------------
    def _maybe_synthesize(self, problems: list[str]) -> tuple[str, ...]:
        cfg = self.mem.settings.cognition
        users = self.conversation.user_messages  # a failed turn's message counts too
        if not cfg.synthesis or users - self._synthesized_at < cfg.synthesis_interval:
            return ()
        self._synthesized_at = users - users % cfg.synthesis_interval
        return self.synthesize(problems)

    def synthesize(self, problems: list[str] | None = None) -> tuple[str, ...]:
        """Run synthesis on the conversation now (000 ``run_synthesis``); the ids of the notes
        stored. A failure is appended to ``problems`` when given, else raised."""
        try:
            done = synthesize(self.mem, self.llm, self.conversation.messages,
                              session_id=self.session_id)
        except ClawMemoryError as exc:
            if problems is None:
                raise
            problems.append(f"synthesis failed: {exc}")
            return ()
        return done.stored

    def _extract(self, user: str, answer: str, sources: Sequence[str | None],
                 problems: list[str]) -> tuple[str, ...]:
        try:
            return tuple(remember_exchange(
                self.mem, self.extractor, user, answer, session_id=self.session_id,
                source_ids=[s for s in sources if s]))
        except ClawMemoryError as exc:
            problems.append(f"fact extraction failed: {exc}")
            return ()

    def _compact(self, problems: list[str]) -> Compaction | None:
        try:
            done = self.conversation.compact()
        except ClawMemoryError as exc:
            problems.append(f"compaction failed: {exc}")
            return None
        if done is not None:
            problems += [f"before compaction: {e}" for e in done.hook_errors]
            if done.summary_error:
                problems.append(f"compaction summary failed, message counts kept instead: "
                                f"{done.summary_error}")
        return done

    # --- hatching (000) -------------------------------------------------------------------------
    @property
    def hatching(self) -> bool:
        return self._hatch is not None

    def start_hatching(self) -> None:
        """Enter hatching mode (000 ``/hatch``): the next messages build the soul. A hatching
        left unfinished earlier (its conversation is stored) goes on where it stopped."""
        with self._lock:
            if self._hatch is None:
                self._hatch = self.history.conversation(
                    self.key + HATCH_SUFFIX, session_id=self.session_id,
                    system=HATCH_SYSTEM.format())

    def _hatch_turn(self, text: str) -> AgentReply:
        conv = self._hatch
        assert conv is not None
        conv.append(Message("user", text, metadata=_episode(self._observe("user", text))))
        answer = self.llm.chat(conv.assemble(), temperature=self.settings.temperature)
        try:
            soul = parse_soul(answer.text)
        except LLMError as exc:  # one corrective turn, as for every JSON answer (ADR 0008)
            fix = Message("user", JSON_CORRECTION.format(problem=exc))
            answer = self.llm.chat([*conv.assemble(), answer.as_message(), fix],
                                   temperature=self.settings.temperature)
            soul = parse_soul(answer.text)
        shown = strip_soul(answer.text)
        if not shown and soul is None:
            raise LLMError("the model answered nothing during hatching")
        shown = shown or "Hatched."
        conv.append(Message("assistant", answer.text, metadata=_episode(
            self._observe(self.settings.agent_name, shown))))
        if soul is None:
            return AgentReply(shown, self.session_id, usage=answer.usage, hatching=True)
        stored = tuple(store_soul(self.mem, soul, episode_ids(conv.messages)))
        problems: list[str] = []
        try:
            notes = synthesize(self.mem, self.llm, conv.messages, session_id=self.session_id)
        except ClawMemoryError as exc:
            problems.append(f"synthesis after hatching failed: {exc}")
            notes = None
        self.history.purge(conv.key)  # 000: hatching ends with the history cleared
        self._hatch = None
        return AgentReply(shown, self.session_id, usage=answer.usage, soul=stored,
                          synthesized=notes.stored if notes else (), problems=tuple(problems))

    # --- the end --------------------------------------------------------------------------------
    def end(self) -> str | None:
        """003: store the conversation's summary as a memory (``agent.summary_on_end``);
        returns its id. The summarizer's errors propagate."""
        if not self.settings.summary_on_end:
            return None
        return self.conversation.end()

    def close(self) -> None:
        """Write what the history has queued (and stop its writer, when this agent made it)."""
        if self._owns_history:
            self.history.close()
        else:
            self.history.flush()


def _episode(episode_id: str | None) -> dict[str, Any]:
    return {EPISODE_ID: episode_id} if episode_id else {}

"""Live conversations over a history store: ``History`` (one per open ``Memory``) and the
``Conversation`` of each persistence key, which is 001's pipeline integration.

- restore (001 step 7b): a conversation opened on a key starts with the key's stored summary
  and its most recent messages after that summary, at most ``max_history_len``;
- append (steps 8/8b, 13/13b): a message goes into the in-RAM window, the window is trimmed to
  ``max_history_len``, and the message is handed to the write-behind writer, whose failures are
  logged and never reach the caller;
- assemble: the system prompt, the summary as a system message, then the window;
- compact (000/001/002/003): ``history.compaction`` on the assembled messages, then the new
  summary is persisted with ``covers`` (how many of the key's first messages it stands for),
  stored as a ``summary`` memory when a summarizer wrote it (003), and 000's hygiene purge runs.

The window is always a contiguous tail of the key's log, so a message's log position is known
without asking the store: the window ends at ``_next``.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Sequence
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from clawmemory.backends.registry import backend_of
from clawmemory.core.lifecycle import hygiene_purge
from clawmemory.errors import ClawMemoryError, InvalidInputError
from clawmemory.history.base import EPISODE_ID, HistoryStore, check_key, check_message
from clawmemory.history.compaction import (
    SUMMARY_HEADER,
    Compaction,
    PreDiscardHook,
    Summarizer,
    compact,
    emergency_compact,
    should_compact,
    summary_message,
)
from clawmemory.history.writer import WriteBehind
from clawmemory.llm.base import Message, Usage

if TYPE_CHECKING:
    from clawmemory.config import HistorySettings
    from clawmemory.core.local import LocalMemory

__all__ = ["SUMMARY_SOURCES", "Conversation", "History", "history_store"]

log = logging.getLogger("clawmemory.history")
# ``source`` of the summary memories this module stores (003 provenance tags).
SUMMARY_SOURCES = {"compaction": "compaction", "end": "session-end"}
HISTORY_KEY = "history_key"  # metadata of a summary memory: the conversation it summarises


def history_store(mem: LocalMemory) -> HistoryStore:
    """The history store of ``mem``'s namespace: the store's messages tables on SQLite and
    PostgreSQL, nothing on the ``none`` backend (memory disabled), and a store kept in this
    process for the others (their files have no place for messages: said in docs/history.md).
    Forgetting the namespace (``Memory.forget_namespace``) empties it on every backend."""
    return backend_of(mem.store_backend).history(mem.namespace, mem.clock)


class History:
    """Conversation history of one ``Memory``'s namespace: the store, one write-behind writer,
    and the compaction collaborators every conversation uses (``summarizer``, ``hooks``).

    >>> history = History(mem, summarizer=my_llm_summary)          # doctest: +SKIP
    >>> conv = history.conversation(persistence_key("telegram", "42"), session_id="s-1")
    >>> conv.append(Message("user", "hello"))

    Make one per ``Memory`` and process, and ``close()`` it before the ``Memory``: it owns the
    thread that writes messages behind the conversation."""

    def __init__(
        self,
        mem: LocalMemory,
        *,
        store: HistoryStore | None = None,
        settings: HistorySettings | None = None,
        summarizer: Summarizer | None = None,
        hooks: Sequence[PreDiscardHook] = (),
    ) -> None:
        self.mem = mem
        self.settings = settings or mem.settings.history
        self.store = store if store is not None else history_store(mem)
        self.writer = WriteBehind(max_pending=self.settings.write_queue_max)
        self.summarizer = summarizer  # compaction summaries; None = 000's deterministic line
        self.hooks: list[PreDiscardHook] = list(hooks)  # run before anything is discarded

    def conversation(
        self, key: str, *, session_id: str | None = None, system: Message | str | None = None
    ) -> Conversation:
        """Open the conversation of ``key`` (``persistence_key(...)``), restoring its summary
        and its most recent messages (001 step 7b). ``session_id``: the current session, which
        may change while the key stays (001: stable across session-id rotation)."""
        key = check_key(key)
        self.writer.flush()  # an earlier session of this key may still have writes queued
        total = self.store.len(key)
        covers = min(self.store.covered(key), total)
        summary = self.store.summary(key)
        window = self.store.recent(key, min(self.settings.max_history_len, total - covers))
        return Conversation(self, key, session_id=session_id, system=system,
                            messages=window, summary=summary, next_position=total,
                            user_messages=self.store.len(key, role="user"))

    def purge(self, key: str) -> int:
        """Remove the key's messages and summary (001 Purge) and the summary memories stored
        from it; returns how many memories were forgotten."""
        key = check_key(key)
        self.writer.flush()
        self.store.purge(key)
        forgotten = 0
        for record in self.mem.list(metadata={HISTORY_KEY: key}, include_invalid=True,
                                    limit=10_000):
            if record.source in SUMMARY_SOURCES.values():
                self.mem.forget(record.id)
                forgotten += 1
        return forgotten

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for the queued writes; False if ``timeout`` passed first."""
        return self.writer.flush(timeout)

    def close(self, timeout: float | None = None) -> bool:
        """Write what is queued and stop the writer."""
        return self.writer.close(timeout)

    def __enter__(self) -> History:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class Conversation:
    """One conversation's in-RAM window over its persistent log. Thread-safe; meant to be
    driven by one agent at a time (000: each session owns its agent)."""

    def __init__(
        self,
        history: History,
        key: str,
        *,
        session_id: str | None,
        system: Message | str | None,
        messages: Sequence[Message],
        summary: str,
        next_position: int,
        user_messages: int = 0,
    ) -> None:
        self.history = history
        self.key = key
        self.session_id = session_id
        self._lock = threading.RLock()  # re-entrant: a pre-discard hook may append
        self._system: Message | None = None
        self.system = system
        self._messages: list[Message] = list(messages)
        self._summary = summary
        self._next = next_position  # log position of the next message appended
        self._users = user_messages  # user messages in the key's log, this process's included
        self.prompt_tokens: int | None = None  # the provider's count for the last request
        self._drop_orphan_results()

    # --- the window ---------------------------------------------------------------------------
    @property
    def system(self) -> Message | None:
        """The system prompt, first in every assembly; never persisted (the agent rebuilds it,
        soul block included, for each turn)."""
        return self._system

    @system.setter
    def system(self, value: Message | str | None) -> None:
        if isinstance(value, str):
            value = Message("system", value)
        if value is not None:
            value = check_message(value, self._max_chars)
            if value.role != "system":
                raise InvalidInputError("the system prompt must be a system message")
        self._system = value

    @property
    def _max_chars(self) -> int:
        return self.history.mem.settings.storage.max_content_chars

    @property
    def messages(self) -> tuple[Message, ...]:
        """The window: the most recent messages kept in RAM, oldest first."""
        with self._lock:
            return tuple(self._messages)

    @property
    def user_messages(self) -> int:
        """How many user messages the key's log holds: those stored by earlier processes
        (counted when the conversation was opened) and those appended since. The agent
        synthesises every N of them (000), so a run of one-shot processes counts too."""
        return self._users

    @property
    def summary(self) -> str:
        """The current compaction summary ("" when none)."""
        return self._summary

    def append(self, message: Message) -> Message:
        """Add a message (checked: role, content, tool calls), trim the window to
        ``max_history_len`` and persist the message behind the caller (001 8/8b, 13/13b).
        Returns the message as stored."""
        checked = check_message(message, self._max_chars)
        with self._lock:
            self._messages.append(checked)
            self._next += 1
            self._users += checked.role == "user"
            self._trim()
            key, store = self.key, self.history.store
            self.history.writer.submit(
                f"append {key} ({checked.role})", lambda: store.append(key, checked))
        return checked

    def extend(self, messages: Sequence[Message]) -> None:
        for m in messages:
            self.append(m)

    def _trim(self) -> None:
        limit = self.history.settings.max_history_len
        if len(self._messages) > limit:
            del self._messages[: len(self._messages) - limit]
            self._drop_orphan_results()

    def _drop_orphan_results(self) -> None:
        """A window must not start with tool results whose call was cut off: chat APIs refuse
        a tool message without the assistant turn that called it."""
        while self._messages and self._messages[0].role == "tool":
            del self._messages[0]

    def assemble(self) -> builtins.list[Message]:
        """What to send to the model: system prompt, summary (001: prepended as a system
        message), then the window."""
        with self._lock:
            head = [self._system] if self._system is not None else []
            if self._summary:
                head.append(summary_message(self._summary))
            return [*head, *self._messages]

    def record_usage(self, usage: Usage) -> None:
        """Remember the provider's prompt token count (000: used instead of the estimate)."""
        self.prompt_tokens = usage.prompt_tokens or None

    def needs_compaction(self) -> bool:
        return should_compact(self.assemble(), self.history.settings,
                              prompt_tokens=self.prompt_tokens)

    # --- compaction ---------------------------------------------------------------------------
    def compact(
        self,
        *,
        summarizer: Summarizer | None = None,
        hooks: Sequence[PreDiscardHook] = (),
        force: bool = False,
    ) -> Compaction | None:
        """Compact when 000's trigger says so (or ``force``); None when nothing was done.

        The History's hooks, then ``hooks``, run first and see what is about to go; then the
        summary is made (``summarizer``, else the History's, else 000's line); then the window
        keeps only the recent messages, the summary is persisted, an LLM-written summary is
        stored as a ``summary`` memory (003) and the hygiene purge runs (000). The
        conversation is locked meanwhile: hooks and summarizer may call a model."""
        with self._lock:
            start = self._next
            result = compact(
                self.assemble(), self.history.settings,
                summarizer=summarizer or self.history.summarizer,
                hooks=[*self.history.hooks, *hooks], prompt_tokens=self.prompt_tokens,
                force=force, key=self.key, session_id=self.session_id,
            )
            return self._apply(result, start) if result is not None else None

    def emergency_compact(
        self, *, summarizer: Summarizer | None = None, hooks: Sequence[PreDiscardHook] = ()
    ) -> Compaction | None:
        """001's last resort (the model refused the context as too long): keep only
        ``emergency_retain`` messages. Hooks run as for ``compact``; the summary is 000's line
        unless a ``summarizer`` is passed here (the History's is not used)."""
        with self._lock:
            start = self._next
            result = emergency_compact(
                self.assemble(), self.history.settings, summarizer=summarizer,
                hooks=[*self.history.hooks, *hooks], key=self.key, session_id=self.session_id,
            )
            return self._apply(result, start) if result is not None else None

    def _apply(self, result: Compaction, start: int) -> Compaction:
        first_kept = start - len(result.kept)  # log position of the first message kept
        # Messages a hook appended meanwhile stay too: keep everything from first_kept on.
        del self._messages[: max(len(self._messages) - (self._next - first_kept), 0)]
        self._summary = result.summary
        self.prompt_tokens = None  # counted for the longer history
        key, store, text = self.key, self.history.store, result.summary
        self.history.writer.submit(
            f"summary {key}", lambda: store.set_summary(key, text, covers=first_kept))
        memory_id = None
        if result.summarized_by == "summarizer" and self.history.settings.summary_memory:
            body = text.removeprefix(SUMMARY_HEADER).strip()
            memory_id = self._store_summary(body, "compaction", result.discarded,
                                            covers=first_kept)
        return replace(result, summary_memory_id=memory_id, hygiene_purged=self._hygiene())

    def _store_summary(
        self, body: str, why: str, messages: Sequence[Message], **extra: Any
    ) -> str | None:
        """Store a conversation summary as a memory (003), naming as its sources the episodes
        the summarised messages were stored as (``EPISODE_ID`` in their metadata), so
        forgetting them forgets the summary too (ADR 0010). A failure is logged: the summary
        is already the conversation's own, and the compaction it belongs to has happened."""
        sources = [m.metadata.get(EPISODE_ID) for m in messages]
        try:
            return self.history.mem.store(
                body, kind="summary", source=SUMMARY_SOURCES[why],
                session_id=self.session_id or self.key,
                metadata={HISTORY_KEY: self.key, **extra},
                source_ids=list(dict.fromkeys(s for s in sources if isinstance(s, str) and s)),
            )
        except ClawMemoryError as exc:
            log.warning("history: summary memory of %s not stored: %s", self.key, exc)
            return None

    def _hygiene(self) -> int:
        if not self.history.settings.hygiene_on_compact:
            return 0
        try:
            counts = hygiene_purge(self.history.mem).counts  # archived, or deleted by policy
            return counts.get("hygiene_archived", 0) + counts.get("hygiene_deleted", 0)
        except ClawMemoryError as exc:
            log.warning("history: hygiene purge after compaction failed: %s", exc)
            return 0

    # --- session end (003) --------------------------------------------------------------------
    def end(self, summarizer: Summarizer | None = None) -> str | None:
        """003 "auto-store a summary at session end": summarise the conversation (its summary
        and window) with ``summarizer`` (else the History's) and store it as a ``summary``
        memory with source ``session-end``. Returns the memory id; None without a summarizer,
        without messages, or when it answered nothing. The summarizer's errors propagate."""
        summarizer = summarizer or self.history.summarizer
        with self._lock:
            shown = [m for m in self.assemble() if m is not self._system]
        if summarizer is None or not self._messages:
            return None
        text = summarizer(tuple(shown))
        if not isinstance(text, str) or not text.strip():
            return None
        return self._store_summary(text.strip(), "end", shown)

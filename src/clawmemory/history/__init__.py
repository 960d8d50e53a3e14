"""Conversation history (001), compaction (000, 001, 002, 003) and sessions (000, 004).

    from clawmemory.history import History, persistence_key
    from clawmemory.llm.base import Message

    with History(mem) as history:
        conv = history.conversation(persistence_key("telegram", "42"), session_id="s-1")
        conv.append(Message("user", "hello"))
        messages = conv.assemble()          # system prompt, summary, recent messages
        conv.compact()                      # when 000's trigger says so

Layering: this package sits above the engine (it takes an open ``Memory``); the engine never
imports it. docs/history.md describes the behaviour and the specifications it comes from.
"""

from clawmemory.backends.memory.history import InMemoryHistoryStore, NullHistoryStore
from clawmemory.history.base import EPISODE_ID, HistoryStore, check_message, persistence_key
from clawmemory.history.compaction import (
    Compaction,
    Discarding,
    PreDiscardHook,
    Summarizer,
    compact,
    emergency_compact,
    estimate_message_tokens,
    is_summary,
    should_compact,
)
from clawmemory.history.conversation import Conversation, History, history_store
from clawmemory.history.importing import HistoryImport, import_history
from clawmemory.history.sessions import (
    SessionCompleted,
    SessionCreated,
    SessionEvent,
    SessionEvicted,
    SessionManager,
)
from clawmemory.history.writer import WriteBehind

__all__ = [
    "EPISODE_ID",
    "Compaction",
    "Conversation",
    "Discarding",
    "History",
    "HistoryImport",
    "HistoryStore",
    "InMemoryHistoryStore",
    "NullHistoryStore",
    "PreDiscardHook",
    "SessionCompleted",
    "SessionCreated",
    "SessionEvent",
    "SessionEvicted",
    "SessionManager",
    "Summarizer",
    "WriteBehind",
    "check_message",
    "compact",
    "emergency_compact",
    "estimate_message_tokens",
    "history_store",
    "import_history",
    "is_summary",
    "persistence_key",
    "should_compact",
]

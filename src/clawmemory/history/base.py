"""The history boundary (001): a narrow ``HistoryStore`` protocol, the persistence key, and the
checks every message passes before it is kept.

A history store keeps, per conversation key, an append-only log of ``Message`` values (the
same values that cross the LLM boundary, ``clawmemory.llm.base``) and at most one compaction
summary. One store object serves one namespace; the key inside it is the 001 persistence key
``channel:chat:thread``, which stays the same when the session id rotates.
"""

from __future__ import annotations

from typing import Any

from clawmemory.backends.base import HistoryStore, decode_tool_calls, encode_tool_calls
from clawmemory.errors import InvalidInputError
from clawmemory.llm.base import ROLES, Message, ToolCall
from clawmemory.validation import check_content, check_label, check_metadata

__all__ = [
    "EPISODE_ID",
    "HistoryStore",
    "check_key",
    "check_message",
    "decode_tool_calls",
    "encode_tool_calls",
    "persistence_key",
]

MAX_KEY_CHARS = 512
# Message.metadata key holding the id of the episode memory a message was also stored as (the
# agent stores each message as a 004 episode): what is derived from messages names its sources.
EPISODE_ID = "episode_id"


def _component(value: Any, what: str, *, required: bool) -> str:
    text = check_label(value, what) if value is not None else None
    if text is None:
        if required:
            raise InvalidInputError(f"{what} must be non-empty text")
        return ""
    # ':' separates the parts; '%' escapes. Matrix room ids ("!room:server") contain ':'.
    return text.replace("%", "%25").replace(":", "%3A")


def persistence_key(channel: str, chat_id: str, thread_id: str | None = None) -> str:
    """The 001 persistence key ``channel:chat:thread``: stable across session-id rotation.

    >>> persistence_key("telegram", "42")
    'telegram:42:'
    >>> persistence_key("matrix", "!room:example.org", "t1")
    'matrix:!room%3Aexample.org:t1'
    """
    return ":".join((
        _component(channel, "channel", required=True),
        _component(chat_id, "chat_id", required=True),
        _component(thread_id, "thread_id", required=False),
    ))


def check_key(key: Any) -> str:
    """A conversation key: non-empty text every backend can store."""
    text = check_label(key, "history key", MAX_KEY_CHARS)
    if text is None:
        raise InvalidInputError("history key must be non-empty text")
    return text


def _check_tool_call(call: Any) -> ToolCall:
    if not isinstance(call, ToolCall):
        raise InvalidInputError(f"tool_calls must hold ToolCall values, not {type(call).__name__}")
    call_id, name = check_label(call.id, "tool call id"), check_label(call.name, "tool name")
    if call_id is None or name is None:
        raise InvalidInputError("a tool call needs an id and a name")
    return ToolCall(call_id, name, check_metadata(call.arguments))


def check_message(message: Any, max_chars: int) -> Message:
    """``message`` as a history store keeps it, or InvalidInputError naming what is wrong.

    The role is one of ``ROLES``; content passes the same text checks as a memory's (no NUL,
    valid Unicode, at most ``max_chars``). Content may be empty only where chat APIs allow it:
    an assistant turn that only calls tools, and a tool result (which needs its
    ``tool_call_id``)."""
    if not isinstance(message, Message):
        raise InvalidInputError(f"a history entry must be a Message, not {type(message).__name__}")
    if message.role not in ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(ROLES)}, not {message.role!r}")
    if not isinstance(message.content, str):
        raise InvalidInputError("message content must be text")
    calls = tuple(_check_tool_call(c) for c in message.tool_calls)
    if calls and message.role != "assistant":
        raise InvalidInputError("only assistant messages carry tool calls")
    call_id = check_label(message.tool_call_id, "tool_call_id")
    if message.role == "tool" and call_id is None:
        raise InvalidInputError("a tool result needs the tool_call_id it answers")
    may_be_empty = bool(calls) or message.role == "tool"
    if message.content.strip() or not may_be_empty:
        check_content(message.content, max_chars)
    return Message(
        message.role, message.content, tool_calls=calls, tool_call_id=call_id,
        name=check_label(message.name, "name"), metadata=check_metadata(message.metadata),
    )

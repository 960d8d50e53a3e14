"""What the chat-export importers (``chatgpt``, ``claude``) share: one conversation becomes one
session, each user or assistant message one ``episode`` memory.

A reader turns each conversation of its export into a ``Conversation`` (the messages in the
order they were shown, each already reduced to its text or to the reason it is left out);
``read_conversations`` does the rest the same way for both: ids derived from the conversation
and message ids (so importing the same export twice adds nothing), times, metadata, skips and
progress. A conversation or a message that cannot be used is skipped with its reason; only an
export that is not the expected shape at all is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clawmemory.errors import ClawMemoryError, ImportFormatError
from clawmemory.model import KINDS, MemoryRecord
from clawmemory.portability._common import Progress, parse_time, stable_id, tick
from clawmemory.snapshot import ParsedSnapshot, Skip
from clawmemory.validation import check_content, check_label, check_metadata

__all__ = ["Conversation", "Message", "check_shape", "read_conversations"]

ROLES = frozenset({"user", "assistant"})
NOT_A_CONVERSATION = "not a conversation"
# The key only one export's conversations have -> that export's --from name: how a file given
# under the wrong --from is recognised (the other fields, ids and titles, are alike).
_SHAPES = {"mapping": "chatgpt", "chat_messages": "claude"}
_LABELS = {"chatgpt": "ChatGPT", "claude": "Claude"}


@dataclass(frozen=True)
class Message:
    """One message as shown: ``role`` user or assistant, its ``text``, or ``skip`` (the reason
    it is left out: a system prompt, a tool result, an image without text...)."""

    id: str
    role: str = ""
    text: str = ""
    time: Any = None  # as the export writes it: epoch seconds or ISO-8601
    extra: dict[str, Any] = field(default_factory=dict)  # into metadata
    skip: str | None = None


@dataclass(frozen=True)
class Conversation:
    id: str
    title: str
    time: Any
    messages: list[Message]


def check_shape(items: list[Any], source: str, file: Path) -> None:
    """Refuse a non-empty export none of whose conversations has ``source``'s shape: without
    this, a Claude export read as ChatGPT's skips every conversation and imports nothing
    without an error. Names the right ``--from`` when the shape is another export's."""
    objects = [item for item in items if isinstance(item, dict)]
    if not items or any(key in item for item in objects for key, name in _SHAPES.items()
                        if name == source):
        return
    label = _LABELS[source]
    other = next((name for item in objects for key, name in _SHAPES.items()
                  if key in item and name != source), None)
    hint = (f"; it looks like a {_LABELS[other]} export: use --from {other}" if other
            else "")
    key = next(k for k, name in _SHAPES.items() if name == source)
    raise ImportFormatError(f"not a {label} export: none of its {len(items)} conversations"
                            f" has {label}'s '{key}'{hint}", path=str(file))


def read_conversations(
    items: list[Any],
    convert: Callable[[dict[str, Any]], Conversation],
    *,
    source: str,
    file: Path,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None,
) -> ParsedSnapshot:
    """Episodes of every conversation ``convert`` can read, in order; the rest skipped."""
    parsed = ParsedSnapshot()
    seen: set[str] = set()
    for n, item in enumerate(items, 1):
        where = f"{file}: conversation {n - 1}"
        try:
            if not isinstance(item, dict):
                raise ImportFormatError(f"a conversation must be an object, not"
                                        f" {type(item).__name__}")
            conv = convert(item)
            session = check_label(conv.id, "conversation id")
        except (ClawMemoryError, ValueError, TypeError, KeyError) as exc:
            reason = exc.reason if isinstance(exc, ImportFormatError) else str(exc)
            parsed.skipped.append(Skip(f"{NOT_A_CONVERSATION}: {reason}", where))
        else:
            _episodes(conv, session, parsed, seen, source, where, namespace, now, max_chars)
        tick(progress, n, len(items))
    return parsed


def _episodes(conv: Conversation, session: str | None, parsed: ParsedSnapshot, seen: set[str],
              source: str, where: str, namespace: str, now: float, max_chars: int) -> None:
    title = conv.title.strip()
    where = f"{where} ({title!r})" if title else where
    start = parse_time(conv.time, "conversation time") if _time_ok(conv.time) else None
    for position, message in enumerate(conv.messages):
        at = f"{where}, message {position}"
        if message.skip is not None:
            parsed.skipped.append(Skip(message.skip, at))
            continue
        try:
            record = _record(conv, message, position, session, source, namespace,
                             start or now, max_chars)
        except ClawMemoryError as exc:
            parsed.skipped.append(Skip(str(exc), at))
            continue
        if record.id in seen:
            parsed.skipped.append(Skip("the same message again", at))
            continue
        seen.add(record.id)
        parsed.records.append(record)


def _time_ok(value: Any) -> bool:
    try:
        return parse_time(value, "time") is not None
    except ClawMemoryError:
        return False


def _record(conv: Conversation, message: Message, position: int, session: str | None,
            source: str, namespace: str, fallback: float, max_chars: int) -> MemoryRecord:
    when = parse_time(message.time, "message time")
    meta = {"conversation": conv.title, "position": position, **message.extra}
    return MemoryRecord(
        id=stable_id(source, conv.id, message.id),
        content=check_content(message.text.strip(), max_chars),
        namespace=namespace,
        kind="episode",
        metadata=check_metadata({k: v for k, v in meta.items() if v not in (None, "")}),
        source=source,
        source_role=message.role,
        session_id=session,
        created_at=when or fallback,
        updated_at=when or fallback,
        event_time=when,
        decay_rate=KINDS["episode"].decay_rate,
    )


def texts(parts: Iterable[Any]) -> tuple[str, int]:
    """The text of a list of parts (strings, or blocks with ``text``) and how many parts were
    not text (images, files)."""
    out, other = [], 0
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        else:
            other += 1
    return "\n".join(p for p in out if p.strip()), other

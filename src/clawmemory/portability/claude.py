"""Claude's data export: ``conversations.json`` (Settings > Privacy > Export data).

The file is a list of conversations::

    {"uuid": "28d5...", "name": "Trip to Lisbon", "created_at": "2025-01-26T10:00:00.000Z",
     "updated_at": "...", "account": {"uuid": "..."},
     "chat_messages": [{"uuid": "...", "sender": "human", "text": "Find me a hotel",
                        "content": [{"type": "text", "text": "Find me a hotel"}],
                        "created_at": "2025-01-26T10:00:01.000Z", "updated_at": "...",
                        "attachments": [{"file_name": "plan.txt", "file_size": 120,
                                         "file_type": "txt", "extracted_content": "..."}],
                        "files": [{"file_name": "photo.png"}]}]}

Each conversation becomes a session (session_id = its uuid), each message an ``episode``
(sender human -> source_role user, assistant -> assistant; event_time = its ``created_at``;
``source = "claude"``; metadata: the conversation name, the position, and the names of attached
files). A message's text is its ``text`` content blocks in order (thinking, tool use and tool
results are not the conversation), else its ``text`` field. Attachments are named in metadata,
not imported: their extracted content is a document, not something the user said. Messages
with no text and senders other than human or assistant are skipped and said so.

PATH may be ``conversations.json``, the unpacked export folder, or the export's ``.zip``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawmemory.errors import ImportFormatError, InvalidInputError
from clawmemory.portability._chat import (
    Conversation,
    Message,
    check_shape,
    read_conversations,
    texts,
)
from clawmemory.portability._common import Progress, load_json
from clawmemory.snapshot import ParsedSnapshot

__all__ = ["read_claude"]

SOURCE = "claude"
_ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def read_claude(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a Claude export's conversations as sessions of episodes."""
    doc, file = load_json(Path(path), member="conversations.json")
    if isinstance(doc, dict) and isinstance(doc.get("conversations"), list):
        doc = doc["conversations"]
    if not isinstance(doc, list):
        raise ImportFormatError("not a Claude export: conversations.json holds a list of"
                                " conversations", path=str(file))
    check_shape(doc, SOURCE, file)
    return read_conversations(doc, _conversation, source=SOURCE, file=file,
                              namespace=namespace, now=now, max_chars=max_chars,
                              progress=progress)


def _conversation(item: dict[str, Any]) -> Conversation:
    messages = item.get("chat_messages")
    if not isinstance(messages, list):
        raise InvalidInputError("no 'chat_messages' list")
    conv_id = item.get("uuid")
    if not isinstance(conv_id, str) or not conv_id.strip():
        raise InvalidInputError("no conversation uuid")
    name = item.get("name")
    return Conversation(conv_id.strip(), name if isinstance(name, str) else "",
                        item.get("created_at"),
                        [_message(n, m) for n, m in enumerate(messages)])


def _message(position: int, msg: Any) -> Message:
    if not isinstance(msg, dict):
        return Message(str(position), skip="not a message object")
    mid = str(msg.get("uuid") or position)
    sender = str(msg.get("sender") or "")
    role = _ROLES.get(sender)
    if role is None:
        return Message(mid, skip=f"message from {sender or 'nobody'}")
    blocks = msg.get("content")
    text = ""
    if isinstance(blocks, list):
        text, _ = texts(b.get("text") for b in blocks
                        if isinstance(b, dict) and b.get("type") == "text")
    if not text.strip() and isinstance(msg.get("text"), str):
        text = msg["text"]
    files = [f.get("file_name") for key in ("attachments", "files")
             for f in msg.get(key) or [] if isinstance(f, dict) and f.get("file_name")]
    if not text.strip():
        return Message(mid, skip="no text (attachments or tool use alone)" if files
                       or blocks else "empty message")
    extra: dict[str, Any] = {"attachments": files} if files else {}
    return Message(mid, role, text, msg.get("created_at"), extra)

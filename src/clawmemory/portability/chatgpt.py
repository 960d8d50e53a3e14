"""ChatGPT's data export: ``conversations.json`` (Settings > Data controls > Export data).

The file is a list of conversations::

    {"id": "6790...", "conversation_id": "6790...", "title": "Trip to Lisbon",
     "create_time": 1737900000.12, "update_time": ..., "current_node": "node-9",
     "mapping": {"node-1": {"id": "node-1", "parent": null, "children": ["node-2"],
                            "message": {"id": "...", "author": {"role": "user"},
                                        "create_time": 1737900001.5, "recipient": "all",
                                        "content": {"content_type": "text",
                                                    "parts": ["Find me a hotel"]},
                                        "metadata": {"model_slug": "gpt-4o"}}}, ...}}

``mapping`` is a tree: a message edited or regenerated has several children. The branch shown
in ChatGPT is the path from the root to ``current_node`` (without one: the last child at each
step), and only that branch is imported, in order. Each conversation becomes a session
(session_id = the conversation id), each user or assistant message on the branch an
``episode`` (source_role user / assistant, event_time = its ``create_time``, ``source =
"chatgpt"``, metadata: the conversation title, the position, the model). Left out, and said
so in the summary: system and tool messages, hidden messages (custom instructions), messages
the assistant addressed to a tool (``recipient`` other than ``all``), content other than text
(code run by a tool, reasoning, browsing results) and messages with no text (an image alone).

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

__all__ = ["read_chatgpt"]

SOURCE = "chatgpt"
_TEXT_TYPES = frozenset({"text", "multimodal_text"})


def read_chatgpt(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a ChatGPT export's conversations as sessions of episodes."""
    doc, file = load_json(Path(path), member="conversations.json")
    if not isinstance(doc, list):
        raise ImportFormatError("not a ChatGPT export: conversations.json holds a list of"
                                " conversations", path=str(file))
    check_shape(doc, SOURCE, file)
    return read_conversations(doc, _conversation, source=SOURCE, file=file,
                              namespace=namespace, now=now, max_chars=max_chars,
                              progress=progress)


def _conversation(item: dict[str, Any]) -> Conversation:
    mapping = item.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        raise InvalidInputError("no 'mapping' of messages")
    conv_id = item.get("conversation_id") or item.get("id")
    if not isinstance(conv_id, str) or not conv_id.strip():
        raise InvalidInputError("no conversation id")
    branch = _branch(mapping, item.get("current_node"))
    messages = [_message(node_id, mapping[node_id]) for node_id in branch
                if isinstance(mapping[node_id], dict) and mapping[node_id].get("message")]
    title = item.get("title")
    return Conversation(conv_id.strip(), title if isinstance(title, str) else "",
                        item.get("create_time"), messages)


def _branch(mapping: dict[str, Any], current: Any) -> list[str]:
    """The node ids from the root to ``current`` (or down the last children), in order."""
    if not isinstance(current, str) or current not in mapping:
        roots = [k for k, v in mapping.items()
                 if isinstance(v, dict) and v.get("parent") not in mapping]
        if not roots:
            raise InvalidInputError("the message tree has no root")
        current = roots[0]
        seen = {current}
        while True:  # down the last child: the newest edit or regeneration
            children = [c for c in _node(mapping, current).get("children") or []
                        if c in mapping and c not in seen]
            if not children:
                break
            current = children[-1]
            seen.add(current)
    path, seen = [], set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        path.append(node_id)
        node_id = _node(mapping, node_id).get("parent")
    return path[::-1]


def _node(mapping: dict[str, Any], node_id: str) -> dict[str, Any]:
    node = mapping[node_id]
    if not isinstance(node, dict):
        raise InvalidInputError(f"node {node_id!r} is not an object")
    return node


def _message(node_id: str, node: dict[str, Any]) -> Message:
    msg = node["message"]
    if not isinstance(msg, dict):
        return Message(node_id, skip="not a message object")
    mid = str(msg.get("id") or node_id)
    role = str(_obj(msg.get("author")).get("role") or "")
    meta, content = _obj(msg.get("metadata")), _obj(msg.get("content"))
    kind = str(content.get("content_type") or "")
    why = _left_out(role, msg, meta, kind)
    if why is not None:
        return Message(mid, skip=why)
    text, other = texts(content.get("parts") or [])
    if not text.strip():
        return Message(mid, skip="no text (an image or a file alone)" if other
                       else "empty message")
    extra: dict[str, Any] = {"model": meta.get("model_slug")}
    if other:
        extra["attachments"] = other
    return Message(mid, role, text, msg.get("create_time"), extra)


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _left_out(role: str, msg: dict[str, Any], meta: dict[str, Any], kind: str) -> str | None:
    if role in ("system", "tool"):
        return f"{role} message"
    if role not in ("user", "assistant"):
        return f"message from {role or 'nobody'}"
    if meta.get("is_visually_hidden_from_conversation"):
        return "hidden message (custom instructions or context)"
    if msg.get("recipient") not in (None, "all"):
        return "message to a tool"
    if kind not in _TEXT_TYPES:
        return f"{kind or 'unknown'} content (not text)"
    return None

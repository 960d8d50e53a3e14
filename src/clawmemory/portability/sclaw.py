"""001 sclaw: the SQLite ``memory.db`` (facts, messages, summaries, schema_version).

001 names the tables and the ``Fact`` fields but not every column, so this reader asks only for
what it needs and uses what else is there:

- ``facts(id, content, [source], [tags], [metadata], [created_at])`` → ``fact`` memories; the
  id is kept; ``source`` (the session the fact was extracted in) → ``session_id``; tags are a
  JSON array or comma-separated; metadata is a JSON object.
- ``messages(session_id, seq, role, content, [created_at], [tool_calls], [tool_call_id],
  [name], [metadata])`` → ``episode`` memories with ``source_role`` = role (user and assistant
  turns only: system prompts and tool results are not memories; empty turns, e.g. an assistant
  turn that only calls tools, are skipped), and the same turns, in order, as the session's
  conversation history (``ParsedSnapshot.history``, key ``cli:<session_id>:``), so
  ``clawmem chat --session <session_id>`` (or an agent on channel ``cli``) resumes the
  conversation where 001 left it; the episodes stay, for recall and consolidation, as a
  conversation held here keeps both. Optional: ``include_messages=False`` (neither).
- ``summaries(session_id, summary|content, [updated_at|created_at])`` → ``summary`` memories.

Times may be Unix seconds/ms/ns, ISO-8601 or Go's ``time.Time`` text; a missing one means the
import time. Messages and summaries get ids derived from their session, position and text, so a
second import of the same file skips them.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from clawmemory.errors import InvalidInputError
from clawmemory.history.base import persistence_key
from clawmemory.llm.base import Message, Role
from clawmemory.model import KINDS, MemoryRecord
from clawmemory.portability._common import (
    Progress,
    SQLiteSource,
    json_list,
    json_object,
    located,
    parse_time,
    row_label,
    stable_id,
    text,
    tick,
)
from clawmemory.snapshot import ParsedSnapshot
from clawmemory.validation import check_content, check_metadata, check_tags

__all__ = ["read_sclaw_db"]

_ROLES = frozenset({"user", "assistant"})
# The channel of the history keys: ``clawmem chat``'s (interfaces/cli/chat.py CHANNEL), so
# ``clawmem chat --session ID`` finds the conversation 001 kept under session ID.
HISTORY_CHANNEL = "cli"
_MESSAGE_EXTRAS = ("tool_calls", "tool_call_id", "name")


def read_sclaw_db(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
    include_messages: bool = True,
) -> ParsedSnapshot:
    """Read an sclaw ``memory.db`` read-only; every row is validated before anything is
    returned. ``include_messages=False`` leaves the conversation history out."""
    file = Path(path)
    parsed = ParsedSnapshot()
    with SQLiteSource(file) as db:
        fact_cols = db.columns("facts", ("id", "content"))
        msg_cols = db.columns("messages", ("session_id", "seq", "role", "content")) \
            if include_messages else set()
        sum_cols = db.columns("summaries", ("session_id",))
        if not {"summary", "content"} & sum_cols:
            db.columns("summaries", ("summary",))  # raises, naming the missing column
        total = db.count("facts") + db.count("summaries") + (
            db.count("messages") if include_messages else 0)
        done = 0
        steps = [("facts", fact_cols, _fact), ("summaries", sum_cols, _summary)]
        if include_messages:
            steps.insert(1, ("messages", msg_cols, _message))
        for table, cols, build in steps:
            order = "session_id, seq" if table == "messages" else "rowid"
            for n, row in enumerate(db.rows(f"SELECT * FROM {table} ORDER BY {order}"), 1):
                with located(file, row=partial(_label, table, n, row)):
                    record = build(row, cols, namespace, now, max_chars)
                if record is not None:
                    parsed.records.append(record)
                    if table == "messages" and record.session_id:
                        key = persistence_key(HISTORY_CHANNEL, record.session_id)
                        parsed.history.setdefault(key, []).append(_turn(record))
                done += 1
                tick(progress, done, total)
    return parsed


def _turn(record: MemoryRecord) -> Message:
    """An imported episode as the history message it was (user or assistant text)."""
    role: Role = "user" if record.source_role == "user" else "assistant"
    return Message(role, record.content)


def _label(table: str, number: int, row: dict[str, Any]) -> str:
    if table == "facts":
        return row_label(table, number, row.get("id"))
    session = row.get("session_id")
    if isinstance(session, bytes):
        session = session.decode("utf-8", "replace")
    where = f"session {session!r}" + (f", seq {row['seq']!r}" if "seq" in row else "")
    return f"{row_label(table, number, None)} ({where})"


def _fact(row: dict[str, Any], cols: set[str], namespace: str, now: float,
          max_chars: int) -> MemoryRecord:
    rid = text(row["id"], "id")
    if not rid or not rid.strip():
        raise InvalidInputError("id is empty")
    created = parse_time(row.get("created_at"), "created_at") or now
    return MemoryRecord(
        id=rid,
        content=check_content(text(row["content"], "content"), max_chars),
        namespace=namespace,
        kind="fact",
        tags=check_tags(json_list(text(row.get("tags"), "tags"), "tags", commas=True)),
        metadata=check_metadata(json_object(text(row.get("metadata"), "metadata"), "metadata")),
        session_id=text(row.get("source"), "source") or None,
        created_at=created,
        updated_at=created,
        decay_rate=KINDS["fact"].decay_rate,
    )


def _message(row: dict[str, Any], cols: set[str], namespace: str, now: float,
             max_chars: int) -> MemoryRecord | None:
    role = (text(row["role"], "role") or "").strip().lower()
    content = text(row["content"], "content") or ""
    if role not in _ROLES or not content.strip():
        return None
    session = text(row["session_id"], "session_id") or ""
    seq = row["seq"]
    if isinstance(seq, bytes) and seq.strip().isdigit():  # an integer stored as text
        seq = int(seq)
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise InvalidInputError(f"seq must be an integer, not {seq!r}")
    meta: dict[str, Any] = {"seq": seq}
    for name in _MESSAGE_EXTRAS:
        value = text(row.get(name), name)
        if value:
            meta[name] = value
    meta.update(json_object(text(row.get("metadata"), "metadata"), "metadata"))
    if len(meta) > 1:  # {"seq": int} alone needs no check (the common case, a million times)
        meta = check_metadata(meta)
    when = parse_time(row.get("created_at"), "created_at")
    return MemoryRecord(
        id=stable_id("sclaw-message", session, seq, role, content),
        content=check_content(content, max_chars),
        namespace=namespace,
        kind="episode",
        metadata=meta,
        source_role=role,
        session_id=session or None,
        created_at=when or now,
        updated_at=when or now,
        event_time=when,
        decay_rate=KINDS["episode"].decay_rate,
    )


def _summary(row: dict[str, Any], cols: set[str], namespace: str, now: float,
             max_chars: int) -> MemoryRecord | None:
    column = "summary" if "summary" in cols else "content"
    content = text(row[column], column) or ""
    if not content.strip():
        return None  # 001 GetSummary: "" means the session has none
    session = text(row["session_id"], "session_id") or ""
    when = parse_time(row.get("updated_at", row.get("created_at")), "updated_at") or now
    return MemoryRecord(
        id=stable_id("sclaw-summary", session, content),
        content=check_content(content, max_chars),
        namespace=namespace,
        kind="summary",
        session_id=session or None,
        created_at=when,
        updated_at=when,
        decay_rate=KINDS["summary"].decay_rate,
    )

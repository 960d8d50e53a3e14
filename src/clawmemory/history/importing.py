"""Imported conversations into the history store: what makes an agent resume a conversation
another agent had (001's ``messages``), rather than only recall it as episodes.

A reader puts each conversation in ``ParsedSnapshot.history`` (persistence key -> messages in
order); ``import_history`` appends them after ``Memory.import_records`` wrote the memories. It
lives here, not in the engine, because the history sits above the engine (ADR 0009).

A conversation whose key already has messages is left alone and counted as skipped: importing
the same file twice adds nothing, and an import never interleaves its messages with a
conversation that went on here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clawmemory.history.base import check_key, check_message
from clawmemory.history.conversation import history_store
from clawmemory.llm.base import Message

if TYPE_CHECKING:
    from clawmemory.core.local import LocalMemory

__all__ = ["HistoryImport", "import_history"]


@dataclass(frozen=True)
class HistoryImport:
    """What ``import_history`` did: messages written, conversations written, and conversations
    skipped because their key already had a history here."""

    messages: int = 0
    conversations: int = 0
    present: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"messages": self.messages, "conversations": self.conversations,
                "present": self.present}


def import_history(mem: LocalMemory, history: Mapping[str, Sequence[Message]], *,
                   dry_run: bool = False) -> HistoryImport:
    """Append each conversation of ``history`` to ``mem``'s history store (its namespace), in
    order; ``dry_run`` only counts. One transaction per conversation where the backend has
    them, so a failure never leaves half a conversation."""
    store = history_store(mem)
    limit = mem.settings.storage.max_content_chars
    written = conversations = present = 0
    for raw_key, messages in history.items():
        key = check_key(raw_key)
        checked = [check_message(m, limit) for m in messages]
        if not checked:
            continue
        if store.len(key) > 0:
            present += 1
            continue
        if not dry_run:
            with _transaction(mem.store_backend):
                for message in checked:
                    store.append(key, message)
        written += len(checked)
        conversations += 1
    return HistoryImport(written, conversations, present)


@contextmanager
def _transaction(backend: Any) -> Iterator[None]:
    """The backend's write transaction (SQLite, PostgreSQL), or none (the others keep the
    history in this process, where an append cannot half fail)."""
    write = getattr(backend, "write", None)
    if write is None:
        yield
        return
    with write():
        yield


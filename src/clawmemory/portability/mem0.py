"""mem0: the memories of a mem0 installation, from its ``get_all`` output or its local store.

Two sources, told apart by content:

- **JSON**: what ``Memory.get_all()`` (or ``search()``) returns, saved with ``json.dump``: the
  v1.1 shape ``{"results": [...], "relations": [...]}``, a bare list (v1.0 and the hosted
  API's ``get_all``), or ``{"memories": [...]}``. Each item::

      {"id": "f38b689d-...", "memory": "Prefers tea", "hash": "...", "metadata": {...},
       "created_at": "2024-07-25T23:57:00.108347-07:00", "updated_at": "...",
       "user_id": "alex", "agent_id": "...", "run_id": "...", "actor_id": "...", "role": "user",
       "categories": ["food"]}

  id kept, memory -> content, created_at / updated_at kept, run_id -> session_id, role ->
  source_role, categories -> tags, metadata merged into metadata with user_id, agent_id,
  actor_id (and the hosted API's app_id, expiration_date, immutable when present). ``score``
  (a search's relevance) and ``hash`` are dropped; graph ``relations`` are not memories.
- **The local store**: mem0's SQLite ``history.db`` (``~/.mem0/history.db`` by default; give
  the file or the folder). Its ``history`` table logs every ADD, UPDATE and DELETE with the
  memory's text, so the current memories are rebuilt from it: the last text of each memory id,
  created at its ADD, updated at its last UPDATE; a memory whose last event is a DELETE is
  skipped. The vector store (Qdrant, Chroma, ...) is not read: it holds the same text plus
  vectors this engine recomputes, and needs its own client; the history does not know the
  user_id, so export with ``get_all`` when that matters.

Every memory is a ``fact`` with ``source = "mem0"``. An item that cannot be used (no text, a
bad time, too long) is skipped with its reason; the rest are imported.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from clawmemory.errors import ClawMemoryError, ImportFormatError, InvalidInputError
from clawmemory.model import KINDS, MemoryRecord
from clawmemory.portability._common import (
    Progress,
    SQLiteSource,
    load_json,
    parse_time,
    stable_id,
    text,
    tick,
)
from clawmemory.snapshot import ParsedSnapshot, Skip
from clawmemory.validation import check_content, check_label, check_metadata, check_tags

__all__ = ["read_mem0"]

SOURCE = "mem0"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_META_KEYS = ("user_id", "agent_id", "actor_id", "app_id", "expiration_date", "immutable")
NO_TEXT = "no memory text"
DELETED = "deleted in mem0"
REPEATED = "the same memory id again"


def read_mem0(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read mem0 memories from a ``get_all`` JSON file or a ``history.db`` (or its folder)."""
    file = Path(path)
    if file.is_dir():
        if not (file / "history.db").is_file():
            raise ImportFormatError("no history.db in this folder (give mem0's history.db or"
                                    " a JSON file of get_all() output)", path=str(file))
        file = file / "history.db"
    if _is_sqlite(file):
        return _from_history(file, namespace, now, max_chars, progress)
    return _from_json(file, namespace, now, max_chars, progress)


def _is_sqlite(file: Path) -> bool:
    try:
        with file.open("rb") as handle:
            return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError as exc:
        raise ImportFormatError(f"cannot read: {exc.strerror or exc}", path=str(file)) from exc


# --- get_all() JSON ------------------------------------------------------------------------------
def _items(doc: Any, file: Path) -> list[Any]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for name in ("results", "memories"):
            if isinstance(doc.get(name), list):
                return list(doc[name])
    raise ImportFormatError("not mem0 output: expected a list of memories or an object with"
                            " 'results' (what Memory.get_all() returns)", path=str(file))


def _from_json(file: Path, namespace: str, now: float, max_chars: int,
               progress: Progress | None) -> ParsedSnapshot:
    items = _items(load_json(file)[0], file)
    parsed = ParsedSnapshot()
    seen: set[str] = set()
    for n, item in enumerate(items, 1):
        where = f"{file}: item {n - 1}"
        try:
            record = _json_record(item, namespace, now, max_chars)
        except ClawMemoryError as exc:
            parsed.skipped.append(Skip(str(exc), where))
        else:
            if record is None:
                parsed.skipped.append(Skip(NO_TEXT, where))
            elif record.id in seen:
                parsed.skipped.append(Skip(REPEATED, where))
            else:
                seen.add(record.id)
                parsed.records.append(record)
        tick(progress, n, len(items))
    return parsed


def _json_record(item: Any, namespace: str, now: float, max_chars: int) -> MemoryRecord | None:
    if not isinstance(item, dict):
        raise InvalidInputError(f"an item must be an object, not {type(item).__name__}")
    content = item.get("memory", item.get("data"))
    if content is None or (isinstance(content, str) and not content.strip()):
        return None
    if not isinstance(content, str):
        raise InvalidInputError(f"memory must be text, not {type(content).__name__}")
    meta = item.get("metadata") or {}
    if not isinstance(meta, dict):
        raise InvalidInputError("metadata must be an object")
    meta = {**meta, **{k: item[k] for k in _META_KEYS if item.get(k) is not None}}
    created = parse_time(item.get("created_at"), "created_at") or now
    rid = item.get("id")
    categories = item.get("categories") or []
    if not isinstance(categories, list):
        raise InvalidInputError("categories must be a list")
    return MemoryRecord(
        id=str(rid).strip() if isinstance(rid, str | int) and str(rid).strip()
        else stable_id(SOURCE, content),
        content=check_content(content, max_chars),
        namespace=namespace,
        kind="fact",
        tags=check_tags([str(c) for c in categories]),
        metadata=check_metadata(meta),
        source=SOURCE,
        source_role=check_label(item.get("role"), "role"),
        session_id=check_label(item.get("run_id"), "run_id"),
        created_at=created,
        updated_at=parse_time(item.get("updated_at"), "updated_at") or created,
        decay_rate=KINDS["fact"].decay_rate,
    )


# --- history.db ----------------------------------------------------------------------------------
def _from_history(file: Path, namespace: str, now: float, max_chars: int,
                  progress: Progress | None) -> ParsedSnapshot:
    parsed = ParsedSnapshot()
    with SQLiteSource(file) as db:
        cols = db.columns("history", ("memory_id", "new_memory", "event"))
        total = db.count("history")
        state: dict[str, dict[str, Any]] = {}
        for n, row in enumerate(db.rows("SELECT * FROM history ORDER BY rowid"), 1):
            mid = text(row["memory_id"], "memory_id") if isinstance(row["memory_id"], bytes) \
                else row["memory_id"]
            if mid is not None and str(mid).strip():
                _apply(state.setdefault(str(mid).strip(), {"row": n}), row, cols)
            tick(progress, n, total)
    for mid, memory in state.items():
        where = f"{file}: memory {mid} (history row {memory['row']})"
        if memory.get("deleted"):
            parsed.skipped.append(Skip(DELETED, where))
            continue
        try:
            record = _history_record(mid, memory, namespace, now, max_chars)
        except ClawMemoryError as exc:
            parsed.skipped.append(Skip(str(exc), where))
            continue
        if record is None:
            parsed.skipped.append(Skip(NO_TEXT, where))
        else:
            parsed.records.append(record)
    return parsed


def _apply(memory: dict[str, Any], row: dict[str, Any], cols: set[str]) -> None:
    """One history row onto the memory's state (rows arrive in the order mem0 wrote them)."""
    event = (text(row["event"], "event") or "").strip().upper()
    deleted = event == "DELETE" or bool(row.get("is_deleted"))
    memory["deleted"] = deleted
    if deleted:
        return
    if row["new_memory"] is not None:
        memory["content"] = row["new_memory"]
    for name in ("created_at", "updated_at", "role", "actor_id"):
        if name in cols and row.get(name) is not None:
            if name == "created_at" and "created_at" in memory:
                continue  # an UPDATE repeats the creation time: the first one stands
            memory[name] = row[name]


def _history_record(mid: str, memory: dict[str, Any], namespace: str, now: float,
                    max_chars: int) -> MemoryRecord | None:
    content = text(memory.get("content"), "new_memory")
    if content is None or not content.strip():
        return None
    created = parse_time(text(memory.get("created_at"), "created_at"), "created_at") or now
    actor = text(memory.get("actor_id"), "actor_id")
    return MemoryRecord(
        id=mid,
        content=check_content(content, max_chars),
        namespace=namespace,
        kind="fact",
        metadata={"actor_id": actor} if actor else {},
        source=SOURCE,
        source_role=check_label(text(memory.get("role"), "role"), "role"),
        created_at=created,
        updated_at=parse_time(text(memory.get("updated_at"), "updated_at"), "updated_at")
        or created,
        decay_rate=KINDS["fact"].decay_rate,
    )

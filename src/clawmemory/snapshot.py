"""JSON snapshots (000): lossless export, and import of clawmemory and PtrClaw snapshots.

Export shape (a superset of 000's object shape, so PtrClaw can read the entries)::

    {"format": "clawmemory.snapshot", "version": 1, "namespace": "...", "exported_at": "...",
     "entries": [{...every record field..., "category": "knowledge", "timestamp": 1700000000,
                  "links": ["other-key-or-id", ...]}],
     "links": [{"a": id, "b": id, "strength": 1.0, "origin": "manual"}]}

Accepted on import: that shape, 000's object shape ``{"entries": [...], "embeddings": {...}}``
and 000's legacy array shape ``[{entry}, ...]``. Embeddings are never exported and are ignored
on import (000): they are recomputed by the active embedder.
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from clawmemory.errors import ClawMemoryError, ImportFormatError, InvalidInputError
from clawmemory.llm.base import Message
from clawmemory.model import KINDS, Link, MemoryRecord, normalize_kind
from clawmemory.validation import (
    check_content,
    check_key,
    check_metadata,
    check_provenance_id,
    check_ref,
    check_tags,
    check_text,
    check_time,
)

__all__ = ["FORMAT", "ParsedSnapshot", "Skip", "dump_snapshot", "entry_record", "new_id",
           "parse_snapshot"]

FORMAT = "clawmemory.snapshot"
_MAX_INT = 2.0**53  # integers beyond this are not exact as JSON numbers nor SQLite-safe
_PTRCLAW_CATEGORY = {"core": "core", "knowledge": "fact", "conversation": "conversation"}


def new_id() -> str:
    """A fresh public memory id: 16 hex characters (64 random bits)."""
    return secrets.token_hex(8)


def _category(kind: str) -> str:
    return kind if kind in ("core", "conversation") else "knowledge"


def dump_snapshot(
    namespace: str, records: Sequence[MemoryRecord], links: Mapping[str, list[Link]]
) -> str:
    name = {r.id: r.key or r.id for r in records}
    entries = []
    pairs: dict[tuple[str, str], Link] = {}
    for r in records:
        d = r.to_dict()
        d["category"] = _category(r.kind)
        d["timestamp"] = int(r.created_at)
        d["links"] = [name.get(lk.other_id, lk.other_id) for lk in links.get(r.id, [])]
        entries.append(d)
        for lk in links.get(r.id, []):
            pairs.setdefault(tuple(sorted((r.id, lk.other_id))), lk)  # type: ignore[arg-type]
    doc = {
        "format": FORMAT,
        "version": 1,
        "namespace": namespace,
        "exported_at": datetime.now(UTC).isoformat(),
        "entries": entries,
        "links": [{"a": a, "b": b, "strength": lk.strength, "origin": lk.origin}
                  for (a, b), lk in sorted(pairs.items())],
    }
    return json.dumps(doc, ensure_ascii=False, indent=1)


class Skip(NamedTuple):
    """One source item an importer left out, and why: ``reason`` is what the summary groups
    by ("system or tool message"), ``where`` names the item ("conversations.json: conversation
    'Trip', message 3")."""

    reason: str
    where: str = ""


@dataclass
class ParsedSnapshot:
    """What a reader hands to ``Memory.import_records``: validated records, links between them
    (``(a, b, strength, origin)``), the items it left out (``skipped``) and the records that
    arrive in the archive rather than the live set (``archived``: id -> archive time).

    ``entities``: record id -> the entities the source linked it to, ``(name, type)`` each
    (004 keeps typed entities; linking gives them that type). ``history``: persistence key ->
    a conversation's messages in order (001's message history), which the engine does not
    write: ``clawmemory.history.import_history`` does (the history sits above the engine)."""

    records: list[MemoryRecord] = field(default_factory=list)
    links: list[tuple[str, str, float, str]] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    archived: dict[str, float] = field(default_factory=dict)
    entities: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    history: dict[str, list[Message]] = field(default_factory=dict)


def parse_snapshot(
    text: str, *, namespace: str, now: float, max_chars: int, source: str = "<snapshot>",
    legacy_provenance: bool = False,
) -> ParsedSnapshot:
    """Validate a whole snapshot before anything is written; raise ImportFormatError naming the
    source and line (or entry) of the first problem. ``legacy_provenance``: an import
    (``entry_record``)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"not valid JSON: {exc.msg}", path=source, line=exc.lineno) from exc
    except RecursionError as exc:  # "[[[[..." deeper than the decoder's stack
        raise ImportFormatError("JSON nested too deeply", path=source) from exc
    if isinstance(doc, list):
        entries: Any = doc
    elif isinstance(doc, dict) and isinstance(doc.get("entries"), list):
        entries = doc["entries"]
    else:
        raise ImportFormatError(
            "not a snapshot: expected a JSON array of entries or an object with 'entries'",
            path=source,
        )
    parsed = ParsedSnapshot()
    by_name: dict[str, str] = {}
    raw_links: list[tuple[str, list[str]]] = []
    for index, entry in enumerate(entries):
        try:
            record = entry_record(entry, namespace=namespace, now=now, max_chars=max_chars,
                                  legacy_provenance=legacy_provenance)
        except ClawMemoryError as exc:
            raise ImportFormatError(f"entry {index}: {exc}", path=source) from exc
        parsed.records.append(record)
        by_name[record.id] = record.id
        if record.key:
            by_name.setdefault(record.key, record.id)
        names = entry.get("links") or []
        if isinstance(names, list):
            raw_links.append((record.id, [str(n) for n in names]))  # unknown names are skipped
    if isinstance(doc, dict) and isinstance(doc.get("links"), list):
        parsed.links.extend(_explicit_links(doc["links"], source))
    else:  # 000 shape: links are the keys of linked entries
        for rid, names in raw_links:
            parsed.links.extend(
                (rid, by_name[n], 1.0, "manual") for n in names if n in by_name
            )
    return parsed


def _explicit_links(links: list[Any], source: str) -> list[tuple[str, str, float, str]]:
    """The export's ``links`` list: ``{"a": id, "b": id, "strength": 1.0, "origin": ...}``."""
    out = []
    for index, lk in enumerate(links):
        if isinstance(lk, dict) and "a" in lk and "b" in lk:
            try:
                strength = _number(lk, "strength", 1.0)
                a, b, origin = (check_text(str(v), "link") for v in
                                (lk["a"], lk["b"], lk.get("origin", "manual")))
            except ClawMemoryError as exc:
                raise ImportFormatError(f"link {index}: {exc}", path=source) from exc
            out.append((a, b, strength, origin))
    return out


def entry_record(entry: Any, *, namespace: str, now: float, max_chars: int,
                 legacy_provenance: bool = False) -> MemoryRecord:
    """One 000 (or clawmemory) snapshot entry as a record: ``category`` core/knowledge/
    conversation -> kind, ``timestamp`` -> created_at, ``last_accessed`` 0 -> never. Raises
    ClawMemoryError naming the field at fault.

    ``legacy_provenance`` (an import, not a store reading its own file): an entry written before
    ``narrative_id``/``task_id`` were fields has neither key, and the koshi importer of that
    time kept 003's integers in ``metadata``; they move to the fields (ADR 0024)."""
    if not isinstance(entry, dict):
        raise ImportFormatError("entry is not an object")
    content = check_content(entry.get("content"), max_chars)
    if "kind" in entry:
        kind = normalize_kind(str(entry["kind"]))
    else:
        category = str(entry.get("category", "knowledge")).lower()
        kind = _PTRCLAW_CATEGORY.get(category) or normalize_kind(category)
    created = check_time(entry.get("created_at", entry.get("timestamp")), "created_at") or now
    last = check_time(entry.get("last_accessed"), "last_accessed") or None  # 000: 0 = never
    updated = check_time(entry.get("updated_at"), "updated_at") or created
    rid = entry.get("id")
    metadata = check_metadata(entry.get("metadata"))
    narrative_id, task_id = (_provenance(entry, metadata, name, legacy_provenance)
                             for name in ("narrative_id", "task_id"))
    return MemoryRecord(
        id=check_ref(rid) if isinstance(rid, str | int) and str(rid).strip() else new_id(),
        content=content,
        namespace=namespace,
        key=check_key(entry.get("key"), 512),
        kind=kind,
        tags=check_tags(entry.get("tags")),
        metadata=metadata,
        source=_opt_str(entry.get("source"), "source"),
        source_role=_opt_str(entry.get("source_role"), "source_role"),
        source_ids=_str_list(entry.get("source_ids"), "source_ids"),
        session_id=_opt_str(entry.get("session_id"), "session_id"),
        narrative_id=narrative_id,
        task_id=task_id,
        created_at=created,
        event_time=check_time(entry.get("event_time"), "event_time"),
        updated_at=updated,
        # A JSON store file keeps it; an import replaces it with the time of arrival
        # (Memory.import_records). Files from before arrival times: the last write.
        stored_at=check_time(entry.get("stored_at"), "stored_at") or max(created, updated),
        last_accessed=last,
        access_count=int(_number(entry, "access_count", 0, upper=_MAX_INT)),
        score=int(_number(entry, "score", 0, lower=-_MAX_INT, upper=_MAX_INT))
        if "kind" in entry else 0,
        confidence=_number(entry, "confidence", 1.0, upper=1.0),
        decay_rate=_number(entry, "decay_rate", KINDS[kind].decay_rate),
        valid_until=check_time(entry.get("valid_until"), "valid_until"),
        supersedes=_opt_str(entry.get("supersedes"), "supersedes"),
    )


def _provenance(entry: Mapping[str, Any], metadata: dict[str, Any], name: str,
                legacy: bool) -> str | None:
    """``narrative_id`` or ``task_id`` of an entry; with ``legacy``, an integer kept in
    ``metadata`` by an entry without the field moves to it (``entry_record``)."""
    if name in entry or not legacy:
        return check_provenance_id(entry.get(name), name)
    kept = metadata.get(name)
    if isinstance(kept, int) and not isinstance(kept, bool):
        del metadata[name]
        return str(kept)
    return None


def _number(entry: Mapping[str, Any], name: str, default: float, *, lower: float = 0.0,
            upper: float = math.inf) -> float:
    """A number field within [lower, upper]; missing or null means ``default``. Checked here
    because a bad number would otherwise fail later, inside the store, as a driver error."""
    value = entry.get(name)
    if value is None:
        return float(default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, not {value!r}")
    if not lower <= value <= upper:
        raise InvalidInputError(f"{name} must be between {lower:g} and {upper:g}, not {value!r}")
    return float(value)


def _str_list(value: Any, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise InvalidInputError(f"{name} must be a list, not {type(value).__name__}")
    return tuple(check_text(str(v), name) for v in value)


def _opt_str(value: Any, name: str) -> str | None:
    return None if value is None or value == "" else check_text(str(value), name)

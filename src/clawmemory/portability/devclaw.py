"""002 DevClaw: the Markdown file store and the SQLite ``memories`` table.

Markdown tree (``data/memory/<category>/<YYYY-MM-DD>-<slug>.md``)::

    ---
    category: fact
    created_at: 2024-01-15T10:30:00Z
    keywords: [api, authentication, stripe]
    ---

    The Stripe API key is stored in the vault under `stripe_api_key`.

category → kind (the folder name when the front matter has none), created_at → created_at (the
file name's date, then the import time, when missing), keywords → tags, body → content. The
fields clawmemory's own export adds (``id``, ``key``, ``score``, ``links``, ...) are restored;
any other front matter key is kept in metadata.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from clawmemory.errors import ImportFormatError, InvalidInputError
from clawmemory.model import KINDS, MemoryRecord, normalize_kind
from clawmemory.portability._common import (
    Progress,
    SQLiteSource,
    epoch_date,
    json_list,
    json_object,
    located,
    markdown_files,
    number,
    parse_time,
    read_text,
    row_label,
    skip_for,
    stable_id,
    text,
    tick,
)
from clawmemory.portability.frontmatter import FrontMatter, Value, split_front_matter
from clawmemory.snapshot import ParsedSnapshot
from clawmemory.validation import check_content, check_key, check_metadata, check_tags

__all__ = ["Note", "read_devclaw_db", "read_devclaw_md", "read_note"]

_MAX_INT = 2.0**53
# Front matter keys that map to record fields; every other key goes to metadata.
_FIELDS = frozenset({
    "id", "category", "kind", "created_at", "keywords", "tags", "key", "source", "source_role",
    "session_id", "event_time", "updated_at", "score", "confidence", "decay_rate",
    "valid_until", "supersedes", "source_ids", "metadata", "links",
    "hash", "conflict",  # the notes folder's bookkeeping (markdown.py), never metadata
})


def read_devclaw_md(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a DevClaw Markdown tree (the ``data/memory`` folder, a parent of it, or one note).
    Every note is validated before anything is returned. In a folder, a note that cannot be
    read (bad front matter, a bad field, no content) is skipped with its reason and the others
    are imported; a single note given as the path raises ImportFormatError instead."""
    root = Path(path)
    files = markdown_files(root, "a DevClaw memory folder", strict=False)
    parsed = ParsedSnapshot()
    pairs: set[tuple[str, str]] = set()
    for done, file in enumerate(files, 1):
        try:
            # <category>/<name>: the same id whether the tree, its parent or the note was given
            record, links = _note(file, f"{file.parent.name}/{file.name}", namespace=namespace,
                                  now=now, max_chars=max_chars)
        except ImportFormatError as exc:
            if root.is_file():
                raise
            parsed.skipped.append(skip_for(exc))
            tick(progress, done, len(files))
            continue
        parsed.records.append(record.evolve(namespace=namespace))
        for other in links:
            if other != record.id:
                a, b = sorted((record.id, other))
                pairs.add((a, b))
        tick(progress, done, len(files))
    parsed.links.extend((a, b, 1.0, "manual") for a, b in sorted(pairs))
    return parsed


@dataclass(frozen=True)
class Note:
    """One note read: the memory it describes, the ids in its ``links`` and its front matter
    (``front.fields`` says which fields were written: a note without ``id`` is new)."""

    record: MemoryRecord
    links: list[str]
    front: FrontMatter


def read_note(file: Path, rel: str, *, namespace: str, now: float, max_chars: int,
              default_kind: str | None = None) -> Note:
    """Read one note as the importer does (``rel``: the name its stable id is derived from when
    it has no ``id``). ``default_kind``: the kind of a note with no category outside a category
    folder (else that is an error). Raises ImportFormatError at the offending line."""
    fm = split_front_matter(read_text(file), str(file))
    record, links = _from_front_matter(file, rel, fm, namespace=namespace, now=now,
                                       max_chars=max_chars, default_kind=default_kind)
    return Note(record, links, fm)


def _note(file: Path, rel: str, *, namespace: str, now: float,
          max_chars: int) -> tuple[MemoryRecord, list[str]]:
    note = read_note(file, rel, namespace=namespace, now=now, max_chars=max_chars)
    return note.record, note.links


def _from_front_matter(file: Path, rel: str, fm: FrontMatter, *, namespace: str, now: float,
                       max_chars: int, default_kind: str | None
                       ) -> tuple[MemoryRecord, list[str]]:
    content = fm.body.strip()
    with located(file, line=fm.body_line):
        check_content(content, max_chars)
    at = _locator(file, fm)
    f = fm.fields
    folder = file.parent.name.lower()
    with at("category" if "category" in f else "kind"):
        category = _text(fm.text("category") or fm.text("kind"), "category")
        if (category is None and folder not in KINDS and folder != "knowledge"
                and default_kind is None):
            raise InvalidInputError(
                "no category: give 'category:' in the front matter or put the note in a"
                f" category folder ({', '.join(KINDS)})")
        in_folder = folder if folder in KINDS or folder == "knowledge" else None
        kind = normalize_kind(category or in_folder or default_kind or folder)
    with at("created_at"):
        created = parse_time(f.get("created_at"), "created_at") or epoch_date(file.name) or now
    with at("keywords" if "keywords" in f else "tags"):
        tags = check_tags(_list(f.get("keywords", f.get("tags")), "keywords"))
    record = MemoryRecord(
        id=_text(fm.text("id"), "id") or stable_id("devclaw-md", rel, content),
        content=content, namespace=namespace, kind=kind, tags=tags,
        created_at=created, updated_at=created,
        decay_rate=KINDS[kind].decay_rate,
    )
    record = _restore(record, fm, at)
    with at("links"):
        links = _list(f.get("links"), "links")
    return record, links


def _locator(file: Path, fm: FrontMatter) -> Callable[[str], AbstractContextManager[None]]:
    return lambda key: located(file, line=fm.lines.get(key, 1))


def _restore(record: MemoryRecord, fm: FrontMatter,
             at: Callable[[str], AbstractContextManager[None]]) -> MemoryRecord:
    """The optional fields (written by clawmemory's export and mirror) and unknown keys."""
    f = fm.fields
    changes: dict[str, Any] = {}
    for name in ("key", "source", "source_role", "session_id", "supersedes"):
        with at(name):
            changes[name] = _text(fm.text(name), name)
    with at("key"):
        changes["key"] = check_key(changes["key"], 512)
    for name in ("event_time", "valid_until", "updated_at"):
        with at(name):
            changes[name] = parse_time(f.get(name), name)
    changes["updated_at"] = changes["updated_at"] or record.created_at
    with at("score"):
        if f.get("score") is not None:
            changes["score"] = int(number(f["score"], "score", lower=-_MAX_INT, upper=_MAX_INT))
    for name, upper in (("confidence", 1.0), ("decay_rate", float("inf"))):
        with at(name):
            if f.get(name) is not None:
                changes[name] = number(f[name], name, upper=upper)
    with at("source_ids"):
        changes["source_ids"] = tuple(_list(f.get("source_ids"), "source_ids"))
    with at("metadata"):
        meta = f.get("metadata")
        if meta is not None and not isinstance(meta, dict):
            raise InvalidInputError("metadata must be a JSON object")
        extra = {k: v for k, v in f.items() if k not in _FIELDS and v is not None}
        changes["metadata"] = check_metadata({**extra, **(meta or {})})
    return record.evolve(**changes)


def _text(value: Value, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value or None
    raise InvalidInputError(f"{what} must be text, not a {type(value).__name__}")


def _list(value: Value, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):  # "a, b" — 003-style comma lists are common by hand
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list):
        if not all(isinstance(v, str | int | float) for v in value):
            raise InvalidInputError(f"{what} must be a list of text")
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    raise InvalidInputError(f"{what} must be a list")


# --- the SQLite store ----------------------------------------------------------------------------
def read_devclaw_db(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read DevClaw's SQLite ``memories`` table (id, category, content, keywords JSON,
    created_at, metadata JSON); ids are kept, embeddings are dropped (recomputed here)."""
    parsed = ParsedSnapshot()
    with SQLiteSource(Path(path)) as db:
        cols = db.columns("memories", ("id", "category", "content"))
        total = db.count("memories")
        wanted = [c for c in ("id", "category", "content", "keywords", "created_at", "metadata")
                  if c in cols]
        sql = f"SELECT {', '.join(wanted)} FROM memories ORDER BY rowid"
        for n, row in enumerate(db.rows(sql), 1):
            with located(path, row=partial(row_label, "memories", n, row["id"])):
                parsed.records.append(_db_record(row, namespace, now, max_chars))
            tick(progress, n, total)
    return parsed


def _db_record(row: dict[str, Any], namespace: str, now: float, max_chars: int) -> MemoryRecord:
    rid = text(row["id"], "id")
    if not rid:
        raise InvalidInputError("id is empty")
    kind = normalize_kind(text(row["category"], "category") or "fact")
    created = parse_time(row.get("created_at"), "created_at") or now
    return MemoryRecord(
        id=rid,
        content=check_content(text(row["content"], "content"), max_chars),
        namespace=namespace,
        kind=kind,
        tags=check_tags(json_list(text(row.get("keywords"), "keywords"), "keywords",
                                  commas=True)),
        metadata=check_metadata(json_object(text(row.get("metadata"), "metadata"), "metadata")),
        created_at=created,
        updated_at=created,
        decay_rate=KINDS[kind].decay_rate,
    )

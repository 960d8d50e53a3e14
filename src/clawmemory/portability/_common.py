"""Helpers every importer shares: stable ids, located errors, lenient times, text decoding and
read-only SQLite access.

Importers validate a whole source before returning, so every problem must surface here as an
``ImportFormatError`` that names the file and the line (text formats) or the table row (SQLite).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from clawmemory.errors import ClawMemoryError, ImportFormatError, InvalidInputError
from clawmemory.snapshot import Skip
from clawmemory.validation import check_time

__all__ = [
    "Progress",
    "SQLiteSource",
    "decode_text",
    "epoch_date",
    "iso",
    "json_list",
    "json_object",
    "load_json",
    "located",
    "markdown_files",
    "number",
    "parse_time",
    "read_text",
    "row_label",
    "skip_for",
    "stable_id",
    "text",
    "tick",
]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called as an importer works through its source."""

# Go's time.Time.String(): "2024-01-15 10:30:00.123456789 +0000 UTC m=+0.000001" (sclaw, Go).
_GO_TIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?)\s*([+-]\d{2}:?\d{2})?"
    r"(?:\s+[A-Z]{2,5})?(?:\s+m=[+-][\d.]+)?$"
)
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_SHADOW = re.compile(r"_(?:data|idx|content|docsize|config|info|chunks|rowids|"
                     r"vector_chunks\d+|metadatachunks\d+|metadatatext\d+|auxiliary)$")


def stable_id(*parts: object) -> str:
    """A 16-hex id derived from what identifies a source item, so importing the same source
    twice yields the same ids and the second import skips everything."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8"))
    return digest.hexdigest()[:16]


def tick(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


@contextmanager
def located(path: Path | str, *, line: int | None = None,
            row: str | Callable[[], str] | None = None) -> Iterator[None]:
    """Turn a validation failure inside the block into an ImportFormatError at this place.
    ``row`` prefixes the message for sources without lines (``"table facts, row 3 (id 'x')"``);
    a callable is only called on failure (labels cost time on a million rows)."""
    try:
        yield
    except ImportFormatError:
        raise
    except (ClawMemoryError, ValueError) as exc:  # ValueError: json, int(), float() on bad data
        label = row() if callable(row) else row
        prefix = f"{label}: " if label else ""
        raise ImportFormatError(prefix + str(exc), path=str(path), line=line) from exc


def skip_for(exc: ImportFormatError) -> Skip:
    """A file that could not be read, as a skipped item: its reason and its place."""
    where = exc.path or ""
    if exc.line is not None:
        where += f":{exc.line}"
    return Skip(exc.reason, where)


def read_text(path: Path) -> str:
    """A source file as text. Not UTF-8 is an error at the line of the first bad byte: guessing
    an encoding would import mojibake that nobody notices until recall misses."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ImportFormatError(f"cannot read: {exc.strerror or exc}", path=str(path)) from exc
    return decode_text(data, path)


def load_json(path: Path, *, member: str | None = None) -> tuple[Any, Path]:
    """A JSON file, or with ``member`` the file of that name inside a folder or a ``.zip``
    (chat exports arrive as a zip holding ``conversations.json``), and the file it came from
    (for naming places). Errors name the file and the line."""
    source = path
    if member is not None and path.is_dir() and (path / member).is_file():
        source = path / member
    elif member is not None and path.is_file() and zipfile.is_zipfile(path):
        return _load_zip_member(path, member), path
    if source.is_dir():
        raise ImportFormatError(f"no {member} in this folder" if member
                                else "cannot read: is a directory (expected a .json file)",
                                path=str(source))
    return _parse_json(read_text(source), str(source)), source


def _load_zip_member(path: Path, member: str) -> Any:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] == member]
            if not names:
                raise ImportFormatError(f"no {member} in this zip archive", path=str(path))
            name = min(names, key=len)  # the top-most one
            data = archive.read(name)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ImportFormatError(f"cannot read the zip archive: {exc}", path=str(path)) from exc
    label = f"{path}!{name}"
    return _parse_json(decode_text(data, label), label)


def _parse_json(text: str, label: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"not valid JSON: {exc.msg}", path=label,
                                line=exc.lineno) from exc
    except RecursionError as exc:  # "[[[[..." deeper than the decoder's stack
        raise ImportFormatError("JSON nested too deeply", path=label) from exc


def decode_text(data: bytes, path: Path | str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFormatError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            path=str(path),
            line=line,
        ) from exc
    return text.removeprefix("\ufeff")  # a BOM is not content


def parse_time(value: Any, what: str) -> float | None:
    """Epoch seconds from the many ways the source formats write a time: Unix seconds (or
    milliseconds / nanoseconds, told apart by magnitude), ISO-8601, a bare date, or Go's
    ``time.Time`` string. None and "" stay None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="strict")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _epoch(float(value), what)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+(\.\d+)?", text):
            return _epoch(float(text), what)
        if m := _GO_TIME.match(text):
            text = m.group(1) + (m.group(2) or "+00:00")
    return check_time(value if not isinstance(value, str) else text, what)


def _epoch(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise InvalidInputError(f"{what} must be finite")
    # Seconds until the year 5138 are < 1e11; sources in ms or ns are far larger.
    for scale in (1.0, 1e3, 1e6, 1e9):
        if abs(value / scale) < 1e11:
            return value / scale
    raise InvalidInputError(f"{what}: {value!r} is not a plausible time")


def epoch_date(name: str) -> float | None:
    """Midnight UTC of a ``YYYY-MM-DD`` prefix of a file name, if it has a valid one."""
    m = _DATE.match(name)
    if not m:
        return None
    try:
        day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC)
    except ValueError:
        return None
    return day.timestamp()


def iso(ts: float) -> str:
    """A time as the front matter writes it: ISO-8601 UTC with a Z, whole seconds when exact."""
    dt = datetime.fromtimestamp(ts, UTC)
    spec = "seconds" if dt.microsecond == 0 else "microseconds"
    return dt.isoformat(timespec=spec).replace("+00:00", "Z")


def number(value: Any, what: str, *, lower: float = 0.0, upper: float = math.inf) -> float:
    """A finite number within [lower, upper] (text digits accepted: SQLite and YAML hand them
    over as text). Checked here because a bad number would otherwise fail later, in the store."""
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InvalidInputError(f"{what} must be a number, not {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInputError(f"{what} must be a finite number, not {value!r}")
    if not lower <= value <= upper:
        raise InvalidInputError(f"{what} must be between {lower:g} and {upper:g}, not {value!r}")
    return float(value)


def json_list(value: Any, what: str, *, commas: bool = False) -> list[str]:
    """A JSON array of strings (NULL or "" = empty). With ``commas``, a plain comma-separated
    string is accepted too (003 and 001 tags are sometimes stored that way)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a JSON array, not {type(value).__name__}")
    text = value.strip()
    if commas and not text.startswith("["):
        return [t.strip() for t in text.split(",") if t.strip()]
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{what} is not valid JSON: {exc.msg}") from exc
    if not isinstance(parsed, list):
        raise InvalidInputError(f"{what} must be a JSON array, not {type(parsed).__name__}")
    return [v if isinstance(v, str) else json.dumps(v) for v in parsed]


def json_object(value: Any, what: str) -> dict[str, Any]:
    """A JSON object (NULL or "" = empty)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return {}
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a JSON object, not {type(value).__name__}")
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{what} is not valid JSON: {exc.msg}") from exc
    if not isinstance(parsed, dict):
        raise InvalidInputError(f"{what} must be a JSON object, not {type(parsed).__name__}")
    return parsed


class SQLiteSource:
    """A foreign SQLite file opened read-only (``mode=ro``): importing must never change the
    source, not even by replaying its WAL into the main file. Text columns are fetched as bytes
    and decoded per row, so a non-UTF-8 value is reported with its table and row."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "does not exist"
            raise ImportFormatError(f"cannot open: {what}", path=str(path))
        uri = f"file:{quote(str(path.resolve()))}?mode=ro"
        try:
            self.conn = sqlite3.connect(uri, uri=True)
            self.conn.text_factory = bytes
            self.tables = {
                self._text(r[0]) for r in self.conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
            }
        except sqlite3.Error as exc:
            raise ImportFormatError(f"not a readable SQLite database: {exc}",
                                    path=str(path)) from exc

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> SQLiteSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def _text(value: Any) -> str:
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)

    def columns(self, table: str, required: Sequence[str]) -> set[str]:
        """The columns of ``table``; a missing table or required column is a schema error."""
        if table not in self.tables:
            # FTS5 keeps shadow tables (x_data, x_idx, ...); naming them only adds noise
            shown = sorted(t for t in self.tables if not t.startswith("sqlite_") and (
                not _SHADOW.search(t) or _SHADOW.sub("", t) not in self.tables))
            raise ImportFormatError(
                f"no table {table!r}: not the expected schema (tables: "
                f"{', '.join(shown) or 'none'})", path=str(self.path))
        cols = {self._text(r[1]) for r in self.query(f'PRAGMA table_info("{table}")', ())}
        missing = [c for c in required if c not in cols]
        if missing:
            raise ImportFormatError(
                f"table {table!r} has no column {', '.join(map(repr, missing))}:"
                " not the expected schema", path=str(self.path))
        return cols

    def count(self, table: str) -> int:
        return int(self.query(f'SELECT COUNT(*) FROM "{table}"', ())[0][0])

    def rows(self, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        """Each row as a dict of column name to value; text is still bytes (see ``text``)."""
        try:
            cursor = self.conn.execute(sql, params)
            names = [d[0] for d in cursor.description]
            for row in cursor:
                yield dict(zip(names, row, strict=True))
        except sqlite3.Error as exc:
            raise ImportFormatError(f"cannot read: {exc}", path=str(self.path)) from exc

    def query(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise ImportFormatError(f"cannot read: {exc}", path=str(self.path)) from exc


def text(value: Any, column: str) -> str | None:
    """A TEXT value fetched as bytes, decoded strictly (None stays None, numbers become text)."""
    if value is None:
        return None
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                f"column {column} is not UTF-8 text (byte 0x{value[exc.start]:02x}"
                f" at offset {exc.start})") from exc
    return str(value)


def row_label(table: str, number: int, row_id: Any) -> str:
    """How an error names a row: ``table facts, row 3 (id 'f-1')`` (1-based, in rowid order)."""
    if isinstance(row_id, bytes):
        row_id = row_id.decode("utf-8", "replace")
    shown = "" if row_id is None else f" (id {row_id!r})"
    return f"table {table}, row {number}{shown}"


def markdown_files(root: Path, what: str, *, strict: bool = True) -> list[Path]:
    """``root`` itself when it is a file, else every ``*.md`` below it (hidden ones skipped),
    sorted so ids, errors and progress are the same on every run. ``strict``: a dangling link
    or a directory named ``*.md`` is an error here (else the reader reports it as unreadable)."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise ImportFormatError("cannot read: no such file or directory", path=str(root))
    files = sorted(
        p for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for p in files:
        if strict and not p.is_file():  # say so, do not skip it silently
            raise ImportFormatError("cannot read: not a regular file", path=str(p))
    if not files:
        raise ImportFormatError(f"no Markdown (.md) files found (expected {what})",
                                path=str(root))
    return files

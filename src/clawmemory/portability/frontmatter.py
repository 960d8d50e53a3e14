"""The YAML front matter of 002 Markdown notes: the small subset DevClaw writes, read strictly.

A full YAML parser is not a dependency, and the notes only ever hold flat ``key: value`` pairs::

    ---
    category: fact
    created_at: 2024-01-15T10:30:00Z
    keywords: [api, authentication, stripe]
    ---

Accepted values: plain scalars, single- or double-quoted strings, flow lists (``[a, "b c"]``),
block lists (``- item`` lines under an empty ``key:``), JSON objects (``{"a": 1}``), and
``null``/``~``/empty for nothing. Plain scalars stay text (``id: 0123`` is the string ``0123``);
the reader converts the fields it knows. Anything else is an error at its line, never a guess.
The writer emits only this subset, always valid YAML, so DevClaw (or any YAML tool) reads it too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from clawmemory.errors import ImportFormatError

__all__ = ["FrontMatter", "dump_front_matter", "split_front_matter"]

_KEY_LINE = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?:\s+(.*))?$")
_ITEM_LINE = re.compile(r"^\s*-(?:\s+(.*))?$")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
# Plain strings YAML would read as something else (booleans, null, numbers) must be quoted.
_YAML_SPECIAL = re.compile(
    r"^(?:~|null|true|false|yes|no|on|off|y|n|[-+]?(?:\d[\d_]*)?\.?\d+(?:e[-+]?\d+)?|\.inf|\.nan"
    r"|0x[\da-f_]+|0o?[0-7_]+|\d{4}-\d\d?-\d\d?(?:[Tt ].*)?)$",
    re.IGNORECASE,
)
_COMMENT = re.compile(r"(?<!\s)\s+#.*$")
_PLAIN = re.compile(r"^[\w][\w\-./@+]*(?: [\w\-./@+]+)*$")
_PLAIN_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")

Value = str | list[str] | dict[str, Any] | None


@dataclass
class FrontMatter:
    """The parsed header of a note: ``fields`` by name, the 1-based ``lines`` they came from,
    and the ``body`` after the closing ``---`` starting at line ``body_line``."""

    fields: dict[str, Value] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    body: str = ""
    body_line: int = 1
    present: bool = False  # the note had a front matter block at all


def split_front_matter(text: str, path: str) -> FrontMatter:
    """Separate and parse the front matter; raise ImportFormatError at the offending line."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return FrontMatter(body=text, body_line=1)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        raise ImportFormatError("front matter is not closed: no second '---' line", path=path,
                                line=1)
    fm = FrontMatter(body="\n".join(lines[end + 1:]), body_line=end + 2, present=True)
    current: str | None = None  # the key a block list belongs to
    with_items: set[str] = set()
    for index in range(1, end):
        number, line = index + 1, lines[index]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM_LINE.match(line)
        if item and current is not None:
            items = fm.fields[current]
            assert isinstance(items, list)
            items.append(_item(item.group(1) or "", path, number))
            with_items.add(current)
            continue
        current = None
        m = _KEY_LINE.match(line)
        if m is None:
            raise ImportFormatError(f"front matter: expected 'key: value', got {line.strip()!r}",
                                    path=path, line=number)
        key, raw = m.group(1), (m.group(2) or "").strip()
        if key in fm.fields:
            raise ImportFormatError(f"front matter: {key!r} is given twice", path=path,
                                    line=number)
        fm.lines[key] = number
        if raw == "":
            fm.fields[key] = []  # a block list may follow; an empty one means nothing
            current = key
        else:
            fm.fields[key] = _value(raw, path, number)
    for key, value in fm.fields.items():
        if value == [] and key not in with_items:
            fm.fields[key] = None  # ``key:`` with nothing after it
    return fm


def _value(raw: str, path: str, line: int) -> Value:
    if raw.startswith("["):
        return _flow_list(raw, path, line)
    if raw.startswith("{"):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"front matter: not a valid JSON object ({exc.msg})",
                                    path=path, line=line) from exc
        if not isinstance(parsed, dict):
            raise ImportFormatError("front matter: expected an object", path=path, line=line)
        return parsed
    return _scalar(raw, path, line)


def _scalar(raw: str, path: str, line: int) -> str | None:
    raw = raw.strip()
    if raw.startswith('"'):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ImportFormatError(f"front matter: bad double-quoted string ({exc.msg})",
                                    path=path, line=line) from exc
        if not isinstance(value, str):
            raise ImportFormatError("front matter: bad double-quoted string", path=path,
                                    line=line)
        return value
    if raw.startswith("'"):
        if len(raw) < 2 or not raw.endswith("'") or "'" in raw[1:-1].replace("''", ""):
            raise ImportFormatError("front matter: bad single-quoted string", path=path,
                                    line=line)
        return raw[1:-1].replace("''", "'")
    if raw.startswith(("|", ">", "&", "*", "!", "%", "@", "`")):
        raise ImportFormatError(f"front matter: unsupported YAML syntax {raw[:10]!r}",
                                path=path, line=line)
    # A YAML comment needs a space before the '#'. The look-behind starts the blank run only at
    # its first character: without it a long run of blanks is rescanned from each of them.
    plain = _COMMENT.sub("", raw)
    return None if plain in _NULLS else plain


def _item(raw: str, path: str, line: int) -> str:
    value = _scalar(raw, path, line)
    if value is None:
        raise ImportFormatError("front matter: empty list item", path=path, line=line)
    return value


def _flow_list(raw: str, path: str, line: int) -> list[str]:
    if not raw.endswith("]"):
        raise ImportFormatError("front matter: list is not closed with ']'", path=path,
                                line=line)
    try:  # the writer's form for items that need quoting: a JSON array
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = None
    if isinstance(parsed, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in parsed]
    items, buf, quote = [], "", ""
    for ch in raw[1:-1]:
        if quote:
            buf += ch
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            buf += ch
            quote = ch
        elif ch == ",":
            items.append(buf)
            buf = ""
        elif ch in "[]{}":
            raise ImportFormatError("front matter: nested lists are not supported", path=path,
                                    line=line)
        else:
            buf += ch
    if quote:
        raise ImportFormatError("front matter: unclosed quote in list", path=path, line=line)
    items.append(buf)
    out = [_scalar(i, path, line) for i in items]
    return [v for v in out if v is not None]


# --- writing -------------------------------------------------------------------------------------
def dump_front_matter(fields: Mapping[str, Any]) -> str:
    """``---`` + one ``key: value`` line per field (None values left out) + ``---``."""
    lines = ["---"]
    for key, value in fields.items():
        if value is not None:
            lines.append(f"{key}: {_dump(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def _dump(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, Mapping):
        return json.dumps(dict(value), ensure_ascii=False, sort_keys=True)
    if isinstance(value, list | tuple):
        items = [str(v) for v in value]
        if all(_plain(i) for i in items):
            return "[" + ", ".join(items) + "]"
        return json.dumps(items, ensure_ascii=False)
    text = str(value)
    return text if _plain(text) or _PLAIN_TIME.match(text) else json.dumps(text,
                                                                            ensure_ascii=False)


def _plain(text: str) -> bool:
    return bool(_PLAIN.match(text)) and not _YAML_SPECIAL.match(text) and ": " not in text

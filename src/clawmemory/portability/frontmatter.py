"""The YAML front matter of 002 Markdown notes: read with PyYAML, written as a stable subset.

::

    ---
    category: fact
    created_at: 2024-01-15T10:30:00Z
    keywords: [api, authentication, stripe]
    ---

Reading is PyYAML's safe loader (no tags that build objects), so any valid YAML header is
accepted: block scalars (``|``, ``>``), flow and block lists and mappings, anchors, comments.
Two departures from plain ``yaml.safe_load``, both so nothing is guessed on the user's behalf:
timestamps stay text (the importer parses the times it knows, and metadata must stay JSON),
and the raw text of every plain scalar is kept, so a text field reads ``id: 0123`` as the
string ``0123``, not the octal number 83. A duplicate key is an error (YAML would silently keep
the last one); every error names its line in the note.

Writing emits one ``key: value`` line per field in a small subset (plain or JSON-quoted
scalars, flow lists, JSON objects) that is always valid YAML, so DevClaw (or any YAML tool)
reads it, and stays byte-for-byte stable across versions.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clawmemory.errors import ImportFormatError

if TYPE_CHECKING:
    import yaml

__all__ = ["FrontMatter", "dump_front_matter", "split_front_matter"]

# Plain strings YAML would read as something else (booleans, null, numbers) must be quoted.
_YAML_SPECIAL = re.compile(
    r"^(?:~|null|true|false|yes|no|on|off|y|n|[-+]?(?:\d[\d_]*)?\.?\d+(?:e[-+]?\d+)?|\.inf|\.nan"
    r"|0x[\da-f_]+|0o?[0-7_]+|\d{4}-\d\d?-\d\d?(?:[Tt ].*)?)$",
    re.IGNORECASE,
)
_PLAIN = re.compile(r"^[\w][\w\-./@+]*(?: [\w\-./@+]+)*$")
_PLAIN_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")
_TIMESTAMP = "tag:yaml.org,2002:timestamp"

Value = Any  # what YAML gave: str, int, float, bool, None, list or dict (JSON data)


@dataclass
class FrontMatter:
    """The parsed header of a note: ``fields`` by name, the 1-based ``lines`` they came from,
    ``raw`` (the source text of each value YAML read as a number or boolean), and the
    ``body`` after the closing ``---`` starting at line ``body_line``."""

    fields: dict[str, Value] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)
    body: str = ""
    body_line: int = 1
    present: bool = False  # the note had a front matter block at all

    def text(self, key: str) -> Value:
        """The field as text where it was written as a plain scalar (``0123``, ``true``),
        else the value YAML gave."""
        return self.raw.get(key, self.fields.get(key))


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
    _parse("\n".join(lines[1:end]), fm, path)
    return fm


@functools.cache
def _loader() -> type[yaml.SafeLoader]:
    """PyYAML's safe loader without the timestamp resolver (built once, on first use)."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != _TIMESTAMP]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return Loader


def _parse(header: str, fm: FrontMatter, path: str) -> None:
    import yaml

    loader = _loader()(header)
    try:
        root = loader.get_single_node()
        if root is None:
            return
        if not isinstance(root, yaml.MappingNode):
            raise ImportFormatError("front matter: expected 'key: value' lines",
                                    path=path, line=root.start_mark.line + 2)
        for key_node, value_node in root.value:
            line = key_node.start_mark.line + 2  # the header starts on the note's line 2
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                raise ImportFormatError(f"front matter: a key must be text, not {key!r}",
                                        path=path, line=line)
            if key in fm.fields:
                raise ImportFormatError(f"front matter: {key!r} is given twice", path=path,
                                        line=line)
            value = loader.construct_object(value_node, deep=True)
            if not _json_like(value):
                raise ImportFormatError(f"front matter: {key!r} holds a value that is not"
                                        " plain data", path=path, line=line)
            fm.fields[key], fm.lines[key] = value, line
            if isinstance(value, int | float) and isinstance(value_node, yaml.ScalarNode):
                fm.raw[key] = value_node.value  # 0123, 1e3, true: the text as written
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        what = exc.problem or exc.context or "not valid YAML"
        raise ImportFormatError(f"front matter: {what}", path=path,
                                line=mark.line + 2 if mark else 1) from exc
    except yaml.YAMLError as exc:
        raise ImportFormatError(f"front matter: not valid YAML ({exc})", path=path,
                                line=1) from exc
    finally:
        loader.dispose()


def _json_like(value: Any) -> bool:
    """Only what JSON can hold (explicit tags such as ``!!binary`` or ``!!set`` build bytes
    and sets, which no memory field can keep). Iterative: YAML nests as deep as it likes."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif item is not None and not isinstance(item, str | int | float | bool):
            return False
    return True


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

"""Input checks shared by every entry point, so the CLI, tools and API refuse the same things."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from clawmemory.errors import InvalidInputError

__all__ = [
    "check_content",
    "check_key",
    "check_label",
    "check_labels",
    "check_limit",
    "check_metadata",
    "check_namespace",
    "check_tags",
    "check_time",
]


def _check_text(value: str, what: str) -> None:
    """Text every backend can store: no NUL, valid Unicode."""
    if "\x00" in value:
        raise InvalidInputError(f"{what} contains a NUL byte")
    # A lone surrogate (e.g. from JSON "\\ud800") cannot be written as UTF-8: SQLite and the
    # JSON file would fail later with a driver error, after the in-RAM backends accepted it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} is not valid Unicode ({exc.reason})") from exc


def check_content(content: Any, max_chars: int) -> str:
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be text, not {type(content).__name__}")
    _check_text(content, "content")
    if not content.strip():
        raise InvalidInputError("content is empty")
    if len(content) > max_chars:
        raise InvalidInputError(
            f"content is {len(content):,} characters; the limit is {max_chars:,}"
            " (storage.max_content_chars). Store discrete memories, not documents."
        )
    return content


def check_key(key: Any, max_chars: int) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str):
        raise InvalidInputError(f"key must be text, not {type(key).__name__}")
    _check_text(key, "key")
    stripped: str = key.strip()
    if not stripped:
        raise InvalidInputError("key is empty")
    if len(stripped) > max_chars:
        raise InvalidInputError(f"key is longer than {max_chars} characters")
    return stripped


def check_label(value: Any, what: str, max_chars: int = 512) -> str | None:
    """An optional short text field (session id, source, role): text or None, never empty."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, not {type(value).__name__}")
    _check_text(value, what)
    text = value.strip()
    if len(text) > max_chars:
        raise InvalidInputError(f"{what} is longer than {max_chars} characters")
    return text or None


def check_labels(values: Any, what: str) -> tuple[str, ...]:
    if values is None:
        return ()
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidInputError(f"{what} must be a list of text")
    return tuple(v for v in (check_label(x, what) for x in values) if v is not None)


def check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not namespace.strip():
        raise InvalidInputError("namespace must be non-empty text")
    _check_text(namespace, "namespace")
    if len(namespace) > 256:
        raise InvalidInputError("namespace is longer than 256 characters")
    return namespace.strip()


def check_tags(tags: Iterable[Any] | str | None) -> tuple[str, ...]:
    """Tags as a tuple of distinct, stripped strings; a comma-separated string is accepted (003)."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = tags.split(",")
    elif not isinstance(tags, Iterable) or isinstance(tags, Mapping):
        raise InvalidInputError(f"tags must be a list of text, not {type(tags).__name__}")
    out: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str):
            raise InvalidInputError(f"tags must be text, got {type(tag).__name__}")
        _check_text(tag, "tag")
        if stripped := tag.strip():
            out[stripped] = None
    return tuple(out)


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata must be an object of key/value pairs")
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from exc
    _check_text(text, "metadata")
    if any(not isinstance(k, str) for k in metadata):
        raise InvalidInputError("metadata keys must be text")
    result: dict[str, Any] = json.loads(text)
    # json.dumps escapes NUL as \u0000, so the text check above cannot see it: look inside.
    if any("\x00" in s for s in _strings(result)):
        raise InvalidInputError("metadata contains a NUL byte")
    return result


def _strings(value: Any) -> Iterator[str]:
    """Every key and string value inside decoded JSON."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def check_limit(limit: Any, *, maximum: int = 1000, name: str = "limit") -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"{name} must be a positive integer")
    return min(limit, maximum)


def check_time(value: Any, what: str) -> float | None:
    """Epoch seconds from a number, an ISO-8601 string, or a datetime; None stays None."""
    from datetime import UTC, datetime

    if value is None:
        return None
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return dt.timestamp()
    if isinstance(value, bool):
        raise InvalidInputError(f"{what} must be a time")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{what} must be finite")
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise InvalidInputError(f"{what}: cannot read {value!r} as an ISO-8601 time") from exc
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    raise InvalidInputError(f"{what} must be a time, not {type(value).__name__}")

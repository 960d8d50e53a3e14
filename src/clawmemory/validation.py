"""Input checks shared by every entry point, so the CLI, tools and API refuse the same things.

Each check raises ``InvalidInputError`` naming the argument and what it accepts, before anything
is parsed, searched or written. The bounds below are technical limits of the API (not tuning
knobs); the tunable ones (content, key, query and metadata sizes) are settings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from clawmemory.errors import InvalidInputError
from clawmemory.model import Filter

__all__ = [
    "MAX_OFFSET",
    "MAX_REF_CHARS",
    "MAX_STRENGTH",
    "MAX_WEIGHT",
    "check_content",
    "check_filter",
    "check_flag",
    "check_key",
    "check_label",
    "check_labels",
    "check_limit",
    "check_metadata",
    "check_namespace",
    "check_offset",
    "check_provenance_id",
    "check_query",
    "check_ref",
    "check_store_items",
    "check_strength",
    "check_tags",
    "check_text",
    "check_time",
    "check_weight",
]

# Pagination beyond this is a mistake: no store holds a billion memories per namespace, and
# SQLite's 64-bit integers would overflow not far above.
MAX_OFFSET = 1_000_000_000
# Points one reinforce or demote may add or take. A score stays far from where exp(score ×
# score_weight) overflows (|score × weight| > 709) for any realistic number of calls.
MAX_WEIGHT = 100
_MIN_TIME = -62_135_596_800  # 0001-01-01T00:00:00Z
_MAX_TIME = 253_402_300_799  # 9999-12-31T23:59:59Z
MAX_STRENGTH = 1000.0  # one link() call; co-recall grows links by 0.1 at a time
# An id or key given to find a memory: ids are 16 characters, keys storage.max_key_chars
# (512); an imported id may be longer, but never this long.
MAX_REF_CHARS = 4096


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


def check_text(value: str, what: str) -> str:
    """``value`` when every backend can store it (no NUL, valid Unicode)."""
    _check_text(value, what)
    return value


def check_ref(value: Any, what: str = "id or key") -> str:
    """A reference to a memory (its id or key). Integers are accepted as ids (003 ids are
    numbers and agents pass them back as such)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text, not {type(value).__name__}")
    if len(value) > MAX_REF_CHARS:
        raise InvalidInputError(f"{what} is {len(value):,} characters; the limit is "
                                f"{MAX_REF_CHARS:,}")
    _check_text(value, what)
    if not value.strip():
        raise InvalidInputError(f"{what} is empty")
    return value


def check_query(query: Any, max_chars: int) -> str:
    """Recall's query text, refused when longer than ``max_chars`` before any parsing."""
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be text, not {type(query).__name__}")
    if len(query) > max_chars:
        raise InvalidInputError(
            f"query is {len(query):,} characters; the limit is {max_chars:,}"
            " (recall.max_query_chars). Search with a few specific words."
        )
    _check_text(query, "query")
    return query


def check_flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what} must be true or false, not {type(value).__name__}")
    return value


def _integer(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInputError(f"{what} must be an integer from {low:,} to {high:,}")
    return value


def check_offset(offset: Any) -> int:
    return _integer(offset, "offset", 0, MAX_OFFSET)


def check_weight(weight: Any, what: str = "weight") -> int:
    return _integer(weight, what, 0, MAX_WEIGHT)


def check_strength(strength: Any) -> float:
    if (isinstance(strength, bool) or not isinstance(strength, int | float)
            or not math.isfinite(strength) or not 0 < strength <= MAX_STRENGTH):
        raise InvalidInputError(f"strength must be a number greater than 0 and at most "
                                f"{MAX_STRENGTH:,.0f}")
    return float(strength)


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


def check_provenance_id(value: Any, what: str) -> str | None:
    """A ``narrative_id`` or ``task_id`` (ADR 0024): another system's id, kept as text. Text is
    checked as a label; an integer (003 keys them as INTEGER) is kept as its decimal text, so
    ``7`` and ``"7"`` name the same narrative. Anything else is refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{what} must be text or an integer, not {type(value).__name__}")
    return check_label(value, what)


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


def check_metadata(
    metadata: Mapping[str, Any] | None, max_chars: int = 100_000, max_depth: int = 20
) -> dict[str, Any]:
    """Metadata as plain JSON data: at most ``max_depth`` levels of nesting (checked first,
    without recursion) and ``max_chars`` characters of JSON (storage.max_metadata_*)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError("metadata must be an object of key/value pairs")
    if any(not isinstance(k, str) for k in metadata):
        raise InvalidInputError("metadata keys must be text")
    if _depth_over(metadata, max_depth):
        raise InvalidInputError(f"metadata is nested more than {max_depth} levels deep"
                                " (storage.max_metadata_depth)")
    try:
        text = json.dumps(dict(metadata), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from exc
    _check_text(text, "metadata")
    if len(text) > max_chars:
        raise InvalidInputError(f"metadata is {len(text):,} characters of JSON; the limit is "
                                f"{max_chars:,} (storage.max_metadata_chars)")
    result: dict[str, Any] = json.loads(text)
    # json.dumps escapes NUL as \u0000, so the text check above cannot see it: look inside.
    if any("\x00" in s for s in _strings(result)):
        raise InvalidInputError("metadata contains a NUL byte")
    return result


def _depth_over(value: Any, limit: int) -> bool:
    """Whether containers nest more than ``limit`` deep; iterative, so no depth can overflow
    the stack, and it stops at the first container past the limit (a cycle included)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, Mapping) else (
            item if isinstance(item, list | tuple) else ())
        for child in children:
            if isinstance(child, Mapping | list | tuple):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


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
    """A positive integer; values above ``maximum`` are capped to it."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"{name} must be a positive integer (at most {maximum:,} "
                                "results are returned)")
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
        # Years 1 to 9999: what every reader of a stored time (datetime) can represent.
        if not math.isfinite(value) or not _MIN_TIME <= value <= _MAX_TIME:
            raise InvalidInputError(f"{what} must be epoch seconds from {_MIN_TIME:,} to "
                                    f"{_MAX_TIME:,} (years 1 to 9999)")
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
            stamp = (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
        except (ValueError, OverflowError) as exc:
            raise InvalidInputError(f"{what}: cannot read {value[:64]!r} as an ISO-8601 time"
                                    ) from exc
        return check_time(stamp, what)
    raise InvalidInputError(f"{what} must be a time, not {type(value).__name__}")


STORE_FIELDS = frozenset({"content", "key", "kind", "tags", "metadata", "session_id",
                           "narrative_id", "task_id", "event_time", "source", "source_role",
                           "source_ids", "confidence"})


def check_store_items(items: Any) -> Iterable[Mapping[str, Any]]:
    """``store_many``'s items, each checked to be a mapping of ``store()``'s arguments as it
    is read (the iterable may be a generator too long to hold)."""
    if not isinstance(items, Iterable) or isinstance(items, str | bytes | Mapping):
        raise InvalidInputError("items must be an iterable of mappings, one per memory")
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise InvalidInputError(f"item {index} must be a mapping of store() arguments, not "
                                    f"{type(item).__name__}")
        if "content" not in item:
            raise InvalidInputError(f"item {index} has no content")
        if unknown := sorted(str(k) for k in item if k not in STORE_FIELDS):
            raise InvalidInputError(f"item {index}: unknown field {unknown[0]!r} (fields: "
                                    f"{', '.join(sorted(STORE_FIELDS))})")
        yield item


def check_filter(fields: dict[str, Any], max_metadata_chars: int, max_metadata_depth: int
                 ) -> Filter:
    """A recall/list/count filter from caller arguments (``Filter.build``'s names), each
    checked: labels as labels, kinds as text or a list of text, tags, metadata, flags."""
    for name in ("session_id", "exclude_session_id", "source"):
        if name in fields:
            fields[name] = check_label(fields[name], name)
    for name in ("narrative_id", "task_id"):
        if name in fields:
            fields[name] = check_provenance_id(fields[name], name)
    kind = fields.pop("kind", None)
    if kind is not None and not isinstance(kind, str):
        if not isinstance(kind, Iterable) or isinstance(kind, Mapping):
            raise InvalidInputError(f"kind must be text or a list of text, not "
                                    f"{type(kind).__name__}")
        kind = list(kind)
    tags = check_tags(fields.pop("tags", ()))
    metadata = check_metadata(fields.pop("metadata", None), max_metadata_chars,
                              max_metadata_depth)
    flag = check_flag(fields.pop("include_invalid", False), "include_invalid")
    return Filter.build(kind=kind, tags=tags, metadata=metadata, include_invalid=flag, **fields)

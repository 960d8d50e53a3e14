"""LangGraph: clawmemory as a ``BaseStore`` (``langgraph.store.base``), the long-term memory a
graph reads and writes through ``store.put/get/search/delete/list_namespaces``.

    from langgraph.graph import StateGraph
    from clawmemory import Memory
    from clawmemory.adapters.langgraph import ClawMemoryStore

    store = ClawMemoryStore(Memory.open("agent.db"))
    store.put(("users", "u42", "memories"), "tea", {"content": "Takes tea without sugar"})
    store.search(("users", "u42"), query="how does the user take tea?")
    graph = StateGraph(...).compile(store=store)

How the two models meet:

- **Namespaces.** A LangGraph namespace (a tuple of labels, which may not contain ".") is the
  clawmemory namespace of its labels joined by "." (``("users", "u42")`` <-> ``users.u42``), so
  tenants stay isolated as everywhere in clawmemory, and ``list_namespaces`` lists every
  clawmemory namespace of the store (``default`` is ``("default",)``).
- **Items.** ``put(ns, key, value)`` stores (or updates in place) the memory whose key is
  ``key``: its content is the text recall searches — ``value["content"]`` (or ``"text"``,
  ``"memory"``), the fields named by ``index``, else the whole value as JSON — and its metadata
  is the value itself, returned as is by ``get`` and ``search``. A memory stored another way
  (the CLI, MCP, an import) reads as ``{"content", "kind", "tags", "metadata"}``, under its key,
  else its id. ``put(..., None)`` and ``delete`` forget the memory for real.
- **Search.** With a ``query``: clawmemory's recall (keyword, vector and entity lists fused,
  ``score`` = its relevance); without: newest first. ``filter`` matches values exactly or with
  ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``, on the best candidates (up to
  ``FILTER_SCAN`` per namespace).
- Not supported: TTLs (``supports_ttl`` is False, as in LangGraph's own default stores);
  ``index=False`` still indexes (clawmemory indexes every memory).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from clawmemory.adapters._common import missing
from clawmemory.errors import InvalidInputError

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # the extra is not installed
    raise missing("LangGraph", "langgraph", "langgraph") from exc

if TYPE_CHECKING:
    from clawmemory.memory import Memory
    from clawmemory.model import MemoryRecord

__all__ = ["FILTER_SCAN", "SOURCE", "ClawMemoryStore"]

SOURCE = "langgraph"  # provenance of the memories this store writes
FILTER_SCAN = 1000  # candidates read per namespace when a filter narrows the results
_TEXT_FIELDS = ("content", "text", "memory")
_OPS = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
        "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
        "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b}


class ClawMemoryStore(BaseStore):
    """A LangGraph store over one clawmemory database (every namespace of it)."""

    __slots__ = ("mem",)

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    # --- the two methods LangGraph asks of a store -----------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return list(self._search(op))
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise InvalidInputError(f"unknown store operation {type(op).__name__}")

    # --- operations ------------------------------------------------------------------------------
    def _get(self, op: GetOp) -> Item | None:
        view = self.mem.with_namespace(encode(op.namespace))
        record = _by_key(view, op.key)
        return None if record is None else _item(record, op.namespace, Item)

    def _put(self, op: PutOp) -> None:
        view = self.mem.with_namespace(encode(op.namespace))
        if op.value is None:
            record = _by_key(view, op.key)
            if record is not None:
                view.forget(record.id)
            return
        value = dict(op.value)
        view.store(_content(value, op.index), key=op.key, metadata=value, source=SOURCE)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        scored: list[tuple[float | None, MemoryRecord, tuple[str, ...]]] = []
        want = op.offset + op.limit
        scan = FILTER_SCAN if op.filter else want
        for ns in self._namespaces():
            labels = decode(ns)
            if labels[: len(op.namespace_prefix)] != tuple(op.namespace_prefix):
                continue
            view = self.mem.with_namespace(ns)
            if op.query:
                hits = view.recall(op.query, limit=min(max(scan, 1), 1000))
                scored += [(h.score, h.memory, labels) for h in hits]
            else:
                scored += [(None, r, labels) for r in view.list(limit=min(max(scan, 1), 10_000))]
        if op.query:
            scored.sort(key=lambda s: -(s[0] or 0.0))
        else:
            scored.sort(key=lambda s: -s[1].updated_at)
        items = [_item(r, labels, SearchItem, score) for score, r, labels in scored]
        if op.filter:
            items = [i for i in items if _matches(i.value, op.filter)]
        return items[op.offset: want]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found: set[tuple[str, ...]] = set()
        for ns in self._namespaces():
            labels = decode(ns)
            if all(_condition(labels, c) for c in op.match_conditions or ()):
                found.add(labels[: op.max_depth] if op.max_depth is not None else labels)
        return sorted(found)[op.offset: op.offset + op.limit]

    def _namespaces(self) -> list[str]:
        return self.mem.store_backend.namespaces()


def encode(namespace: Iterable[str]) -> str:
    """The clawmemory namespace of a LangGraph namespace (labels never contain ".")."""
    labels = tuple(namespace)
    if not labels or any(not isinstance(x, str) or not x or "." in x for x in labels):
        raise InvalidInputError(f"not a LangGraph namespace: {labels!r}")
    return ".".join(labels)


def decode(namespace: str) -> tuple[str, ...]:
    return tuple(namespace.split("."))


def _by_key(view: Memory, key: str) -> MemoryRecord | None:
    """The memory whose key is ``key`` (else, for memories stored without one, whose id is)."""
    record = view.store_backend.get(view.namespace, key)
    if record is None or (record.key is not None and record.key != key):
        return None
    return record


def _content(value: Mapping[str, Any], index: Any) -> str:
    """The text recall will search for this value."""
    if isinstance(index, list) and index:
        parts = [_path(value, p) for p in index]
        text = "\n".join(p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)
                         for p in parts if p is not None)
        if text.strip():
            return text
    for name in _TEXT_FIELDS:
        if isinstance(value.get(name), str) and value[name].strip():
            return str(value[name])
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _path(value: Any, path: str) -> Any:
    """A dotted path into the value (``"metadata.title"``); None when absent. List paths
    (``"a[*].b"``) are not followed: the whole value is indexed instead."""
    for part in path.split("."):
        if "[" in part or not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _item(record: MemoryRecord, labels: tuple[str, ...], cls: Any,
          score: float | None = None) -> Any:
    if record.source == SOURCE:
        value = dict(record.metadata)
    else:
        value = {"content": record.content, "kind": record.kind, "tags": list(record.tags),
                 "metadata": dict(record.metadata)}
    created = datetime.fromtimestamp(record.created_at, UTC)
    updated = datetime.fromtimestamp(record.updated_at, UTC)
    key = record.key or record.id
    if cls is SearchItem:
        return SearchItem(labels, key, value, created, updated, score)
    return Item(value=value, key=key, namespace=labels, created_at=created, updated_at=updated)


def _matches(value: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    for name, want in flt.items():
        have = value.get(name)
        if isinstance(want, Mapping) and want and all(k in _OPS for k in want):
            try:
                if not all(_OPS[k](have, v) for k, v in want.items()):
                    return False
            except TypeError:  # None or another type compared with <, >: no match
                return False
        elif have != want:
            return False
    return True


def _condition(labels: tuple[str, ...], cond: MatchCondition) -> bool:
    path = tuple(cond.path)
    if len(path) > len(labels):
        return False
    part = labels[: len(path)] if cond.match_type == "prefix" else labels[len(labels) - len(path):]
    return all(p in ("*", x) for p, x in zip(path, part, strict=True))

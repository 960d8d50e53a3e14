"""The memory API as types: ``MemoryAPI`` (sync) and ``AsyncMemoryAPI`` (the same operations as
coroutines), and the value objects of recall's and list's parameters (``TimeRange``,
``RecallQuery``, ``ListQuery``).

Three classes implement the protocols, none inheriting another: the local engine
(``clawmemory.Memory``), the REST client (``client.RemoteMemory``) and the async wrapper
(``client.AsyncMemory``, over either). Code that needs "a memory" types it as ``MemoryAPI``.
A new operation is one method here (and its twin in ``AsyncMemoryAPI``), its implementations
and one REST route; ``tests/core/test_api_parity.py`` fails until all of them exist with the same
parameters.

This module sits in the foundation layer: it imports only model, config and errors.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from types import TracebackType
from typing import Any, ClassVar, Protocol, Self, runtime_checkable

from clawmemory.config import Settings
from clawmemory.errors import InvalidInputError
from clawmemory.model import (
    ArchiveEntry,
    Forgotten,
    Hit,
    ImportReport,
    Kind,
    Link,
    MemoryRecord,
    ParsedImport,
    RunRecord,
)

__all__ = [
    "ALL_JOBS",
    "LIFECYCLE",
    "TIME_FIELDS",
    "UNSET",
    "AsyncMemoryAPI",
    "ListQuery",
    "MemoryAPI",
    "NoteChange",
    "NotesReport",
    "RecallQuery",
    "TimeRange",
    "operations",
]

ALL_JOBS = "all"  # maintain()/preview_maintenance(): every job, in the table's order
UNSET: Any = object()  # update(): "leave this field as it is" (None clears key/event_time)

# The time arguments of recall, list and count (ADR 0017): since/until on when the thing
# happened, created_since/created_until on creation, as_of: what was valid then.
TIME_FIELDS = ("since", "until", "created_since", "created_until", "as_of")

# Members of the protocols that open, close or re-scope a memory rather than operate on it.
LIFECYCLE = frozenset({"with_namespace", "close", "aclose"})


# --- value objects ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NoteChange:
    """One note a sync of the notes folder acted on: its ``path`` (relative to the namespace's
    folder), the memory ``id`` it holds after the sync ("" when none) and ``detail``: the old
    path of a rename, the version a conflict kept, the reason something was skipped."""

    path: str
    id: str = ""
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "id": self.id, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class NotesReport:
    """What a sync of a namespace's notes folder did (ADR 0023): notes that became memories
    (``created``), edits stored as new versions or front-matter changes (``updated``), moves
    followed (``renamed``), deleted notes whose memories were forgotten (``forgotten``), notes
    where both the file and the store had changed (``conflicts``: both versions are in the
    history), notes written from the store (``written``), ``[[wikilinks]]`` turned into links
    or dropped (``linked``, ``unlinked``: ``detail`` is the other memory) and what was left
    untouched, with the reason (``skipped``)."""

    namespace: str
    folder: str
    created: tuple[NoteChange, ...] = ()
    updated: tuple[NoteChange, ...] = ()
    renamed: tuple[NoteChange, ...] = ()
    forgotten: tuple[NoteChange, ...] = ()
    conflicts: tuple[NoteChange, ...] = ()
    written: tuple[NoteChange, ...] = ()
    linked: tuple[NoteChange, ...] = ()
    unlinked: tuple[NoteChange, ...] = ()
    skipped: tuple[NoteChange, ...] = ()

    LISTS: ClassVar[tuple[str, ...]] = ("created", "updated", "renamed", "forgotten",
                                        "conflicts", "written", "linked", "unlinked",
                                        "skipped")

    @property
    def changed(self) -> bool:
        """Whether the sync changed anything (skips change nothing)."""
        return any(getattr(self, name) for name in self.LISTS[:-1])

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) for name in self.LISTS}

    def summary(self) -> str:
        """One line: the counts that are not zero."""
        parts = [f"{n} {name}" for name, n in self.counts().items() if n]
        return f"notes of {self.namespace!r}: " + (", ".join(parts) or "nothing to do")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"namespace": self.namespace, "folder": self.folder,
                               "counts": self.counts()}
        for name in self.LISTS:
            out[name] = [c.to_dict() for c in getattr(self, name)]
        return out


@dataclass(frozen=True, slots=True)
class TimeRange:
    """The time arguments of one call, each None (not given), epoch seconds, a datetime,
    ISO-8601 or an expression ("2 weeks ago"); the engine reads them against its clock."""

    since: Any = None
    until: Any = None
    created_since: Any = None
    created_until: Any = None
    as_of: Any = None

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> TimeRange:
        """The time arguments among ``kwargs`` (other names are ignored)."""
        return cls(**{k: kwargs[k] for k in TIME_FIELDS if k in kwargs})

    def given(self) -> dict[str, Any]:
        """The arguments that are set, by name."""
        return {k: getattr(self, k) for k in TIME_FIELDS if getattr(self, k) is not None}

    def to_json(self) -> dict[str, Any]:
        """The arguments that are set, as JSON carries them: a datetime as ISO-8601 (a server
        reads epoch seconds, ISO-8601 and expressions itself)."""
        return {k: v.isoformat() if hasattr(v, "isoformat") else v
                for k, v in self.given().items()}


def _split(cls: type[Any], op: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``kwargs`` as the fields of ``cls``: the time arguments go into one ``TimeRange``;
    an unknown name is refused as the operation would refuse it."""
    own = {f.name for f in fields(cls)} - {"time"}
    if unknown := sorted(set(kwargs) - own - set(TIME_FIELDS)):
        raise InvalidInputError(f"{op}() got an unknown argument {unknown[0]!r}")
    values = {k: v for k, v in kwargs.items() if k in own}
    return {**values, "time": TimeRange.from_kwargs(kwargs)}


@dataclass(frozen=True, slots=True)
class RecallQuery:
    """The parameters of ``recall`` (one value instead of seventeen arguments)."""

    query: str
    limit: int | None = None
    kind: str | Iterable[str] | None = None
    tags: Iterable[str] = ()
    session_id: str | None = None
    exclude_session_id: str | None = None
    narrative_id: str | int | None = None
    task_id: str | int | None = None
    metadata: Mapping[str, Any] | None = None
    include_invalid: bool = False
    mode: str | None = None
    depth: int = 0
    archive: bool = False
    touch: bool = True
    time: TimeRange = TimeRange()

    OPERATION: ClassVar[str] = "recall"

    @classmethod
    def of(cls, query: str, **kwargs: Any) -> RecallQuery:
        """From ``recall``'s own arguments (``RecallQuery.of("tea", since="yesterday")``)."""
        return cls(query, **_split(cls, cls.OPERATION, kwargs))

    def kwargs(self) -> dict[str, Any]:
        """``recall``'s keyword arguments: ``mem.recall(q.query, **q.kwargs())``."""
        flat = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("query", "time")}
        return {**flat, **{k: getattr(self.time, k) for k in TIME_FIELDS}}


@dataclass(frozen=True, slots=True)
class ListQuery:
    """The parameters of ``list``."""

    kind: str | Iterable[str] | None = None
    tags: Iterable[str] = ()
    session_id: str | None = None
    narrative_id: str | int | None = None
    task_id: str | int | None = None
    metadata: Mapping[str, Any] | None = None
    source: str | None = None
    include_invalid: bool = False
    limit: int = 50
    offset: int = 0
    order: str = "newest"
    time: TimeRange = TimeRange()

    OPERATION: ClassVar[str] = "list"

    @classmethod
    def of(cls, **kwargs: Any) -> ListQuery:
        """From ``list``'s own arguments (``ListQuery.of(kind="fact", until="2024-01-01")``)."""
        return cls(**_split(cls, cls.OPERATION, kwargs))

    def kwargs(self) -> dict[str, Any]:
        """``list``'s keyword arguments: ``mem.list(**q.kwargs())``."""
        flat = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "time"}
        return {**flat, **{k: getattr(self.time, k) for k in TIME_FIELDS}}


# --- the protocols ---------------------------------------------------------------------------
@runtime_checkable
class MemoryAPI(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    """Long-term memory for one namespace: every operation of ``clawmemory.Memory``, with its
    signature. ``Memory.open`` (a constructor) is not part of it."""

    @property
    def namespace(self) -> str: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Callable[[], float]: ...

    # --- service -----------------------------------------------------------------------------
    def warm_up(self) -> str: ...

    def with_namespace(self, namespace: str) -> MemoryAPI: ...

    def close(self) -> None: ...

    def flush(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...

    # --- writing -----------------------------------------------------------------------------
    def store(
        self,
        content: str,
        *,
        key: str | None = None,
        kind: Kind = "fact",
        tags: Iterable[str] | str = (),
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        event_time: Any = None,
        source: str | None = None,
        source_role: str | None = None,
        source_ids: Iterable[str] = (),
        confidence: float = 1.0,
    ) -> str: ...

    def store_many(
        self, items: Iterable[Mapping[str, Any]], *, batch_size: int | None = None
    ) -> builtins.list[str]: ...

    def update(
        self,
        id_or_key: str,
        *,
        content: str | None = None,
        tags: Iterable[str] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        kind: Kind | None = None,
        key: str | None = UNSET,
        event_time: Any = UNSET,
    ) -> MemoryRecord: ...

    def forget(self, id_or_key: str) -> Forgotten: ...

    def derived(self, id_or_key: str) -> builtins.list[MemoryRecord]: ...

    def forget_namespace(self) -> int: ...

    def observe(
        self,
        role: str,
        content: str,
        session_id: str,
        *,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
    ) -> str: ...

    # --- feedback and correction -------------------------------------------------------------
    def reinforce(self, id_or_key: str, weight: int | None = None) -> MemoryRecord: ...

    def demote(self, id_or_key: str, weight: int | None = None) -> MemoryRecord: ...

    def confirm(self, id_or_key: str) -> MemoryRecord: ...

    def correct(
        self,
        id_or_key: str,
        new_content: str,
        *,
        tags: Iterable[str] | str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord: ...

    def history(self, id_or_key: str) -> builtins.list[MemoryRecord]: ...

    # --- reading -----------------------------------------------------------------------------
    def get(self, id_or_key: str) -> MemoryRecord: ...

    def list(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        include_invalid: bool = False,
        limit: int = 50,
        offset: int = 0,
        order: str = "newest",
        since: Any = None,
        until: Any = None,
        created_since: Any = None,
        created_until: Any = None,
        as_of: Any = None,
    ) -> builtins.list[MemoryRecord]: ...

    def count(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        include_invalid: bool = False,
        **filters: Any,
    ) -> int: ...

    def search_by_metadata(
        self, key: str, value: Any, *, limit: int = 100
    ) -> builtins.list[MemoryRecord]: ...

    def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        exclude_session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        metadata: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        mode: str | None = None,
        depth: int = 0,
        archive: bool = False,
        touch: bool = True,
        since: Any = None,
        until: Any = None,
        created_since: Any = None,
        created_until: Any = None,
        as_of: Any = None,
    ) -> builtins.list[Hit]: ...

    def stats(self) -> dict[str, Any]: ...

    # --- graph and entities ------------------------------------------------------------------
    def link(self, a: str, b: str, *, strength: float = 1.0, origin: str = "manual") -> bool: ...

    def unlink(self, a: str, b: str) -> bool: ...

    def neighbors(self, id_or_key: str, limit: int = 10) -> builtins.list[MemoryRecord]: ...

    def links(self, id_or_key: str, *, limit: int = 50) -> builtins.list[Link]: ...

    def entity_info(self, name: str, *, limit: int = 20) -> dict[str, Any]: ...

    def entities_of(self, id_or_key: str) -> builtins.list[dict[str, Any]]: ...

    # --- archive and maintenance -------------------------------------------------------------
    def archived(self, *, limit: int = 50, offset: int = 0) -> builtins.list[ArchiveEntry]: ...

    def restore(self, id_: str) -> MemoryRecord: ...

    def maintain(self, job: str = ALL_JOBS) -> builtins.list[RunRecord]: ...

    def preview_maintenance(self, job: str = ALL_JOBS) -> builtins.list[dict[str, Any]]: ...

    def runs(self, limit: int = 20, *, job: str | None = None) -> builtins.list[RunRecord]: ...

    def repair(self) -> dict[str, int]: ...

    def backfill(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int: ...

    def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int: ...

    # --- portability -------------------------------------------------------------------------
    def sync_notes(
        self, *, progress: Callable[[int, int], None] | None = None
    ) -> NotesReport: ...

    def export_snapshot(self) -> str: ...

    def import_snapshot(
        self, text: str, *, source: str = "<snapshot>", dry_run: bool = False
    ) -> ImportReport: ...

    def import_records(
        self,
        parsed: ParsedImport,
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport: ...


@runtime_checkable
class AsyncMemoryAPI(Protocol):  # pragma: no mutate block (a protocol: stubs, no behaviour)
    """``MemoryAPI`` with ``await``: every operation a coroutine with the same parameters;
    ``with_namespace`` stays a plain call and ``close`` is ``aclose``."""

    @property
    def namespace(self) -> str: ...

    def with_namespace(self, namespace: str) -> AsyncMemoryAPI: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None: ...

    async def warm_up(self) -> str: ...

    async def flush(self) -> None: ...

    async def store(
        self,
        content: str,
        *,
        key: str | None = None,
        kind: Kind = "fact",
        tags: Iterable[str] | str = (),
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        event_time: Any = None,
        source: str | None = None,
        source_role: str | None = None,
        source_ids: Iterable[str] = (),
        confidence: float = 1.0,
    ) -> str: ...

    async def store_many(
        self, items: Iterable[Mapping[str, Any]], *, batch_size: int | None = None
    ) -> builtins.list[str]: ...

    async def update(
        self,
        id_or_key: str,
        *,
        content: str | None = None,
        tags: Iterable[str] | str | None = None,
        metadata: Mapping[str, Any] | None = None,
        kind: Kind | None = None,
        key: str | None = UNSET,
        event_time: Any = UNSET,
    ) -> MemoryRecord: ...

    async def forget(self, id_or_key: str) -> Forgotten: ...

    async def derived(self, id_or_key: str) -> builtins.list[MemoryRecord]: ...

    async def forget_namespace(self) -> int: ...

    async def observe(
        self,
        role: str,
        content: str,
        session_id: str,
        *,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
    ) -> str: ...

    async def reinforce(self, id_or_key: str, weight: int | None = None) -> MemoryRecord: ...

    async def demote(self, id_or_key: str, weight: int | None = None) -> MemoryRecord: ...

    async def confirm(self, id_or_key: str) -> MemoryRecord: ...

    async def correct(
        self,
        id_or_key: str,
        new_content: str,
        *,
        tags: Iterable[str] | str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord: ...

    async def history(self, id_or_key: str) -> builtins.list[MemoryRecord]: ...

    async def get(self, id_or_key: str) -> MemoryRecord: ...

    async def list(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        metadata: Mapping[str, Any] | None = None,
        source: str | None = None,
        include_invalid: bool = False,
        limit: int = 50,
        offset: int = 0,
        order: str = "newest",
        since: Any = None,
        until: Any = None,
        created_since: Any = None,
        created_until: Any = None,
        as_of: Any = None,
    ) -> builtins.list[MemoryRecord]: ...

    async def count(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        include_invalid: bool = False,
        **filters: Any,
    ) -> int: ...

    async def search_by_metadata(
        self, key: str, value: Any, *, limit: int = 100
    ) -> builtins.list[MemoryRecord]: ...

    async def recall(
        self,
        query: str,
        *,
        limit: int | None = None,
        kind: str | Iterable[str] | None = None,
        tags: Iterable[str] = (),
        session_id: str | None = None,
        exclude_session_id: str | None = None,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
        metadata: Mapping[str, Any] | None = None,
        include_invalid: bool = False,
        mode: str | None = None,
        depth: int = 0,
        archive: bool = False,
        touch: bool = True,
        since: Any = None,
        until: Any = None,
        created_since: Any = None,
        created_until: Any = None,
        as_of: Any = None,
    ) -> builtins.list[Hit]: ...

    async def stats(self) -> dict[str, Any]: ...

    async def link(self, a: str, b: str, *, strength: float = 1.0,
                   origin: str = "manual") -> bool: ...

    async def unlink(self, a: str, b: str) -> bool: ...

    async def neighbors(self, id_or_key: str, limit: int = 10) -> builtins.list[MemoryRecord]: ...

    async def links(self, id_or_key: str, *, limit: int = 50) -> builtins.list[Link]: ...

    async def entity_info(self, name: str, *, limit: int = 20) -> dict[str, Any]: ...

    async def entities_of(self, id_or_key: str) -> builtins.list[dict[str, Any]]: ...

    async def archived(self, *, limit: int = 50,
                       offset: int = 0) -> builtins.list[ArchiveEntry]: ...

    async def restore(self, id_: str) -> MemoryRecord: ...

    async def maintain(self, job: str = ALL_JOBS) -> builtins.list[RunRecord]: ...

    async def preview_maintenance(self, job: str = ALL_JOBS) -> builtins.list[dict[str, Any]]: ...

    async def runs(self, limit: int = 20, *,
                   job: str | None = None) -> builtins.list[RunRecord]: ...

    async def repair(self) -> dict[str, int]: ...

    async def backfill(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int: ...

    async def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int: ...

    async def sync_notes(
        self, *, progress: Callable[[int, int], None] | None = None
    ) -> NotesReport: ...

    async def export_snapshot(self) -> str: ...

    async def import_snapshot(
        self, text: str, *, source: str = "<snapshot>", dry_run: bool = False
    ) -> ImportReport: ...

    async def import_records(
        self,
        parsed: ParsedImport,
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport: ...


def operations(protocol: type[Any] = MemoryAPI) -> builtins.list[str]:
    """The operations a protocol declares, in declaration order: its public methods apart from
    the ``LIFECYCLE`` ones (opening, closing and re-scoping a memory)."""
    return [n for n, v in vars(protocol).items()
            if not n.startswith("_") and callable(v) and n not in LIFECYCLE]

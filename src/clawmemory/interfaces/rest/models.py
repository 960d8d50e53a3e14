"""The JSON bodies of the REST API (``/v1``), with the examples ``/openapi.json`` shows.

Request bodies refuse unknown fields (a typo must not be ignored silently); their values are
checked by the engine itself (``clawmemory.validation``), so the REST API accepts exactly what
the Python API accepts and refuses the rest with the same sentence.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "ArchiveList",
    "CorrectIn",
    "Deleted",
    "Explain",
    "Forgot",
    "HitOut",
    "ImportIn",
    "LinkIn",
    "LinkOut",
    "MemoryList",
    "MemoryOut",
    "ObserveIn",
    "Problem",
    "RecallIn",
    "RecallOut",
    "StoreIn",
    "StoreManyIn",
    "Stored",
    "StoredMany",
    "UpdateIn",
    "WeightIn",
]

_MEMORY_EXAMPLE: Any = {
    "id": "3f2a9c0d1e4b5a67", "content": "User prefers dark mode in every editor",
    "namespace": "alice", "key": "ui-theme", "kind": "preference", "tags": ["ui"],
    "metadata": {"app": "vscode"}, "source": "conversation", "source_role": "user",
    "source_ids": [], "session_id": "s-42", "narrative_id": None, "task_id": None,
    "created_at": 1700000000.0, "event_time": None,
    "updated_at": 1700000000.0, "stored_at": 1700000000.0, "last_accessed": 1700000000.0,
    "access_count": 0, "score": 0, "confidence": 1.0, "decay_rate": 0.1, "valid_until": None,
    "supersedes": None,
}


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StoreIn(_In):
    """One memory to store: ``Memory.store``'s arguments."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{
        "content": "User prefers dark mode in every editor", "kind": "preference",
        "tags": ["ui"], "key": "ui-theme", "metadata": {"app": "vscode"}}]})

    content: str
    key: str | None = None
    kind: str = "fact"
    tags: list[str] | str = Field(default_factory=list)
    metadata: dict[str, Any] | None = None
    session_id: str | None = None
    narrative_id: str | int | None = Field(
        None, description="the narrative active when it was created (003); an integer is kept"
        " as its decimal text")
    task_id: str | int | None = Field(
        None, description="the task that produced it (003); an integer is kept as its decimal"
        " text")
    event_time: float | str | None = Field(None, description="epoch seconds or ISO-8601")
    source: str | None = None
    source_role: str | None = None
    source_ids: list[str] = Field(default_factory=list)
    confidence: float = 1.0


class StoreManyIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"items": [
        {"content": "The staging database is reset every Monday", "tags": ["ops"]},
        {"content": "Deploys happen on Tuesdays", "kind": "event"}]}]})

    items: list[StoreIn] = Field(max_length=10_000)


class Stored(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"id": "3f2a9c0d1e4b5a67"}]})

    id: str


class StoredMany(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"ids": ["3f2a9c0d1e4b5a67"]}]})

    ids: list[str]


class MemoryOut(BaseModel):
    """A memory, every field (times are epoch seconds, UTC)."""

    model_config = ConfigDict(json_schema_extra={"examples": [_MEMORY_EXAMPLE]})

    id: str
    content: str
    namespace: str
    key: str | None
    kind: str
    tags: list[str]
    metadata: dict[str, Any]
    source: str | None
    source_role: str | None
    source_ids: list[str]
    session_id: str | None
    narrative_id: str | None = None
    task_id: str | None = None
    created_at: float
    event_time: float | None
    updated_at: float
    stored_at: float
    last_accessed: float | None
    access_count: int
    score: int
    confidence: float
    decay_rate: float
    valid_until: float | None
    supersedes: str | None


class MemoryList(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{
        "memories": [_MEMORY_EXAMPLE], "next_cursor": "eyJvIjo1MH0"}]})

    memories: list[MemoryOut]
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null at"
                                    " the end")


class ArchivedOut(MemoryOut):
    archived_at: float


class ArchiveList(BaseModel):
    memories: list[ArchivedOut]
    next_cursor: str | None


class UpdateIn(_In):
    """Fields to change in place; omitted fields stay as they are."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"content": "User prefers dark mode, except in the terminal", "tags": ["ui"]}]})

    content: str | None = None
    tags: list[str] | str | None = None
    metadata: dict[str, Any] | None = None
    kind: str | None = None
    key: str | None = None
    event_time: float | str | None = None


class CorrectIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"content": "HMAC covers the raw body, even when empty", "reason": "API v2"}]})

    content: str
    tags: list[str] | str | None = None
    reason: str | None = None


class WeightIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"weight": 3}]})

    weight: int | None = None


class RecallIn(_In):
    """``Memory.recall``'s arguments."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"query": "which editor theme does the user like", "limit": 5, "mode": "hybrid"},
        {"query": "deploy", "mode": "keyword", "kind": ["event"], "tags": ["ops"]}]})

    query: str
    limit: int | None = None
    mode: Literal["auto", "keyword", "vector", "hybrid"] | None = None
    kind: list[str] | str | None = None
    tags: list[str] = Field(default_factory=list)
    session_id: str | None = None
    exclude_session_id: str | None = None
    narrative_id: str | int | None = None
    task_id: str | int | None = None
    metadata: dict[str, Any] | None = None
    include_invalid: bool = False
    depth: int = 0
    archive: bool = False
    touch: bool = True
    since: float | str | None = None
    until: float | str | None = None
    created_since: float | str | None = None
    created_until: float | str | None = None
    as_of: float | str | None = None


class Explain(BaseModel):
    """Why a memory matched: matched terms, each candidate list it was in (rank, bm25, vector
    similarity, entity), the fused score, each factor applied, and the final score."""

    matched_terms: list[str]
    lists: dict[str, dict[str, float]]
    fused: float
    factors: dict[str, float]
    via: str | None
    final: float
    floor: str | None = None  # why the relevance floor kept it
    superseded_by: str | None = None  # a newer hit says the same thing differently


class HitOut(BaseModel):
    memory: MemoryOut
    score: float
    explain: Explain


class RecallOut(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"hits": [{
        "memory": _MEMORY_EXAMPLE, "score": 0.0312,
        "explain": {"matched_terms": ["dark", "mode"], "lists": {"keyword": {
            "rank": 1, "bm25": 4.2}, "vector": {"rank": 1, "similarity": 0.71}},
            "fused": 0.0328, "factors": {"recency": 0.95}, "via": None, "final": 0.0312}}]}]})

    hits: list[HitOut]


class LinkIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"a": "ui-theme", "b": "3f2a9c0d1e4b5a67", "strength": 1.0}]})

    a: str
    b: str
    strength: float = 1.0
    origin: str = "manual"


class LinkOut(BaseModel):
    other_id: str
    strength: float
    origin: str


class Deleted(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [
        {"deleted": 1, "id": "3f2a9c0d1e4b5a67", "key": "ui-theme"}]})

    deleted: int
    id: str | None = None
    key: str | None = None
    namespace: str | None = None


class Forgot(BaseModel):
    """What one forget removed (ADR 0022)."""

    model_config = ConfigDict(json_schema_extra={"examples": [
        {"deleted": 2, "id": "3f2a9c0d1e4b5a67", "key": "ui-theme",
         "versions": ["9b1c2d3e4f5a6b7c"], "derived": [], "reopened_sessions": []}]})

    deleted: int = Field(description="memories removed: the one named, its other versions and"
                         " what was derived from it")
    id: str
    key: str | None = None
    versions: list[str] = Field(description="the memory's other versions (corrections), gone")
    derived: list[str] = Field(description="memories derived from it, gone with it")
    reopened_sessions: list[str] = Field(
        description="sessions queued to be consolidated again from what is left")


class ImportIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"snapshot": {"memories": [{"id": "m1", "content": "User prefers dark mode"}]},
         "dry_run": True}]})

    snapshot: dict[str, Any] | list[Any] | str = Field(
        description="a snapshot as GET /v1/export writes it (an object, or its JSON text)")
    dry_run: bool = False
    source: str = "<rest>"


class ObserveIn(_In):
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [
        {"role": "user", "content": "I moved to Lisbon last month", "session_id": "s-42"}]})

    role: str
    content: str
    session_id: str
    narrative_id: str | int | None = None
    task_id: str | int | None = None


class Problem(BaseModel):
    """An error (RFC 9457 problem details). ``error`` names the engine's error type."""

    model_config = ConfigDict(json_schema_extra={"examples": [{
        "type": "urn:clawmemory:problem:not-found", "title": "Not found", "status": 404,
        "detail": "no memory with id or key 'x' in namespace 'alice'",
        "error": "NotFoundError", "instance": "/v1/memories/x"}]})

    type: str
    title: str
    status: int
    detail: str
    error: str
    instance: str | None = None

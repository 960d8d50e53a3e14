"""The mem0-compatible face of the REST API, under ``/mem0`` (docs/mem0.md): the paths, bodies
and answers that ``mem0ai``'s ``MemoryClient`` and ``AsyncMemoryClient`` (2.2.1) use, so code
written for mem0 moves here by giving the client ``host="http://HOST:PORT/mem0"``.

Each route is a thin translation over the same ``Memory`` façade as ``/v1`` (``routes``), behind
the same gate: the same keys (mem0's ``Authorization: Token KEY`` is taken as a bearer key) and
the same namespace binding. mem0's ids map onto ours:

- ``user_id`` -> the namespace (a key bound to other namespaces gets 403, as on ``/v1``);
- ``run_id`` -> the session (``session_id``);
- ``agent_id``, ``app_id`` -> the metadata keys ``agent_id`` and ``app_id``;
- mem0's ``categories`` -> our tags.

Calls that name only a memory id (get, update, delete, history, batches) look the id up in the
namespaces the request may see (the key's, or every one on an open loopback server). Errors are
JSON with a ``detail``, which mem0's client puts into the exception it raises; the routes are
left out of the OpenAPI document, which describes ``/v1`` only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field

from clawmemory import __version__
from clawmemory.auth import Access, Role
from clawmemory.cognition.extraction import LLMExtractor, remember_exchange
from clawmemory.errors import ClawMemoryError, InvalidInputError, NotFoundError
from clawmemory.interfaces.rest.common import ACCESS, Service, status_of
from clawmemory.llm.factory import close_llm, make_llm

if TYPE_CHECKING:
    from fastapi import FastAPI

    from clawmemory.memory import Memory
    from clawmemory.model import Hit, MemoryRecord

__all__ = ["PREFIX", "error", "install", "is_mem0"]

PREFIX = "/mem0"
AGENT, APP = "agent_id", "app_id"  # the metadata keys mem0's agent_id and app_id are kept under
SOURCE = "mem0"  # the provenance tag of messages stored as given
NO_LLM = ("no LLM is configured on this server ([llm] provider, docs/llm.md): the messages were"
          " stored as given, as with infer=False")
MAX_BATCH = 1000  # mem0's own limit on a batch update or delete


def is_mem0(path: str) -> bool:
    """Whether ``path`` is one of the mem0-compatible routes."""
    return path.startswith(PREFIX + "/")


def error(exc: ClawMemoryError) -> Response:
    """An engine error as mem0's client reads it: JSON whose ``detail`` becomes the message of
    the exception it raises for the status (404 MemoryNotFoundError, 401/403
    AuthenticationError, 400/409/422 ValidationError...)."""
    status, title = status_of(exc)
    headers = {"WWW-Authenticate": 'Token realm="clawmemory"'} if status == 401 else None
    return JSONResponse({"detail": str(exc), "error": type(exc).__name__, "title": title},
                        status_code=status, headers=headers)


class _Route(APIRoute):
    """Answers engine and validation errors in mem0's shape (``/v1``'s handlers answer problem
    details, which mem0's client would show as raw JSON)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def mem0_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except ClawMemoryError as exc:
                return error(exc)
            except RequestValidationError as exc:
                first = exc.errors()[0] if exc.errors() else {}
                where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
                detail = f"{where}: {first.get('msg', 'invalid')}" if where else "invalid request"
                return JSONResponse({"detail": detail, "error": "InvalidInputError"}, 400)

        return mem0_handler


# --- request bodies --------------------------------------------------------------------------
class _In(BaseModel):
    # mem0's client sends options we do not act on (custom_categories, output_format,
    # async_mode, enable_graph...): they are ignored, as docs/mem0.md lists, not refused, so
    # code written for mem0 runs unchanged.
    model_config = ConfigDict(extra="ignore")


class _Ids(_In):
    """mem0's entity ids, given at the top level (older clients) or in ``filters``."""

    user_id: str | None = None
    agent_id: str | None = None
    app_id: str | None = None
    run_id: str | None = None
    filters: dict[str, Any] | None = None


class MessageIn(_In):
    role: str = "user"
    content: str


class AddIn(_Ids):
    messages: list[MessageIn] = Field(min_length=1)
    metadata: dict[str, Any] | None = None
    infer: bool = True  # mem0's default
    timestamp: int | float | None = Field(None, description="when it happened, epoch seconds")


class SearchIn(_Ids):
    query: str
    top_k: int | None = Field(None, ge=1, le=1000)
    threshold: float | None = None
    keyword_search: bool | None = None
    categories: list[str] | None = None


class ListIn(_Ids):
    start_date: str | None = None
    end_date: str | None = None
    categories: list[str] | None = None


class UpdateIn(_In):
    text: str | None = None
    metadata: dict[str, Any] | None = None
    timestamp: int | float | str | None = None


class BatchItem(UpdateIn):
    memory_id: str


class BatchIn(_In):
    memories: list[BatchItem] = Field(min_length=1, max_length=MAX_BATCH)


# --- mem0's filters ------------------------------------------------------------------------------
@dataclass
class Where:
    """mem0's ids and filters, as our namespace and ``Memory.list``/``recall`` filters."""

    ids: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    times: dict[str, str] = field(default_factory=dict)

    @property
    def user_id(self) -> str | None:
        return self.ids.get("user_id")

    def query(self) -> dict[str, Any]:
        """The filters of ``Memory.list``, ``count`` and ``recall``."""
        meta = dict(self.metadata)
        meta.update({key: self.ids[key] for key in (AGENT, APP) if key in self.ids})
        return {"session_id": self.ids.get("run_id"), "metadata": meta or None,
                "tags": list(self.tags), **self.times}

    def set_id(self, name: str, value: Any) -> None:
        if isinstance(value, Mapping) and set(value) == {"eq"}:
            value = value["eq"]
        if value == "*" and name != "user_id":
            return  # mem0's wildcard: any value, which is no filter here
        if not isinstance(value, str) or value == "*":
            raise InvalidInputError(f"filter {name!r}: only one id is supported here, as text"
                                    " (docs/mem0.md)")
        if self.ids.setdefault(name, value) != value:
            raise InvalidInputError(f"{name} is given twice, as {self.ids[name]!r} and"
                                    f" {value!r}")


_TIMES = {"gte": "created_since", "gt": "created_since", "lte": "created_until",
          "lt": "created_until"}


def _terms(filters: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    """The conditions of mem0's filters, all of which must hold (``AND`` nests them)."""
    for key, value in filters.items():
        if key == "AND" and isinstance(value, list):
            for part in value:
                if not isinstance(part, Mapping):
                    raise InvalidInputError("each condition of AND must be an object")
                yield from _terms(part)
        elif key in ("OR", "NOT"):
            raise InvalidInputError(f"mem0's {key} filters are not supported here; all"
                                    " conditions must hold (docs/mem0.md)")
        else:
            yield key, value


def _add_term(where: Where, key: str, value: Any) -> None:
    if key in ("user_id", "agent_id", "app_id", "run_id"):
        where.set_id(key, value)
    elif key == "metadata" and isinstance(value, Mapping):
        where.metadata.update(value)
    elif key == "created_at" and isinstance(value, Mapping) and set(value) <= set(_TIMES):
        where.times.update({_TIMES[op]: str(when) for op, when in value.items()})
    elif key == "categories":
        where.tags.extend(_categories(value))
    else:
        raise InvalidInputError(f"filter {key!r} is not supported here (docs/mem0.md lists"
                                " what is)")


def _categories(value: Any) -> list[str]:
    if isinstance(value, Mapping) and set(value) <= {"in", "contains"}:
        value = [v for part in value.values() for v in (part if isinstance(part, list)
                                                        else [part])]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError("categories must be text or a list of text")
    return value


def where_of(body: _Ids, categories: list[str] | None = None) -> Where:
    """The ``Where`` of a body's top-level ids and its ``filters``."""
    where = Where()
    for key, value in _terms(body.filters or {}):
        _add_term(where, key, value)
    for key in ("user_id", "agent_id", "app_id", "run_id"):
        if getattr(body, key) is not None:
            where.set_id(key, getattr(body, key))
    where.tags.extend(categories or ())
    return where


# --- the request's memory ------------------------------------------------------------------------
def _view(request: Request, user_id: str | None, role: Role, what: str) -> Memory:
    """The memory of ``user_id``'s namespace (the key's default without one), for ``role``."""
    service: Service = request.app.state.service
    access: Access = request.scope[ACCESS]
    mem = service.view(access, user_id)
    access.require(role, what)
    return mem


def _find(request: Request, memory_id: str, role: Role, what: str
          ) -> tuple[Memory, MemoryRecord]:
    """The memory with this id in a namespace the request may see, and that namespace's view.
    A memory in another tenant's namespace is not found, in the same words as one that does
    not exist."""
    service: Service = request.app.state.service
    access: Access = request.scope[ACCESS]
    access.require(role, what)
    mine = access.namespace(None)
    others = (access.namespaces if access.namespaces is not None
              else service.memory.store_backend.namespaces())
    for namespace in dict.fromkeys([mine, *others]):
        mem = service.view(access, namespace)
        try:
            return mem, mem.get(memory_id)
        except NotFoundError:
            continue
    raise NotFoundError(f"no memory with id {memory_id!r}")


# --- mem0's answers ------------------------------------------------------------------------------
def _when(ts: float | None) -> str | None:
    return datetime.fromtimestamp(ts, UTC).isoformat() if ts is not None else None


def memory_out(record: MemoryRecord) -> dict[str, Any]:
    """A memory as mem0 answers it."""
    meta = dict(record.metadata)
    agent, app = meta.pop(AGENT, None), meta.pop(APP, None)
    return {"id": record.id, "memory": record.content, "user_id": record.namespace,
            "agent_id": agent, "app_id": app, "run_id": record.session_id,
            "hash": hashlib.md5(record.content.encode(), usedforsecurity=False).hexdigest(),
            "metadata": meta or None, "categories": list(record.tags),
            "created_at": _when(record.created_at), "updated_at": _when(record.updated_at),
            "expiration_date": None, "immutable": record.decay_rate == 0}


def _hit_out(hit: Hit) -> dict[str, Any]:
    return {**memory_out(hit.memory), "score": hit.score}


# --- routes ------------------------------------------------------------------------------------
router = APIRouter(prefix=PREFIX, route_class=_Route, include_in_schema=False)


@router.get("/v1/ping/")
def ping(request: Request) -> dict[str, Any]:
    """mem0's clients call this when they are created, to check the key (the gate did). They
    refuse to start without an organisation and a project: ours are "clawmemory" and the
    namespace the key works in by default (mem0's project operations are not served here)."""
    namespace = request.scope[ACCESS].namespace(None)
    return {"status": "ok", "message": f"clawmemory {__version__}, mem0-compatible",
            "org_id": "clawmemory", "project_id": namespace, "user_email": None,
            "namespace": namespace}


@router.post("/v3/memories/add/")
def add(request: Request, body: AddIn) -> dict[str, Any]:
    """Store messages as given (``infer=False``) or the facts our LLM extracts from them."""
    where = where_of(body)
    mem = _view(request, where.user_id, Role.WRITE, "changing memories")
    meta = {**(body.metadata or {}), **{k: where.ids[k] for k in (AGENT, APP) if k in where.ids}}
    answer: dict[str, Any] = {}
    llm = make_llm(mem.settings.llm) if body.infer else None
    if body.infer and llm is None:
        answer["message"] = NO_LLM
    if llm is not None:
        try:
            ids = _extract(mem, llm, body.messages, where, meta)
        finally:
            close_llm(llm)
    else:
        ids = mem.store_many(
            {"content": m.content, "kind": "fact", "source": SOURCE, "source_role": m.role,
             "session_id": where.ids.get("run_id"), "metadata": meta or None,
             "event_time": body.timestamp}
            for m in body.messages if m.role != "system")
    answer["results"] = [{**memory_out(mem.get(i)), "event": "ADD"} for i in ids]
    answer["infer"] = llm is not None
    return answer


def _extract(mem: Memory, llm: Any, messages: list[MessageIn], where: Where,
             meta: Mapping[str, Any]) -> list[str]:
    """Our fact extraction (``cognition.extraction``) over the user's and the assistant's
    words; mem0 keeps only what its LLM extracts, and so does this."""
    user = "\n".join(m.content for m in messages if m.role == "user")
    assistant = "\n".join(m.content for m in messages if m.role not in ("user", "system"))
    extractor = LLMExtractor(llm, max_chars=mem.settings.cognition.max_input_chars)
    return remember_exchange(mem, extractor, user, assistant,
                             session_id=where.ids.get("run_id"), metadata=meta or None)


@router.post("/v3/memories/search/")
def search(request: Request, body: SearchIn) -> dict[str, Any]:
    """The memories most relevant to the query, best first; ``score`` is our recall score
    (docs/mem0.md: not a cosine similarity), and ``threshold`` applies to it."""
    where = where_of(body, body.categories)
    mem = _view(request, where.user_id, Role.READ, "reading")
    hits = mem.recall(body.query, limit=body.top_k or 10,
                      mode="keyword" if body.keyword_search else None, **where.query())
    return {"results": [_hit_out(h) for h in hits
                        if body.threshold is None or h.score >= body.threshold]}


@router.post("/v3/memories/")
def get_all(
    request: Request, body: ListIn,
    page: Annotated[int, Query(ge=1)] = 1,
    page_size: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> dict[str, Any]:
    """Memories matching the filters, newest first, a page at a time (mem0's paging:
    ``count``, ``next`` and ``previous`` URLs)."""
    where = where_of(body, body.categories)
    where.times.update({k: v for k, v in (("created_since", body.start_date),
                                          ("created_until", body.end_date)) if v})
    mem = _view(request, where.user_id, Role.READ, "reading")
    records = mem.list(limit=page_size, offset=(page - 1) * page_size, **where.query())
    total = mem.count(**where.query())

    def link(number: int) -> str:
        return str(request.url.include_query_params(page=number, page_size=page_size))

    return {"count": total, "next": link(page + 1) if page * page_size < total else None,
            "previous": link(page - 1) if page > 1 else None,
            "results": [memory_out(r) for r in records]}


@router.get("/v1/memories/{memory_id}/")
def get(request: Request, memory_id: str) -> dict[str, Any]:
    return memory_out(_find(request, memory_id, Role.READ, "reading")[1])


@router.put("/v1/memories/{memory_id}/")
def update(request: Request, memory_id: str, body: UpdateIn) -> dict[str, Any]:
    """Change a memory in place, as mem0 does: its id stays."""
    mem, record = _find(request, memory_id, Role.WRITE, "changing memories")
    return memory_out(_update(mem, record, body))


def _update(mem: Memory, record: MemoryRecord, change: UpdateIn) -> MemoryRecord:
    """mem0's update: new text and/or metadata (which replaces the old, the agent and app
    ids kept)."""
    if change.text is None and change.metadata is None and change.timestamp is None:
        raise InvalidInputError("give text, metadata or timestamp to change")
    metadata = None
    if change.metadata is not None:
        kept = {k: record.metadata[k] for k in (AGENT, APP) if k in record.metadata}
        metadata = {**change.metadata, **kept}
    fields: dict[str, Any] = {"content": change.text, "metadata": metadata}
    if change.timestamp is not None:
        fields["event_time"] = change.timestamp
    return mem.update(record.id, **fields)


@router.delete("/v1/memories/{memory_id}/")
def delete(request: Request, memory_id: str) -> dict[str, Any]:
    """Forget a memory for good (with its versions and what was derived from it)."""
    mem, record = _find(request, memory_id, Role.WRITE, "changing memories")
    gone = mem.forget(record.id)
    return {"message": "Memory deleted successfully!", "deleted": gone.deleted}


@router.delete("/v1/memories/")
def delete_all(
    request: Request,
    user_id: str | None = None, agent_id: str | None = None, app_id: str | None = None,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Forget every memory of the ids given (at least one, so no call wipes a namespace by
    accident), one by one, as ``forget`` does."""
    where = where_of(_Ids(user_id=user_id, agent_id=agent_id, app_id=app_id, run_id=run_id))
    if not where.ids:
        raise InvalidInputError("name at least one of user_id, agent_id, app_id, run_id")
    mem = _view(request, where.user_id, Role.WRITE, "changing memories")
    deleted = 0
    while batch := mem.list(limit=500, **where.query()):
        for record in batch:
            try:
                deleted += mem.forget(record.id).deleted
            except NotFoundError:
                continue  # went with a memory forgotten before it (derived from it)
    return {"message": "Memories deleted successfully!", "deleted": deleted}


@router.get("/v1/memories/{memory_id}/history/")
def history(request: Request, memory_id: str) -> list[dict[str, Any]]:
    """mem0's history of a memory from our correction chain: ADD for the first version, UPDATE
    for each correction, and UPDATE for a change in place (whose old text is not kept)."""
    mem, record = _find(request, memory_id, Role.READ, "reading")
    events: list[dict[str, Any]] = []
    previous: MemoryRecord | None = None
    for version in mem.history(record.id):
        events.append(_event(version, previous, "ADD" if previous is None else "UPDATE",
                             version.created_at))
        previous = version
    if previous is not None and previous.updated_at > previous.created_at:
        events.append(_event(previous, None, "UPDATE", previous.updated_at))
    return events


def _event(record: MemoryRecord, before: MemoryRecord | None, event: str, at: float
           ) -> dict[str, Any]:
    out = memory_out(record)
    return {"id": f"{record.id}-{at:.6f}", "memory_id": record.id,
            "old_memory": before.content if before is not None else None,
            "new_memory": record.content, "event": event, "user_id": out["user_id"],
            "agent_id": out["agent_id"], "run_id": out["run_id"],
            "metadata": out["metadata"], "created_at": _when(at), "updated_at": _when(at)}


@router.put("/v1/batch/")
def batch_update(request: Request, body: BatchIn) -> dict[str, Any]:
    """Update many memories; every id is looked up before any is changed."""
    found = [(_find(request, item.memory_id, Role.WRITE, "changing memories"), item)
             for item in body.memories]
    for (mem, record), item in found:
        _update(mem, record, item)
    return {"message": f"Successfully updated {len(found)} memories"}


@router.delete("/v1/batch/")
def batch_delete(request: Request, body: BatchIn) -> dict[str, Any]:
    """Forget many memories; every id is looked up before any is forgotten."""
    found = [_find(request, item.memory_id, Role.WRITE, "changing memories")
             for item in body.memories]
    for mem, record in found:
        try:
            mem.forget(record.id)
        except NotFoundError:
            continue  # went with one forgotten before it
    return {"message": f"Successfully deleted {len(found)} memories"}


def install(app: FastAPI) -> None:
    """Add the mem0-compatible routes to ``app`` (outside its OpenAPI document)."""
    app.include_router(router)

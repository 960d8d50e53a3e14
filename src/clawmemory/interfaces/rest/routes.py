"""The routes of the REST API, ``/v1``: each translates its request into one ``Memory`` call of
the request's namespace (``common.Service.view``) and the result into JSON; nothing more.

Roles: reading needs ``read``; storing, changing, forgetting one memory, linking and importing
need ``write``; forgetting a whole namespace, maintenance and vector backfill need ``admin``.
Handlers are plain functions: FastAPI runs them in worker threads, so engine calls (SQLite,
the embedding model) never block the event loop.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from clawmemory import __version__
from clawmemory.auth import Access, Role
from clawmemory.errors import ClawMemoryError, InvalidInputError
from clawmemory.interfaces.rest.common import (
    ACCESS,
    Service,
    error_response,
    is_web,
    problem,
    read_cursor,
    write_cursor,
)
from clawmemory.interfaces.rest.models import (
    ArchiveList,
    CorrectIn,
    Deleted,
    Forgot,
    ImportIn,
    LinkIn,
    LinkOut,
    MemoryList,
    MemoryOut,
    ObserveIn,
    Problem,
    RecallIn,
    RecallOut,
    Stored,
    StoredMany,
    StoreIn,
    StoreManyIn,
    UpdateIn,
    WeightIn,
)

if TYPE_CHECKING:
    from fastapi import FastAPI

    from clawmemory.memory import Memory

__all__ = ["install"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "content": {"application/problem+json": {}}}
    for code in (401, 403, 404, 413, 422)}


class Call:
    """One request's memory (its namespace's view) and access."""

    def __init__(self, mem: Memory, access: Access) -> None:
        self.mem = mem
        self.access = access


def _need(role: Role, what: str) -> Callable[..., Awaitable[Call]]:
    # async: it does no I/O, and a plain function would cost a worker-thread hop per request
    async def dependency(
        request: Request,
        namespace: Annotated[str | None, Query(
            description="The namespace to work in (default: the key's first one).")] = None,
        x_clawmem_namespace: Annotated[str | None, Header(
            include_in_schema=False)] = None,
    ) -> Call:
        service: Service = request.app.state.service
        access: Access = request.scope[ACCESS]
        mem = service.view(access, namespace or x_clawmem_namespace)
        access.require(role, what)
        return Call(mem, access)

    return dependency


Reader = Annotated[Call, Depends(_need(Role.READ, "reading"))]
Writer = Annotated[Call, Depends(_need(Role.WRITE, "changing memories"))]
Admin = Annotated[Call, Depends(_need(Role.ADMIN, "this"))]
Ref = Annotated[str, "a memory's id or key"]


# --- routes --------------------------------------------------------------------------------------
router = APIRouter(prefix="/v1", responses=_ERRORS)


@router.get("/health", tags=["service"])
def health() -> dict[str, str]:
    """Whether the server answers (no key needed; it says nothing about any data)."""
    return {"status": "ok", "version": __version__}


@router.post("/memories", status_code=201, response_model=Stored, tags=["memories"])
def store(call: Writer, body: StoreIn, response: Response) -> dict[str, str]:
    """Store a memory. With a ``key`` that exists in the namespace, that memory is updated in
    place and keeps its id (upsert)."""
    id_ = call.mem.store(**body.model_dump())
    response.headers["Location"] = f"/v1/memories/{id_}"
    return {"id": id_}


@router.post("/memories/batch", status_code=201, response_model=StoredMany, tags=["memories"])
def store_many(call: Writer, body: StoreManyIn) -> dict[str, list[str]]:
    """Store many memories at once (embedded in batches; each batch one transaction)."""
    return {"ids": call.mem.store_many([i.model_dump() for i in body.items])}


@router.get("/memories", response_model=MemoryList, tags=["memories"])
def list_memories(
    call: Reader,
    kind: Annotated[list[str] | None, Query(description="repeatable")] = None,
    tag: Annotated[list[str] | None, Query(description="repeatable; all must match")] = None,
    session_id: str | None = None,
    narrative_id: str | None = None,
    task_id: str | None = None,
    source: str | None = None,
    metadata: Annotated[str | None, Query(description='JSON object, e.g. {"app": "vscode"}')
                        ] = None,
    since: Annotated[str | None, Query(description=_WHEN + " (when it happened)")] = None,
    until: Annotated[str | None, Query(description=_WHEN)] = None,
    created_since: Annotated[str | None, Query(description=_WHEN + " (when stored)")] = None,
    created_until: Annotated[str | None, Query(description=_WHEN)] = None,
    as_of: Annotated[str | None, Query(description=_WHEN + " (what was valid then)")] = None,
    include_invalid: bool = False,
    order: str = "newest",
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: str | None = None,
    offset: Annotated[int | None, Query(ge=0, description="instead of a cursor")] = None,
) -> dict[str, Any]:
    """List memories with filters, a page at a time (``next_cursor``)."""
    query = {"namespace": call.mem.namespace, "kind": kind, "tag": tag, "session_id": session_id,
             "narrative_id": narrative_id, "task_id": task_id, "source": source,
             "metadata": metadata, "since": since, "until": until,
             "created_since": created_since, "created_until": created_until, "as_of": as_of,
             "include_invalid": include_invalid, "order": order}
    offset = read_cursor(cursor, query) if offset is None else offset
    records = call.mem.list(
        kind=kind or None, tags=tag or (), session_id=session_id, narrative_id=narrative_id,
        task_id=task_id, source=source, metadata=_json_object(metadata, "metadata"),
        include_invalid=include_invalid, order=order, limit=limit + 1, offset=offset,
        **_times(since, until, created_since, created_until, as_of))
    more = len(records) > limit
    return {"memories": [r.to_dict() for r in records[:limit]],
            "next_cursor": write_cursor(offset + limit, query) if more else None}


@router.get("/count", tags=["memories"])
def count(
    call: Reader,
    kind: Annotated[list[str] | None, Query(description="repeatable")] = None,
    tag: Annotated[list[str] | None, Query(description="repeatable; all must match")] = None,
    session_id: str | None = None,
    exclude_session_id: str | None = None,
    narrative_id: str | None = None,
    task_id: str | None = None,
    source: str | None = None,
    metadata: Annotated[str | None, Query(description="JSON object")] = None,
    include_invalid: bool = False,
    since: Annotated[str | None, Query(description=_WHEN + " (when it happened)")] = None,
    until: Annotated[str | None, Query(description=_WHEN)] = None,
    created_since: Annotated[str | None, Query(description=_WHEN + " (when stored)")] = None,
    created_until: Annotated[str | None, Query(description=_WHEN)] = None,
    as_of: Annotated[str | None, Query(description=_WHEN + " (what was valid then)")] = None,
) -> dict[str, int]:
    """How many memories match the filters."""
    return {"count": call.mem.count(
        kind=kind or None, tags=tag or (), session_id=session_id,
        exclude_session_id=exclude_session_id, narrative_id=narrative_id, task_id=task_id,
        source=source, metadata=_json_object(metadata, "metadata"),
        include_invalid=include_invalid,
        **_times(since, until, created_since, created_until, as_of))}


def _json_object(text: str | None, what: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInputError(f"{what} must be a JSON object") from exc


_WHEN = 'epoch seconds, ISO-8601 or an expression ("2 weeks ago")'


def _times(since: str | None, until: str | None, created_since: str | None,
           created_until: str | None, as_of: str | None) -> dict[str, Any]:
    """The time filters of a query string, as ``Memory.list``/``count`` take them."""
    given = {"since": since, "until": until, "created_since": created_since,
             "created_until": created_until, "as_of": as_of}
    return {k: _time(v) for k, v in given.items() if v is not None}


def _time(value: str | None) -> Any:
    """Epoch seconds given as a query parameter arrive as text."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value


@router.get("/memories/{ref}", response_model=MemoryOut, tags=["memories"])
def get(call: Reader, ref: Ref) -> dict[str, Any]:
    """One memory by id or key."""
    return call.mem.get(ref).to_dict()


@router.patch("/memories/{ref}", response_model=MemoryOut, tags=["memories"])
def update(call: Writer, ref: Ref, body: UpdateIn) -> dict[str, Any]:
    """Change a memory in place (only the fields given); its score is kept."""
    return call.mem.update(ref, **body.model_dump(exclude_unset=True)).to_dict()


@router.delete("/memories/{ref}", response_model=Forgot, tags=["memories"])
def forget(call: Writer, ref: Ref) -> dict[str, Any]:
    """Forget a memory for good: every version, every memory derived from it, every byte.
    ``deleted`` counts them all; ``versions`` and ``derived`` name the others that went, and
    ``reopened_sessions`` the sessions queued to be consolidated again."""
    return call.mem.forget(ref).to_dict()


@router.post("/memories/{ref}/correct", response_model=MemoryOut, tags=["feedback"])
def correct(call: Writer, ref: Ref, body: CorrectIn) -> dict[str, Any]:
    """Replace a memory with a corrected one; the old one stays, invalidated (history)."""
    return call.mem.correct(ref, body.content, tags=body.tags, reason=body.reason).to_dict()


@router.post("/memories/{ref}/confirm", response_model=MemoryOut, tags=["feedback"])
def confirm(call: Writer, ref: Ref) -> dict[str, Any]:
    """Protect a memory for good: it never decays and its confidence is 1."""
    return call.mem.confirm(ref).to_dict()


@router.post("/memories/{ref}/reinforce", response_model=MemoryOut, tags=["feedback"])
def reinforce(call: Writer, ref: Ref, body: WeightIn | None = None) -> dict[str, Any]:
    """The memory helped: its score goes up (default +3)."""
    return call.mem.reinforce(ref, body.weight if body else None).to_dict()


@router.post("/memories/{ref}/demote", response_model=MemoryOut, tags=["feedback"])
def demote(call: Writer, ref: Ref, body: WeightIn | None = None) -> dict[str, Any]:
    """The memory is wrong or stale: its score goes down (default -1)."""
    return call.mem.demote(ref, body.weight if body else None).to_dict()


@router.get("/memories/{ref}/history", response_model=list[MemoryOut], tags=["memories"])
def history(call: Reader, ref: Ref) -> list[dict[str, Any]]:
    """The chain of corrections through this memory, oldest first."""
    return [r.to_dict() for r in call.mem.history(ref)]


@router.get("/memories/{ref}/neighbors", response_model=list[MemoryOut], tags=["links"])
def neighbors(call: Reader, ref: Ref, limit: Annotated[int, Query(ge=1, le=1000)] = 10
              ) -> list[dict[str, Any]]:
    """The memories linked to this one, strongest link first."""
    return [r.to_dict() for r in call.mem.neighbors(ref, limit=limit)]


@router.get("/memories/{ref}/links", response_model=list[LinkOut], tags=["links"])
def links(call: Reader, ref: Ref, limit: Annotated[int, Query(ge=1, le=10_000)] = 50
          ) -> list[dict[str, Any]]:
    """The links of this memory: the other end, strength and origin."""
    return [{"other_id": lk.other_id, "strength": lk.strength, "origin": lk.origin}
            for lk in call.mem.links(ref, limit=limit)]


@router.get("/memories/{ref}/derived", response_model=list[MemoryOut], tags=["memories"])
def derived(call: Reader, ref: Ref) -> list[dict[str, Any]]:
    """The live memories derived from this one (naming it in their source_ids)."""
    return [r.to_dict() for r in call.mem.derived(ref)]


@router.get("/memories/{ref}/entities", tags=["entities"])
def entities_of(call: Reader, ref: Ref) -> list[dict[str, Any]]:
    """The entities this memory mentions."""
    return call.mem.entities_of(ref)


@router.post("/links", tags=["links"])
def link(call: Writer, body: LinkIn) -> dict[str, bool]:
    """Link two memories both ways (linking a linked pair again keeps the larger strength).
    ``linked`` is false when either does not exist."""
    return {"linked": call.mem.link(body.a, body.b, strength=body.strength, origin=body.origin)}


@router.delete("/links/{a}/{b}", tags=["links"])
def unlink(call: Writer, a: str, b: str) -> dict[str, bool]:
    """Remove the link between two memories."""
    return {"unlinked": call.mem.unlink(a, b)}


@router.post("/recall", response_model=RecallOut, tags=["recall"])
def recall(call: Reader, body: RecallIn) -> dict[str, Any]:
    """The memories most relevant to a query, best first, each with the explanation of its
    score (matched terms, each candidate list, every factor)."""
    return {"hits": [h.to_dict() for h in call.mem.recall(**body.model_dump())]}


@router.get("/entities/{name}", tags=["entities"])
def entity(call: Reader, name: str, limit: Annotated[int, Query(ge=1, le=1000)] = 20
           ) -> dict[str, Any]:
    """An entity's profile and the memories that mention it, newest first."""
    info = call.mem.entity_info(name, limit=limit)
    return {**info, "memories": [r.to_dict() for r in info["memories"]]}


@router.get("/stats", tags=["service"])
def stats(call: Reader) -> dict[str, Any]:
    """Counts by kind, links, archive and vector state of the namespace."""
    data = call.mem.stats()
    if call.access.namespaces is not None:
        data["path"] = None  # where the server keeps its file is not a tenant's business
    return data


@router.get("/export", tags=["portability"])
def export(call: Reader) -> Response:
    """Every memory of the namespace as a JSON snapshot (POST /v1/import takes it back)."""
    return Response(call.mem.export_snapshot(), media_type="application/json")


@router.post("/import", tags=["portability"])
def import_(call: Writer, body: ImportIn) -> dict[str, Any]:
    """Import a snapshot, all or nothing; ids and keys already present are skipped."""
    text = body.snapshot if isinstance(body.snapshot, str) else json.dumps(body.snapshot)
    report = call.mem.import_snapshot(text, source=body.source, dry_run=body.dry_run)
    return {**report, "dry_run": body.dry_run}


@router.post("/observe", response_model=Stored, status_code=201, tags=["memories"])
def observe(call: Writer, body: ObserveIn) -> dict[str, str]:
    """Store one dialogue turn as an episode (hot path: fast NER, no LLM)."""
    return {"id": call.mem.observe(body.role, body.content, body.session_id,
                                   narrative_id=body.narrative_id, task_id=body.task_id)}


@router.delete("/namespace", response_model=Deleted, tags=["memories"])
def forget_namespace(
    call: Admin,
    confirm: Annotated[str, Query(description="the namespace's name again, as a safeguard")],
) -> dict[str, Any]:
    """Forget the whole namespace: memories, links, entities, history, archive."""
    if confirm != call.mem.namespace:
        raise InvalidInputError("confirm must repeat the namespace's name")
    return {"deleted": call.mem.forget_namespace(), "namespace": call.mem.namespace}


@router.get("/archive", response_model=ArchiveList, tags=["archive"])
def archive(call: Reader, limit: Annotated[int, Query(ge=1, le=1000)] = 50,
            cursor: str | None = None,
            offset: Annotated[int | None, Query(ge=0, description="instead of a cursor")
                              ] = None) -> dict[str, Any]:
    """Archived memories, most recently archived first."""
    query = {"namespace": call.mem.namespace, "archive": True}
    offset = read_cursor(cursor, query) if offset is None else offset
    entries = call.mem.archived(limit=limit + 1, offset=offset)
    return {"memories": [e.to_dict() for e in entries[:limit]],
            "next_cursor": write_cursor(offset + limit, query) if len(entries) > limit
            else None}


@router.post("/archive/{id_}/restore", response_model=MemoryOut, tags=["archive"])
def restore(call: Writer, id_: str) -> dict[str, Any]:
    """Bring an archived memory back into recall."""
    return call.mem.restore(id_).to_dict()


@router.get("/maintenance/runs", tags=["maintenance"])
def runs(call: Reader, limit: Annotated[int, Query(ge=1, le=1000)] = 20,
         job: str | None = None) -> list[dict[str, Any]]:
    """Recorded maintenance runs, newest first."""
    return [r.to_dict() for r in call.mem.runs(limit, job=job)]


@router.post("/maintenance/{job}", tags=["maintenance"])
def maintain(call: Admin, job: str, dry_run: bool = False) -> dict[str, Any]:
    """Run a maintenance job now (enrich, consolidate, decay, reflect, repair, or all); the
    LLM jobs are recorded as skipped when no LLM is configured. ``dry_run``: what it would do,
    memory by memory, changing nothing."""
    if dry_run:
        return {"dry_run": True, "previews": call.mem.preview_maintenance(job)}
    return {"runs": [r.to_dict() for r in call.mem.maintain(job)]}


@router.post("/repair", tags=["maintenance"])
def repair(call: Admin) -> dict[str, int]:
    """Rebuild derived rows a crash left missing (vectors, entity links, session chains)."""
    return call.mem.repair()


@router.post("/vectors/backfill", tags=["maintenance"])
def backfill(call: Admin) -> dict[str, int]:
    """Embed the memories that have no vector yet (queued ones first)."""
    return {"embedded": call.mem.backfill()}


# --- errors --------------------------------------------------------------------------------------
def install(app: FastAPI) -> None:
    """Add the routes and the problem-details error handlers to ``app``."""
    app.include_router(router)

    @app.exception_handler(ClawMemoryError)
    async def engine_error(request: Request, exc: ClawMemoryError) -> Response:
        page = getattr(request.app.state, "error_page", None)
        if page is not None and is_web(request.url.path):
            return page(request, exc)  # type: ignore[no-any-return]
        return error_response(exc, request.url.path)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        detail = f"{where}: {first.get('msg', 'invalid')}" if where else str(
            first.get("msg", "invalid request"))
        return problem(422, "Invalid input", detail, "InvalidInputError", request.url.path)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        error = {404: "NotFoundError", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
        return problem(exc.status_code, str(exc.detail), f"{request.method} {request.url.path}:"
                       f" {exc.detail}", error, request.url.path)


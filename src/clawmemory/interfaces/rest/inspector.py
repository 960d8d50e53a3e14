"""The web inspector: server-rendered pages (Jinja2 templates in ``interfaces/web/``, one small
script, no build step, nothing fetched from elsewhere) over the same ``Memory`` calls as the
REST API, behind the same gate: search with the per-hit "why matched" breakdown, browsing with
filters, a memory's page (history, links, entities, provenance, the entity graph around it,
correct and forget), the archive with restore, and maintenance runs.

Forms post ``application/x-www-form-urlencoded`` bodies, read here without a multipart parser.
A cross-site form cannot post here: the gate refuses a foreign Origin, and the login cookie is
``SameSite=Strict``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import parse_qs, quote, urlencode

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from clawmemory.auth import Access, Role
from clawmemory.core.jobs import JOBS
from clawmemory.errors import AuthenticationError, ClawMemoryError, InvalidInputError
from clawmemory.interfaces.rest.common import (
    ACCESS,
    COOKIE,
    Service,
    error_response,
    read_cursor,
    write_cursor,
)
from clawmemory.model import KINDS, legible

if TYPE_CHECKING:
    from fastapi import FastAPI
    from fastapi.templating import Jinja2Templates

    from clawmemory.memory import Memory

__all__ = ["install"]

WEB = Path(__file__).parent.parent / "web"  # interfaces/web: templates and static files
PAGE = 50  # memories per page when browsing


class Page:
    """One inspector request: its memory (namespace view), access and the template context."""

    def __init__(self, request: Request, mem: Memory, access: Access, service: Service) -> None:
        self.request = request
        self.mem = mem
        self.access = access
        self.service = service

    def namespaces(self) -> list[str]:
        if self.access.namespaces is not None:
            return list(self.access.namespaces)
        found = self.service.memory.store_backend.namespaces()
        return sorted({*found, self.service.memory.namespace, self.mem.namespace})

    def url(self, path: str, **params: Any) -> str:
        """A link inside the inspector, in this page's namespace."""
        query = {k: v for k, v in params.items() if v not in (None, "", False)}
        query["namespace"] = self.mem.namespace
        return f"{path}?{urlencode(query, doseq=True)}"

    def render(self, template: str, **context: Any) -> HTMLResponse:
        templates: Jinja2Templates = self.request.app.state.templates
        base = {"page": self, "namespace": self.mem.namespace, "kinds": list(KINDS),
                "can_write": self.access.allows(Role.WRITE),
                "can_admin": self.access.allows(Role.ADMIN)}
        return templates.TemplateResponse(self.request, template, {**base, **context})


async def _page(request: Request, namespace: Annotated[str | None, Query()] = None) -> Page:
    service: Service = request.app.state.service
    access: Access = request.scope[ACCESS]
    return Page(request, service.view(access, namespace), access, service)


Web = Annotated[Page, Depends(_page)]


async def _form(request: Request) -> dict[str, str]:
    body = (await request.body()).decode("utf-8", "replace")
    return {k: v[-1] for k, v in parse_qs(body, keep_blank_values=True).items()}


Form = Annotated[dict[str, str], Depends(_form)]
router = APIRouter(include_in_schema=False)


# --- login ---------------------------------------------------------------------------------------
@router.get("/login")
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(request, "login.html", {"next": _local(next),
                                                              "error": None})


@router.post("/login")
def login(request: Request, form: Form) -> Response:
    service: Service = request.app.state.service
    target = _local(form.get("next", "/"))
    try:
        service.access(form.get("key", "").strip() or "\x00")
    except AuthenticationError as exc:
        templates: Jinja2Templates = request.app.state.templates
        return templates.TemplateResponse(request, "login.html", {
            "next": target, "error": str(exc)}, status_code=401)
    response = RedirectResponse(target, 303)
    response.set_cookie(COOKIE, form["key"].strip(), httponly=True, samesite="strict",
                        secure=request.url.scheme == "https")
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", 303)
    response.delete_cookie(COOKIE)
    return response


def _local(target: str) -> str:
    """Only a path on this server: a login link must not send the user elsewhere."""
    return target if target.startswith("/") and not target.startswith("//") else "/"


# --- search and browse ---------------------------------------------------------------------------
@router.get("/")
def search(page: Web, q: str = "", mode: str = "auto", limit: int = 10) -> HTMLResponse:
    hits = page.mem.recall(q, limit=limit, mode=mode, touch=False) if q.strip() else []
    return page.render("search.html", q=q, mode=mode, limit=limit, hits=hits,
                       total=page.mem.count())


@router.get("/browse")
def browse(page: Web, kind: str = "", tag: str = "", session: str = "", after: str = "",
           before: str = "", invalid: bool = False, cursor: str | None = None) -> HTMLResponse:
    query = {"kind": kind, "tag": tag, "session": session, "after": after, "before": before,
             "invalid": invalid, "ns": page.mem.namespace}
    offset = read_cursor(cursor, query)
    records = page.mem.list(
        kind=kind or None, tags=[tag] if tag else (), session_id=session or None,
        include_invalid=invalid, created_since=after or None, created_until=before or None,
        limit=PAGE + 1, offset=offset)
    more = write_cursor(offset + PAGE, query) if len(records) > PAGE else None
    filters = {k: v for k, v in query.items() if k != "ns"}
    return page.render("browse.html", records=records[:PAGE], filters=filters,
                       next_url=page.url("/browse", **filters, cursor=more) if more else None)


# --- one memory ----------------------------------------------------------------------------------
@router.get("/memory/{ref}")
def memory(page: Web, ref: str) -> HTMLResponse:
    mem = page.mem
    record = mem.get(ref)
    links = mem.links(record.id)
    linked = {r.id: r for r in mem.neighbors(record.id, limit=max(len(links), 1))}
    sources = [(sid, _maybe(mem, sid)) for sid in record.source_ids]
    entities = mem.entities_of(record.id)
    return page.render(
        "memory.html", m=record, history=mem.history(record.id),
        links=[(lk, linked.get(lk.other_id)) for lk in links], sources=sources,
        derived=mem.derived(record.id), entities=entities,
        graph=_graph(mem, record.id, record.content, entities))


def _maybe(mem: Memory, ref: str) -> Any:
    try:
        return mem.get(ref)
    except ClawMemoryError:
        return None  # forgotten or archived: provenance still names it


def _graph(mem: Memory, center: str, content: str, entities: list[dict[str, Any]]
           ) -> dict[str, Any]:
    """The entity graph around a memory, laid out for an SVG: the memory in the middle, its
    entities on a ring, and up to three other memories of each entity further out."""
    width, height, mid = 760, 520, (380, 255)
    nodes: list[dict[str, Any]] = [{"x": mid[0], "y": mid[1], "label": _short(content, 28),
                                    "kind": "self", "id": center}]
    edges: list[tuple[float, float, float, float]] = []
    shown = entities[:8]
    for i, ent in enumerate(shown):
        angle = 2 * math.pi * i / max(len(shown), 1) - math.pi / 2
        ex, ey = mid[0] + 150 * math.cos(angle), mid[1] + 120 * math.sin(angle)
        nodes.append({"x": ex, "y": ey, "label": ent["name"], "kind": "entity",
                      "id": None, "type": ent["type"]})
        edges.append((mid[0], mid[1], ex, ey))
        others = [r for r in mem.entity_info(ent["name"], limit=4)["memories"]
                  if r.id != center][:3]
        for j, other in enumerate(others):
            a = angle + (j - (len(others) - 1) / 2) * 0.5
            ox, oy = mid[0] + 300 * math.cos(a), mid[1] + 205 * math.sin(a)
            nodes.append({"x": ox, "y": oy, "label": _short(other.content, 18),
                          "kind": "memory", "id": other.id})
            edges.append((ex, ey, ox, oy))
    return {"width": width, "height": height, "nodes": nodes, "edges": edges}


def _short(text: str, n: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[: n - 1] + "…"


@router.post("/memory/{ref}/correct")
def correct(page: Web, ref: str, form: Form) -> Response:
    page.access.require(Role.WRITE, "correcting a memory")
    new = page.mem.correct(ref, form.get("content", ""), reason=form.get("reason") or None)
    return RedirectResponse(page.url(f"/memory/{quote(new.id)}", done="corrected"), 303)


@router.post("/memory/{ref}/feedback")
def feedback(page: Web, ref: str, form: Form) -> Response:
    page.access.require(Role.WRITE, "changing a memory")
    action = form.get("action")
    if action not in ("reinforce", "demote", "confirm"):
        raise InvalidInputError("action must be reinforce, demote or confirm")
    record = getattr(page.mem, action)(ref)
    return RedirectResponse(page.url(f"/memory/{quote(record.id)}", done=f"{action}d"), 303)


@router.post("/memory/{ref}/forget")
def forget(page: Web, ref: str, form: Form) -> Response:
    page.access.require(Role.WRITE, "forgetting a memory")
    record = page.mem.get(ref)
    if form.get("confirm") != record.id:
        raise InvalidInputError("to forget this memory, confirm by ticking the box")
    done = page.mem.forget(record.id)
    return RedirectResponse(page.url("/browse", done=done.summary()), 303)


# --- archive and maintenance ---------------------------------------------------------------------
@router.get("/archive")
def archive(page: Web, cursor: str | None = None) -> HTMLResponse:
    query = {"archive": True, "ns": page.mem.namespace}
    offset = read_cursor(cursor, query)
    entries = page.mem.archived(limit=PAGE + 1, offset=offset)
    more = write_cursor(offset + PAGE, query) if len(entries) > PAGE else None
    return page.render("archive.html", entries=entries[:PAGE],
                       next_url=page.url("/archive", cursor=more) if more else None)


@router.post("/archive/{id_}/restore")
def restore(page: Web, id_: str) -> Response:
    page.access.require(Role.WRITE, "restoring a memory")
    record = page.mem.restore(id_)
    return RedirectResponse(page.url(f"/memory/{quote(record.id)}", done="restored"), 303)


@router.get("/maintenance")
def maintenance(page: Web) -> HTMLResponse:
    return page.render("maintenance.html", runs=page.mem.runs(50), jobs=JOBS, previews=None)


@router.post("/maintenance")
def run_maintenance(page: Web, form: Form) -> Response:
    page.access.require(Role.ADMIN, "running maintenance")
    job = form.get("job", "all")
    if form.get("dry_run"):
        previews = page.mem.preview_maintenance(job)
        return page.render("maintenance.html", runs=page.mem.runs(50), jobs=JOBS,
                           previews=previews)
    page.mem.maintain(job)
    return RedirectResponse(page.url("/maintenance", done=f"ran {job}"), 303)


# --- wiring --------------------------------------------------------------------------------------
def _when(value: float | None) -> str:
    if value is None:
        return "-"
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M")


def _error_page(request: Request, exc: ClawMemoryError) -> Response:
    response = error_response(exc, request.url.path)
    templates: Jinja2Templates = request.app.state.templates
    return templates.TemplateResponse(request, "error.html", {
        "status": response.status_code, "error": type(exc).__name__, "detail": str(exc)},
        status_code=response.status_code)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return legible(value)
    return str(value)


def install(app: FastAPI) -> None:
    """Add the inspector's pages and static files to ``app``."""
    from fastapi.staticfiles import StaticFiles
    from fastapi.templating import Jinja2Templates

    templates = Jinja2Templates(directory=str(WEB / "templates"))
    templates.env.filters["when"] = _when
    templates.env.filters["num"] = _fmt
    templates.env.globals["items"] = lambda m: sorted(m.items()) if isinstance(m, Mapping) else m
    app.state.templates = templates
    app.state.error_page = _error_page
    app.mount("/static", StaticFiles(directory=str(WEB / "static")), name="static")
    app.include_router(router)

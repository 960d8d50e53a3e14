"""One API, three implementations: every operation of ``MemoryAPI`` exists with the same
parameters on the local engine (``Memory``), the REST client (``RemoteMemory``) and the async
wrapper (``AsyncMemory``, as a coroutine), and is served by one REST route (or is listed below
as local-only, with the reason). A new operation fails here until it is in the protocol, its
twin in ``AsyncMemoryAPI``, all three implementations and the route table.

Each check is a function that returns its problems; the real classes must have none, and
``test_the_checks_catch_*`` feed each check a broken class to show that it can fail."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from clawmemory import Memory, Settings
from clawmemory.api import (
    LIFECYCLE,
    TIME_FIELDS,
    AsyncMemoryAPI,
    ListQuery,
    MemoryAPI,
    RecallQuery,
    TimeRange,
    operations,
)
from clawmemory.client import AsyncMemory, RemoteMemory
from clawmemory.errors import InvalidInputError

OPERATIONS = operations(MemoryAPI)

# operation -> (HTTP method, route) of the REST API (interfaces/rest_routes.py) that serves it.
# Several operations may share a route (a query parameter tells them apart).
ROUTES: dict[str, tuple[str, str]] = {
    "warm_up": ("GET", "/v1/health"),
    "store": ("POST", "/v1/memories"),
    "store_many": ("POST", "/v1/memories/batch"),
    "update": ("PATCH", "/v1/memories/{ref}"),
    "forget": ("DELETE", "/v1/memories/{ref}"),
    "derived": ("GET", "/v1/memories/{ref}/derived"),
    "forget_namespace": ("DELETE", "/v1/namespace"),
    "observe": ("POST", "/v1/observe"),
    "reinforce": ("POST", "/v1/memories/{ref}/reinforce"),
    "demote": ("POST", "/v1/memories/{ref}/demote"),
    "confirm": ("POST", "/v1/memories/{ref}/confirm"),
    "correct": ("POST", "/v1/memories/{ref}/correct"),
    "history": ("GET", "/v1/memories/{ref}/history"),
    "get": ("GET", "/v1/memories/{ref}"),
    "list": ("GET", "/v1/memories"),
    "count": ("GET", "/v1/count"),
    "search_by_metadata": ("GET", "/v1/memories"),  # list's metadata filter
    "recall": ("POST", "/v1/recall"),
    "stats": ("GET", "/v1/stats"),
    "link": ("POST", "/v1/links"),
    "unlink": ("DELETE", "/v1/links/{a}/{b}"),
    "neighbors": ("GET", "/v1/memories/{ref}/neighbors"),
    "links": ("GET", "/v1/memories/{ref}/links"),
    "entity_info": ("GET", "/v1/entities/{name}"),
    "entities_of": ("GET", "/v1/memories/{ref}/entities"),
    "archived": ("GET", "/v1/archive"),
    "restore": ("POST", "/v1/archive/{id_}/restore"),
    "maintain": ("POST", "/v1/maintenance/{job}"),
    "preview_maintenance": ("POST", "/v1/maintenance/{job}"),  # ?dry_run=true
    "runs": ("GET", "/v1/maintenance/runs"),
    "repair": ("POST", "/v1/repair"),
    "backfill": ("POST", "/v1/vectors/backfill"),
    "export_snapshot": ("GET", "/v1/export"),
    "import_snapshot": ("POST", "/v1/import"),
    "import_records": ("POST", "/v1/import"),  # the records travel as one snapshot
}

# Operations no route serves, and why. Keep this list short: anything a client of a server
# can ask for needs a route.
LOCAL_ONLY: dict[str, str] = {
    "flush": "the server writes its own queued access counts; a client has none",
    "reindex": "re-embeds every namespace of the database: run where the database is",
    "sync_notes": "reads the notes folder next to the database; a server syncs its own",
}


# --- the checks ------------------------------------------------------------------------------
def _same_default(a: Any, b: Any) -> bool:
    # A bare ``object()`` is a "not given" sentinel (update's key/event_time): each module may
    # have its own, and any one of them means the same.
    return a is b or (type(a) is object and type(b) is object) or bool(a == b)


def _params(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]


def signature_problems(name: str, expected: Callable[..., Any],
                       actual: Callable[..., Any]) -> list[str]:
    """How ``actual``'s parameters differ from ``expected``'s: names, order, kinds, defaults
    and annotations (as written)."""
    want, got = _params(expected), _params(actual)
    if [p.name for p in want] != [p.name for p in got]:
        return [f"{name}: parameters {[p.name for p in got]}, expected {[p.name for p in want]}"]
    problems = []
    for w, g in zip(want, got, strict=True):
        if w.kind != g.kind:
            problems.append(f"{name}({w.name}): {g.kind.description}, expected "
                            f"{w.kind.description}")
        if not _same_default(w.default, g.default):
            problems.append(f"{name}({w.name}): default {g.default!r}, expected {w.default!r}")
        if str(w.annotation) != str(g.annotation):
            problems.append(f"{name}({w.name}): annotated {g.annotation}, expected "
                            f"{w.annotation}")
    return problems


def implementation_problems(protocol: type[Any], cls: type[Any], *,
                            is_async: bool = False) -> list[str]:
    """The operations (and lifecycle members) of ``protocol`` that ``cls`` lacks or declares
    with other parameters; with ``is_async``, the operations that are not coroutines."""
    problems = []
    members = [n for n, v in vars(protocol).items() if not n.startswith("_") and callable(v)]
    for name in members:
        found = getattr(cls, name, None)
        if found is None or not callable(found):
            problems.append(f"{cls.__name__} has no {name}")
            continue
        problems += signature_problems(f"{cls.__name__}.{name}", getattr(protocol, name), found)
        if is_async and name not in LIFECYCLE and not inspect.iscoroutinefunction(found):
            problems.append(f"{cls.__name__}.{name} is not a coroutine function")
    return problems


def undeclared_operations(cls: type[Any], protocol: type[Any],
                          constructors: frozenset[str] = frozenset({"open"})) -> list[str]:
    """Public methods of ``cls`` that ``protocol`` does not declare (an operation added to one
    implementation only)."""
    public = {n for n in dir(cls) if not n.startswith("_") and "__mutmut_" not in n
              and callable(getattr(cls, n))}
    return sorted(public - set(dir(protocol)) - constructors)


def route_problems(ops: list[str], routes: dict[str, tuple[str, str]],
                   local_only: dict[str, str], served: set[tuple[str, str]]) -> list[str]:
    """Operations with neither a route nor a reason to have none, routes the REST API does not
    serve, and table entries for operations that do not exist."""
    problems = [f"{op}: no REST route (ROUTES) and not in LOCAL_ONLY" for op in ops
                if op not in routes and op not in local_only]
    problems += [f"{op}: in both ROUTES and LOCAL_ONLY" for op in ops
                 if op in routes and op in local_only]
    problems += [f"{op}: {m} {path} is not a route of the REST API"
                 for op, (m, path) in routes.items() if (m, path) not in served]
    problems += [f"{op}: not an operation of MemoryAPI" for op in {*routes, *local_only}
                 if op not in ops]
    return problems


def _served() -> set[tuple[str, str]]:
    from fastapi.routing import APIRoute

    from clawmemory.interfaces.rest.routes import router

    return {(method, route.path) for route in router.routes if isinstance(route, APIRoute)
            for method in route.methods or ()}


# --- the API's own shape -----------------------------------------------------------------------
def test_the_async_protocol_has_every_operation_with_the_same_parameters() -> None:
    assert operations(AsyncMemoryAPI) == OPERATIONS
    assert implementation_problems(MemoryAPI, AsyncMemoryAPI, is_async=True) == [
        "AsyncMemoryAPI has no close"]  # aclose instead: closing waits on a worker thread
    assert inspect.iscoroutinefunction(AsyncMemoryAPI.aclose)


@pytest.mark.parametrize("cls", [Memory, RemoteMemory], ids=lambda c: c.__name__)
def test_every_operation_exists_with_the_same_parameters(cls: type[Any]) -> None:
    assert implementation_problems(MemoryAPI, cls) == []


@pytest.mark.parametrize("cls", [Memory, RemoteMemory], ids=lambda c: c.__name__)
def test_no_implementation_has_an_operation_the_protocol_lacks(cls: type[Any]) -> None:
    assert undeclared_operations(cls, MemoryAPI) == []


def test_async_memory_offers_every_operation_as_a_coroutine() -> None:
    assert implementation_problems(AsyncMemoryAPI, AsyncMemory, is_async=True) == []
    assert undeclared_operations(AsyncMemory, AsyncMemoryAPI) == []


def test_every_operation_has_a_rest_route() -> None:
    assert route_problems(OPERATIONS, ROUTES, LOCAL_ONLY, _served()) == []


def _conforms(local: Memory, remote: RemoteMemory,
              wrapped: AsyncMemory) -> tuple[MemoryAPI, MemoryAPI, AsyncMemoryAPI]:
    # Checked by mypy (``mypy tests/core/test_api_parity.py``), types included: the engine's
    # conformance (client/remote.py and client/aio.py assert their own).
    return local, remote, wrapped


def test_no_implementation_inherits_another() -> None:
    for cls in (Memory, RemoteMemory, AsyncMemory):
        others = {Memory, RemoteMemory, AsyncMemory} - {cls}
        assert not others & set(cls.__mro__), cls


def test_the_implementations_are_instances_of_the_protocols(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "p.db", settings=Settings(embedder={"provider": "none"})) as mem:
        assert isinstance(mem, MemoryAPI)
        assert isinstance(AsyncMemory(mem), AsyncMemoryAPI)
        assert not isinstance(AsyncMemory(mem), MemoryAPI)  # no sync close


# --- the value objects ---------------------------------------------------------------------------
def test_recall_and_list_queries_hold_exactly_the_operations_parameters() -> None:
    recall = [p.name for p in _params(MemoryAPI.recall)]
    assert ["query", *RecallQuery.of("q").kwargs()] == recall
    assert list(ListQuery.of().kwargs()) == [p.name for p in _params(MemoryAPI.list)]
    for name, query in (("recall", RecallQuery.of("q")), ("list", ListQuery.of())):
        defaults = {p.name: p.default for p in _params(getattr(MemoryAPI, name))}
        assert query.kwargs() == {k: v for k, v in defaults.items() if k != "query"}, name
    assert [p.name for p in _params(MemoryAPI.recall)][-len(TIME_FIELDS):] == list(TIME_FIELDS)


def test_queries_are_built_from_keyword_arguments() -> None:
    q = RecallQuery.of("tea", limit=3, since="yesterday", as_of=10.0)
    assert (q.query, q.limit, q.time) == ("tea", 3, TimeRange(since="yesterday", as_of=10.0))
    assert q.kwargs()["since"] == "yesterday" and q.kwargs()["until"] is None
    assert ListQuery.of(order="oldest", until=5).time.given() == {"until": 5}
    with pytest.raises(InvalidInputError, match="recall\\(\\) got an unknown argument 'sinse'"):
        RecallQuery.of("tea", sinse="yesterday")
    with pytest.raises(InvalidInputError, match="list\\(\\) got an unknown argument 'mode'"):
        ListQuery.of(mode="keyword")


def test_a_time_range_as_json() -> None:
    from datetime import UTC, datetime

    when = datetime(2024, 3, 1, tzinfo=UTC)
    assert TimeRange(since=when, until="2 weeks ago").to_json() == {
        "since": "2024-03-01T00:00:00+00:00", "until": "2 weeks ago"}
    assert TimeRange().given() == {}


# --- each check can fail ------------------------------------------------------------------------
class _Broken:
    """An implementation with one of each mistake the checks must catch."""

    def store(self, content: str, *, key: str | None = None) -> str:  # parameters missing
        return content

    def get(self, ref: str) -> None:  # renamed parameter
        return None

    def neighbors(self, id_or_key: str, limit: int = 5) -> None:  # other default
        return None

    def unlink(self, a: str, /, b: str) -> bool:  # other kind
        return False

    def confirm(self, id_or_key: int) -> None:  # other annotation
        return None

    def recall_everything(self) -> None:  # not in the protocol
        return None


def test_the_checks_catch_a_missing_or_different_operation() -> None:
    problems = implementation_problems(MemoryAPI, _Broken)
    assert "_Broken has no recall" in problems
    assert any(p.startswith("_Broken.store: parameters ['content', 'key']") for p in problems)
    assert any(p.startswith("_Broken.get: parameters ['ref']") for p in problems)
    assert "_Broken.neighbors(limit): default 5, expected 10" in problems
    assert any(p.startswith("_Broken.unlink(a): positional-only") for p in problems)
    assert "_Broken.confirm(id_or_key): annotated int, expected str" in problems
    assert undeclared_operations(_Broken, MemoryAPI) == ["recall_everything"]


def test_the_checks_catch_an_operation_that_is_not_a_coroutine() -> None:
    class SyncTwin(AsyncMemory):
        def stats(self) -> dict[str, Any]:  # type: ignore[override]
            return {}

    assert implementation_problems(AsyncMemoryAPI, SyncTwin, is_async=True) == [
        "SyncTwin.stats is not a coroutine function"]


def test_the_checks_catch_an_operation_without_a_route() -> None:
    served = _served()
    routes = {op: r for op, r in ROUTES.items() if op != "recall"}
    assert route_problems(OPERATIONS, routes, LOCAL_ONLY, served) == [
        "recall: no REST route (ROUTES) and not in LOCAL_ONLY"]
    moved = {**ROUTES, "recall": ("POST", "/v1/search")}
    assert route_problems(OPERATIONS, moved, LOCAL_ONLY, served) == [
        "recall: POST /v1/search is not a route of the REST API"]
    assert route_problems([*OPERATIONS, "summarize"], ROUTES, LOCAL_ONLY, served) == [
        "summarize: no REST route (ROUTES) and not in LOCAL_ONLY"]

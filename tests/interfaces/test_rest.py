"""The REST API (``/v1``) over real HTTP: every engine operation, problem details, cursors,
request limits and the OpenAPI document."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clawmemory import Memory, Settings
from rest_server import problem, serving

QUICK = Settings(embedder={"provider": "none"})


@pytest.fixture
def api(tmp_path: Path) -> Iterator[httpx.Client]:
    with Memory.open(tmp_path / "rest.db", settings=QUICK) as mem, serving(mem) as url, \
            httpx.Client(base_url=url, timeout=30) as client:
        yield client


def _store(api: httpx.Client, content: str, **fields: Any) -> str:
    response = api.post("/v1/memories", json={"content": content, **fields})
    assert response.status_code == 201, response.text
    id_: str = response.json()["id"]
    assert response.headers["location"] == f"/v1/memories/{id_}"
    return id_


def test_store_get_recall_and_forget(api: httpx.Client) -> None:
    id_ = _store(api, "User prefers dark mode in every editor", kind="preference",
                 tags=["ui"], key="ui-theme", metadata={"app": "vscode"})
    got = api.get("/v1/memories/ui-theme").json()
    assert (got["id"], got["kind"], got["tags"], got["metadata"]) == (
        id_, "preference", ["ui"], {"app": "vscode"})
    assert api.get(f"/v1/memories/{id_}").json() == got
    hits = api.post("/v1/recall", json={"query": "dark mode", "mode": "keyword"}).json()["hits"]
    assert [h["memory"]["id"] for h in hits] == [id_]
    explain = hits[0]["explain"]
    assert explain["matched_terms"] == ["dark", "mode"]
    assert explain["lists"]["keyword"]["rank"] == 1
    assert set(explain["factors"]) == {"reinforcement", "recency", "confidence"}
    assert hits[0]["score"] == pytest.approx(explain["final"])
    assert api.delete("/v1/memories/ui-theme").json() == {
        "deleted": 1, "id": id_, "key": "ui-theme", "versions": [], "derived": [],
        "reopened_sessions": []}
    assert problem(api.get(f"/v1/memories/{id_}")) == (
        404, "NotFoundError", f"no memory with id or key {id_!r} in namespace 'default'")
    assert api.post("/v1/recall", json={"query": "dark mode"}).json() == {"hits": []}


def test_feedback_correction_and_history(api: httpx.Client) -> None:
    id_ = _store(api, "HMAC excludes an empty body", key="hmac")
    assert api.post(f"/v1/memories/{id_}/reinforce", json={}).json()["score"] == 3
    assert api.post(f"/v1/memories/{id_}/demote", json={"weight": 2}).json()["score"] == 1
    confirmed = api.post(f"/v1/memories/{id_}/confirm").json()
    assert (confirmed["decay_rate"], confirmed["confidence"]) == (0.0, 1.0)
    new = api.post("/v1/memories/hmac/correct", json={
        "content": "HMAC covers the raw body, even when empty", "reason": "API v2"}).json()
    assert (new["supersedes"], new["key"], new["score"]) == (id_, "hmac", 1)
    chain = api.get("/v1/memories/hmac/history").json()
    assert [r["id"] for r in chain] == [id_, new["id"]]
    assert chain[0]["valid_until"] is not None
    assert chain[1]["metadata"] == {"correction_reason": "API v2"}
    patched = api.patch(f"/v1/memories/{new['id']}", json={"tags": ["api"], "key": None})
    assert (patched.json()["tags"], patched.json()["key"]) == (["api"], None)
    assert api.get(f"/v1/memories/{new['id']}/derived").json() == []


def test_list_filters_and_cursor_paging(api: httpx.Client) -> None:
    ids = api.post("/v1/memories/batch", json={"items": [
        {"content": f"note {i}", "kind": "event" if i % 2 else "fact",
         "tags": ["even"] if i % 2 == 0 else [], "session_id": "s1" if i < 4 else "s2"}
        for i in range(11)]}).json()["ids"]
    assert len(ids) == 11
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {"limit": 4, "order": "oldest"}
        if cursor:
            params["cursor"] = cursor
        page = api.get("/v1/memories", params=params).json()
        seen += [m["id"] for m in page["memories"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert (seen, pages) == (ids, 3)
    events = api.get("/v1/memories", params={"kind": "event", "order": "oldest"}).json()
    assert [m["id"] for m in events["memories"]] == ids[1::2]
    tagged = api.get("/v1/memories", params={"tag": "even", "session_id": "s1",
                                             "order": "oldest"}).json()
    assert [m["id"] for m in tagged["memories"]] == [ids[0], ids[2]]
    assert api.get("/v1/count", params={"kind": "event"}).json() == {"count": 5}
    first = api.get("/v1/memories", params={"limit": 4}).json()["next_cursor"]
    assert problem(api.get("/v1/memories", params={"limit": 4, "kind": "event",
                                                   "cursor": first})) == (
        422, "InvalidInputError", "cursor belongs to another query: page with the same filters")
    assert problem(api.get("/v1/memories", params={"cursor": "garbage!"}))[0] == 422


def test_links_entities_stats_and_portability(api: httpx.Client) -> None:
    a = _store(api, "Caroline moved to Lisbon", key="a")
    b = _store(api, "Caroline adopted a dog", key="b")
    assert api.post("/v1/links", json={"a": "a", "b": "b", "strength": 2}).json() == {
        "linked": True}
    assert api.post("/v1/links", json={"a": "a", "b": "nope"}).json() == {"linked": False}
    assert api.get("/v1/memories/a/links").json() == [
        {"other_id": b, "strength": 2.0, "origin": "manual"}]
    assert [r["id"] for r in api.get("/v1/memories/a/neighbors").json()] == [b]
    names = [e["name"] for e in api.get(f"/v1/memories/{a}/entities").json()]
    assert "Caroline" in names
    entity = api.get("/v1/entities/Caroline").json()
    assert {m["id"] for m in entity["memories"]} == {a, b}
    stats = api.get("/v1/stats").json()
    assert (stats["total"], stats["links"], stats["namespace"]) == (2, 1, "default")
    snapshot = api.get("/v1/export")
    assert snapshot.headers["content-type"] == "application/json"
    assert api.delete("/v1/links/a/b").json() == {"unlinked": True}
    other = {"namespace": "copy"}
    report = api.post("/v1/import", params=other, json={"snapshot": snapshot.json()}).json()
    assert report == {"created": 2, "skipped": 0, "links": 1, "dry_run": False}
    again = api.post("/v1/import", params=other, json={"snapshot": snapshot.text,
                                                       "dry_run": True}).json()
    assert (again["created"], again["skipped"]) == (0, 2)
    assert api.get("/v1/memories/a", params=other).json()["id"] == a
    assert problem(api.delete("/v1/namespace", params={**other, "confirm": "default"}))[0] == 422
    assert api.delete("/v1/namespace", params={**other, "confirm": "copy"}).json() == {
        "deleted": 2, "namespace": "copy", "id": None, "key": None}
    assert api.get("/v1/count", params=other).json() == {"count": 0}


def test_narrative_and_task_provenance_over_http(api: httpx.Client) -> None:
    """003's narrative_id/task_id: set by POST /v1/memories (an integer is its decimal text), the
    batch and /v1/observe; read back; filtered on by GET /v1/memories, /v1/count and recall."""
    quest = _store(api, "The dragon sleeps under the mountain", narrative_id=7, task_id="t-1")
    other = api.post("/v1/memories/batch", json={"items": [
        {"content": "The dragon hoards copper", "narrative_id": "8", "task_id": "t-1"}]}
    ).json()["ids"][0]
    turn = api.post("/v1/observe", json={"role": "user", "content": "I fed the dragon",
                                         "session_id": "s-1", "narrative_id": 7}).json()["id"]
    got = api.get(f"/v1/memories/{quest}").json()
    assert (got["narrative_id"], got["task_id"]) == ("7", "t-1")
    assert api.get(f"/v1/memories/{turn}").json()["narrative_id"] == "7"
    listed = api.get("/v1/memories", params={"narrative_id": "7", "order": "oldest"}).json()
    assert [m["id"] for m in listed["memories"]] == [quest, turn]
    assert api.get("/v1/count", params={"task_id": "t-1"}).json() == {"count": 2}
    assert api.get("/v1/count", params={"task_id": "t-1", "narrative_id": "8"}).json() == {
        "count": 1}
    hits = api.post("/v1/recall", json={"query": "dragon", "mode": "keyword",
                                        "narrative_id": 8}).json()["hits"]
    assert [(h["memory"]["id"], h["memory"]["task_id"]) for h in hits] == [(other, "t-1")]
    assert problem(api.post("/v1/memories", json={"content": "x", "task_id": [1]}))[:2] == (
        422, "InvalidInputError")


def test_maintenance_archive_and_observe(api: httpx.Client) -> None:
    turn = api.post("/v1/observe", json={"role": "user", "content": "I moved to Lisbon",
                                         "session_id": "s-1"})
    assert turn.status_code == 201
    preview = api.post("/v1/maintenance/decay", params={"dry_run": True}).json()
    assert preview["dry_run"] is True
    assert [p["job"] for p in preview["previews"]] == ["decay"]
    assert api.get("/v1/maintenance/runs").json() == []  # a preview records nothing
    runs = api.post("/v1/maintenance/consolidate").json()["runs"]
    assert [(r["job"], r["outcome"]) for r in runs] == [("consolidate", "skipped")]
    assert runs[0]["message"].startswith("skipped: no LLM configured")
    assert [r["job"] for r in api.get("/v1/maintenance/runs").json()] == ["consolidate"]
    assert problem(api.post("/v1/maintenance/nonsense"))[:2] == (422, "InvalidInputError")
    assert api.get("/v1/archive").json() == {"memories": [], "next_cursor": None}
    assert problem(api.post("/v1/archive/nope/restore"))[:2] == (404, "NotFoundError")
    assert set(api.post("/v1/repair").json()) >= {"vectors"}


def test_bad_requests_are_problem_details(api: httpx.Client) -> None:
    assert problem(api.post("/v1/memories", json={"content": ""})) == (
        422, "InvalidInputError", "content is empty")
    status, error, detail = problem(api.post("/v1/memories", json={"content": "x", "colour": 1}))
    assert (status, error) == (422, "InvalidInputError") and detail.startswith("colour:")
    bad_json = api.post("/v1/memories", content=b"{not json",
                        headers={"content-type": "application/json"})
    assert problem(bad_json)[:2] == (422, "InvalidInputError")
    assert problem(api.post("/v1/recall", json={"query": "x", "mode": "psychic"}))[0] == 422
    assert problem(api.get("/v1/nowhere"))[:2] == (404, "NotFoundError")
    assert problem(api.put("/v1/memories"))[0] == 405
    big = api.post("/v1/memories", json={"content": "x" * 1_100_000})
    assert problem(big) == (413, "InvalidInputError", "the request body is over 1,048,576 bytes"
                                                      " ([server] max_request_bytes)")
    # The server goes on serving.
    assert api.get("/v1/health").json()["status"] == "ok"


def test_openapi_documents_every_route_with_examples(api: httpx.Client) -> None:
    doc = api.get("/openapi.json").json()
    paths = doc["paths"]
    for path in ("/v1/memories", "/v1/memories/{ref}", "/v1/recall", "/v1/memories/batch",
                 "/v1/links", "/v1/export", "/v1/import", "/v1/maintenance/{job}"):
        assert path in paths, path
    assert set(paths["/v1/memories/{ref}"]) == {"get", "patch", "delete"}
    schemas = doc["components"]["schemas"]
    for name in ("StoreIn", "RecallIn", "RecallOut", "MemoryOut", "Problem", "CorrectIn"):
        assert schemas[name]["examples"], name
    assert "201" in paths["/v1/memories"]["post"]["responses"]
    assert "404" in paths["/v1/memories/{ref}"]["get"]["responses"]
    assert not any(p.startswith(("/memory", "/browse", "/login")) for p in paths)
    assert api.get("/docs").status_code != 200  # no page that loads scripts from a CDN
    json.dumps(doc)

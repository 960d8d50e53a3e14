"""``RemoteMemory``: the memory API (``clawmemory.api.MemoryAPI``) over a clawmemory server's
REST API (httpx).

``Memory.open("http://host:8765", api_key=...)`` returns one, so code written against a local
store runs unchanged against a server: every operation of ``MemoryAPI`` is here with the same
signature (``tests/core/test_api_parity.py`` checks it; nothing is inherited from the engine),
returning the same types (``MemoryRecord``, ``Hit``, ``RunRecord``...) and raising the same
errors, rebuilt from the server's problem details (``error`` names the type). Nothing
is loaded in this process: no embedding model, no database.

The few operations that only make sense where the database is (``reindex``, which re-embeds
every namespace, and ``backfill``/``import_records`` progress callbacks) are refused or
approximated as each method says.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from clawmemory import errors
from clawmemory.api import (
    ALL_JOBS,
    TIME_FIELDS,
    UNSET,
    ListQuery,
    MemoryAPI,
    NotesReport,
    RecallQuery,
    TimeRange,
)
from clawmemory.config import Settings
from clawmemory.errors import ClawMemoryError, ConfigError, StorageError
from clawmemory.model import (
    ArchiveEntry,
    Explanation,
    Forgotten,
    Hit,
    ImportReport,
    Kind,
    Link,
    MemoryRecord,
    ParsedImport,
    RunRecord,
)
from clawmemory.snapshot import dump_snapshot
from clawmemory.tls import tls_context

__all__ = ["DEFAULT_TIMEOUT_S", "RemoteMemory"]

DEFAULT_TIMEOUT_S = 60.0  # a maintenance run or a large import may take a while


def _error(response: httpx.Response) -> ClawMemoryError:
    """The engine's error the server reported (problem details), or a StorageError."""
    try:
        body = response.json()
        name, detail = str(body["error"]), str(body["detail"])
    except (ValueError, KeyError, TypeError):
        return StorageError(f"the server answered {response.status_code}: "
                            f"{response.text[:200]}")
    kind = getattr(errors, name, None)
    if isinstance(kind, type) and issubclass(kind, ClawMemoryError):
        return kind(detail)
    return StorageError(detail) if response.status_code >= 500 else errors.InvalidInputError(
        detail)


def _record(data: Mapping[str, Any]) -> MemoryRecord:
    return MemoryRecord.from_dict(data)


def _hit(data: Mapping[str, Any]) -> Hit:
    e = data["explain"]
    explain = Explanation(tuple(e["matched_terms"]), e["lists"], e["fused"], e["factors"],
                          e["via"], e["final"], e.get("floor"),  # an older server has none
                          e.get("superseded_by"))
    return Hit(_record(data["memory"]), float(data["score"]), explain)


def _run(data: Mapping[str, Any]) -> RunRecord:
    return RunRecord(int(data["id"]), data["namespace"], data["job"], data["started_at"],
                     data["finished_at"], data["outcome"], dict(data["counts"]), data["message"])


def _list(value: Iterable[str] | str | None) -> builtins.list[str] | str | None:
    if value is None or isinstance(value, str):
        return value
    return builtins.list(value)


def _recall_body(q: RecallQuery) -> dict[str, Any]:
    return {**q.time.to_json(), "query": q.query, "limit": q.limit, "kind": _list(q.kind),
            "tags": _list(q.tags), "session_id": q.session_id,
            "exclude_session_id": q.exclude_session_id, "narrative_id": q.narrative_id,
            "task_id": q.task_id, "metadata": q.metadata,
            "include_invalid": q.include_invalid,
            "mode": q.mode.lower() if isinstance(q.mode, str) else q.mode, "depth": q.depth,
            "archive": q.archive, "touch": q.touch}


def _list_params(q: ListQuery) -> dict[str, Any]:
    return {"kind": _list(q.kind), "tag": _list(q.tags), "session_id": q.session_id,
            "narrative_id": q.narrative_id, "task_id": q.task_id, "source": q.source,
            "include_invalid": q.include_invalid, "order": q.order,
            "metadata": None if q.metadata is None else json.dumps(dict(q.metadata)),
            **q.time.to_json(), "limit": q.limit, "offset": q.offset}


class RemoteMemory:
    """``MemoryAPI`` over HTTP. Thread-safe (one pooled httpx client); close it when done."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        namespace: str | None = None,
        settings: Settings | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
        client: httpx.Client | None = None,
    ) -> None:
        """Talk to the server at ``url`` (``http://host:port``). ``namespace`` None: the key's
        first namespace (without keys, the server's)."""
        self.url = url.rstrip("/")
        self.settings = settings or Settings()
        self.namespace = namespace or ""  # "" until the server says which one it is
        self.clock: Callable[[], float] = time.time
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._owned = client is None
        self._http = client or httpx.Client(base_url=self.url, headers=headers, timeout=timeout,
                                            trust_env=False, verify=tls_context(False))
        self._api_key = api_key
        if not self.namespace:
            self.namespace = str(self._call("GET", "/v1/stats")["namespace"])

    # --- transport ---------------------------------------------------------------------------
    def _call(self, method: str, path: str, *, body: Any = None,
              params: Mapping[str, Any] | None = None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if self.namespace:
            query["namespace"] = self.namespace
        try:
            response = self._http.request(method, path, params=query,
                                          json=body if body is not None else None)
        except httpx.HTTPError as exc:
            raise StorageError(f"cannot reach the clawmemory server at {self.url}: {exc}"
                               ) from exc
        if response.status_code >= 400:
            raise _error(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    def _ref(self, id_or_key: str) -> str:
        if not isinstance(id_or_key, str):
            raise errors.InvalidInputError(f"an id or key is text, not "
                                           f"{type(id_or_key).__name__}")
        return quote(id_or_key, safe="")

    # --- the service -------------------------------------------------------------------------
    def warm_up(self) -> str:
        return f"clawmemory server at {self.url}: {self._call('GET', '/v1/health')['status']}"

    def with_namespace(self, namespace: str) -> RemoteMemory:
        """The same server (and connection pool) seen as another tenant."""
        view = RemoteMemory.__new__(RemoteMemory)
        view.__dict__.update(self.__dict__)
        view.namespace = namespace
        view._owned = False
        return view

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def flush(self) -> None:
        """Nothing to write from here: the server records what its recalls accessed, and its
        own ``flush`` runs when it stops."""

    def __enter__(self) -> RemoteMemory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

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
    ) -> str:
        body = {"content": content, "key": key, "kind": kind, "tags": _list(tags),
                "metadata": metadata, "session_id": session_id, "narrative_id": narrative_id,
                "task_id": task_id, "event_time": event_time,
                "source": source, "source_role": source_role,
                "source_ids": _list(source_ids), "confidence": confidence}
        return str(self._call("POST", "/v1/memories", body=body)["id"])

    def store_many(
        self, items: Iterable[Mapping[str, Any]], *, batch_size: int | None = None
    ) -> builtins.list[str]:
        ids: builtins.list[str] = []
        batch: builtins.list[dict[str, Any]] = []
        for item in items:  # the server takes at most 10,000 per request
            batch.append({k: _list(v) if k in ("tags", "source_ids") else v
                          for k, v in dict(item).items()})
            if len(batch) >= 5000:
                ids += self._call("POST", "/v1/memories/batch", body={"items": batch})["ids"]
                batch = []
        if batch:
            ids += self._call("POST", "/v1/memories/batch", body={"items": batch})["ids"]
        return ids

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
    ) -> MemoryRecord:
        body: dict[str, Any] = {k: v for k, v in (
            ("content", content), ("tags", _list(tags)), ("metadata", metadata),
            ("kind", kind)) if v is not None}
        if key is not UNSET:
            body["key"] = key
        if event_time is not UNSET:
            body["event_time"] = event_time
        return _record(self._call("PATCH", f"/v1/memories/{self._ref(id_or_key)}", body=body))

    def forget(self, id_or_key: str) -> Forgotten:
        """Forget for good; returns what the server reports went (the record as it was)."""
        record = self.get(id_or_key)
        done = self._call("DELETE", f"/v1/memories/{self._ref(record.id)}")
        return Forgotten(record, tuple(done.get("versions") or ()),
                         tuple(done.get("derived") or ()),
                         tuple(done.get("reopened_sessions") or ()))

    def forget_namespace(self) -> int:
        return int(self._call("DELETE", "/v1/namespace",
                              params={"confirm": self.namespace})["deleted"])

    def observe(
        self,
        role: str,
        content: str,
        session_id: str,
        *,
        narrative_id: str | int | None = None,
        task_id: str | int | None = None,
    ) -> str:
        body = {"role": role, "content": content, "session_id": session_id,
                "narrative_id": narrative_id, "task_id": task_id}
        return str(self._call("POST", "/v1/observe", body=body)["id"])

    # --- feedback and correction -------------------------------------------------------------
    def reinforce(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        return _record(self._call("POST", f"/v1/memories/{self._ref(id_or_key)}/reinforce",
                                  body={"weight": weight}))

    def demote(self, id_or_key: str, weight: int | None = None) -> MemoryRecord:
        return _record(self._call("POST", f"/v1/memories/{self._ref(id_or_key)}/demote",
                                  body={"weight": weight}))

    def confirm(self, id_or_key: str) -> MemoryRecord:
        return _record(self._call("POST", f"/v1/memories/{self._ref(id_or_key)}/confirm"))

    def correct(
        self,
        id_or_key: str,
        new_content: str,
        *,
        tags: Iterable[str] | str | None = None,
        reason: str | None = None,
    ) -> MemoryRecord:
        body = {"content": new_content, "tags": _list(tags), "reason": reason}
        return _record(self._call("POST", f"/v1/memories/{self._ref(id_or_key)}/correct",
                                  body=body))

    def history(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        return [_record(r) for r in
                self._call("GET", f"/v1/memories/{self._ref(id_or_key)}/history")]

    def derived(self, id_or_key: str) -> builtins.list[MemoryRecord]:
        return [_record(r) for r in
                self._call("GET", f"/v1/memories/{self._ref(id_or_key)}/derived")]

    # --- reading -----------------------------------------------------------------------------
    def get(self, id_or_key: str) -> MemoryRecord:
        return _record(self._call("GET", f"/v1/memories/{self._ref(id_or_key)}"))

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
    ) -> builtins.list[MemoryRecord]:
        q = ListQuery(kind=kind, tags=tags, session_id=session_id, narrative_id=narrative_id,
                      task_id=task_id, metadata=metadata, source=source,
                      include_invalid=include_invalid, limit=limit, offset=offset, order=order,
                      time=TimeRange(since, until, created_since, created_until, as_of))
        data = self._call("GET", "/v1/memories", params=_list_params(q))
        return [_record(r) for r in data["memories"]]

    def count(
        self,
        *,
        kind: str | Iterable[str] | None = None,
        include_invalid: bool = False,
        **filters: Any,
    ) -> int:
        allowed = {"tags", "metadata", "session_id", "exclude_session_id", "narrative_id",
                   "task_id", "source", *TIME_FIELDS}
        if unknown := sorted(set(filters) - allowed):
            raise errors.InvalidInputError(f"count() got an unknown filter {unknown[0]!r};"
                                           f" filters: {', '.join(sorted(allowed))}")
        metadata = filters.get("metadata")
        params = {"kind": _list(kind), "include_invalid": include_invalid,
                  "tag": _list(filters.get("tags")), "session_id": filters.get("session_id"),
                  "exclude_session_id": filters.get("exclude_session_id"),
                  "narrative_id": filters.get("narrative_id"),
                  "task_id": filters.get("task_id"), "source": filters.get("source"),
                  "metadata": None if metadata is None else json.dumps(dict(metadata)),
                  **TimeRange.from_kwargs(filters).to_json()}
        return int(self._call("GET", "/v1/count", params=params)["count"])

    def search_by_metadata(
        self, key: str, value: Any, *, limit: int = 100
    ) -> builtins.list[MemoryRecord]:
        if not isinstance(key, str):
            raise errors.InvalidInputError(f"metadata key must be text, not {type(key).__name__}")
        return self.list(metadata={key: value}, limit=limit)

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
    ) -> builtins.list[Hit]:
        q = RecallQuery(query, limit=limit, kind=kind, tags=tags, session_id=session_id,
                        exclude_session_id=exclude_session_id, narrative_id=narrative_id,
                        task_id=task_id, metadata=metadata,
                        include_invalid=include_invalid, mode=mode, depth=depth,
                        archive=archive, touch=touch,
                        time=TimeRange(since, until, created_since, created_until, as_of))
        body = _recall_body(q)
        return [_hit(h) for h in self._call("POST", "/v1/recall", body=body)["hits"]]

    # --- graph and entities ------------------------------------------------------------------
    def link(self, a: str, b: str, *, strength: float = 1.0, origin: str = "manual") -> bool:
        body = {"a": a, "b": b, "strength": strength, "origin": origin}
        return bool(self._call("POST", "/v1/links", body=body)["linked"])

    def unlink(self, a: str, b: str) -> bool:
        return bool(self._call("DELETE", f"/v1/links/{self._ref(a)}/{self._ref(b)}")
                    ["unlinked"])

    def neighbors(self, id_or_key: str, limit: int = 10) -> builtins.list[MemoryRecord]:
        return [_record(r) for r in self._call(
            "GET", f"/v1/memories/{self._ref(id_or_key)}/neighbors", params={"limit": limit})]

    def links(self, id_or_key: str, *, limit: int = 50) -> builtins.list[Link]:
        return [Link(d["other_id"], d["strength"], d["origin"]) for d in self._call(
            "GET", f"/v1/memories/{self._ref(id_or_key)}/links", params={"limit": limit})]

    def entity_info(self, name: str, *, limit: int = 20) -> dict[str, Any]:
        data: dict[str, Any] = self._call("GET", f"/v1/entities/{self._ref(name)}",
                                          params={"limit": limit})
        return {**data, "memories": [_record(r) for r in data["memories"]]}

    def entities_of(self, id_or_key: str) -> builtins.list[dict[str, Any]]:
        found: builtins.list[dict[str, Any]] = self._call(
            "GET", f"/v1/memories/{self._ref(id_or_key)}/entities")
        return found

    def stats(self) -> dict[str, Any]:
        data: dict[str, Any] = self._call("GET", "/v1/stats")
        return data

    # --- archive and maintenance -------------------------------------------------------------
    def archived(self, *, limit: int = 50, offset: int = 0) -> builtins.list[ArchiveEntry]:
        data = self._call("GET", "/v1/archive", params={"limit": limit, "offset": offset})
        return [ArchiveEntry(_record(d), float(d["archived_at"])) for d in data["memories"]]

    def restore(self, id_: str) -> MemoryRecord:
        return _record(self._call("POST", f"/v1/archive/{self._ref(id_)}/restore"))

    def maintain(self, job: str = ALL_JOBS) -> builtins.list[RunRecord]:
        data = self._call("POST", f"/v1/maintenance/{self._ref(job)}")
        return [_run(r) for r in data["runs"]]

    def preview_maintenance(self, job: str = ALL_JOBS) -> builtins.list[dict[str, Any]]:
        data = self._call("POST", f"/v1/maintenance/{self._ref(job)}",
                          params={"dry_run": True})
        previews: builtins.list[dict[str, Any]] = data["previews"]
        return previews

    def runs(self, limit: int = 20, *, job: str | None = None) -> builtins.list[RunRecord]:
        return [_run(r) for r in self._call("GET", "/v1/maintenance/runs",
                                            params={"limit": limit, "job": job})]

    def repair(self) -> dict[str, int]:
        counts: dict[str, int] = self._call("POST", "/v1/repair")
        return counts

    def backfill(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int:
        """Embed what waits for a vector, on the server (``progress`` is called once, at the
        end)."""
        done = int(self._call("POST", "/v1/vectors/backfill")["embedded"])
        if progress:
            progress(done, done)
        return done

    def reindex(
        self, *, progress: Callable[[int, int], None] | None = None, batch_size: int = 256
    ) -> int:
        raise ConfigError("reindex re-embeds every namespace of the database: run `clawmem"
                          " reindex` where the database is, not through a server")

    def sync_notes(
        self, *, progress: Callable[[int, int], None] | None = None
    ) -> NotesReport:
        raise ConfigError("sync_notes reads the notes folder next to the database: run `clawmem"
                          " sync` where the database is (a server with storage.mirror_dir set"
                          " syncs its notes itself)")

    # --- portability -------------------------------------------------------------------------
    def export_snapshot(self) -> str:
        try:  # the snapshot's own text, byte for byte (not parsed and dumped again)
            response = self._http.get("/v1/export", params={"namespace": self.namespace})
        except httpx.HTTPError as exc:
            raise StorageError(f"cannot reach the clawmemory server at {self.url}: {exc}"
                               ) from exc
        if response.status_code >= 400:
            raise _error(response)
        return response.text

    def import_snapshot(
        self, text: str, *, source: str = "<snapshot>", dry_run: bool = False
    ) -> ImportReport:
        if not isinstance(text, str):
            raise errors.InvalidInputError(f"a snapshot is JSON text, not {type(text).__name__}")
        data = self._call("POST", "/v1/import", body={"snapshot": text, "source": source,
                                                      "dry_run": dry_run})
        return ImportReport(created=data["created"], skipped=data["skipped"],
                            links=data["links"])

    def import_records(
        self,
        parsed: ParsedImport,
        *,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        """Send already-read records to the server as one snapshot (all or nothing there)."""
        links: dict[str, builtins.list[Link]] = {}
        for a, b, strength, origin in parsed.links:
            links.setdefault(a, []).append(Link(b, strength, origin))
            links.setdefault(b, []).append(Link(a, strength, origin))
        text = dump_snapshot(self.namespace, parsed.records, links)
        report = self.import_snapshot(text, source="<import>", dry_run=dry_run)
        if progress:
            progress(len(parsed.records), len(parsed.records))
        return report



if TYPE_CHECKING:  # mypy proves the class implements the protocol, signature by signature
    _IMPLEMENTS: type[MemoryAPI] = RemoteMemory

"""JSON file backend (000 JsonMemory): the whole set in RAM, persisted to one JSON file.

Every write rewrites the file atomically (temp file in the same folder, fsync, rename), so a
crash leaves either the old or the new file, never a torn one. Reads both of 000's shapes: the
legacy array ``[{entry}, ...]`` and the object ``{"entries": [...], "embeddings": {...}}``.
Writes the array shape, or the object shape when embeddings exist (as 000 does). Meant for one
process; use SQLite when several processes share a store.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clawmemory import private
from clawmemory.backends.base import Link, RunRecord, StoreStats
from clawmemory.backends.memory.store import MemoryStore
from clawmemory.errors import StorageError
from clawmemory.model import DEFAULT_NAMESPACE, MemoryRecord
from clawmemory.snapshot import parse_snapshot

__all__ = ["JSONFileStore"]

_MUTATORS = ("put", "put_many", "replace", "delete", "delete_namespace", "touch", "link", "unlink")


class JSONFileStore(MemoryStore):
    backend = "json"

    def __init__(self, path: str | Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.path = Path(path)
        self.embeddings: dict[str, builtins.list[float]] = {}
        self._batch = 0
        if self.path.exists():
            self._load()
            private.warn_if_shared(self.path)

    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}") from exc
        if not text.strip():
            return
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StorageError(f"{self.path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
        entries = doc if isinstance(doc, list) else doc.get("entries", [])
        if isinstance(doc, dict):
            self.embeddings = dict(doc.get("embeddings") or {})
            self._load_lifecycle(doc)
        by_ns: dict[str, builtins.list[dict[str, Any]]] = {}
        for e in entries:
            by_ns.setdefault(str(e.get("namespace") or DEFAULT_NAMESPACE), []).append(e)
        for ns, items in by_ns.items():
            parsed = parse_snapshot(
                json.dumps(items), namespace=ns, now=0.0, max_chars=10**9, source=str(self.path)
            )
            MemoryStore.put_many(self, parsed.records, skip_existing_keys=True, links=[])
            for e, r in zip(items, parsed.records, strict=True):
                for d in e.get("link_details") or []:
                    MemoryStore.link(
                        self,
                        ns,
                        r.id,
                        str(d["id"]),
                        strength=float(d.get("strength", 1.0)) / 2,
                        origin=str(d.get("origin", "manual")),
                    )
            if not any(e.get("link_details") for e in items):
                # 000 lists each link at both ends: the second mention is the same link, so it
                # must not add its strength again.
                for a, b, strength, origin in parsed.links:
                    self._link(ns, a, b, strength, origin, replace_max=True)

    def _dump(self) -> None:
        entries = []
        for ns_name in sorted(self._ns):
            ns = self._ns[ns_name]
            links = self.links(ns_name, list(ns.records))
            names = {r.id: r.key or r.id for r in ns.records.values()}
            for r in sorted(ns.records.values(), key=lambda r: ns.seq[r.id]):
                d = r.to_dict()
                d["category"] = r.kind if r.kind in ("core", "conversation") else "knowledge"
                d["timestamp"] = int(r.created_at)
                d["links"] = [names.get(lk.other_id, lk.other_id) for lk in links[r.id]]
                d["link_details"] = [
                    {"id": lk.other_id, "strength": lk.strength, "origin": lk.origin}
                    for lk in links[r.id]
                ]
                entries.append(d)
        doc: Any = (
            {"entries": entries, "embeddings": self.embeddings} if self.embeddings else entries
        )
        if extra := self._lifecycle_doc():
            doc = {"entries": entries, "embeddings": self.embeddings, **extra}
        _atomic_write(self.path, json.dumps(doc, ensure_ascii=False))

    @contextmanager
    def _persisting(self) -> Iterator[None]:
        with self._lock:
            self._batch += 1
            try:
                yield
            finally:
                self._batch -= 1
            if self._batch == 0:
                try:
                    self._dump()
                except BaseException:
                    # The write did not reach the file: RAM must not keep what disk does not
                    # have, or every later write would fail on the same record.
                    self._reload()
                    raise

    def _reload(self) -> None:
        self._ns.clear()
        self._life.drop_all()
        self.embeddings = {}
        if self.path.exists():
            self._load()

    def flush(self) -> None:
        """Write the file now (after embeddings changed, which no record write covers)."""
        with self._persisting():
            pass

    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        with self._persisting():
            return super().put(record)

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        with self._persisting():
            return super().put_many(records, skip_existing_keys=skip_existing_keys, links=links)

    def replace(self, record: MemoryRecord) -> None:
        with self._persisting():
            super().replace(record)

    def supersede(self, retired: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        with self._persisting():  # one file write for both
            return super().supersede(retired, new)

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        with self._persisting():
            return super().delete(namespace, ids)

    def _delete_live(self, namespace: str, ids: Sequence[str]) -> int:
        # Archived or deleted, a record leaves its embedding behind in neither case.
        self._drop_embeddings(r for r in (self.get(namespace, i) for i in ids) if r is not None)
        return super()._delete_live(namespace, ids)

    def _drop_embeddings(self, records: Iterable[MemoryRecord]) -> None:
        # The vector store keeps a record's embedding under its id; a file 000 wrote may key
        # it by the record's key. Either way it goes in the same file write as the record.
        for r in records:
            self.embeddings.pop(r.id, None)
            if r.key:
                self.embeddings.pop(r.key, None)

    def delete_namespace(self, namespace: str) -> int:
        with self._persisting():
            ns = self._ns.get(namespace)
            if ns is not None:
                self._drop_embeddings(ns.records.values())
            return super().delete_namespace(namespace)

    def touch(self, namespace: str, ids: Sequence[str], now: float) -> None:
        with self._persisting():
            super().touch(namespace, ids, now)

    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str,
             accumulate: bool = True) -> bool:
        with self._persisting():
            return super().link(namespace, a, b, strength=strength, origin=origin,
                                accumulate=accumulate)

    def unlink(self, namespace: str, a: str, b: str) -> bool:
        with self._persisting():
            return super().unlink(namespace, a, b)

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, builtins.list[Link]]:
        return super().links(namespace, ids)

    def stats(self, namespace: str) -> StoreStats:
        s = super().stats(namespace)
        size = self.path.stat().st_size if self.path.exists() else 0
        return StoreStats(
            s.backend,
            s.total,
            s.by_kind,
            s.invalidated,
            s.links,
            s.newest,
            s.oldest,
            size,
            str(self.path),
        )

    # --- lifecycle: archive (003) and maintenance runs, kept in the same file -------------------
    def _lifecycle_doc(self) -> dict[str, Any]:
        """The archive and the runs as extra keys of the object shape (none when empty, so a
        file without them keeps 000's array shape)."""
        archive = [{"record": r.to_dict(), "archived_at": at}
                   for ns in sorted(self._life.namespaces()) for r, at in self.archived(ns)]
        runs = [run.to_dict() for ns in sorted(self._life.runs)
                for run in sorted(self._life.runs[ns], key=lambda r: r.id)]
        extra: dict[str, Any] = {}
        if archive:
            extra["archive"] = archive
        if runs:
            extra["maintenance_runs"] = runs
        return extra

    def _load_lifecycle(self, doc: dict[str, Any]) -> None:
        for item in doc.get("archive") or []:
            r = MemoryRecord.from_dict(item["record"])
            self._archive_store()._write(r)
            self._life.archived_at[(r.namespace, r.id)] = float(item.get("archived_at") or 0.0)
        for d in doc.get("maintenance_runs") or []:
            run = RunRecord(int(d["id"]), str(d["namespace"]), str(d["job"]),
                            float(d["started_at"]), float(d["finished_at"]), str(d["outcome"]),
                            {str(k): int(v) for k, v in dict(d.get("counts") or {}).items()},
                            str(d.get("message") or ""))
            self._life.runs[run.namespace].append(run)
            self._life.run_ids = max(self._life.run_ids, run.id)

    def replace_many(self, records: Sequence[MemoryRecord]) -> None:
        with self._persisting():
            super().replace_many(records)

    def archive(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        with self._persisting():
            self._drop_embeddings(self.get_many(namespace, ids))
            return super().archive(namespace, ids, at=at)

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None:
        with self._persisting():
            return super().restore(namespace, id_)

    def live_size_bytes(self) -> int | None:
        # Measured as the file would be without the archive and runs (written the same way).
        with self._lock:
            size = self.path.stat().st_size if self.path.exists() else 0
            extra = self._lifecycle_doc()
            return max(0, size - len(json.dumps(extra, ensure_ascii=False).encode())) \
                if extra else size

    def record_run(
        self,
        namespace: str,
        job: str,
        started_at: float,
        finished_at: float,
        outcome: str,
        counts: dict[str, int],
        message: str,
    ) -> RunRecord:
        with self._persisting():
            return super().record_run(namespace, job, started_at, finished_at, outcome, counts,
                                      message)


def _atomic_write(path: Path, text: str) -> None:
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StorageError(f"cannot write {path}: text is not valid Unicode ({exc})") from exc
    private.atomic_write(path, data)

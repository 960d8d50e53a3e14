"""The none backend (000 NoneMemory): memory disabled. Every operation succeeds and keeps
nothing: writes are discarded, reads are empty, counts are zero, links fail (False)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from clawmemory.backends.base import (
    ArchiveEntry,
    Link,
    RankInfo,
    RunRecord,
    StoreStats,
    TextHit,
    Version,
)
from clawmemory.model import Filter, MemoryRecord

__all__ = ["NoneStore"]


class NoneStore:
    backend = "none"
    closed = False  # nothing is ever written, so nothing waits for a close

    def close(self) -> None:
        pass

    def put(self, record: MemoryRecord) -> tuple[MemoryRecord, bool]:
        return record, True

    def put_many(
        self,
        records: Sequence[MemoryRecord],
        *,
        skip_existing_keys: bool,
        links: Sequence[tuple[str, str, float, str]] = (),
    ) -> builtins.list[tuple[MemoryRecord, bool]]:
        return [(r, True) for r in records]

    def get(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        return None

    def get_many(self, namespace: str, ids: Sequence[str]) -> builtins.list[MemoryRecord]:
        return []

    def replace(self, record: MemoryRecord) -> None:
        pass

    def supersede(self, retired: MemoryRecord, new: MemoryRecord) -> MemoryRecord:
        return new

    def delete(self, namespace: str, ids: Sequence[str]) -> int:
        return 0

    def delete_namespace(self, namespace: str) -> int:
        return 0

    def find_archived(self, namespace: str, id_or_key: str) -> MemoryRecord | None:
        return None

    def chain(self, namespace: str, id_: str) -> builtins.list[Version]:
        return []

    def derived(self, namespace: str, source_ids: Sequence[str]) -> builtins.list[Version]:
        return []

    def list(
        self, namespace: str, flt: Filter, *, limit: int, offset: int = 0, order: str = "newest"
    ) -> builtins.list[MemoryRecord]:
        return []

    def count(self, namespace: str, flt: Filter) -> int:
        return 0

    def touch(self, namespace: str, ids: Sequence[str], now: float) -> None:
        pass

    def keyword_search(
        self, namespace: str, terms: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        return []

    def rank_info(self, namespace: str, ids: Sequence[str], flt: Filter) -> dict[str, RankInfo]:
        return {}

    def like_search(
        self, namespace: str, tokens: Sequence[str], flt: Filter, *, limit: int
    ) -> builtins.list[TextHit]:
        return []

    def link(self, namespace: str, a: str, b: str, *, strength: float, origin: str,
             accumulate: bool = True) -> bool:
        return False

    def unlink(self, namespace: str, a: str, b: str) -> bool:
        return False

    def links(self, namespace: str, ids: Sequence[str]) -> dict[str, builtins.list[Link]]:
        return {i: [] for i in ids}

    def namespaces(self) -> builtins.list[str]:
        return []

    def stats(self, namespace: str) -> StoreStats:
        return StoreStats(backend=self.backend, total=0)

    def replace_many(self, records: Sequence[MemoryRecord]) -> None:
        pass

    def drop_derived(self, namespace: str, ids: Sequence[str]) -> None:
        pass

    def archive(self, namespace: str, ids: Sequence[str], *, at: float) -> int:
        return 0

    def archive_search(
        self, namespace: str, terms: Sequence[str], limit: int
    ) -> builtins.list[MemoryRecord]:
        return []

    def archive_count(self, namespace: str) -> int:
        return 0

    def archive_list(
        self, namespace: str, *, limit: int, offset: int = 0
    ) -> builtins.list[ArchiveEntry]:
        return []

    def restore(self, namespace: str, id_: str) -> MemoryRecord | None:
        return None

    def live_size_bytes(self) -> int | None:
        return None

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
        return RunRecord(0, namespace, job, started_at, finished_at, outcome, dict(counts),
                         message)  # kept nowhere, like everything else here

    def runs(
        self, namespace: str, limit: int, *, job: str | None = None
    ) -> builtins.list[RunRecord]:
        return []

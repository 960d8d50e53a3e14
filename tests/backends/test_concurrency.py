"""Many writers on one store: several processes on one SQLite file, several threads on one
``Memory``. Nothing may be lost, duplicated, or fail with "database is locked"."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import pytest

from clawmemory import Memory
from clawmemory.backends.base import Store
from conftest import Backend

PROCESSES = 4
PER_PROCESS = 500

# Runs in each child process. All children wait for the same start time, then open the (not
# yet existing) file and write at once, so schema creation and WAL set-up race as well. After
# its first write each child waits until every child has written once (a file per child), so
# the writes overlap however the machine schedules the processes: a start time alone let one
# child finish while another still waited for the schema lock, and the test proved nothing.
WORKER = """
import json, pathlib, sys, time, traceback
from clawmemory import Memory

path, worker, count, start_at, mode, processes = sys.argv[1], int(sys.argv[2]), \\
    int(sys.argv[3]), float(sys.argv[4]), sys.argv[5], int(sys.argv[6])
while time.time() < start_at:
    time.sleep(0.001)
ids, errors, first = [], [], None
try:
    mem = Memory.open(path, backend="sqlite", embedder=None)
    for i in range(count):
        if i == 1:
            pathlib.Path(f"{path}.ready{worker}").touch()
            deadline = time.time() + 120
            while (len(list(pathlib.Path(path).parent.glob("*.ready*"))) < processes
                   and time.time() < deadline):
                time.sleep(0.005)
        first = first or time.time()
        try:
            if mode == "distinct":
                ids.append(mem.store(f"worker {worker} item {i}", tags=[f"w{worker}"],
                                     metadata={"worker": worker, "i": i}))
            else:
                ids.append(mem.store(f"worker {worker} version {i}", key="shared-key"))
        except Exception:
            errors.append(traceback.format_exc())
    mem.close()
except Exception:
    errors.append(traceback.format_exc())
print(json.dumps({"ids": ids, "errors": errors, "first": first, "last": time.time()}))
"""


def run_workers(db: Path, mode: str, processes: int, per_process: int) -> list[dict[str, Any]]:
    start_at = time.time() + 3.0  # time for every interpreter to start and import
    children = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(w), str(per_process), str(start_at),
             mode, str(processes)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for w in range(processes)
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=240)
        assert child.returncode == 0, err
        assert "locked" not in err.lower() and "Traceback" not in err, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["errors"] == [], result["errors"][0]
        results.append(result)
    # The writes really overlapped: every process started before any finished.
    assert max(r["first"] for r in results) < min(r["last"] for r in results)
    return results


def sql(db: Path, query: str) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(query))
    finally:
        conn.close()


@pytest.mark.slow
def test_processes_writing_one_sqlite_file_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    results = run_workers(db, "distinct", PROCESSES, PER_PROCESS)
    ids = [i for r in results for i in r["ids"]]
    assert len(ids) == PROCESSES * PER_PROCESS
    assert len(set(ids)) == len(ids)
    rows = sql(db, "SELECT id, content FROM memories")
    assert len(rows) == PROCESSES * PER_PROCESS
    assert {r[0] for r in rows} == set(ids)
    assert {r[1] for r in rows} == {
        f"worker {w} item {i}" for w in range(PROCESSES) for i in range(PER_PROCESS)}
    assert sql(db, "SELECT COUNT(*) FROM schema_version WHERE version = 1") == [(1,)]
    # every row reached the full-text index exactly once
    with Memory.open(db, backend="sqlite", embedder=None) as mem:
        assert mem.count() == PROCESSES * PER_PROCESS
        assert mem.count(tags=["w2"]) == PER_PROCESS
        assert [r.content for r in mem.search_by_metadata("i", 499, limit=10)] != []
        hits = mem.recall("417", limit=10)
        assert {h.memory.content for h in hits} == {
            f"worker {w} item 417" for w in range(PROCESSES)}
    conn = apsw.Connection(str(db))
    conn.execute("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
    conn.close()


@pytest.mark.slow
def test_processes_upserting_one_key_leave_one_row(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    # 400 each: with 100, a process could finish its upserts while another still waited to
    # open the file, and the overlap check below failed with nothing wrong.
    results = run_workers(db, "same-key", PROCESSES, 400)
    ids = {i for r in results for i in r["ids"]}
    assert len(ids) == 1  # every upsert hit the same memory
    rows = sql(db, "SELECT id, content FROM memories WHERE key = 'shared-key'")
    assert len(rows) == 1 and rows[0][0] in ids
    assert sql(db, "SELECT COUNT(*) FROM memories") == [(1,)]
    last_versions = {f"worker {w} version 399" for w in range(PROCESSES)}
    assert rows[0][1] in last_versions


def _in_threads(threads: int, work: Callable[[int], None]) -> list[BaseException]:
    errors: list[BaseException] = []
    barrier = threading.Barrier(threads)

    def run(n: int) -> None:
        barrier.wait()
        try:
            work(n)
        except BaseException as exc:  # collected: an assert in a thread would be lost
            errors.append(exc)

    pool = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=240)
    return errors


THREADS = 8


def _per_thread(backend: Backend) -> int:
    # The JSON backend rewrites its whole file on every write: fewer writes keep it quick.
    return 25 if backend.name == "json" else 100


def test_threads_sharing_one_memory_lose_nothing(mem: Memory, backend: Backend) -> None:
    per = _per_thread(backend)
    ids: list[list[str]] = [[] for _ in range(THREADS)]

    def work(n: int) -> None:
        for i in range(per):
            ids[n].append(mem.store(f"thread {n} note {i}", tags=[f"t{n}"]))
            if i % 10 == 0:
                mem.recall(f"thread {n}")  # reads and access bookkeeping interleave too

    assert _in_threads(THREADS, work) == []
    flat = [i for chunk in ids for i in chunk]
    assert len(flat) == len(set(flat)) == THREADS * per
    stored = mem.list(limit=10_000)
    assert {r.id for r in stored} == set(flat)
    assert {r.content for r in stored} == {
        f"thread {n} note {i}" for n in range(THREADS) for i in range(per)}
    assert all(mem.count(tags=[f"t{n}"]) == per for n in range(THREADS))


def test_threads_upserting_one_key_leave_one_row(mem: Memory, backend: Backend) -> None:
    per = _per_thread(backend)
    seen: set[str] = set()

    def work(n: int) -> None:
        for i in range(per):
            seen.add(mem.store(f"thread {n} version {i}", key="shared"))

    assert _in_threads(THREADS, work) == []
    assert len(seen) == 1
    assert mem.count() == 1
    assert mem.get("shared").id in seen


def test_threads_linking_and_forgetting(mem: Memory, store: Store) -> None:
    ids = [mem.store(f"node {i}") for i in range(40)]

    def work(n: int) -> None:
        for i in range(n, len(ids) - 1, THREADS):
            mem.link(ids[i], ids[i + 1])
        for i in range(n, len(ids), THREADS * 2):
            mem.forget(ids[i])

    assert _in_threads(THREADS, work) == []
    alive = {r.id for r in mem.list(limit=100)}
    assert alive == set(ids) - {ids[i] for i in range(0, 40) if i % 16 < 8}
    for rid, links in store.links("default", sorted(alive)).items():
        assert all(lk.other_id in alive for lk in links), rid  # no dangling link survived

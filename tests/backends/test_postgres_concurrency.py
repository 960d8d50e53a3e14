"""PostgreSQL under concurrency, as safe as SQLite: many processes observing one session keep
one dialogue chain and lose nothing, concurrent recalls write their access counts without a
deadlock, and ``repair()`` mends a forked chain on the real server.

Every test runs against a real PostgreSQL with pgvector (the ``postgres_server`` fixture)."""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.postgres.store import PostgresStore
from conftest import postgres_url

SESSION = "shared-session"
NO_MODEL = Settings(embedder={"provider": "none"})

# Runs in each child: waits for the common start time, then observes turns of one shared
# session (a writer) or recalls the same turns over and over (a reader). Warnings go to stderr,
# where the parent looks for deadlocks and tracebacks.
WORKER = """
import json, logging, sys, time, traceback
from clawmemory import Memory, Settings

logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
url, worker, count, start_at, role = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), \\
    float(sys.argv[4]), sys.argv[5]
SESSION = sys.argv[6]
settings = Settings(embedder={"provider": "none"}, postgres={"pool_max_size": 3},
                    recall={"touch_delay_s": 0.05})
ids, errors, first = [], [], None
try:
    mem = Memory.open(url, settings=settings)
    while time.time() < start_at:
        time.sleep(0.001)
    for i in range(count):
        first = first or time.time()
        try:
            if role == "writer":
                ids.append(mem.observe("user" if i % 2 else "agent",
                                       f"writer {worker} turn {i} about the harbour", SESSION))
            else:
                mem.recall("harbour turn writer", limit=10)
        except Exception:
            errors.append(traceback.format_exc())
    mem.close()
except Exception:
    errors.append(traceback.format_exc())
print(json.dumps({"ids": ids, "errors": errors, "first": first, "last": time.time()}))
"""


@pytest.fixture
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return postgres_url(request, tmp_path)


def run_children(url: str, roles: list[tuple[str, int]]) -> list[tuple[dict[str, Any], str]]:
    """Start one process per (role, count) at one moment; their results and stderr."""
    start_at = time.time() + 8.0  # every interpreter has imported and connected by then
    children = [subprocess.Popen(
        [sys.executable, "-c", WORKER, url, str(n), str(count), str(start_at), role, SESSION],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n, (role, count) in enumerate(roles)]
    results = []
    for child in children:
        out, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["errors"] == [], result["errors"][0]
        results.append((result, err))
    firsts = [r["first"] for r, _ in results]
    assert max(firsts) < min(r["last"] for r, _ in results)  # they really overlapped
    return results


def chain_faults(mem: Memory, session_id: str) -> dict[str, int]:
    """How a session's turns fail to be one chain: turns linked to more than two others
    (forks), turns linked to none or one other beyond the two ends (heads), links that do not
    join neighbours in turn order, and turns missing from the chain."""
    turns = mem.list(session_id=session_id, order="oldest", limit=100_000)
    ids = [t.id for t in turns]
    links = mem.store_backend.links(mem.namespace, ids)
    edges = {tuple(sorted((mid, lk.other_id))) for mid in ids for lk in links[mid]
             if lk.origin == "sequence"}
    degree = Counter(end for edge in edges for end in edge)
    neighbours = {tuple(sorted(pair)) for pair in itertools.pairwise(ids)}
    return {"forks": sum(1 for i in ids if degree[i] > 2),
            "heads": sum(1 for i in ids if degree[i] < 2) - 2,
            "out_of_order": len(edges - neighbours), "unlinked": len(neighbours - edges)}


def test_eight_processes_observing_one_session_keep_one_chain_and_recalls_never_deadlock(
    url: str,
) -> None:
    writers, turns, readers, recalls = 8, 60, 4, 150
    PostgresStore(url).close()  # the schema exists; the children race on everything else
    results = run_children(url, [("writer", turns)] * writers + [("reader", recalls)] * readers)
    logged = "\n".join(err for _, err in results)
    ids = [i for r, _ in results for i in r["ids"]]
    assert len(ids) == len(set(ids)) == writers * turns
    with Memory.open(url, settings=NO_MODEL) as mem:
        stored = mem.list(session_id=SESSION, limit=100_000)
        faults = {"lost": len(set(ids) - {r.id for r in stored}),
                  "deadlocks": logged.lower().count("deadlock detected"),
                  "tracebacks": logged.count("Traceback"), **chain_faults(mem, SESSION)}
        assert faults == dict.fromkeys(faults, 0), f"{faults}\n{logged[-3000:]}"
        assert sum(r.access_count for r in stored) > 0  # the recalls were counted


def test_repair_mends_entity_links_and_a_forked_chain_on_postgresql(url: str) -> None:
    with Memory.open(url, settings=NO_MODEL) as mem:
        turns = [mem.observe("user", f"Turn {i} with Carol Baker about Paris", "s1")
                 for i in range(6)]
        fact = mem.store("Dave Smith runs the Lisbon office")
    # What a crash between a record and its derived rows leaves, plus the fork two concurrent
    # turns left before the chain was serialised: both linked to the same predecessor.
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM memory_entities WHERE memory_id = ANY(%s)",
                     ([turns[1], turns[4], fact],))
        conn.execute("DELETE FROM links WHERE a_id = %s AND b_id = %s",
                     tuple(sorted((turns[2], turns[3]))))
        conn.execute("INSERT INTO links VALUES ('default', %s, %s, 1.0, 'sequence', 0, 0)",
                     tuple(sorted((turns[1], turns[3]))))
    with Memory.open(url, settings=NO_MODEL) as mem:
        assert chain_faults(mem, "s1") == {"forks": 1, "heads": 1, "out_of_order": 1,
                                           "unlinked": 1}
        assert mem.entity_info("Dave Smith")["memories"] == []
        counts = mem.repair()
        assert (counts["entity_links"], counts["sequence_links"], counts["skipping_links"]) == (
            3, 1, 1)
        assert chain_faults(mem, "s1") == {"forks": 0, "heads": 0, "out_of_order": 0,
                                           "unlinked": 0}
        assert {r.id for r in mem.entity_info("Carol Baker", limit=50)["memories"]} == set(turns)
        assert [r.id for r in mem.entity_info("Dave Smith")["memories"]] == [fact]
        assert mem.repair()["sequence_links"] == 0  # the next run starts where this one ended


def test_a_failed_access_count_write_logs_one_line_and_keeps_the_counts(
    url: str, caplog: pytest.LogCaptureFixture,
) -> None:
    from clawmemory.search.access import AccessTracker

    store = PostgresStore(url)
    tracker = AccessTracker(store, delay_s=0.01)
    # Every write fails from now on, as when the server refuses them. (A closed store is not
    # this case: its tracker drops the counts and stops, tests/search/test_access.py.)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories RENAME TO memories_away")
    try:
        with caplog.at_level(logging.WARNING, logger="clawmemory"):
            tracker.record("default", ["m1", "m2"], 1.0)
            deadline = time.time() + 10
            while not caplog.records and time.time() < deadline:
                time.sleep(0.01)
            tracker._closed = True  # stop the retrying thread; the test is over
            tracker._wake.set()
        first = caplog.records[0]
        assert first.getMessage().startswith("could not write access counts yet (")
        assert "\n" not in first.getMessage() and first.exc_info is None  # one line
        assert tracker.pending == 1  # kept for the next flush
    finally:
        store.close()

"""A writer killed with SIGKILL at any moment loses nothing it acknowledged and corrupts nothing.

A child process stores memories in a loop (singly, in batches, corrections and forgets mixed
in) and prints each id only after ``store()`` returned. The test kills it at a random moment,
then checks with a fresh connection that every acknowledged memory is there, every forgotten
one is gone, and SQLite's and FTS5's own integrity checks pass. A handful of kills run in the
default suite; the ``slow`` variant does at least twenty per run."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings

WRITER = r"""
import json, sys
from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings

path, worker = sys.argv[1], int(sys.argv[2])
mem = Memory.open(path, settings=Settings(embedder=EmbedderSettings(provider="none")))
print("ready", flush=True)
i = 0
while True:
    i += 1
    op = i % 7
    if op == 3:
        ids = mem.store_many([{"content": f"w{worker} batch {i} item {j} about Lisbon trams",
                               "tags": ["batch"]} for j in range(20)])
        print(json.dumps({"stored": ids}), flush=True)
    elif op == 5:
        rid = mem.store(f"w{worker} temporary note {i} Quokkaberry", key=f"tmp-{worker}-{i}")
        mem.forget(rid)
        print(json.dumps({"forgot": rid}), flush=True)
    elif op == 6:
        rid = mem.store(f"w{worker} fact {i} version one", key=f"k-{worker}-{i}")
        new = mem.correct(rid, f"w{worker} fact {i} version two").id
        print(json.dumps({"stored": [new], "invalid": [rid]}), flush=True)
    else:
        rid = mem.store(f"w{worker} episode {i} in session s{i % 3}", kind="episode",
                        session_id=f"s{worker}-{i % 3}")
        print(json.dumps({"stored": [rid]}), flush=True)
"""


def _kill_writer_at_random(db: Path, worker: int, rng: random.Random) -> dict[str, set[str]]:
    child = subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(worker)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready", child.stderr.read() if child.stderr else ""
    # Let it acknowledge some writes (however slow the machine is), then kill it mid-flight.
    lines = [child.stdout.readline() for _ in range(rng.randint(3, 30))]
    time.sleep(rng.uniform(0.0, 0.05))
    child.send_signal(signal.SIGKILL)
    out, _ = child.communicate(timeout=60)
    seen: dict[str, set[str]] = {"stored": set(), "invalid": set(), "forgot": set()}
    for line in [*lines, *out.splitlines()]:
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # the kill cut this line short: its write is not acknowledged
        for name in ("stored", "invalid"):
            seen[name].update(event.get(name, ()))
        if "forgot" in event:
            seen["forgot"].add(event["forgot"])
    return seen


def _check(db: Path, acked: dict[str, set[str]]) -> None:
    conn = apsw.Connection(str(db))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        for fts in ("memories_fts", "memories_archive_fts"):
            conn.execute(f"INSERT INTO {fts}({fts}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()
    settings = Settings(embedder=EmbedderSettings(provider="none"))
    with Memory.open(db, settings=settings) as mem:
        live = {r.id for r in mem.list(limit=10_000)}
        every = {r.id for r in mem.list(limit=10_000, include_invalid=True)}
        assert acked["stored"] - acked["invalid"] <= live, "an acknowledged store was lost"
        assert acked["invalid"] <= every - live, "an acknowledged correction was lost"
        assert not acked["forgot"] & every, "an acknowledged forget came back"
        records = mem.list(limit=10_000, include_invalid=True)
        successors = {r.supersedes for r in records}
        retired = [r.id for r in records if not r.is_valid]
        assert all(rid in successors for rid in retired), "a correction lost both versions"
        assert mem.recall("Lisbon trams", mode="keyword") != [] or not any(
            "batch" in r.tags for r in mem.list(limit=10_000))


def _run(db: Path, kills: int, seed: int) -> int:
    rng = random.Random(seed)
    acked: dict[str, set[str]] = {"stored": set(), "invalid": set(), "forgot": set()}
    for k in range(kills):
        for name, ids in _kill_writer_at_random(db, k, rng).items():
            acked[name] |= ids
        _check(db, acked)
    return len(acked["stored"])


def test_a_killed_writer_loses_no_acknowledged_write(tmp_path: Path) -> None:
    stored = _run(tmp_path / "crash.db", kills=4, seed=7)
    assert stored > 20  # the writers got real work done before each kill


@pytest.mark.slow
def test_twenty_four_kills_lose_nothing_and_corrupt_nothing(tmp_path: Path) -> None:
    stored = _run(tmp_path / "crash.db", kills=24, seed=2024)
    assert stored > 100

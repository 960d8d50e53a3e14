"""Recall counts as access (003), written off the request path (search/access.py): the counts
are exactly those of immediate writes, a background thread writes them without anyone reading,
close() writes what is queued, and reads through the API always see them."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from conftest import DAY, START, Clock


def open_mem(path: Path, clock: Clock, delay: float) -> Memory:
    settings = Settings(db=path, embedder={"provider": "none"})
    settings.recall.touch_delay_s = delay
    return Memory.open(settings=settings, clock=clock)


def counts(path: Path, ids: list[str]) -> list[tuple[int, float | None]]:
    """Access counts as another connection to the file sees them (nothing queued there)."""
    other = SQLiteStore(path)
    try:
        return [(r.access_count, r.last_accessed) for r in other.get_many("default", ids)]
    finally:
        other.close()


def test_a_background_thread_writes_the_counts(tmp_path: Path) -> None:
    clock = Clock()
    mem = open_mem(tmp_path / "m.db", clock, delay=0.05)
    ids = [mem.store("the wifi password is hunter2"), mem.store("wifi router in the hall")]
    clock.advance(DAY)
    assert len(mem.recall("wifi")) == 2
    deadline = time.monotonic() + 10
    while counts(tmp_path / "m.db", ids) != [(1, START + DAY)] * 2:
        assert time.monotonic() < deadline, "the queued touch was never written"
        time.sleep(0.05)
    mem.close()


def test_close_writes_what_is_queued_with_exact_counts(tmp_path: Path) -> None:
    clock = Clock()
    mem = open_mem(tmp_path / "m.db", clock, delay=3600)  # the thread will not get to it
    hit = mem.store("the wifi password is hunter2")
    other = mem.store("the router sits in the hall")
    for day in (1, 2, 3):
        clock.now = START + day * DAY
        mem.recall("wifi password")
    mem.recall("router hall")
    assert counts(tmp_path / "m.db", [hit, other]) == [(0, START), (0, START)]  # queued only
    mem.close()
    assert counts(tmp_path / "m.db", [hit, other]) == [(3, START + 3 * DAY),
                                                      (1, START + 3 * DAY)]


def test_reads_through_the_api_see_queued_counts(tmp_path: Path) -> None:
    clock = Clock()
    with open_mem(tmp_path / "m.db", clock, delay=3600) as mem:
        hit = mem.store("the wifi password is hunter2")
        clock.advance(DAY)
        older = mem.store("an older note")
        clock.advance(DAY)
        mem.recall("wifi")
        assert mem.get(hit).access_count == 1
        assert [r.id for r in mem.list(order="accessed")] == [hit, older]


def test_no_delay_writes_in_the_request_path(tmp_path: Path) -> None:
    clock = Clock()
    with open_mem(tmp_path / "m.db", clock, delay=0) as mem:
        hit = mem.store("the wifi password is hunter2")
        mem.recall("wifi")
        assert counts(tmp_path / "m.db", [hit]) == [(1, START)]


def test_a_store_closed_under_the_tracker_stops_its_thread_quietly(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A store closed without Memory.close (an embedding application that closes the backend it
    # passed in): before, the thread retried every delay_s and logged a warning each time, for
    # the life of the process, into whatever else was logging.
    clock = Clock()
    mem = open_mem(tmp_path / "m.db", clock, delay=0.2)
    mem.store("the wifi password is hunter2")
    before = set(threading.enumerate())
    assert len(mem.recall("wifi")) == 1
    (thread,) = [t for t in threading.enumerate()
                 if t.name == "clawmemory-access" and t not in before]
    caplog.set_level(logging.WARNING, logger="clawmemory")
    mem.store_backend.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []

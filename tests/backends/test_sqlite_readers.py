"""SQLite reads beside writes (backends/sqlite/readers.py): a recall in one thread does not
queue behind another thread's write transaction, and a writer reads its own writes."""

from __future__ import annotations

import threading
from pathlib import Path

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore


def _mem(path: Path) -> Memory:
    return Memory.open(settings=Settings(db=path, embedder={"provider": "none"}))


def test_a_recall_does_not_wait_for_another_threads_write(tmp_path: Path) -> None:
    mem = _mem(tmp_path / "m.db")
    mem.store("the kettle is in the left cupboard")
    store = mem.store_backend
    assert isinstance(store, SQLiteStore)
    inside, release = threading.Event(), threading.Event()

    def writer() -> None:
        with store.write():  # holds the write connection until released
            store.conn.execute("UPDATE memories SET score = score")
            inside.set()
            release.wait(10)

    t = threading.Thread(target=writer)
    t.start()
    try:
        assert inside.wait(5)
        answered: list[list[str]] = []
        reader = threading.Thread(target=lambda: answered.append(
            [h.memory.content for h in mem.recall("kettle", mode="keyword")]))
        reader.start()
        reader.join(3)  # on the one locked connection it would wait for the release
        assert answered == [["the kettle is in the left cupboard"]]
    finally:
        release.set()
        t.join()
    mem.close()


def test_a_writer_reads_its_own_uncommitted_writes_and_others_see_them_after(
    tmp_path: Path,
) -> None:
    mem = _mem(tmp_path / "m.db")
    store = mem.store_backend
    assert isinstance(store, SQLiteStore)
    seen_outside: list[int] = []
    with store.write():
        mem.store("a note written inside an open transaction")
        assert [r.content for r in mem.list()] == ["a note written inside an open transaction"]
        t = threading.Thread(target=lambda: seen_outside.append(
            int(store.query("SELECT count(*) FROM memories")[0][0])))
        t.start()
        t.join(5)
    assert seen_outside == [0]  # another thread reads the last committed state
    assert mem.count() == 1
    mem.close()

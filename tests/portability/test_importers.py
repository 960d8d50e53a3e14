"""The importers from what users already have: 000's SQLite database, Koshi's database, mem0,
and ChatGPT's and Claude's data exports (``clawmem import --from NAME PATH``).

Each source is built here the way that system writes it (the schemas verified against the
specifications and the projects' own code; nothing read from outside the tests), imported into
real stores, and checked field by field, with what was skipped and why.
"""

from __future__ import annotations

import json
import sqlite3
import zipfile
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from clawmemory import ImportFormatError, Memory, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.interfaces.cli.portability import register
from clawmemory.model import ALREADY_PRESENT
from clawmemory.portability import SOURCE_ALIASES, SOURCES, read_source

START = 1_700_000_000.0  # the conftest clock's "now"
MAX = 100_000


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def _sqlite(path: Path, script: str, rows: dict[str, list[tuple[Any, ...]]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(script)
    for table, values in rows.items():
        marks = ", ".join("?" * len(values[0]))
        db.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
    db.commit()
    db.close()
    return path


# --- fixture builders, one per source ------------------------------------------------------------
PTRCLAW_SCHEMA = """
    CREATE TABLE memories (id TEXT PRIMARY KEY, key TEXT UNIQUE NOT NULL, content TEXT NOT NULL,
        category TEXT NOT NULL, timestamp INTEGER NOT NULL, session_id TEXT NOT NULL,
        embedding BLOB, last_accessed INTEGER);
    CREATE VIRTUAL TABLE memories_fts USING fts5(key, content, content=memories,
        content_rowid=rowid);
    CREATE TABLE memory_links (from_key TEXT NOT NULL, to_key TEXT NOT NULL,
        PRIMARY KEY (from_key, to_key));
"""


def build_ptrclaw_db(root: Path) -> Path:
    """000 SqliteMemory: links stored in both directions, one naming a forgotten key."""
    return _sqlite(root / "ptrclaw.db", PTRCLAW_SCHEMA, {
        "memories": [
            ("e1", "soul:name", "I am Ptr", "core", 1700000100, "", None, 0),
            ("e2", "user-editor", "User edits in Helix", "knowledge", 1700000200, "",
             b"\x00\x00\x80?", 1700000900),
            ("e3", "task-state", "Waiting for the deploy", "conversation", 1700000300,
             "telegram:42", None, None),
        ],
        "memory_links": [("soul:name", "user-editor"), ("user-editor", "soul:name"),
                         ("user-editor", "gone-key")],
    })


KOSHI_SCHEMA = """
    CREATE TABLE memories (id INTEGER PRIMARY KEY, content TEXT NOT NULL, source TEXT,
        tags TEXT, created_at DATETIME DEFAULT CURRENT_TIMESTAMP, last_hit_at DATETIME,
        score INTEGER DEFAULT 0, session_id TEXT, narrative_id INTEGER, task_id INTEGER);
    CREATE VIRTUAL TABLE memories_fts USING fts5(content, tags, source, content='memories',
        content_rowid='id');
    CREATE TABLE memories_archive (id INTEGER PRIMARY KEY, content TEXT NOT NULL, source TEXT,
        tags TEXT, created_at DATETIME, last_hit_at DATETIME, score INTEGER DEFAULT 0,
        session_id TEXT, narrative_id INTEGER, task_id INTEGER, archived_at DATETIME);
    CREATE TABLE memory_links (memory_id INTEGER REFERENCES memories(id),
        related_id INTEGER REFERENCES memories(id), strength REAL DEFAULT 1.0,
        PRIMARY KEY (memory_id, related_id));
"""


def build_koshi(root: Path) -> Path:
    """003 Koshi: live memories, one archived by size-based pruning, co-recall links."""
    return _sqlite(root / "koshi.db", KOSHI_SCHEMA, {
        "memories": [
            (1, "Payment API signs requests with HMAC", "conversation", "api, hmac, payments",
             "2024-01-15 10:30:00", "2024-02-01 09:00:00", 6, "s1", 4, None),
            (2, "User prefers short answers", "agent", None, "2024-01-16 08:00:00", None, -1,
             None, None, 7),
            (3, "Sprint 4 ended with the HMAC fix", "narrative", "sprint", "2024-01-20 18:00:00",
             None, 0, "s2", None, None),
        ],
        "memories_archive": [
            (9, "Old office wifi password rotated", "extraction", "wifi",
             "2023-03-01 12:00:00", None, -8, None, None, None, "2024-01-10 04:00:00"),
        ],
        "memory_links": [(1, 3, 2.5), (3, 1, 1.5), (1, 99, 1.0)],
    })


def build_mem0_json(root: Path) -> Path:
    """What mem0's Memory.get_all() returns (v1.1 shape), saved with json.dump."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "mem0.json"
    doc = {"results": [
        {"id": "f38b689d-6b24-45b7-bced-17fbb4d8bac7", "memory": "Travelling to Paris in May",
         "hash": "62bc074f56d1f909f1b4c2b639f56f6a", "metadata": {"category": "travel"},
         "created_at": "2024-02-25T23:57:00.108347-07:00",
         "updated_at": "2024-07-25T23:57:00.108367-07:00", "user_id": "alex"},
        {"id": "a1", "memory": "Prefers tea over coffee", "created_at": "2024-03-01T10:00:00Z",
         "updated_at": None, "user_id": "alex", "agent_id": "concierge", "run_id": "run-7",
         "role": "user", "categories": ["food", "preferences"]},
        {"id": "a2", "memory": "   ", "created_at": "2024-03-01T10:00:00Z", "user_id": "alex"},
        {"id": "a1", "memory": "Prefers tea over coffee", "user_id": "alex"},
        {"id": "a3", "memory": "Allergic to peanuts", "created_at": "someday"},
    ], "relations": [{"source": "alex", "relationship": "likes", "target": "tea"}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


MEM0_HISTORY_SCHEMA = """
    CREATE TABLE history (id TEXT PRIMARY KEY, memory_id TEXT, old_memory TEXT,
        new_memory TEXT, event TEXT, created_at DATETIME, updated_at DATETIME,
        is_deleted INTEGER, actor_id TEXT, role TEXT);
    CREATE TABLE messages (id TEXT PRIMARY KEY, session_scope TEXT, role TEXT, content TEXT,
        name TEXT, created_at DATETIME);
"""


def build_mem0_history(root: Path) -> Path:
    """mem0's local history.db (~/.mem0): an ADD, an UPDATE, a deleted memory."""
    return _sqlite(root / ".mem0" / "history.db", MEM0_HISTORY_SCHEMA, {
        "history": [
            ("h1", "m-1", None, "Likes jazz", "ADD", "2024-05-01T10:00:00+00:00", None, 0,
             None, "user"),
            ("h2", "m-2", None, "Works at Acme", "ADD", "2024-05-01T10:05:00+00:00", None, 0,
             "alice", None),
            ("h3", "m-1", "Likes jazz", "Likes jazz and blues", "UPDATE",
             "2024-05-01T10:00:00+00:00", "2024-06-01T08:00:00+00:00", 0, None, "user"),
            ("h4", "m-3", None, "Lives in Berlin", "ADD", "2024-05-02T10:00:00+00:00", None, 0,
             None, None),
            ("h5", "m-3", "Lives in Berlin", None, "DELETE", None, None, 1, None, None),
        ],
        "messages": [("x1", "user_id=alice", "user", "hi", None, "2024-05-01T10:00:00")],
    }).parent


def _node(node_id: str, parent: str | None, children: list[str], role: str | None = None,
          parts: list[Any] | None = None, *, at: float | None = None, kind: str = "text",
          **extra: Any) -> dict[str, Any]:
    message = None
    if role is not None:
        message = {"id": f"msg-{node_id}", "author": {"role": role, "name": None,
                                                      "metadata": {}},
                   "create_time": at, "update_time": None,
                   "content": {"content_type": kind, "parts": parts or []},
                   "status": "finished_successfully", "end_turn": True, "weight": 1.0,
                   "metadata": extra.pop("metadata", {}), "recipient": extra.pop("to", "all")}
    return {"id": node_id, "message": message, "parent": parent, "children": children}


def chatgpt_export() -> list[dict[str, Any]]:
    """Two conversations: one with a regenerated answer (a branch) and a tool call, one that
    has no current_node (an old export)."""
    t0 = 1737900000.0
    trip = {
        "title": "Trip to Lisbon", "create_time": t0, "update_time": t0 + 60,
        "id": "conv-trip", "conversation_id": "conv-trip", "current_node": "n7",
        "mapping": {
            "root": _node("root", None, ["n1"]),
            "n1": _node("n1", "root", ["n2"], "system", [""], at=None),
            "n2": _node("n2", "n1", ["n3"], "user", ["About me: vegetarian"], at=t0,
                        metadata={"is_visually_hidden_from_conversation": True}),
            "n3": _node("n3", "n2", ["n4a", "n4"], "user", ["Find me a hotel in Lisbon"],
                        at=t0 + 1),
            "n4a": _node("n4a", "n3", [], "assistant", ["An answer that was regenerated"],
                         at=t0 + 2),
            "n4": _node("n4", "n3", ["n5"], "assistant", ["search('Lisbon hotels')"],
                        at=t0 + 3, kind="code", to="browser"),
            "n5": _node("n5", "n4", ["n6"], "tool", ["results..."], at=t0 + 4,
                        kind="tether_browsing_display"),
            "n6": _node("n6", "n5", ["n7"], "assistant", ["Try Casa do Principe."], at=t0 + 5,
                        metadata={"model_slug": "gpt-4o"}),
            "n7": _node("n7", "n6", [], "user", [{"content_type": "image_asset_pointer",
                                                  "asset_pointer": "file-service://x"}],
                        at=t0 + 6, kind="multimodal_text"),
        },
    }
    old = {
        "title": "Recipe", "create_time": t0 + 100, "id": "conv-old",
        "mapping": {
            "a": _node("a", None, ["b"], "user", ["A vegetarian paella?"], at=None),
            "b": _node("b", "a", [], "assistant", ["Sure: rice, saffron,", "peppers."],
                       at=None),
        },
    }
    return [trip, old, {"title": "broken", "mapping": "nope"}]


def build_chatgpt(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "conversations.json"
    path.write_text(json.dumps(chatgpt_export()), encoding="utf-8")
    return path


def claude_export() -> list[dict[str, Any]]:
    msgs = [
        {"uuid": "m1", "sender": "human", "text": "Plan a week in Kyoto",
         "content": [{"type": "text", "text": "Plan a week in Kyoto"}],
         "created_at": "2025-01-26T10:00:01.000Z", "updated_at": "2025-01-26T10:00:01.000Z",
         "attachments": [{"file_name": "dates.txt", "file_size": 40, "file_type": "txt",
                          "extracted_content": "March 3 to 10"}], "files": []},
        {"uuid": "m2", "sender": "assistant", "text": "",
         "content": [{"type": "thinking", "thinking": "The user wants..."},
                     {"type": "text", "text": "Day 1: Fushimi Inari."},
                     {"type": "tool_use", "name": "web_search", "input": {"q": "kyoto"}},
                     {"type": "tool_result", "content": [{"type": "text", "text": "..."}]},
                     {"type": "text", "text": "Day 2: Arashiyama."}],
         "created_at": "2025-01-26T10:00:09.000Z", "updated_at": "2025-01-26T10:00:09.000Z",
         "attachments": [], "files": []},
        {"uuid": "m3", "sender": "human", "text": "", "content": [],
         "created_at": "2025-01-26T10:01:00.000Z", "attachments": [],
         "files": [{"file_name": "map.png"}]},
    ]
    return [
        {"uuid": "c-kyoto", "name": "Kyoto week", "created_at": "2025-01-26T10:00:00.000Z",
         "updated_at": "2025-01-26T10:01:00.000Z", "account": {"uuid": "acct-1"},
         "chat_messages": msgs},
        {"uuid": "c-empty", "name": "", "created_at": "2025-01-27T10:00:00.000Z",
         "chat_messages": []},
        ["not", "a", "conversation"],
    ]


def build_claude(root: Path) -> Path:
    """A Claude export as it arrives: a zip holding conversations.json."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "claude-export.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("data-2025-01-28/conversations.json", json.dumps(claude_export()))
        archive.writestr("data-2025-01-28/users.json", "[]")
    return path


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "ptrclaw-sqlite": build_ptrclaw_db,
    "koshi": build_koshi,
    "mem0": build_mem0_json,
    "chatgpt": build_chatgpt,
    "claude": build_claude,
}
# format: (memories created, source items skipped on a first import)
EXPECTED = {"ptrclaw-sqlite": (3, 1), "koshi": (4, 1), "mem0": (2, 3), "chatgpt": (4, 6),
            "claude": (2, 2)}


# --- helpers -------------------------------------------------------------------------------------
@pytest.fixture
def sqlite_mem(tmp_path: Path, clock: Callable[[], float]) -> Iterator[Memory]:
    mem = Memory(SQLiteStore(tmp_path / "target.db"), Settings(embedder={"provider": "none"}),
                 clock=clock)
    yield mem
    mem.close()


def load(mem: Memory, fmt: str, path: Path, *, dry_run: bool = False,
         progress: Callable[[int, int], None] | None = None) -> Any:
    parsed = read_source(fmt, path, namespace=mem.namespace, now=mem.clock(),
                         max_chars=mem.settings.storage.max_content_chars, progress=progress)
    return mem.import_records(parsed, dry_run=dry_run)


def reasons(report: Any) -> dict[str, int]:
    return {s["reason"]: s["count"] for s in report.skips}


def by_content(mem: Memory) -> dict[str, Any]:
    return {r.content: r for r in mem.list(include_invalid=True, limit=1000, order="oldest")}


# --- each source, field by field -----------------------------------------------------------------
def test_ptrclaw_sqlite(sqlite_mem: Memory, tmp_path: Path) -> None:
    report = load(sqlite_mem, "ptrclaw-sqlite", build_ptrclaw_db(tmp_path))
    assert dict(report) == {"created": 3, "skipped": 1, "links": 1}
    assert reasons(report) == {"link to a key that is not in memories": 1}
    soul, editor, task = (sqlite_mem.get(k) for k in ("soul:name", "user-editor", "task-state"))
    assert (soul.id, soul.kind, soul.created_at, soul.last_accessed, soul.session_id) == (
        "e1", "core", 1700000100.0, None, None)
    assert (editor.kind, editor.last_accessed) == ("fact", 1700000900.0)
    assert (task.kind, task.session_id) == ("conversation", "telegram:42")
    assert [r.id for r in sqlite_mem.neighbors("soul:name")] == ["e2"]


def test_koshi_memories_archive_and_links(sqlite_mem: Memory, tmp_path: Path) -> None:
    report = load(sqlite_mem, "koshi", build_koshi(tmp_path))
    assert (dict(report), report.archived) == ({"created": 4, "skipped": 1, "links": 1}, 1)
    assert reasons(report) == {"link to a memory that is not in the database": 1}
    hmac = sqlite_mem.get("1")
    assert (hmac.content, hmac.source, hmac.tags, hmac.score, hmac.session_id) == (
        "Payment API signs requests with HMAC", "conversation", ("api", "hmac", "payments"),
        6, "s1")
    assert (hmac.created_at, hmac.last_accessed, hmac.kind) == (
        ts("2024-01-15T10:30:00Z"), ts("2024-02-01T09:00:00Z"), "fact")
    assert (hmac.narrative_id, hmac.task_id, dict(hmac.metadata)) == ("4", None, {})
    short = sqlite_mem.get("2")
    assert (short.score, short.tags, dict(short.metadata)) == (-1, (), {})
    assert (short.narrative_id, short.task_id) == (None, "7")
    assert [r.id for r in sqlite_mem.list(narrative_id=4)] == ["1"]
    assert [h.memory.id for h in sqlite_mem.recall("HMAC", task_id=7)] == []
    assert [h.memory.id for h in sqlite_mem.recall("short answers", task_id=7)] == ["2"]
    [link] = sqlite_mem.store_backend.links(sqlite_mem.namespace, ["1"])["1"]
    assert (link.other_id, link.strength, link.origin) == ("3", 2.5, "co-recall")
    # the pruned memory arrives in the archive, with Koshi's archive time, out of recall
    assert sqlite_mem.count() == 3
    [entry] = sqlite_mem.archived()
    assert (entry.record.id, entry.archived_at) == ("9", ts("2024-01-10T04:00:00Z"))
    assert [h.memory.id for h in sqlite_mem.recall("wifi password", archive=True)] == ["9"]
    assert sqlite_mem.recall("wifi password") == []
    again = load(sqlite_mem, "koshi", tmp_path / "koshi.db")  # nothing comes back twice
    assert dict(again) == {"created": 0, "skipped": 5, "links": 0}
    assert (sqlite_mem.count(), len(sqlite_mem.archived())) == (3, 1)


@pytest.mark.parametrize("via", ["import_snapshot", "json file"])
def test_a_snapshot_from_before_the_provenance_fields_moves_them_out_of_metadata(
    sqlite_mem: Memory, tmp_path: Path, via: str,
) -> None:
    """The koshi importer used to keep 003's narrative_id/task_id in metadata; importing a
    snapshot written then (its entries have no such fields) makes them the fields. An entry
    that has the fields keeps its metadata as it is."""
    entries = [
        {"id": "old", "content": "HMAC signs requests", "kind": "fact",
         "metadata": {"narrative_id": 4, "task_id": 7, "app": "pay"}},
        {"id": "new", "content": "HMAC covers the body", "kind": "fact", "narrative_id": "5",
         "task_id": None, "metadata": {"narrative_id": 4}},
        {"id": "text", "content": "HMAC keys rotate", "kind": "fact",
         "metadata": {"task_id": "not an integer"}},
    ]
    if via == "json file":
        (tmp_path / "old.json").write_text(json.dumps({"entries": entries}), encoding="utf-8")
        report = load(sqlite_mem, "json", tmp_path / "old.json")
    else:
        report = sqlite_mem.import_snapshot(json.dumps({"entries": entries}))
    assert report["created"] == 3
    got = {r.id: (r.narrative_id, r.task_id, dict(r.metadata)) for r in sqlite_mem.list()}
    assert got == {"old": ("4", "7", {"app": "pay"}), "new": ("5", None, {"narrative_id": 4}),
                   "text": (None, None, {"task_id": "not an integer"})}
    assert [r.id for r in sqlite_mem.list(task_id=7)] == ["old"]


def test_mem0_get_all_json(sqlite_mem: Memory, tmp_path: Path) -> None:
    report = load(sqlite_mem, "mem0", build_mem0_json(tmp_path))
    assert dict(report) == {"created": 2, "skipped": 3, "links": 0}
    assert reasons(report) == {"no memory text": 1, "the same memory id again": 1,
                               "created_at: cannot read 'someday' as an ISO-8601 time": 1}
    paris = sqlite_mem.get("f38b689d-6b24-45b7-bced-17fbb4d8bac7")
    assert (paris.content, paris.source, paris.kind) == (
        "Travelling to Paris in May", "mem0", "fact")
    assert dict(paris.metadata) == {"category": "travel", "user_id": "alex"}
    assert (paris.created_at, paris.updated_at) == (
        ts("2024-02-26T06:57:00.108347Z"), ts("2024-07-26T06:57:00.108367Z"))
    tea = sqlite_mem.get("a1")
    assert (tea.session_id, tea.source_role, tea.tags) == ("run-7", "user",
                                                          ("food", "preferences"))
    assert dict(tea.metadata) == {"user_id": "alex", "agent_id": "concierge"}
    assert tea.updated_at == tea.created_at == ts("2024-03-01T10:00:00Z")


def test_mem0_local_history_db(sqlite_mem: Memory, tmp_path: Path) -> None:
    folder = build_mem0_history(tmp_path)  # the ~/.mem0 folder
    report = load(sqlite_mem, "mem0", folder)
    assert dict(report) == {"created": 2, "skipped": 1, "links": 0}
    assert reasons(report) == {"deleted in mem0": 1}
    jazz = sqlite_mem.get("m-1")
    assert (jazz.content, jazz.source_role, jazz.created_at, jazz.updated_at) == (
        "Likes jazz and blues", "user", ts("2024-05-01T10:00:00Z"), ts("2024-06-01T08:00:00Z"))
    acme = sqlite_mem.get("m-2")
    assert (dict(acme.metadata), acme.updated_at) == ({"actor_id": "alice"}, acme.created_at)
    assert load(sqlite_mem, "mem0", folder / "history.db")["skipped"] == 3  # the file works too


def test_chatgpt_export(sqlite_mem: Memory, tmp_path: Path) -> None:
    report = load(sqlite_mem, "chatgpt", build_chatgpt(tmp_path))
    assert dict(report) == {"created": 4, "skipped": 6, "links": 2}
    assert reasons(report) == {
        "system message": 1, "hidden message (custom instructions or context)": 1,
        "message to a tool": 1, "tool message": 1, "no text (an image or a file alone)": 1,
        "not a conversation: no 'mapping' of messages": 1}
    [tool] = [s for s in report.skips if s["reason"] == "tool message"]
    assert tool["examples"] == [
        f"{tmp_path / 'conversations.json'}: conversation 0 ('Trip to Lisbon'), message 4"]
    got = by_content(sqlite_mem)
    assert list(got) == ["Find me a hotel in Lisbon", "Try Casa do Principe.",
                         "A vegetarian paella?", "Sure: rice, saffron,\npeppers."]
    hotel, answer = got["Find me a hotel in Lisbon"], got["Try Casa do Principe."]
    assert (hotel.kind, hotel.source, hotel.source_role, hotel.session_id) == (
        "episode", "chatgpt", "user", "conv-trip")
    assert (hotel.event_time, hotel.created_at) == (1737900001.0, 1737900001.0)
    assert dict(answer.metadata) == {"conversation": "Trip to Lisbon", "position": 5,
                                     "model": "gpt-4o"}
    assert answer.source_role == "assistant"
    # the branch shown, not the regenerated answer; a conversation is one chain of turns
    assert "An answer that was regenerated" not in got
    assert [r.id for r in sqlite_mem.neighbors(hotel.id)] == [answer.id]
    paella = got["A vegetarian paella?"]  # no current_node, no times: the conversation's
    assert (paella.session_id, paella.created_at, paella.event_time) == (
        "conv-old", 1737900100.0, None)


def test_claude_export_zip(sqlite_mem: Memory, tmp_path: Path) -> None:
    report = load(sqlite_mem, "claude", build_claude(tmp_path))
    assert dict(report) == {"created": 2, "skipped": 2, "links": 1}
    assert reasons(report) == {"no text (attachments or tool use alone)": 1,
                               "not a conversation: a conversation must be an object, not"
                               " list": 1}
    got = by_content(sqlite_mem)
    plan, days = got["Plan a week in Kyoto"], got["Day 1: Fushimi Inari.\nDay 2: Arashiyama."]
    assert (plan.source_role, plan.session_id, plan.source, plan.event_time) == (
        "user", "c-kyoto", "claude", ts("2025-01-26T10:00:01Z"))
    assert dict(plan.metadata) == {"conversation": "Kyoto week", "position": 0,
                                   "attachments": ["dates.txt"]}
    assert "March 3 to 10" not in json.dumps([r.to_dict() for r in got.values()])
    assert days.source_role == "assistant"
    [(where, count)] = [(s["examples"][0], s["count"]) for s in report.skips
                        if s["reason"].startswith("no text")]
    assert count == 1 and where.endswith("conversation 0 ('Kyoto week'), message 2")


# --- properties every new source shares ----------------------------------------------------------
@pytest.mark.parametrize("fmt", list(BUILDERS))
def test_dry_run_counts_and_skips_and_writes_nothing(sqlite_mem: Memory, tmp_path: Path,
                                                     fmt: str) -> None:
    calls: list[tuple[int, int]] = []
    report = load(sqlite_mem, fmt, BUILDERS[fmt](tmp_path), dry_run=True,
                  progress=lambda done, total: calls.append((done, total)))
    created, skipped = EXPECTED[fmt]
    assert (report["created"], report["skipped"]) == (created, skipped)
    assert report.archived == (1 if fmt == "koshi" else 0)
    assert sum(s["count"] for s in report.skips) == skipped
    assert calls and calls[-1][0] == calls[-1][1] > 0
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert sqlite_mem.count(include_invalid=True) == 0 and sqlite_mem.archived() == []


@pytest.mark.parametrize("fmt", list(BUILDERS))
def test_importing_twice_adds_nothing_the_second_time(mem: Memory, tmp_path: Path,
                                                      fmt: str) -> None:
    """On every backend: ids come from the source, so the second import finds them all."""
    source = BUILDERS[fmt](tmp_path / "src")
    created, skipped = EXPECTED[fmt]
    assert load(mem, fmt, source)["created"] == created
    before = {r.id: r for r in mem.list(include_invalid=True, limit=1000)}
    second = load(mem, fmt, source)
    assert (second["created"], second["skipped"]) == (0, created + skipped)
    assert reasons(second)[ALREADY_PRESENT] == created
    assert {r.id: r for r in mem.list(include_invalid=True, limit=1000)} == before


def test_every_new_source_is_registered() -> None:
    assert set(BUILDERS) <= set(SOURCES) | set(SOURCE_ALIASES)


def test_a_message_too_long_is_skipped_with_the_limit_named(tmp_path: Path,
                                                            clock: Callable[[], float]) -> None:
    export = chatgpt_export()[:2]
    export[1]["mapping"]["b"]["message"]["content"]["parts"] = ["x" * 300]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    settings = Settings(embedder={"provider": "none"}, storage={"max_content_chars": 200})
    with Memory(SQLiteStore(tmp_path / "t.db"), settings, clock=clock) as mem:
        report = load(mem, "chatgpt", path)
        assert report["created"] == 3
        [long] = [s for s in report.skips if "200" in s["reason"]]
        assert long["examples"] == [f"{path}: conversation 1 ('Recipe'), message 1"]


def test_a_conversation_whose_id_cannot_be_a_session_is_skipped(sqlite_mem: Memory,
                                                               tmp_path: Path) -> None:
    export = claude_export()[:1]
    export[0]["uuid"] = "x" * 600  # longer than any session id may be
    path = _write(tmp_path / "conversations.json", json.dumps(export))
    report = load(sqlite_mem, "claude", path)
    assert (report["created"], report["skipped"]) == (0, 1)
    assert report.skips[0]["reason"].startswith("not a conversation: conversation id is longer")


# case: (format, what PATH holds, the start of the error)
NOT_THE_FORMAT: dict[str, tuple[str, Callable[[Path], Path], str]] = {
    "chatgpt-object": ("chatgpt", lambda r: _write(r / "conversations.json", '{"a": 1}'),
                       "not a ChatGPT export"),
    "chatgpt-bad-json": ("chatgpt", lambda r: _write(r / "conversations.json", '[\n{"a": }]'),
                         "not valid JSON"),
    "chatgpt-folder-without-export": ("chatgpt", lambda r: r,
                                      "no conversations.json in this folder"),
    "claude-zip-without-export": ("claude", lambda r: _zip(r / "x.zip", "users.json"),
                                  "no conversations.json in this zip archive"),
    "mem0-wrong-json": ("mem0", lambda r: _write(r / "m.json", '{"memories": 3}'),
                        "not mem0 output"),
    "mem0-folder-without-history": ("mem0", lambda r: r, "no history.db in this folder"),
    "mem0-wrong-database": ("mem0", build_koshi, "no table 'history'"),
    "koshi-wrong-database": ("koshi", build_ptrclaw_db,
                             "table 'memories' has no column 'created_at'"),
    "ptrclaw-wrong-database": ("ptrclaw-sqlite", build_koshi, "table 'memories' has no column"),
    "ptrclaw-missing-file": ("ptrclaw-sqlite", lambda r: r / "absent.db",
                             "cannot open: does not exist"),
}


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _zip(path: Path, member: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(member, "[]")
    return path


@pytest.mark.parametrize("case", list(NOT_THE_FORMAT))
def test_a_source_that_is_not_the_format_is_an_error_and_writes_nothing(
        sqlite_mem: Memory, tmp_path: Path, case: str) -> None:
    fmt, build, message = NOT_THE_FORMAT[case]
    source = build(tmp_path)
    with pytest.raises(ImportFormatError) as info:
        load(sqlite_mem, fmt, source)
    assert info.value.reason.startswith(message) and info.value.path is not None
    assert sqlite_mem.count(include_invalid=True) == 0


# --- the command ---------------------------------------------------------------------------------
@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Any]:
    """``clawmem`` in-process, with the import command registered as the real app does."""
    from clawmemory.interfaces.cli import app as cli_module

    monkeypatch.setenv("CLAWMEM_EMBEDDER__PROVIDER", "none")
    monkeypatch.setenv("CLAWMEM_CONFIG", str(tmp_path / "absent.toml"))
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.registered_callback = cli_module.app.registered_callback
    app.registered_commands = list(cli_module.app.registered_commands)
    app.info = cli_module.app.info
    register(app)
    runner = CliRunner()

    def run(*args: str | Path) -> Any:
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return run


def test_cli_dry_run_then_import_with_the_summary(cli: Callable[..., Any],
                                                  tmp_path: Path) -> None:
    db, source = tmp_path / "cli.db", build_chatgpt(tmp_path / "export")
    dry = cli("--db", db, "import", source.parent, "--from", "chatgpt", "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0] == (f"would import 4 memories (6 skipped, 2 links) from {source.parent}"
                        " (chatgpt)")
    assert (f"  skipped 1: tool message (e.g. {source}: conversation 0 ('Trip to Lisbon'),"
            " message 4)") in lines
    assert len(lines) == 7
    done = cli("--db", db, "--json", "import", source, "--from", "chatgpt")
    data = json.loads(done.stdout)
    assert (data["created"], data["skipped"], data["dry_run"], data["format"]) == (
        4, 6, False, "chatgpt")
    assert {s["reason"]: s["count"] for s in data["skips"]}["system message"] == 1
    again = json.loads(cli("--db", db, "--json", "import", source, "--from", "chatgpt").stdout)
    assert again["skips"][0] == {"reason": ALREADY_PRESENT, "count": 4, "examples": []}


@pytest.mark.parametrize("fmt", list(BUILDERS))
def test_cli_imports_every_new_source(cli: Callable[..., Any], tmp_path: Path,
                                      fmt: str) -> None:
    source = BUILDERS[fmt](tmp_path / "src")
    result = cli("--db", tmp_path / "cli.db", "--json", "import", source, "--from", fmt)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["created"] == EXPECTED[fmt][0]
    bad = cli("--db", tmp_path / "cli.db", "import", tmp_path / "absent", "--from", fmt)
    assert bad.exit_code == 2 and bad.stderr.startswith("error: ")
    assert "Traceback" not in bad.stderr


# --- a file given under the wrong --from ---------------------------------------------------------
@pytest.mark.parametrize(("given", "build", "right"), [("chatgpt", build_claude, "claude"),
                                                        ("claude", build_chatgpt, "chatgpt")])
def test_one_chat_export_under_the_others_name_is_refused_naming_the_right_one(
        cli: Callable[..., Any], tmp_path: Path, given: str, build: Callable[[Path], Path],
        right: str) -> None:
    db = tmp_path / "cli.db"
    result = cli("--db", db, "import", build(tmp_path / "export"), "--from", given)
    assert result.exit_code == 2, result.stdout
    assert f"use --from {right}" in result.stderr and "Traceback" not in result.stderr
    assert cli("--db", db, "import", build(tmp_path / "export"), "--from", right).exit_code == 0


def test_an_import_that_skips_every_item_exits_non_zero_saying_so(
        cli: Callable[..., Any], tmp_path: Path) -> None:
    export = chatgpt_export()[:1]
    for node in export[0]["mapping"].values():  # every message now a system message
        if node.get("message"):
            node["message"]["author"]["role"] = "system"
    path = _write(tmp_path / "conversations.json", json.dumps(export))
    result = cli("--db", tmp_path / "cli.db", "import", path, "--from", "chatgpt")
    assert result.exit_code == 2
    assert "nothing to import" in result.stderr and "system message" in result.stderr

"""Importers for every specification's storage format, the Markdown export and mirror, and the
``export``/``import`` commands.

Each format has a fixture builder that writes a small source the way that system would (the
schemas of the specifications 000-004, built here with stdlib sqlite3 / apsw, never read from
the specifications' folder). Imports go into real stores; nothing of our own storage is mocked.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from clawmemory import ImportFormatError, Memory, MemoryRecord, Settings
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.config import EmbedderSettings
from clawmemory.history import History, import_history, persistence_key
from clawmemory.interfaces.cli.chat import CHANNEL as CHAT_CHANNEL
from clawmemory.interfaces.cli.portability import register
from clawmemory.portability import (
    SOURCE_ALIASES,
    SOURCES,
    MarkdownMirror,
    export_markdown,
    mirror_all,
    read_devclaw_md,
    read_source,
    source_format,
)
from clawmemory.portability.markdown import STATE_FILE
from conftest import backend_params
from llm_servers import ScriptedLLMServer, text

START = 1_700_000_000.0  # the conftest clock's "now"
DAY = 86_400.0
JAN15 = datetime(2024, 1, 15, tzinfo=UTC).timestamp()
MAX = 100_000


def quiet_settings() -> Settings:
    """No embedding model: importing never embeds, and loading one costs seconds."""
    return Settings(embedder=EmbedderSettings(provider="none"))


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


# --- fixture builders, one per format ------------------------------------------------------------
def build_ptrclaw(root: Path) -> Path:
    """000 object shape: entries with key/category/timestamp and links by key."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "ptrclaw.json"
    doc = {"entries": [
        {"key": "soul:name", "content": "I am Ptr", "category": "core", "timestamp": 1700000100,
         "links": ["user-editor"]},
        {"key": "user-editor", "content": "User edits in Helix", "category": "knowledge",
         "timestamp": 1700000200, "links": ["soul:name"]},
    ], "embeddings": {"user-editor": [0.1, 0.2]}}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _note(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def build_devclaw(root: Path) -> Path:
    """002 file store: data/memory/<category>/<YYYY-MM-DD>-<slug>.md with front matter."""
    base = root / "data" / "memory"
    _note(base / "fact" / "2024-01-15-api-key.md",
          "---\ncategory: fact\ncreated_at: 2024-01-15T10:30:00Z\n"
          "keywords: [api, authentication, stripe]\n---\n\n"
          "The Stripe API key is stored in the vault under `stripe_api_key`.\n")
    _note(base / "preference" / "2024-01-10-language.md",
          "---\ncategory: preference\ncreated_at: 2024-01-10T08:00:00Z\nkeywords:\n"
          "  - language\n  - 'go'\nowner: alice\n---\n\nUser prefers Go for services.\n")
    _note(base / "event" / "2024-01-20-deployment.md",  # no front matter: folder + file date
          "Deployed v2.1 to production.\n")
    _note(base / "summary" / "2024-01-25-sprint-review.md",
          "---\ncategory: summary\ncreated_at: \"2024-01-25T17:00:00Z\"\nkeywords: []\n---\n"
          "Sprint review: ship search, defer sync.\n")
    return base


def build_devclaw_db(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "devclaw.db"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE memories (id TEXT PRIMARY KEY, category TEXT NOT NULL,
                content TEXT NOT NULL, keywords TEXT, embedding BLOB, created_at DATETIME,
                metadata TEXT);
            CREATE VIRTUAL TABLE memories_fts USING fts5(content, keywords, content='memories',
                content_rowid='rowid');
        """)
        db.executemany("INSERT INTO memories VALUES (?, ?, ?, ?, ?, ?, ?)", [
            ("m1", "fact", "The API uses JWT tokens with 24h expiration", '["api", "jwt"]',
             b"\x00\x00\x80?", "2024-01-15 10:30:00", '{"origin": "save"}'),
            ("m2", "preference", "User prefers dark theme", None, None, None, None),
        ])
    db.close()
    return path


MEMORY_MD = """# MEMORY.md - Long-Term Memory

## About the user
- Name: Alice
- Prefers dark mode
  in every editor

Alice moved to Lisbon in 2021.

## Projects
### clawmemory
- Uses SQLite with FTS5
  - vectors via sqlite-vec
"""

DAILY_MD = """# 2024-01-15

- 09:30 Standup: decided to ship the importer
- Reviewed the HMAC bug

## 14:00 Deploy
Deploy of v2 failed: the migration timed out.
"""


def build_openclaw(root: Path) -> Path:
    """003 migration source: an OpenClaw workspace with MEMORY.md and memory/ daily notes."""
    ws = root / "workspace"
    _note(ws / "MEMORY.md", MEMORY_MD)
    _note(ws / "memory" / "2024-01-15.md", DAILY_MD)
    return ws


SCLAW_SCHEMA = """
    CREATE TABLE schema_version (version INTEGER NOT NULL);
    INSERT INTO schema_version VALUES (2);
    CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '', tool_calls TEXT, tool_call_id TEXT, name TEXT,
        created_at DATETIME DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (session_id, seq));
    CREATE TABLE summaries (session_id TEXT PRIMARY KEY, summary TEXT NOT NULL,
        updated_at DATETIME);
    CREATE TABLE facts (id TEXT PRIMARY KEY, content TEXT NOT NULL, source TEXT, tags TEXT,
        metadata TEXT, created_at DATETIME);
    CREATE VIRTUAL TABLE facts_fts USING fts5(content, content='facts', content_rowid='rowid');
    CREATE TRIGGER facts_ai AFTER INSERT ON facts BEGIN
        INSERT INTO facts_fts(rowid, content) VALUES (new.rowid, new.content); END;
    CREATE TRIGGER facts_ad AFTER DELETE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', old.rowid,
        old.content); END;
    CREATE TRIGGER facts_au AFTER UPDATE ON facts BEGIN
        INSERT INTO facts_fts(facts_fts, rowid, content) VALUES ('delete', old.rowid,
        old.content);
        INSERT INTO facts_fts(rowid, content) VALUES (new.rowid, new.content); END;
"""


def build_sclaw(root: Path, *, wal: bool = True) -> Path:
    """001 memory.db: facts (Go time strings, JSON and comma tags), messages, summaries."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "sclaw.db"
    db = sqlite3.connect(path)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCLAW_SCHEMA)
    db.executemany("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?)", [
        ("1705314600000000000-0-1", "User's name is Alice", "telegram:42:0", '["name"]',
         '{"confidence": "high"}', "2024-01-15 10:30:00.123456789 +0000 UTC"),
        ("1705314600000000000-1-2", "User prefers dark mode", "telegram:42:0", "ui, theme",
         None, "2024-01-15T10:30:00Z"),
        ("f3", "User works at Acme", None, None, "", 1705314600),
    ])
    db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
        ("telegram:42:0", 1, "user", "Hi, I'm Alice", None, None, None, "2024-01-15 10:29:00"),
        ("telegram:42:0", 2, "assistant", "", '[{"id": "c1"}]', None, None,
         "2024-01-15 10:29:01"),
        ("telegram:42:0", 3, "tool", "{\"ok\": true}", None, "c1", "lookup",
         "2024-01-15 10:29:02"),
        ("telegram:42:0", 4, "assistant", "Nice to meet you, Alice!", None, None, None,
         "2024-01-15 10:29:03"),
    ])
    db.execute("INSERT INTO summaries VALUES (?, ?, ?)",
               ("telegram:42:0", "Alice introduced herself.", "2024-01-15 11:00:00"))
    db.commit()
    db.close()
    return path


SANDBOX_SCHEMA = """
    CREATE TABLE memories (id TEXT PRIMARY KEY, kind TEXT NOT NULL, content TEXT NOT NULL,
        session_id TEXT, embedding BLOB, event_time INTEGER NOT NULL,
        created_at INTEGER NOT NULL, valid_until INTEGER, confidence REAL DEFAULT 1.0,
        access_count INTEGER DEFAULT 0, last_accessed INTEGER, decay_rate REAL DEFAULT 0.1,
        source_ids TEXT DEFAULT '[]', source_role VARCHAR(255), entity_ids TEXT DEFAULT '[]',
        tags TEXT DEFAULT '[]', attributes TEXT DEFAULT '{}');
    CREATE TABLE entities (id TEXT PRIMARY KEY, canonical_name TEXT NOT NULL, type TEXT NOT NULL,
        aliases TEXT DEFAULT '[]', summary TEXT, embedding BLOB, mention_count INTEGER DEFAULT 1,
        protected INTEGER DEFAULT 0);
    CREATE TABLE memory_entities (memory_id TEXT NOT NULL REFERENCES memories(id),
        entity_id TEXT NOT NULL REFERENCES entities(id), PRIMARY KEY (memory_id, entity_id));
    CREATE TABLE sessions_consolidations (session_id TEXT PRIMARY KEY,
        first_seen_at INTEGER NOT NULL, consolidated_at INTEGER);
    CREATE TABLE memory_metadata (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE VIRTUAL TABLE memories_fts USING fts5(content, content='memories',
        content_rowid=rowid, tokenize='unicode61');
"""


def build_sandbox(root: Path) -> Path:
    """004 memory.db, with its vec0 table when sqlite-vec loads (it must not get in the way)."""
    import apsw

    root.mkdir(parents=True, exist_ok=True)
    path = root / "sandbox.db"
    db = apsw.Connection(str(path))
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(SANDBOX_SCHEMA)
    try:
        import sqlite_vec

        db.enable_load_extension(True)
        db.load_extension(sqlite_vec.loadable_path())
        db.execute("CREATE VIRTUAL TABLE vec_memories USING vec0(memory_id TEXT PRIMARY KEY,"
                   " embedding float[4])")
        db.execute("INSERT INTO memory_metadata VALUES ('embedding_dimensions', '4')")
    except (ImportError, apsw.Error):
        pass
    rows = [
        ("ep_1", "episode", "I'm starting Project Alpha with Bob", "s1", 1705312800, 1705312801,
         None, 1.0, 0, None, 0.1, "[]", "user", '["work"]', "{}"),
        ("fact_1", "fact", "User leads Project Alpha", "s1", 1705312800, 1705316400, None, 0.8,
         3, 1705400000, 0.1, '["ep_1"]', None, '["work", "project_alpha"]',
         '{"enriched_at": 1705400000}'),
        ("fact_2", "fact", "User led Project Beta", "s0", 1705000000, 1705000000, 1705316400,
         0.3, 0, None, 0.0, "[]", None, "[]", "{}"),
        ("fact_3", "fact", "User leads Project Gamma", "s1", 1705316400, 1705316400, None, 1.0,
         0, None, 0.1, "[]", None, "[]", '{"supersedes": "fact_2"}'),
        ("ref_1", "reflection", "This week was about Project Alpha", None, 1705320000,
         1705320000, None, 1.0, 0, None, 0.0, '["fact_1"]', None, '["weekly"]', "{}"),
    ]
    db.executemany("INSERT INTO memories (id, kind, content, session_id, event_time, created_at,"
                   " valid_until, confidence, access_count, last_accessed, decay_rate,"
                   " source_ids, source_role, tags, attributes)"
                   " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    db.executemany("INSERT INTO entities (id, canonical_name, type) VALUES (?, ?, ?)",
                   [("ent_1", "Project Alpha", "project"), ("ent_2", "Bob", "person")])
    db.executemany("INSERT INTO memory_entities VALUES (?, ?)",
                   [("ep_1", "ent_1"), ("ep_1", "ent_2"), ("fact_1", "ent_1")])
    db.executemany("INSERT INTO sessions_consolidations VALUES (?, ?, ?)",
                   [("s1", 1705312800, 1705320000), ("s2", 1705400000, None)])
    db.close()
    return path


BUILDERS: dict[str, Callable[[Path], Path]] = {
    "ptrclaw-json": build_ptrclaw,
    "devclaw-md": build_devclaw,
    "devclaw-db": build_devclaw_db,
    "openclaw": build_openclaw,
    "sclaw-db": build_sclaw,
    "sandbox-db": build_sandbox,
}
EXPECTED_COUNTS = {"ptrclaw-json": 2, "devclaw-md": 4, "devclaw-db": 2, "openclaw": 7,
                   "sclaw-db": 6, "sandbox-db": 5}


# --- helpers -------------------------------------------------------------------------------------
@pytest.fixture
def sqlite_mem(tmp_path: Path, clock: Callable[[], float]) -> Iterator[Memory]:
    """A fresh SQLite-backed Memory in the test's directory, without an embedding model."""
    mem = Memory(SQLiteStore(tmp_path / "target.db"), quiet_settings(),
                 clock=clock)
    yield mem
    mem.close()


def load(mem: Memory, fmt: str, path: Path, *, dry_run: bool = False,
         progress: Callable[[int, int], None] | None = None, **options: Any) -> dict[str, int]:
    parsed = read_source(fmt, path, namespace=mem.namespace, now=mem.clock(),
                         max_chars=mem.settings.storage.max_content_chars, progress=progress,
                         **options)
    return dict(mem.import_records(parsed, dry_run=dry_run))


def everything(mem: Memory) -> dict[str, MemoryRecord]:
    return {r.id: r for r in mem.list(include_invalid=True, limit=1000, order="oldest")}


def by_content(mem: Memory) -> dict[str, MemoryRecord]:
    return {r.content: r for r in everything(mem).values()}


# --- the registry --------------------------------------------------------------------------------
def test_registry_names_every_format_and_the_cli_offers_them() -> None:
    assert list(SOURCES) == ["json", "ptrclaw", "devclaw", "openclaw", "sclaw", "sandbox",
                             "koshi", "mem0", "chatgpt", "claude"]
    # the names of earlier releases still read exactly as before
    for old in ("ptrclaw-json", "ptrclaw-sqlite", "devclaw-md", "devclaw-db", "sclaw-db",
                "sandbox-db"):
        assert source_format(old).name == old and old in SOURCE_ALIASES
    with pytest.raises(Exception, match="unknown import format"):
        read_source("nope", ".", namespace="n", now=0, max_chars=10)
    with pytest.raises(Exception, match="does not take include_messages"):
        read_source("openclaw", ".", namespace="n", now=0, max_chars=10, include_messages=False)


# --- each format, field by field -----------------------------------------------------------------
def test_ptrclaw_json(sqlite_mem: Memory, tmp_path: Path) -> None:
    # 000 lists a link at both of its ends; it is one (undirected) link once stored.
    assert load(sqlite_mem, "ptrclaw-json", build_ptrclaw(tmp_path)) == {
        "created": 2, "skipped": 0, "links": 1}
    soul, editor = sqlite_mem.get("soul:name"), sqlite_mem.get("user-editor")
    assert (soul.kind, soul.created_at, editor.kind) == ("core", 1700000100.0, "fact")
    assert [r.id for r in sqlite_mem.neighbors("soul:name")] == [editor.id]


def test_devclaw_markdown_tree(sqlite_mem: Memory, tmp_path: Path) -> None:
    root = build_devclaw(tmp_path)
    assert load(sqlite_mem, "devclaw-md", root)["created"] == 4
    got = by_content(sqlite_mem)
    key = got["The Stripe API key is stored in the vault under `stripe_api_key`."]
    assert (key.kind, key.created_at, key.tags) == (
        "fact", ts("2024-01-15T10:30:00Z"), ("api", "authentication", "stripe"))
    pref = got["User prefers Go for services."]
    assert (pref.kind, pref.tags, dict(pref.metadata)) == (
        "preference", ("language", "go"), {"owner": "alice"})
    event = got["Deployed v2.1 to production."]  # no front matter: folder and file-name date
    assert (event.kind, event.created_at) == ("event", ts("2024-01-20T00:00:00Z"))
    assert got["Sprint review: ship search, defer sync."].kind == "summary"
    # the parent folder works too, and gives the same ids (category folder + name + content)
    again = read_devclaw_md(tmp_path / "data", namespace="default", now=START, max_chars=MAX)
    assert {r.id for r in again.records} == set(everything(sqlite_mem))


def test_devclaw_sqlite_table(sqlite_mem: Memory, tmp_path: Path) -> None:
    assert load(sqlite_mem, "devclaw-db", build_devclaw_db(tmp_path))["created"] == 2
    m1, m2 = sqlite_mem.get("m1"), sqlite_mem.get("m2")
    assert (m1.kind, m1.tags, dict(m1.metadata), m1.created_at) == (
        "fact", ("api", "jwt"), {"origin": "save"}, ts("2024-01-15T10:30:00Z"))
    assert (m2.kind, m2.created_at) == ("preference", START)


def test_openclaw_flat_files_become_discrete_memories(sqlite_mem: Memory,
                                                      tmp_path: Path) -> None:
    assert load(sqlite_mem, "openclaw", build_openclaw(tmp_path))["created"] == 7
    got = by_content(sqlite_mem)
    assert set(got) == {  # headings are not memories: list items and paragraphs are
        "Name: Alice", "Prefers dark mode\nin every editor", "Alice moved to Lisbon in 2021.",
        "Uses SQLite with FTS5\n- vectors via sqlite-vec",
        "09:30 Standup: decided to ship the importer", "Reviewed the HMAC bug",
        "Deploy of v2 failed: the migration timed out.",
    }
    assert all(r.source == "migration" for r in got.values())
    name = got["Name: Alice"]
    assert (name.kind, name.tags, name.created_at, name.event_time) == (
        "fact", ("about the user",), START, None)
    assert dict(name.metadata) == {"file": "MEMORY.md", "line": 4, "section": "About the user"}
    deep = got["Uses SQLite with FTS5\n- vectors via sqlite-vec"]
    assert (deep.tags, deep.metadata["section"]) == (("clawmemory",), "Projects > clawmemory")
    standup = got["09:30 Standup: decided to ship the importer"]
    assert (standup.kind, standup.event_time, standup.created_at, standup.tags) == (
        "event", JAN15 + 9.5 * 3600, JAN15 + 9.5 * 3600, ())
    assert got["Reviewed the HMAC bug"].event_time == JAN15
    deploy = got["Deploy of v2 failed: the migration timed out."]
    assert deploy.event_time == JAN15 + 14 * 3600  # the time of its heading
    assert deploy.metadata["file"] == "memory/2024-01-15.md"


def test_openclaw_single_file_and_memory_folder(sqlite_mem: Memory, tmp_path: Path) -> None:
    ws = build_openclaw(tmp_path)
    whole = {r.id for r in read_source("openclaw", ws, namespace="default", now=START,
                                          max_chars=MAX).records}
    for part, count in ((ws / "MEMORY.md", 4), (ws / "memory", 3),
                        (ws / "memory" / "2024-01-15.md", 3)):
        parsed = read_source("openclaw", part, namespace="default", now=START, max_chars=MAX)
        assert len(parsed.records) == count
        assert {r.id for r in parsed.records} <= whole  # same ids whichever path is given


def test_sclaw_facts_messages_and_summaries(sqlite_mem: Memory, tmp_path: Path) -> None:
    assert load(sqlite_mem, "sclaw-db", build_sclaw(tmp_path))["created"] == 6
    alice = sqlite_mem.get("1705314600000000000-0-1")
    assert (alice.kind, alice.session_id, alice.tags, dict(alice.metadata)) == (
        "fact", "telegram:42:0", ("name",), {"confidence": "high"})
    assert alice.created_at == pytest.approx(ts("2024-01-15T10:30:00.123456Z"))
    dark = sqlite_mem.get("1705314600000000000-1-2")
    assert (dark.tags, dark.created_at) == (("ui", "theme"), ts("2024-01-15T10:30:00Z"))
    assert sqlite_mem.get("f3").created_at == 1705314600.0
    episodes = sqlite_mem.list(kind="episode", order="oldest")
    # the tool-call-only assistant turn and the tool result are not memories
    assert [(e.source_role, e.content, e.metadata["seq"]) for e in episodes] == [
        ("user", "Hi, I'm Alice", 1), ("assistant", "Nice to meet you, Alice!", 4)]
    assert episodes[0].session_id == "telegram:42:0"
    assert episodes[0].event_time == ts("2024-01-15T10:29:00Z")
    # the turns of a session form one chain, as when they are written one by one
    assert [r.id for r in sqlite_mem.neighbors(episodes[0].id)] == [episodes[1].id]
    [summary] = sqlite_mem.list(kind="summary")
    assert (summary.content, summary.session_id) == ("Alice introduced herself.",
                                                     "telegram:42:0")


def test_sclaw_without_message_history(sqlite_mem: Memory, tmp_path: Path) -> None:
    report = load(sqlite_mem, "sclaw-db", build_sclaw(tmp_path), include_messages=False)
    assert report["created"] == 4
    assert sqlite_mem.count(kind="episode") == 0


def test_sclaw_messages_become_the_sessions_chat_history(sqlite_mem: Memory,
                                                        tmp_path: Path) -> None:
    """001 keeps a session's messages so its agent resumes the conversation: here they go to
    the history store under the key ``clawmem chat --session telegram:42:0`` reads (the
    episodes stay too). A second import finds that history and adds nothing."""
    parsed = read_source("sclaw", build_sclaw(tmp_path), namespace=sqlite_mem.namespace,
                         now=sqlite_mem.clock(), max_chars=100_000)
    sqlite_mem.import_records(parsed)
    assert import_history(sqlite_mem, parsed.history).to_dict() == {
        "messages": 2, "conversations": 1, "present": 0}
    key = persistence_key(CHAT_CHANNEL, "telegram:42:0")
    with History(sqlite_mem) as history:
        turns = history.conversation(key).assemble()
    assert [(m.role, m.content) for m in turns] == [
        ("user", "Hi, I'm Alice"), ("assistant", "Nice to meet you, Alice!")]
    assert sqlite_mem.count(kind="episode") == 2
    assert import_history(sqlite_mem, parsed.history).to_dict() == {
        "messages": 0, "conversations": 0, "present": 1}
    without = read_source("sclaw", build_sclaw(tmp_path / "again"), include_messages=False,
                          namespace=sqlite_mem.namespace, now=0.0, max_chars=100_000)
    assert without.history == {}


def test_clawmem_chat_resumes_an_imported_sclaw_session(tmp_path: Path) -> None:
    """End to end, as a user: import the 001 database, then chat in its session; the model is
    sent the imported conversation before the new message."""
    source = build_sclaw(tmp_path / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env.update(CLAWMEM_HOME=str(tmp_path / "home"), CLAWMEM_DB=str(tmp_path / "chat.db"),
               CLAWMEM_CONFIG=str(tmp_path / "absent.toml"),
               CLAWMEM_EMBEDDER__PROVIDER="none")
    clawmem = [str(Path(sys.executable).parent / "clawmem")]
    done = subprocess.run([*clawmem, "import", str(source), "--from", "sclaw"], env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "chat history: added 2 messages of 1 sessions" in done.stdout
    with ScriptedLLMServer("openai") as server:
        server.script([text("You are Alice.")], then=text("[]"))
        done = subprocess.run([*clawmem, "chat", "--session", "telegram:42:0", "-m",
                               "What is my name?"], env=env | server.env(), text=True,
                              capture_output=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        sent = [(m["role"], m["content"]) for m in server.bodies[0]["messages"]
                if m["role"] != "system"]
    assert sent[-3:-1] == [("user", "Hi, I'm Alice"), ("assistant", "Nice to meet you, Alice!")]
    assert sent[-1][0] == "user" and sent[-1][1].endswith("What is my name?")  # after recall


def test_sclaw_source_is_opened_read_only(sqlite_mem: Memory, tmp_path: Path) -> None:
    path = build_sclaw(tmp_path, wal=False)
    before = path.read_bytes()
    path.chmod(0o444)
    load(sqlite_mem, "sclaw-db", path)
    assert path.read_bytes() == before
    assert not path.with_name(path.name + "-journal").exists()


def test_sandbox_fields_entities_and_consolidation(sqlite_mem: Memory, tmp_path: Path) -> None:
    assert load(sqlite_mem, "sandbox-db", build_sandbox(tmp_path))["created"] == 5
    ep = sqlite_mem.get("ep_1")
    assert (ep.kind, ep.source_role, ep.session_id, ep.event_time, ep.created_at) == (
        "episode", "user", "s1", 1705312800.0, 1705312801.0)
    assert ep.decay_rate == 0.0  # 004 never decays episodes
    assert dict(ep.metadata) == {"entities": ["Bob", "Project Alpha"],
                                 "session_consolidated_at": 1705320000.0}
    fact = sqlite_mem.get("fact_1")
    assert (fact.confidence, fact.access_count, fact.last_accessed, fact.decay_rate) == (
        0.8, 3, 1705400000.0, 0.1)
    assert (fact.source_ids, fact.tags) == (("ep_1",), ("work", "project_alpha"))
    assert fact.metadata["enriched_at"] == 1705400000
    assert fact.metadata["entities"] == ["Project Alpha"]
    old = sqlite_mem.get("fact_2")
    assert (old.valid_until, old.is_valid, old.decay_rate) == (1705316400.0, False, 0.0)
    assert "session_consolidated_at" not in old.metadata  # s0 was never registered
    assert sqlite_mem.get("fact_3").supersedes == "fact_2"
    ref = sqlite_mem.get("ref_1")
    assert (ref.kind, ref.decay_rate, ref.tags) == ("reflection", 0.0, ("weekly",))


@pytest.mark.parametrize("backend", backend_params("sqlite", "postgres"), indirect=True)
def test_sandbox_entities_keep_their_types(mem: Memory, tmp_path: Path) -> None:
    """004 typed "Bob" a person and "Project Alpha" a project: the entities linking builds
    here have those types (the extractor alone made both ``other``)."""
    load(mem, "sandbox-db", build_sandbox(tmp_path))
    types = {e["name"]: e["type"] for e in mem.entities_of("ep_1")}
    assert types["Bob"] == "person" and types["Project Alpha"] == "project"
    assert {e["name"]: e["type"] for e in mem.entities_of("fact_1")}["Project Alpha"] == "project"


# --- properties every format shares --------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(BUILDERS))
def test_dry_run_writes_nothing_and_progress_reaches_the_end(
        sqlite_mem: Memory, tmp_path: Path, fmt: str) -> None:
    calls: list[tuple[int, int]] = []
    report = load(sqlite_mem, fmt, BUILDERS[fmt](tmp_path), dry_run=True,
                  progress=lambda done, total: calls.append((done, total)))
    assert report["created"] == EXPECTED_COUNTS[fmt]
    assert calls and calls[-1][0] == calls[-1][1] > 0
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert sqlite_mem.count(include_invalid=True) == 0


@pytest.mark.parametrize("fmt", list(BUILDERS))
def test_importing_twice_skips_everything_the_second_time(mem: Memory, tmp_path: Path,
                                                          fmt: str) -> None:
    """On every backend: ids are the source's own or derived from it, so they repeat."""
    source = BUILDERS[fmt](tmp_path / "src")
    first = load(mem, fmt, source)
    assert first["created"] == EXPECTED_COUNTS[fmt]
    snapshot = everything(mem)
    second = load(mem, fmt, source)
    assert (second["created"], second["skipped"]) == (0, EXPECTED_COUNTS[fmt])
    assert everything(mem) == snapshot


# --- corrupt inputs: an error naming file and line (or row), and nothing imported -----------------
def _write_bytes(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def _sqlite(path: Path, script: str) -> Path:
    db = sqlite3.connect(path)
    db.executescript(script)
    db.close()
    return path


def _sclaw_row(root: Path, sql: str) -> Path:
    return _sqlite(build_sclaw(root, wal=False), sql)


def _sandbox_row(root: Path, sql: str) -> Path:
    import apsw

    path = build_sandbox(root)
    db = apsw.Connection(str(path))
    db.execute(sql)
    db.close()
    return path


def _devclaw_plus(name: str, data: str | bytes) -> Callable[[Path], Path]:
    """The 002 fixture tree plus one broken note."""
    def build(root: Path) -> Path:
        base = build_devclaw(root)
        _write_bytes(base / name, data if isinstance(data, bytes) else data.encode("utf-8"))
        return base
    return build


def _openclaw_plus(name: str, data: bytes) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        ws = build_openclaw(root)
        _write_bytes(ws / name, data)
        return ws
    return build


def _empty(root: Path) -> Path:
    (root / "empty").mkdir()
    return root / "empty"


FM = "---\ncategory: fact\ncreated_at: 2024-01-15T10:30:00Z\n"
FACT_ROW = "INSERT INTO facts VALUES ('f9', {}, NULL, NULL, {}, NULL)"
MEM_ROW = "INSERT INTO memories (id, kind, content, event_time, created_at) VALUES ({})"
# case: (format, builder of a corrupt source, file named in the error, ":LINE:" or row text)
CORRUPT: dict[str, tuple[str, Callable[[Path], Path], str, str | None]] = {
    "md-empty-folder": ("devclaw-md", _empty, "empty", None),
    "openclaw-not-utf8": ("openclaw", _openclaw_plus(
        "memory/2024-01-16.md", b"# day\n\n- ok\n- caf\xe9\n"), "2024-01-16.md", ":4:"),
    "openclaw-too-long": ("openclaw", _openclaw_plus(
        "memory/2024-01-16.md", b"- ok\n\n" + b"x" * (MAX + 1)), "2024-01-16.md", ":3:"),
    "openclaw-nothing": ("openclaw", _empty, "empty", None),
    "json-invalid": ("ptrclaw-json", lambda r: _write_bytes(
        r / "s.json", b'{"entries": [\n {"content": "a"},\n {"content": }\n]}'), "s.json",
        ":3:"),
    "json-not-utf8": ("ptrclaw-json", lambda r: _write_bytes(
        r / "s.json", b'[\n{"content": "caf\xe9"}]'), "s.json", ":2:"),
    "json-missing-content": ("ptrclaw-json", lambda r: _write_bytes(
        r / "s.json", b'[{"content": "a"}, {"key": "k"}]'), "s.json", "entry 1"),
    "sclaw-wrong-schema": ("sclaw-db", build_sandbox, "sandbox.db", "no table 'facts'"),
    "sclaw-missing-column": ("sclaw-db", lambda r: _sqlite(
        r / "x.db", "CREATE TABLE facts (id TEXT, text TEXT); CREATE TABLE messages (x);"),
        "x.db", "no column 'content'"),
    "sclaw-not-utf8": ("sclaw-db", lambda r: _sclaw_row(
        r, FACT_ROW.format("CAST(x'ff41' AS TEXT)", "NULL")), "sclaw.db",
        "table facts, row 4 (id 'f9')"),
    "sclaw-empty-content": ("sclaw-db", lambda r: _sclaw_row(
        r, FACT_ROW.format("' '", "NULL")), "sclaw.db", "row 4 (id 'f9'): content is empty"),
    "sclaw-bad-metadata": ("sclaw-db", lambda r: _sclaw_row(
        r, FACT_ROW.format("'x'", "'{oops'")), "sclaw.db", "row 4 (id 'f9'): metadata"),
    "sclaw-bad-message": ("sclaw-db", lambda r: _sclaw_row(
        r, "INSERT INTO messages VALUES ('s9', 1, 'user', 'hi', NULL, NULL, NULL, 'later')"),
        "sclaw.db", "table messages, row 1 (session 's9', seq 1)"),
    "sclaw-not-a-database": ("sclaw-db", lambda r: _write_bytes(r / "m.db", b"hello" * 300),
                             "m.db", None),
    "sclaw-missing-file": ("sclaw-db", lambda r: r / "absent.db", "absent.db", None),
    "sandbox-wrong-schema": ("sandbox-db", build_sclaw, "sclaw.db", "no table 'memories'"),
    "sandbox-unknown-kind": ("sandbox-db", lambda r: _sandbox_row(
        r, MEM_ROW.format("'x1', 'dream', 'hm', 1, 1")), "sandbox.db", "row 6 (id 'x1')"),
    "sandbox-bad-confidence": ("sandbox-db", lambda r: _sandbox_row(
        r, "UPDATE memories SET confidence = 2.5 WHERE id = 'fact_1'"), "sandbox.db",
        "row 2 (id 'fact_1')"),
    "sandbox-not-utf8": ("sandbox-db", lambda r: _sandbox_row(
        r, "UPDATE memories SET content = CAST(x'c328' AS TEXT) WHERE id = 'ref_1'"),
        "sandbox.db", "row 5 (id 'ref_1')"),
    "sandbox-bad-tags": ("sandbox-db", lambda r: _sandbox_row(
        r, "UPDATE memories SET tags = '{\"a\": 1}' WHERE id = 'ep_1'"), "sandbox.db",
        "row 1 (id 'ep_1')"),
    "devclaw-db-wrong-schema": ("devclaw-db", build_sclaw, "sclaw.db", "no table 'memories'"),
}


@pytest.mark.parametrize("case", list(CORRUPT))
def test_corrupt_source_names_file_and_place_and_imports_nothing(
        sqlite_mem: Memory, tmp_path: Path, case: str) -> None:
    fmt, build, file_name, where = CORRUPT[case]
    sqlite_mem.store("already here")
    source = build(tmp_path)
    with pytest.raises(ImportFormatError) as info:
        load(sqlite_mem, fmt, source)
    message = str(info.value)
    assert file_name in message and info.value.path is not None
    if where is not None:
        assert where in message
    if where and where.startswith(":"):
        assert info.value.line == int(where.strip(":"))
    assert sqlite_mem.count(include_invalid=True) == 1


# --- Markdown export, round trip, mirror ---------------------------------------------------------
def _varied(mem: Memory, clock: Any) -> None:
    a = mem.store("User prefers dark mode", kind="preference", tags=["ui", "theme: dark, odd"],
                  key="theme", metadata={"team": "payments", "n": 3})
    clock.advance(DAY)
    b = mem.store("Deploy failed: migration timed out", kind="event", event_time=JAN15,
                  session_id="s1", source="conversation", source_role="agent")
    mem.store("Deploy failed, migration timed out.", kind="event")  # same day and words
    mem.store("12345", key="true", kind="core")
    mem.reinforce(b)
    mem.link(a, b)
    old = mem.store("Office is in Lisbon", source_ids=["x1"], confidence=0.5)
    clock.advance(60)
    mem.correct(old, "Office is in Porto", reason="moved")


def _comparable(mem: Memory) -> dict[str, dict[str, Any]]:
    """Every field an export is meant to keep (access bookkeeping and the arrival in a store
    are not)."""
    out = {}
    for r in everything(mem).values():
        d = r.to_dict()
        del d["last_accessed"], d["access_count"], d["stored_at"]
        out[r.id] = d
    return out


def _links(mem: Memory) -> set[tuple[str, str]]:
    ids = list(everything(mem))
    links = mem.store_backend.links(mem.namespace, ids)
    return {(min(a, lk.other_id), max(a, lk.other_id)) for a, lks in links.items() for lk in lks}


def test_markdown_export_round_trips(sqlite_mem: Memory, tmp_path: Path, clock: Any) -> None:
    _varied(sqlite_mem, clock)
    out = tmp_path / "notes"
    assert export_markdown(sqlite_mem, out) == 6
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.md"))
    assert "event/2023-11-15-deploy-failed-migration-timed-out.md" in names
    assert "event/2023-11-15-deploy-failed-migration-timed-out-2.md" in names
    assert "preference/2023-11-14-theme.md" in names
    with Memory(SQLiteStore(tmp_path / "copy.db"), quiet_settings(),
                clock=clock) as copy:
        report = load(copy, "devclaw-md", out)
        assert report == {"created": 6, "skipped": 0, "links": 1}
        assert _comparable(copy) == _comparable(sqlite_mem)
        assert _links(copy) == _links(sqlite_mem)
    assert load(sqlite_mem, "devclaw-md", out)["skipped"] == 6


def test_markdown_export_is_valid_yaml_and_refuses_a_full_folder(
        sqlite_mem: Memory, tmp_path: Path, clock: Any) -> None:
    yaml = pytest.importorskip("yaml")
    _varied(sqlite_mem, clock)
    out = tmp_path / "notes"
    export_markdown(sqlite_mem, out)
    for note in out.rglob("*.md"):
        header = note.read_text(encoding="utf-8").split("---\n")[1]
        data = yaml.safe_load(header)
        assert data["category"] == note.parent.name
        assert isinstance(data["created_at"], datetime)  # DevClaw reads a real timestamp
        assert all(isinstance(k, str) for k in data["keywords"])
        assert isinstance(data["id"], str)
        if "key" in data:
            assert isinstance(data["key"], str)  # "true" stays text
    with pytest.raises(Exception, match="not an empty directory"):
        export_markdown(sqlite_mem, out)


def test_mirror_writes_keeps_and_removes_notes(sqlite_mem: Memory, tmp_path: Path,
                                               clock: Any) -> None:
    mirror = MarkdownMirror(tmp_path / "mirror")
    rid = sqlite_mem.store("User prefers dark mode", kind="preference", tags=["ui"])
    record = sqlite_mem.get(rid)
    path = mirror.write(record)
    assert path is not None
    assert path.relative_to(tmp_path / "mirror").as_posix() == (
        "preference/2023-11-14-user-prefers-dark-mode.md")
    [back] = read_devclaw_md(path, namespace="default", now=0, max_chars=MAX).records
    assert (back.id, back.content, back.kind, back.tags) == (rid, record.content, "preference",
                                                             ("ui",))
    assert mirror.write(record) == path  # stable: writing again changes nothing
    updated = sqlite_mem.update(rid, content="User prefers light mode", kind="fact")
    assert mirror.write(updated) == path  # neither the text nor the kind moves a note
    assert "light mode" in path.read_text() and "category: fact" in path.read_text()
    # a fresh mirror object (another process) finds the note through the state file
    assert MarkdownMirror(tmp_path / "mirror").remove(updated)
    assert not path.exists()
    assert not mirror.remove(updated)
    assert not (tmp_path / "mirror" / STATE_FILE).exists()  # nothing tracked: no state file


def test_mirror_all_syncs_a_folder(sqlite_mem: Memory, tmp_path: Path, clock: Any) -> None:
    _varied(sqlite_mem, clock)
    out = tmp_path / "mirror"
    (out / "fact").mkdir(parents=True)
    stale = out / "fact" / "2020-01-01-gone.deadbeefdeadbeef.md"
    stale.write_text("---\nid: deadbeefdeadbeef\n---\nold\n", encoding="utf-8")
    own = out / "README.md"
    own.write_text("mine", encoding="utf-8")
    assert mirror_all(sqlite_mem, out) == 5  # the live set: the corrected version is history
    assert not stale.exists() and own.exists()
    parsed = read_devclaw_md(out / "fact", namespace="default", now=0, max_chars=MAX)
    assert {r.id for r in parsed.records} <= {r.id for r in sqlite_mem.list(limit=100)}
    assert "Porto" in (out / "fact" / "2023-11-15-office-is-in-porto.md").read_text()
    odd = MemoryRecord(id="a/b c", content="odd id", created_at=START)
    assert MarkdownMirror(out).path_for(odd).name == "2023-11-14-odd-id.md"


# --- the commands, in-process ---------------------------------------------------------------------
@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., Any]:
    """Run ``clawmem`` in-process on an app that has these commands registered."""
    from clawmemory.interfaces.cli import app as cli_module

    monkeypatch.setenv("CLAWMEM_EMBEDDER__PROVIDER", "none")
    monkeypatch.setenv("CLAWMEM_CONFIG", str(tmp_path / "absent.toml"))
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.registered_callback = cli_module.app.registered_callback
    app.registered_commands = list(cli_module.app.registered_commands)
    app.info = cli_module.app.info
    register(app)
    runner = CliRunner()

    def run(*args: str | Path, stdin: str | None = None) -> Any:
        return runner.invoke(app, [str(a) for a in args], input=stdin, catch_exceptions=False)

    return run


def test_cli_import_every_format(cli: Callable[..., Any], tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    for fmt, build in BUILDERS.items():
        source = build(tmp_path / fmt)
        dry = cli("--db", db, "-n", fmt, "--json", "import", source, "--from", fmt, "--dry-run")
        assert dry.exit_code == 0, dry.stderr
        expected = {"created": EXPECTED_COUNTS[fmt], "skipped": 0,
                    # sclaw: the session's two turns, chained
                    "links": {"ptrclaw-json": 2, "sclaw-db": 1}.get(fmt, 0),
                    "archived": 0, "dry_run": True,
                    "source": str(source), "format": fmt, "skips": []}
        if fmt == "sclaw-db":  # and the same two turns as the session's chat history
            expected["history"] = {"messages": 2, "conversations": 1, "present": 0}
        assert json.loads(dry.stdout) == expected
        result = cli("--db", db, "-n", fmt, "import", source, "--from", fmt)
        assert result.exit_code == 0, result.stderr
        assert f"imported {EXPECTED_COUNTS[fmt]} memories" in result.stdout
    with Memory.open(db, namespace="openclaw", settings=quiet_settings()
                     ) as mem:
        assert mem.count(source="migration") == EXPECTED_COUNTS["openclaw"]


def test_cli_import_options_and_errors(cli: Callable[..., Any], tmp_path: Path) -> None:
    db, sclaw = tmp_path / "cli.db", build_sclaw(tmp_path)
    result = cli("--db", db, "--json", "import", sclaw, "--from", "sclaw-db", "--no-messages",
                 "--progress")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["created"] == 4
    wrong = cli("--db", db, "import", build_openclaw(tmp_path), "--from", "openclaw",
                "--no-messages")
    assert wrong.exit_code == 2 and "only apply to --from sclaw" in wrong.stderr
    bad = _write_bytes(tmp_path / "bad" / "memory" / "2024-01-16.md", b"- a\n- caf\xe9\n")
    failed = cli("--db", db, "import", bad.parent.parent, "--from", "openclaw")
    assert failed.exit_code == 2
    assert failed.stderr.startswith(f"error: {bad}:2: not UTF-8")
    snapshot = json.dumps([{"content": "from stdin", "key": "stdin-key"}])
    piped = cli("--db", db, "import", "-", stdin=snapshot)
    assert piped.exit_code == 0 and "imported 1 memories" in piped.stdout
    not_json = cli("--db", db, "import", "-", "--from", "openclaw", stdin="x")
    assert not_json.exit_code == 2


def test_cli_export_json_and_markdown(cli: Callable[..., Any], tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    assert cli("--db", db, "import", build_ptrclaw(tmp_path), "--from", "ptrclaw-json"
               ).exit_code == 0
    as_json = cli("--db", db, "export")
    assert as_json.exit_code == 0 and len(json.loads(as_json.stdout)["entries"]) == 2
    to_file = cli("--db", db, "--json", "export", "--format", "json", "--out", tmp_path / "s.json")
    assert json.loads(to_file.stdout)["entries"] == 2
    assert (tmp_path / "s.json").exists()
    md = cli("--db", db, "--json", "export", "--format", "markdown", "--out", tmp_path / "md")
    assert md.exit_code == 0, md.stderr
    assert json.loads(md.stdout) == {"path": str(tmp_path / "md"), "format": "markdown",
                                     "entries": 2}
    assert {p.parent.name for p in (tmp_path / "md").rglob("*.md")} == {"core", "fact"}
    again = cli("--db", db, "export", "--format", "markdown", "--out", tmp_path / "md")
    assert again.exit_code == 2 and "not an empty directory" in again.stderr
    missing = cli("--db", db, "export", "--format", "markdown")
    assert missing.exit_code == 2 and "--out" in missing.stderr
    back = cli("--db", tmp_path / "two.db", "--json", "import", tmp_path / "md", "--from",
               "devclaw-md")
    assert json.loads(back.stdout)["links"] == 1


# --- the real entry point, once cli.py calls register(app) ---------------------------------
CLAWMEM = Path(sys.executable).parent / "clawmem"


def _wired() -> bool:
    try:
        proc = subprocess.run([str(CLAWMEM), "import", "--help"], capture_output=True,
                              timeout=60, check=False, env={**os.environ, "COLUMNS": "200"})
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--from" in proc.stdout.decode("utf-8", "replace")


wired = pytest.mark.skipif(not _wired(), reason="cli.py does not call register(app) yet")


def _clawmem(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    home = cwd / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env.update(CLAWMEM_HOME=str(home), CLAWMEM_CONFIG=str(home / "absent.toml"),
               CLAWMEM_EMBEDDER__PROVIDER="none")
    return subprocess.run([str(CLAWMEM), *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120, check=False)


@wired
def test_entry_point_imports_and_exports(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    imported = _clawmem("--db", db, "--json", "import", build_openclaw(tmp_path), "--from",
                        "openclaw", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["created"] == EXPECTED_COUNTS["openclaw"]
    exported = _clawmem("--db", db, "export", "--format", "markdown", "--out", tmp_path / "md",
                        cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert len(list((tmp_path / "md").rglob("*.md"))) == EXPECTED_COUNTS["openclaw"]


@wired
def test_entry_point_reports_a_corrupt_source(tmp_path: Path) -> None:
    bad = _sclaw_row(tmp_path, FACT_ROW.format("' '", "NULL"))
    result = _clawmem("--db", tmp_path / "e.db", "import", bad, "--from", "sclaw-db",
                      cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: {bad}: table facts, row 4 (id 'f9')")
    assert "Traceback" not in result.stderr


def test_mirror_dir_writes_every_change_through(tmp_path: Path) -> None:
    """storage.mirror_dir: the engine keeps a Markdown copy of the namespace up to date."""
    from clawmemory import Settings

    settings = Settings(db=tmp_path / "m.db", embedder={"provider": "none"},
                        storage={"mirror_dir": tmp_path / "mirror"})
    with Memory.open(settings=settings) as mem:
        keep = mem.store("The deploy window is Tuesday 10:00", kind="event")
        gone = mem.store("Temporary note to forget")
        mem.update(keep, content="The deploy window moved to Wednesday 10:00")
        mem.forget(gone)
        files = list((tmp_path / "mirror" / "default").rglob("*.md"))
    assert len(files) == 1
    text = files[0].read_text(encoding="utf-8")
    assert "Wednesday" in text and "Tuesday" not in text

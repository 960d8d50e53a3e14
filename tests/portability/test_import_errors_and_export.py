"""Behaviours of the importers and the Markdown export that mutation testing showed no test
pinned: the exact errors a bad source gets, how DevClaw keyword lists and OpenClaw notes are
split, the ids and defaults an import gives, and what an exported note's header holds.

Every source is built here (stdlib sqlite3, files written by the test); imports go through
``read_source`` (what ``clawmem import`` calls) and exports through ``export_markdown``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_importers import MEM0_HISTORY_SCHEMA
from test_portability import (  # noqa: F401  (sqlite_mem is a fixture)
    MAX,
    START,
    build_devclaw_db,
    build_sandbox,
    build_sclaw,
    sqlite_mem,
)

from clawmemory import ImportFormatError, Memory
from clawmemory.model import KINDS
from clawmemory.portability import export_markdown, read_source
from clawmemory.snapshot import ParsedSnapshot


def read(fmt: str, path: Path) -> ParsedSnapshot:
    return read_source(fmt, path, namespace="default", now=START, max_chars=MAX)


def refused(fmt: str, path: Path) -> ImportFormatError:
    with pytest.raises(ImportFormatError) as info:
        read(fmt, path)
    return info.value


def sql(path: Path, script: str) -> Path:
    db = sqlite3.connect(path)
    db.executescript(script)
    db.commit()
    db.close()
    return path


def note(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- a SQLite source that fails while its rows are read ------------------------------------------
def test_a_database_error_while_reading_rows_names_the_file_and_the_cause(
        tmp_path: Path) -> None:
    # A view that has the columns and can be counted, but whose rows overflow when SQLite
    # steps them: the error comes while the rows are read, after the schema checks passed.
    path = sql(tmp_path / "devclaw.db", """
        CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);
        CREATE VIEW memories AS SELECT 'm1' AS id, 'fact' AS category,
            abs(x - 9223372036854775807 - 2) AS content FROM t;
    """)
    error = refused("devclaw-db", path)
    assert error.path == str(path)
    assert error.line is None
    assert error.reason == "cannot read: integer overflow"
    assert str(error) == f"{path}: cannot read: integer overflow"


# --- a column that is not UTF-8 is named in the error --------------------------------------------
BAD = "CAST(x'ff41' AS TEXT)"  # 0xff starts no UTF-8 sequence
DEVCLAW_ROW = {"id": "'d9'", "category": "'fact'", "content": "'x'", "keywords": "'[]'",
               "metadata": "'{}'"}
SCLAW_ROW = {"id": "'f9'", "content": "'x'", "source": "NULL", "tags": "NULL",
             "metadata": "NULL", "created_at": "NULL"}


def _insert(table: str, row: dict[str, str], bad: str) -> str:
    values = [BAD if name == bad else value for name, value in row.items()]
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(values)});"


@pytest.mark.parametrize("column", ["id", "category", "content", "keywords", "metadata"])
def test_devclaw_db_column_that_is_not_utf8_is_named(tmp_path: Path, column: str) -> None:
    path = sql(build_devclaw_db(tmp_path), _insert("memories", DEVCLAW_ROW, column))
    error = refused("devclaw-db", path)
    shown = "\ufffdA" if column == "id" else "d9"
    assert error.reason == (f"table memories, row 3 (id {shown!r}): column {column} is not"
                            " UTF-8 text (byte 0xff at offset 0)")


@pytest.mark.parametrize("column", ["id", "content", "source", "tags", "metadata"])
def test_sclaw_fact_column_that_is_not_utf8_is_named(tmp_path: Path, column: str) -> None:
    path = sql(build_sclaw(tmp_path, wal=False), _insert("facts", SCLAW_ROW, column))
    error = refused("sclaw", path)
    shown = "\ufffdA" if column == "id" else "f9"
    assert error.reason == (f"table facts, row 4 (id {shown!r}): column {column} is not"
                            " UTF-8 text (byte 0xff at offset 0)")


def _mem0_history(root: Path, actor: str) -> Path:
    path = root / "history.db"
    sql(path, MEM0_HISTORY_SCHEMA + f"""
        INSERT INTO history VALUES ('h1', 'm-1', NULL, 'Likes jazz', 'ADD',
            '2024-05-01T10:00:00+00:00', NULL, 0, {actor}, NULL);
    """)
    return path


def test_mem0_history_actor_that_is_not_utf8_skips_the_memory_naming_it(
        tmp_path: Path) -> None:
    path = _mem0_history(tmp_path, "CAST(x'ff' AS TEXT)")
    parsed = read("mem0", path)
    assert parsed.records == []
    assert [tuple(s) for s in parsed.skipped] == [(
        "column actor_id is not UTF-8 text (byte 0xff at offset 0)",
        f"{path}: memory m-1 (history row 1)")]


def test_mem0_history_actor_goes_to_metadata(tmp_path: Path) -> None:
    (record,) = read("mem0", _mem0_history(tmp_path, "'alice'")).records
    assert (record.id, record.content, record.metadata) == ("m-1", "Likes jazz",
                                                            {"actor_id": "alice"})
    assert (record.kind, record.source, record.source_role) == ("fact", "mem0", None)
    assert record.created_at == record.updated_at == 1714557600.0  # 2024-05-01T10:00:00Z


# --- mem0 JSON: an item without an id gets a stable id of its content ----------------------------
def test_mem0_item_without_id_gets_the_stable_mem0_id(tmp_path: Path) -> None:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps({"results": [{"memory": "Likes tea"}, {"id": " ", "memory": "B"}]}),
                    encoding="utf-8")
    ids = [r.id for r in read("mem0", path).records]
    # sha256 of "mem0" \x1f content, first 16 hex digits: the same id on every release
    assert ids == [hashlib.sha256(f"mem0\x1f{c}".encode()).hexdigest()[:16]
                   for c in ("Likes tea", "B")]
    assert ids[0] == "1da74734492e7a81"


# --- sclaw: a message's seq must be an integer ---------------------------------------------------
@pytest.mark.parametrize(("seq", "shown"), [("'x'", "b'x'"), ("1.5", "1.5"), ("NULL", "None")])
def test_sclaw_message_whose_seq_is_not_an_integer_is_refused(tmp_path: Path, seq: str,
                                                             shown: str) -> None:
    path = sql(build_sclaw(tmp_path, wal=False), "CREATE TABLE m2 AS SELECT * FROM messages;"
               " DROP TABLE messages; CREATE TABLE messages AS SELECT * FROM m2 WHERE 0;"
               f" INSERT INTO messages VALUES ('s9', {seq}, 'user', 'hi', NULL, NULL, NULL,"
               " NULL);")
    error = refused("sclaw", path)
    assert error.reason.endswith(f": seq must be an integer, not {shown}")


def test_sclaw_message_seq_stored_as_text_digits_is_read_as_a_number(tmp_path: Path) -> None:
    path = sql(build_sclaw(tmp_path, wal=False), "CREATE TABLE m2 AS SELECT * FROM messages;"
               " DROP TABLE messages; CREATE TABLE messages AS SELECT * FROM m2 WHERE 0;"
               " INSERT INTO messages VALUES ('s9', '7', 'user', 'hi', NULL, NULL, NULL, NULL);")
    (episode,) = [r for r in read("sclaw", path).records if r.kind == "episode"]
    assert episode.metadata == {"seq": 7}


# --- sandbox: a NULL decay_rate takes the kind's own rate ----------------------------------------
def test_sandbox_null_decay_rate_takes_the_kind_policy(tmp_path: Path) -> None:
    import apsw

    path = build_sandbox(tmp_path)
    db = apsw.Connection(str(path))
    db.execute("UPDATE memories SET decay_rate = NULL, confidence = NULL, access_count = NULL")
    db.close()
    records = read("sandbox", path).records
    assert {(r.confidence, r.access_count) for r in records} == {(1.0, 0)}
    rates = {r.id: r.decay_rate for r in records}
    assert rates == {"ep_1": KINDS["episode"].decay_rate, "fact_1": KINDS["fact"].decay_rate,
                     "fact_2": KINDS["fact"].decay_rate, "fact_3": KINDS["fact"].decay_rate,
                     "ref_1": KINDS["reflection"].decay_rate}
    assert KINDS["fact"].decay_rate > 0.0


# --- DevClaw notes: comma lists, metadata, front matter shape ------------------------------------
def _devclaw_note(tmp_path: Path, header: str) -> Path:
    return note(tmp_path / "memory" / "fact" / "2024-01-15-x.md",
                f"---\ncategory: fact\n{header}\n---\n\nThe body.\n")


def test_devclaw_keywords_as_text_are_split_on_commas_only(tmp_path: Path) -> None:
    path = _devclaw_note(tmp_path, "keywords: api,auth, two words ,, last")
    (record,) = read("devclaw-md", path).records
    assert record.tags == ("api", "auth", "two words", "last")


@pytest.mark.parametrize(("value", "tags"), [
    ("[1, 2.5, x, true]", ("1", "2.5", "x", "true")),
    ("''", ()),
    ("api", ("api",)),
])
def test_devclaw_keywords_of_every_shape(tmp_path: Path, value: str,
                                         tags: tuple[str, ...]) -> None:
    (record,) = read("devclaw-md", _devclaw_note(tmp_path, f"keywords: {value}")).records
    assert record.tags == tags


@pytest.mark.parametrize(("value", "reason"), [
    ("[[a]]", "keywords must be a list of text"),
    ("{a: 1}", "keywords must be a list"),
    ("3", "keywords must be a list"),
])
def test_devclaw_keywords_that_are_not_text_are_refused(tmp_path: Path, value: str,
                                                        reason: str) -> None:
    error = refused("devclaw-md", _devclaw_note(tmp_path, f"keywords: {value}"))
    assert (error.reason, error.line) == (reason, 3)


def test_devclaw_metadata_that_is_not_an_object_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _devclaw_note(tmp_path, "owner: bob\nmetadata: [1, 2]")
    error = refused("devclaw-md", path)
    assert (error.reason, error.line) == ("metadata must be a JSON object", 4)


def test_devclaw_front_matter_that_is_not_key_value_lines_is_refused(tmp_path: Path) -> None:
    path = note(tmp_path / "fact" / "2024-01-15-x.md", "---\n- a\n- b\n---\n\nThe body.\n")
    error = refused("devclaw-md", path)
    assert (error.reason, error.line) == ("front matter: expected 'key: value' lines", 2)


# --- OpenClaw: how a file is cut into memories ---------------------------------------------------
def _openclaw(tmp_path: Path, text: str) -> list[tuple[str, int]]:
    path = note(tmp_path / "MEMORY.md", text)
    return [(r.content, r.metadata["line"]) for r in read("openclaw", path).records]


def test_openclaw_fenced_block_keeps_its_indent_and_ends_at_its_closing_fence(
        tmp_path: Path) -> None:
    text = "Intro.\n\n```python\ndef f():\n    return 1\n```\nAfter the block.\n"
    assert _openclaw(tmp_path, text) == [
        ("Intro.", 1),
        ("```python\ndef f():\n    return 1\n```", 3),
        ("After the block.", 7),
    ]


def test_openclaw_unindented_line_right_after_an_item_continues_it(tmp_path: Path) -> None:
    text = "- Prefers dark mode\nin every editor\n- Second item\n"
    assert _openclaw(tmp_path, text) == [("Prefers dark mode\nin every editor", 1),
                                         ("Second item", 3)]


def test_openclaw_paragraph_after_an_item_and_a_blank_line_is_one_memory(
        tmp_path: Path) -> None:
    text = "- An item\n\nA paragraph that\nwraps over lines.\n"
    assert _openclaw(tmp_path, text) == [("An item", 1), ("A paragraph that\nwraps over lines.", 3)]


def test_openclaw_items_keep_their_blank_lines_fences_and_nested_items(tmp_path: Path) -> None:
    text = ("# Title\n\n- Item one\n\n  more of item one\n  ```\n  code in item\n  ```\n"
            "- Item two\n  - nested\n\n<!-- a\ncomment -->\n---\n## Section: \nPara\n\n***\n"
            "> quote\n")
    path = note(tmp_path / "MEMORY.md", text)
    got = [(r.content, dict(r.metadata), r.tags, r.kind, r.created_at)
           for r in read("openclaw", path).records]
    section = {"file": "MEMORY.md", "section": "Section:"}
    assert got == [
        ("Item one\n\nmore of item one\n```\ncode in item\n```",
         {"file": "MEMORY.md", "line": 3}, (), "fact", START),
        ("Item two\n- nested", {"file": "MEMORY.md", "line": 9}, (), "fact", START),
        ("Para", {**section, "line": 16}, ("section",), "fact", START),
        ("> quote", {**section, "line": 19}, ("section",), "fact", START),
    ]


# --- the Markdown export's front matter ----------------------------------------------------------
def _exported(mem: Memory, tmp_path: Path) -> str:
    out = tmp_path / "notes"
    assert export_markdown(mem, out) == 1
    (path,) = out.rglob("*.md")
    return path.read_text(encoding="utf-8")


def test_export_leaves_out_the_default_confidence_and_writes_another(
        sqlite_mem: Memory, tmp_path: Path) -> None:  # noqa: F811
    rid = sqlite_mem.store("Alice likes tea", confidence=1.0)
    assert "confidence" not in _exported(sqlite_mem, tmp_path)
    sqlite_mem.forget(rid)
    sqlite_mem.store("Bob likes coffee", confidence=0.5)
    assert "\nconfidence: 0.5\n" in _exported(sqlite_mem, tmp_path / "2")


def test_export_writes_a_quoted_list_in_utf8(
        sqlite_mem: Memory, tmp_path: Path) -> None:  # noqa: F811
    sqlite_mem.store("Café notes", tags=["café, au lait", "thé"])
    assert '\nkeywords: ["café, au lait", "thé"]\n' in _exported(sqlite_mem, tmp_path)



def test_export_writes_each_field_only_when_it_is_not_the_default(
        sqlite_mem: Memory, tmp_path: Path, clock: Any) -> None:  # noqa: F811
    a = sqlite_mem.store("Alice likes tea")
    b = sqlite_mem.store("Deploy failed", key="true", kind="event", tags=["ops", "a: b"],
                         metadata={"b": "é", "a": 1, "ok": True}, session_id="s1",
                         event_time="2024-01-15T10:00:00Z", source="conversation",
                         source_role="agent", source_ids=["x1"], confidence=0.25)
    sqlite_mem.link(a, b)
    sqlite_mem.reinforce(b)
    clock.advance(60)
    c = sqlite_mem.store("Office is in Lisbon")
    clock.advance(60)
    d = sqlite_mem.correct(c, "Office is in Porto", reason="moved").id
    out = tmp_path / "notes"
    assert export_markdown(sqlite_mem, out) == 4
    notes = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8")
             for p in out.rglob("*.md")}
    assert notes == {
        "fact/2023-11-14-alice-likes-tea.md":
            f"---\nid: {a}\ncategory: fact\ncreated_at: 2023-11-14T22:13:20Z\nkeywords: []\n"
            f"links: [{b}]\n---\n\nAlice likes tea\n",
        "event/2023-11-14-true.md":
            f"---\nid: {b}\ncategory: event\ncreated_at: 2023-11-14T22:13:20Z\n"
            'keywords: ["ops", "a: b"]\nkey: "true"\nsource: conversation\nsource_role: agent\n'
            "session_id: s1\nevent_time: 2024-01-15T10:00:00Z\nscore: 3\nconfidence: 0.25\n"
            'source_ids: [x1]\nmetadata: {"a": 1, "b": "é", "ok": true}\n'
            f"links: [{a}]\n---\n\nDeploy failed\n",
        "fact/2023-11-14-office-is-in-lisbon.md":
            f"---\nid: {c}\ncategory: fact\ncreated_at: 2023-11-14T22:14:20Z\nkeywords: []\n"
            "updated_at: 2023-11-14T22:15:20Z\nvalid_until: 2023-11-14T22:15:20Z\n---\n\n"
            "Office is in Lisbon\n",
        "fact/2023-11-14-office-is-in-porto.md":
            f"---\nid: {d}\ncategory: fact\ncreated_at: 2023-11-14T22:15:20Z\nkeywords: []\n"
            f"supersedes: {c}\nsource_ids: [{c}]\n"
            'metadata: {"correction_reason": "moved"}\n---\n\nOffice is in Porto\n',
    }

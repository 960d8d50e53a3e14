"""Markdown notes' YAML front matter (``devclaw-md``): any valid YAML is read, a note that
cannot be read is skipped with its file and line while the folder's other notes are imported,
and what the export writes stays byte-for-byte stable. Builders are test_portability's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from test_portability import (
    FM,
    MAX,
    START,
    _devclaw_plus,
    _note,
    build_devclaw,
    load,
    quiet_settings,
    ts,
)

from clawmemory import ImportFormatError, Memory
from clawmemory.backends.sqlite.store import SQLiteStore
from clawmemory.portability import read_devclaw_md
from clawmemory.portability.frontmatter import dump_front_matter, split_front_matter


@pytest.fixture
def sqlite_mem(tmp_path: Path, clock: Callable[[], float]) -> Iterator[Memory]:
    mem = Memory(SQLiteStore(tmp_path / "target.db"), quiet_settings(), clock=clock)
    yield mem
    mem.close()


def _dangling(root: Path) -> Path:
    base = build_devclaw(root)
    (base / "fact" / "2024-02-01-gone.md").symlink_to(root / "nowhere.md")
    return base


# A bad note in a folder: skipped with its reason (file and line), the other notes imported.
# case: (builder of the tree plus one bad note, that note's name, its line or None)
BAD_NOTES: dict[str, tuple[Callable[[Path], Path], str, int | None]] = {
    "bad-front-matter": (_devclaw_plus(
        "fact/2024-02-01-bad.md", FM + "keywords [a, b\n---\nx\n"), "2024-02-01-bad.md", 4),
    "unclosed-front-matter": (_devclaw_plus(
        "fact/2024-02-01-bad.md", FM + "no end\n"), "2024-02-01-bad.md", 1),
    "duplicate-key": (_devclaw_plus(
        "fact/2024-02-01-bad.md", FM + "category: event\n---\nx\n"), "2024-02-01-bad.md", 4),
    "not-plain-data": (_devclaw_plus(
        "fact/2024-02-01-bad.md", FM + "blob: !!binary aGk=\n---\nx\n"), "2024-02-01-bad.md",
        4),
    "bad-category": (_devclaw_plus("misc/x.md", "---\ncategory: rumour\n---\nhi\n"), "x.md",
                     2),
    "bad-created-at": (_devclaw_plus("fact/x.md", "---\ncreated_at: soon\n---\nhi\n"), "x.md",
                       2),
    "missing-content": (_devclaw_plus(
        "fact/2024-02-01-empty.md", FM + "---\n\n  \n"), "2024-02-01-empty.md", 5),
    "not-utf8": (_devclaw_plus(
        "event/x.md", b"---\ncategory: event\n---\nCaf\xe9 opened\n"), "x.md", 4),
    "unreadable": (_dangling, "2024-02-01-gone.md", None),
}


@pytest.mark.parametrize("case", list(BAD_NOTES))
def test_a_bad_note_is_skipped_with_its_reason_and_the_folder_imported(
        sqlite_mem: Memory, tmp_path: Path, case: str) -> None:
    build, name, line = BAD_NOTES[case]
    root = build(tmp_path)
    parsed = read_devclaw_md(root, namespace="default", now=START, max_chars=MAX)
    report = sqlite_mem.import_records(parsed)
    assert dict(report) == {"created": 4, "skipped": 1, "links": 0}
    [skip] = report.skips
    assert skip["count"] == 1
    [where] = skip["examples"]
    assert where.endswith(name if line is None else f"{name}:{line}")
    assert sqlite_mem.count() == 4
    if line is not None:  # the note alone is an error at that line, not a skip
        [note] = [p for p in root.rglob(name)]
        with pytest.raises(ImportFormatError) as info:
            read_devclaw_md(note, namespace="default", now=START, max_chars=MAX)
        assert (info.value.line, info.value.reason) == (line, skip["reason"])


def test_front_matter_reads_any_valid_yaml(sqlite_mem: Memory, tmp_path: Path) -> None:
    """A folded block, a literal block, a block mapping and anchors: valid YAML, read as
    YAML; text fields keep what was written (``id: 0123``), times stay text."""
    _note(tmp_path / "fact" / "2024-03-01-yaml.md",
          "---\ncategory: fact\nid: 0123\ncreated_at: 2024-03-01T09:00:00Z\n"
          "summary: >\n  folded over\n  two lines\nsteps: |\n  one\n  two\n"
          "owner: &who alice\nreviewer: *who\nextra:\n  team: payments\n  size: 3\n"
          "keywords:\n  - a\n  - 7\n---\nThe body.\n")
    assert load(sqlite_mem, "devclaw-md", tmp_path)["created"] == 1
    note = sqlite_mem.get("0123")
    assert (note.created_at, note.tags) == (ts("2024-03-01T09:00:00Z"), ("a", "7"))
    assert dict(note.metadata) == {
        "summary": "folded over two lines\n", "steps": "one\ntwo\n", "owner": "alice",
        "reviewer": "alice", "extra": {"team": "payments", "size": 3}}


def test_front_matter_reading_and_stable_writing() -> None:
    fm = split_front_matter("---\na: x # note\nb: 'it''s'\nc: [p, \"q, r\"]\nd:\ne: ~\n"
                            "n: 1\n---\nbody", "f.md")
    assert fm.fields == {"a": "x", "b": "it's", "c": ["p", "q, r"], "d": None, "e": None,
                         "n": 1}
    assert (fm.lines["c"], fm.text("n"), fm.body, fm.body_line) == (4, "1", "body", 9)
    text = dump_front_matter({"k": ["a b", "x: y"], "n": 1, "s": "007", "t": None})
    assert text == '---\nk: ["a b", "x: y"]\nn: 1\ns: "007"\n---\n'  # stable bytes
    assert split_front_matter(text + "b", "f.md").fields == {"k": ["a b", "x: y"], "n": 1,
                                                              "s": "007"}
    for bad, line in (("---\n- a\n---\n", 2), ("---\na: 1\na: 2\n---\n", 3),
                      ("---\na: \"x\n---\n", 2), ("---\na: [b\n---\n", 2)):
        with pytest.raises(ImportFormatError) as info:
            split_front_matter(bad, "f.md")
        assert info.value.line == line, bad

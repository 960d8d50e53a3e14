"""003 migration from OpenClaw flat files: ``MEMORY.md`` plus ``memory/*.md`` daily notes.

003 says: "Parse into discrete memories; store each as a separate entry with source="migration"."
A flat file is split into memories like this (see docs/portability.md for examples):

- each top-level list item (``-``, ``*``, ``+``, ``1.``) is one memory; its wrapped lines and
  nested items stay part of it;
- each paragraph (lines up to a blank line), table, quote or fenced code block is one memory;
- headings are not memories: they give the memories under them a ``section`` in metadata
  (``"Projects > clawmemory"``) and the innermost heading as a tag (lower case); a heading on
  the first line of a file is its title and is left out of both;
- horizontal rules, HTML comments and a leading YAML front matter block are skipped.

``MEMORY.md`` (and other non-dated files) give ``fact`` memories created at import time. Daily
files ``memory/YYYY-MM-DD*.md`` give ``event`` memories whose ``event_time`` and ``created_at``
are that day (at ``HH:MM`` when the item or its heading starts with a time), UTC.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from clawmemory.errors import ImportFormatError
from clawmemory.model import KINDS, MemoryRecord
from clawmemory.portability._common import (
    Progress,
    epoch_date,
    located,
    markdown_files,
    read_text,
    stable_id,
    tick,
)
from clawmemory.snapshot import ParsedSnapshot
from clawmemory.validation import check_content, check_tags

__all__ = ["Chunk", "read_openclaw", "split_markdown"]

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)([-*+]|\d{1,9}[.)])(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_CLOCK = re.compile(r"^[\[(*_ ]*(\d{1,2}):(\d{2})(?::(\d{2}))?\b")
_DATEISH = re.compile(r"^\d{4}-\d{2}-\d{2}\b|^\d{1,2}:\d{2}\b")
SOURCE = "migration"


@dataclass(frozen=True)
class Chunk:
    """One discrete memory cut from a file: its text, first line and heading path."""

    text: str
    line: int
    section: tuple[str, ...] = ()


def _indent(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


@dataclass
class _Splitter:
    """A line-by-line state machine; ``mode`` is what is being collected: None, "para",
    "item" (a list item and its continuation) or "fence" (a fenced block of its own)."""

    chunks: list[Chunk] = field(default_factory=list)
    buf: list[str] = field(default_factory=list)
    start: int = 0
    mode: str | None = None
    base: int = 0  # indent of the current item's marker
    blank: bool = False  # a blank line was seen inside the current item
    fence: str | None = None  # the open fence's marker
    comment: bool = False
    headings: list[tuple[int, str]] = field(default_factory=list)
    title_line: int | None = None
    seen_content: bool = False

    def flush(self) -> None:
        text = "\n".join(self.buf).strip()
        if text:
            section = tuple(h for level, h in self.headings if level > 0)
            self.chunks.append(Chunk(text, self.start, section))
        self.buf, self.mode, self.blank = [], None, False

    def begin(self, mode: str, number: int, base: int = 0) -> None:
        self.flush()
        self.mode, self.start, self.base = mode, number, base

    def feed(self, number: int, line: str) -> None:
        if self.fence is not None:
            self.buf.append(line.rstrip() if self.mode == "fence" else line.strip())
            if line.strip().startswith(self.fence):
                self.fence = None
                if self.mode == "fence":
                    self.flush()
            return
        if self.comment:
            self.comment = "-->" not in line
            return
        stripped = line.strip()
        if not stripped:
            if self.mode == "item":
                self.blank = True
            else:
                self.flush()
            return
        first = not self.seen_content
        self.seen_content = True
        if stripped.startswith("<!--"):
            self.comment = "-->" not in stripped[4:]
            return
        self._structure(number, line, stripped, first)

    def _structure(self, number: int, line: str, stripped: str, first: bool) -> None:
        in_item = self.mode == "item" and (_indent(line) > self.base or not self.blank)
        if (m := _FENCE.match(line)) is not None:
            self.fence = m.group(1)[:3]
            if in_item:
                self.buf.append(stripped)
            else:
                self.begin("fence", number)
                self.buf.append(line.rstrip())
            return
        if (h := _HEADING.match(line)) is not None:
            self.flush()
            level, title = len(h.group(1)), (h.group(2) or "").strip()
            self.headings = [(lv, t) for lv, t in self.headings if abs(lv) < level]
            # a heading on the first line is the file's title: not a section of its memories
            self.headings.append((-level if first else level, title))
            return
        if _RULE.match(line):
            self.flush()
            return
        if (b := _BULLET.match(line)) is not None and not (in_item and _indent(line) > self.base):
            self.begin("item", number, base=_indent(line))
            self.buf.append(b.group(3) or "")
            return
        self._text(number, line, stripped)

    def _text(self, number: int, line: str, stripped: str) -> None:
        if self.mode == "item":
            if self.blank and _indent(line) <= self.base:
                self.begin("para", number)
                self.buf.append(line.rstrip())
                return
            if self.blank:
                self.buf.append("")
            self.buf.append(stripped)
            self.blank = False
        else:
            if self.mode is None:
                self.begin("para", number)
            self.buf.append(line.rstrip())


def split_markdown(text: str) -> list[Chunk]:
    """Cut a Markdown file into discrete memories (the rules in the module docstring)."""
    lines = text.split("\n")
    splitter = _Splitter()
    begin = 0
    if lines and lines[0].rstrip() == "---":  # front matter is not a memory
        end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
        begin = 0 if end is None else end + 1
    for index in range(begin, len(lines)):
        splitter.feed(index + 1, lines[index])
    splitter.flush()
    return splitter.chunks


def _files(root: Path) -> list[Path]:
    """The files to read, in a stable order."""
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise ImportFormatError("cannot read: no such file or directory", path=str(root))
    files = [p for p in (root / "MEMORY.md", root / "memory.md") if p.is_file()][:1]
    daily = root / "memory"
    if daily.is_dir() and any(daily.rglob("*.md")):
        files += markdown_files(daily, "an OpenClaw memory folder")
    if not files:  # the memory/ folder itself
        files = markdown_files(root, "an OpenClaw workspace: MEMORY.md and/or memory/*.md")
    return files


def _relative(file: Path) -> str:
    """The file's name as the workspace sees it (``MEMORY.md``, ``memory/2024-01-15.md``),
    whichever of workspace, memory folder or file was given: ids are derived from it."""
    if file.name.lower() == "memory.md":
        return "MEMORY.md"
    parts = file.resolve().parts
    if "memory" in parts[:-1]:
        last = len(parts) - 1 - parts[::-1].index("memory")
        return "/".join(parts[last:])
    return file.name


def read_openclaw(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read an OpenClaw workspace (a folder with ``MEMORY.md`` and/or ``memory/``), its
    ``memory/`` folder, or one file. Every memory is validated before anything is returned."""
    files = _files(Path(path).expanduser())  # "~/.openclaw/workspace" as docs write it
    parsed = ParsedSnapshot()
    for done, file in enumerate(files, 1):
        rel = _relative(file)
        day = epoch_date(file.name)
        for chunk in split_markdown(read_text(file)):
            with located(file, line=chunk.line):
                parsed.records.append(_record(chunk, rel, day, namespace, now, max_chars))
        tick(progress, done, len(files))
    return parsed


def _record(chunk: Chunk, rel: str, day: float | None, namespace: str, now: float,
            max_chars: int) -> MemoryRecord:
    content = check_content(chunk.text, max_chars)
    heading = chunk.section[-1] if chunk.section else None
    tags = check_tags([heading.lower().rstrip(":")] if heading and not _DATEISH.match(heading)
                      else [])
    when = None if day is None else day + _clock(chunk.text, heading)
    meta: dict[str, object] = {"file": rel, "line": chunk.line}
    if chunk.section:
        meta["section"] = " > ".join(chunk.section)
    kind = "fact" if day is None else "event"
    return MemoryRecord(
        id=stable_id("openclaw", rel, content),
        content=content,
        namespace=namespace,
        kind=kind,
        tags=tags,
        metadata=meta,
        source=SOURCE,
        created_at=now if when is None else when,
        updated_at=now if when is None else when,
        event_time=when,
        decay_rate=KINDS[kind].decay_rate,
    )


def _clock(text: str, heading: str | None) -> float:
    """Seconds into the day when the memory (or its heading) starts with ``HH:MM``."""
    for candidate in (text, heading or ""):
        m = _CLOCK.match(candidate)
        if m and int(m[1]) < 24 and int(m[2]) < 60:
            return int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3] or 0)
    return 0.0

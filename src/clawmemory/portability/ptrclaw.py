"""000 PtrClaw JSON snapshots (both shapes) and clawmemory's own JSON export, from a file.

The parsing is ``clawmemory.snapshot.parse_snapshot``; this only reads the file so that a file
that is not UTF-8 is reported at its line like every other format.
"""

from __future__ import annotations

from pathlib import Path

from clawmemory.errors import ImportFormatError
from clawmemory.portability._common import Progress, read_text, tick
from clawmemory.snapshot import ParsedSnapshot, parse_snapshot

__all__ = ["read_ptrclaw_json"]


def read_ptrclaw_json(
    path: str | Path,
    *,
    namespace: str,
    now: float,
    max_chars: int,
    progress: Progress | None = None,
) -> ParsedSnapshot:
    """Read a JSON snapshot file; every entry is validated before anything is returned."""
    file = Path(path)
    if file.is_dir():
        raise ImportFormatError("cannot read: is a directory (expected a .json file)",
                                path=str(file))
    parsed = parse_snapshot(read_text(file), namespace=namespace, now=now, max_chars=max_chars,
                            source=str(file))
    tick(progress, len(parsed.records), len(parsed.records))
    return parsed

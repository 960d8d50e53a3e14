"""``agent.context_style``: what the reference agent puts in front of each message, one
specification's block per style, through ``context.enrich`` on a real store."""

from __future__ import annotations

from pathlib import Path

import pytest

from clawmemory import Memory
from clawmemory.context import CONTEXT_OPEN, DEVCLAW_HEADER, enrich


@pytest.fixture
def mem(tmp_path: Path) -> Memory:
    m = Memory.open(tmp_path / "c.db", embedder=None)
    m.store("The user prefers green tea", kind="preference")
    m.store("The user drinks green tea every morning", session_id="old")
    return m


@pytest.mark.parametrize(("style", "head"), [
    ("ptrclaw", CONTEXT_OPEN),  # 000
    ("sclaw", "## Relevant Memory\n\n- "),  # 001
    ("devclaw", DEVCLAW_HEADER + "- ["),  # 002
    ("sandbox", "## Relevant memory\n- The user drinks green tea every morning"),  # 004
])
def test_each_style_puts_its_specifications_block_in_front(mem: Memory, style: str,
                                                           head: str) -> None:
    message = "what tea does the user like?"
    out = enrich(mem, message, style, session_id="new")
    assert out.startswith(head), out
    assert out.endswith("\n\n" + message)
    mem.close()


def test_none_and_no_match_leave_the_message_as_written(mem: Memory) -> None:
    assert enrich(mem, "what tea does the user like?", "none") == (
        "what tea does the user like?")  # 003: the model recalls through its tools
    for style in ("ptrclaw", "sclaw", "devclaw", "sandbox"):
        assert enrich(mem, "quantum chromodynamics", style) == "quantum chromodynamics"
    mem.close()

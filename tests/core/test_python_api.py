"""The Python surface as an agent builder meets it: tool arguments as OpenAI sends them, kinds as
a type checker sees them, and one error family for everything the library refuses."""

from __future__ import annotations

import json
import typing
from pathlib import Path

import pytest

import clawmemory
from clawmemory import ClawMemoryError, InvalidInputError, Kind, Memory
from clawmemory.model import KIND_ALIASES, KINDS, KindName
from clawmemory.portability import SOURCES, read_source
from clawmemory.tools import call_tool


# --- call_tool takes what the model sent ---------------------------------------------------------
def test_call_tool_accepts_the_json_string_openai_returns(mem: Memory) -> None:
    stored = call_tool(mem, "memory_store", json.dumps({"content": "User likes green tea"}))
    assert not stored.is_error, stored.text
    found = call_tool(mem, "memory_recall", '{"query": "green tea", "limit": 3}')
    assert not found.is_error and "User likes green tea" in found.text
    as_dict = call_tool(mem, "memory_recall", {"query": "green tea", "limit": 3})
    assert as_dict.text == found.text


def test_call_tool_json_strings_that_are_not_arguments(mem: Memory) -> None:
    empty = call_tool(mem, "memory_store", "")  # no arguments: the content is missing
    assert empty.is_error and "content" in empty.text
    broken = call_tool(mem, "memory_store", '{"content": "x"')
    assert broken.is_error
    assert broken.text.startswith("Arguments of memory_store must be a JSON object; this text"
                                  " is not JSON (")
    listed = call_tool(mem, "memory_store", '["x"]')
    assert (listed.is_error, listed.text) == (True, "Arguments of memory_store must be a JSON"
                                                    " object.")
    assert mem.count(include_invalid=True) == 0


# --- kinds as a type --------------------------------------------------------------------------
def test_kind_literal_is_the_kind_table() -> None:
    assert set(typing.get_args(KindName)) == set(KINDS)
    assert set(typing.get_args(Kind)) == set(KINDS) | set(KIND_ALIASES)
    hints = typing.get_type_hints(Memory.store)
    assert hints["kind"] == Kind
    assert typing.get_type_hints(Memory.update)["kind"] == Kind | None
    assert "Kind" in clawmemory.__all__


def test_a_kind_typo_is_refused_before_anything_is_stored(mem: Memory) -> None:
    with pytest.raises(InvalidInputError, match="unknown kind 'preferance'"):
        mem.store("User prefers dark mode", kind="preferance")  # type: ignore[arg-type]
    assert mem.count(include_invalid=True) == 0
    rid = mem.store("User prefers dark mode", kind="Knowledge")  # type: ignore[arg-type]
    assert mem.get(rid).kind == "fact"  # aliases and any case, as before


# --- one error family --------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", list(SOURCES))
def test_every_importer_reports_a_missing_path_in_the_error_family(tmp_path: Path,
                                                                   fmt: str) -> None:
    with pytest.raises(ClawMemoryError) as info:
        read_source(fmt, tmp_path / "absent", namespace="default", now=0.0, max_chars=100)
    assert str(tmp_path / "absent") in str(info.value)
    assert not isinstance(info.value, OSError)


def test_opening_a_store_where_none_can_be_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    settings = clawmemory.Settings(embedder={"provider": "none"})
    with pytest.raises(clawmemory.StorageError):
        Memory.open(blocker / "memory.db", settings=settings)
    with pytest.raises(clawmemory.NotFoundError):
        Memory.open(tmp_path / "absent" / "memory.db", settings=settings, create=False)

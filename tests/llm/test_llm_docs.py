"""The LLM layer's documentation matches the code: docs/llm.md shows every prompt verbatim, and
docs/configuration.md has a row for every ``[llm]`` setting."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from clawmemory.config import (
    AgentSettings,
    CognitionSettings,
    ConsolidationSettings,
    LLMSettings,
)
from clawmemory.llm.prompts import PROMPTS

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_docs_llm_md_shows_every_prompt_verbatim(name: str) -> None:
    text = (DOCS / "llm.md").read_text(encoding="utf-8")
    assert f"`{name}`" in text, f"docs/llm.md does not name the prompt {name}"
    assert f"```text\n{PROMPTS[name]}\n```" in text, (
        f"docs/llm.md does not show {name} as it is in llm/prompts.py")


@pytest.mark.parametrize(("section", "model"), [
    ("llm", LLMSettings), ("cognition", CognitionSettings), ("agent", AgentSettings),
    ("consolidation", ConsolidationSettings)])
def test_every_llm_setting_has_a_row_in_configuration_md(
    section: str, model: type[BaseModel]
) -> None:
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    part = text.split(f"## `[{section}]`", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)` \|", part, re.M))
    assert documented == set(model.model_fields)

"""``clawmem --agent NAME`` under ``storage.layout = "per-agent"`` (001 per-agent memory), run as
the real console script: each agent its own database at the documented path, ``clawmem chat``
included; an agent whose memory is disabled works without memory, creates no file and says so
once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clawmemory import Memory
from llm_servers import ScriptedLLMServer, text

CLAWMEM = Path(sys.executable).parent / "clawmem"
CONFIG = """\
[storage]
layout = "per-agent"

[agents.support]
data_dir = "{support}"

[agents.quiet.memory]
enabled = false
"""


def clawmem(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    if not config.exists():
        config.write_text(CONFIG.format(support=tmp_path / "support-data"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    base |= {"CLAWMEM_HOME": str(tmp_path / "home"), "CLAWMEM_CONFIG": str(config),
             "CLAWMEM_EMBEDDER__PROVIDER": "none"}
    return subprocess.run([str(CLAWMEM), *args], capture_output=True, text=True,
                          env=base | env, timeout=120, check=False)


def databases(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("memory.db"))


def test_each_agent_has_its_own_database_and_a_disabled_one_none(tmp_path: Path) -> None:
    mine = clawmem(tmp_path, "add", "Ada prefers tea")  # agent.agent_name: assistant
    theirs = clawmem(tmp_path, "add", "Ticket 42 is about billing", CLAWMEM_AGENT="support")
    assert (mine.returncode, mine.stderr, theirs.returncode, theirs.stderr) == (0, "", 0, "")
    assert databases(tmp_path) == ["home/agents/assistant/memory.db", "support-data/memory.db"]

    found = clawmem(tmp_path, "--json", "recall", "tea billing", "--agent", "support")
    assert [h["memory"]["content"] for h in json.loads(found.stdout)["hits"]] == [
        "Ticket 42 is about billing"]

    quiet = clawmem(tmp_path, "--agent", "quiet", "--json", "recall", "tea")
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["hits"] == []
    assert quiet.stderr == ("warning: memory is disabled for agent quiet"
                            " (agents.quiet.memory): nothing is remembered or recalled\n")
    assert not (tmp_path / "home" / "agents" / "quiet").exists()
    assert databases(tmp_path) == ["home/agents/assistant/memory.db", "support-data/memory.db"]


def test_chat_remembers_in_the_agents_own_database(
    openai_server: ScriptedLLMServer, tmp_path: Path
) -> None:
    openai_server.script([text("Noted."), text("Hello!")])
    done = clawmem(tmp_path, "--agent", "support", "chat", "-m", "My order is late",
                   **openai_server.env(CLAWMEM_COGNITION__SYNTHESIS="false"))
    assert (done.returncode, done.stdout) == (0, "Noted.\n"), done.stderr
    with Memory.open(tmp_path / "support-data" / "memory.db", create=False) as mem:
        turns = mem.list(kind="episode", order="oldest")
        assert [(r.content, r.source_role) for r in turns] == [
            ("My order is late", "user"), ("Noted.", "support")]

    quiet = clawmem(tmp_path, "--agent", "quiet", "chat", "-m", "hello", **openai_server.env())
    assert (quiet.returncode, quiet.stdout) == (0, "Hello!\n"), quiet.stderr
    assert quiet.stderr.count("memory is disabled for agent quiet") == 1
    assert databases(tmp_path) == ["support-data/memory.db"]

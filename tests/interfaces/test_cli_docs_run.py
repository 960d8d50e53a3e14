"""docs/cli.md as a test: every line of its ```bash examples is run, in the order the page
gives them, by bash with the installed ``clawmem`` on PATH, on a fresh store (a temporary HOME
and working directory), and must exit 0.

The examples build on each other (``add --key hmac-rule`` before ``update hmac-rule``), as a
reader trying them top to bottom would. Skipped are only lines that need a network server or
an LLM, each with its reason in ``SKIPPED``; a line the list names that the page no longer has
fails the test, so the list cannot go stale.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BIN = Path(sys.executable).parent

# A fragment of the line -> why it is not run here.
SKIPPED = {
    "--to postgresql://": ("needs a PostgreSQL server (tests/backends/test_postgres.py copies"
                           " for real)"),
    "copy --from postgresql://": "needs a PostgreSQL server (tests/backends/test_postgres.py)",
    "clawmem chat": ("needs an LLM (tests/interfaces/test_chat_cli.py runs it against a"
                     " scripted one)"),
    "serve --port": "a network server that runs until stopped (tests/interfaces/test_serving.py)",
}
# Lines that run until stopped: started, given a few seconds, then sent SIGTERM; they must
# stop cleanly (exit 0) and have printed no error.
UNTIL_STOPPED = ("daemon", "clawmem --db ~/agent.db mcp")


def bash_lines(text: str) -> list[str]:
    """Each command line of each ```bash block, in order (``\\`` continuations joined)."""
    lines: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        joined = block.replace("\\\n", " ")
        lines += [line for line in joined.splitlines() if line.strip()]
    return lines


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env.update(HOME=str(home), XDG_CACHE_HOME=cache,  # the exported embedding model is there
               PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}", COLUMNS="120",
               CLAWMEM_LOG_LEVEL="ERROR")
    return env


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "docs-test", "version": "1"}}}


def _ready(out: str) -> bool:
    return "Ctrl-C to stop" in out or '"id":1' in out.replace(" ", "")


def _until_stopped(line: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Start ``line``, let it run until it shows it is running (the daemon prints its schedule,
    then "Ctrl-C to stop"; the stdio MCP server answers an ``initialize`` request), then
    SIGTERM it. Waiting for the line, not a fixed time: on a busy machine starting Python alone
    can take longer than any fixed wait, and a process signalled before it installed its
    handlers dies of the signal (exit -15) without anything being wrong."""
    proc = subprocess.Popen(["bash", "-c", f"exec {line}"], cwd=cwd, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdin is not None
    if "daemon" not in line:  # the MCP server answers once it is up
        proc.stdin.write(json.dumps(INITIALIZE) + "\n")
        proc.stdin.flush()
    first, deadline = "", time.monotonic() + 120
    while not _ready(first) and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            chunk = proc.stdout.readline()
            if not chunk:  # it exited: communicate() below collects why
                break
            first += chunk
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(line, proc.returncode, first + out, err)


def test_every_bash_example_of_docs_cli_md_runs_in_order(tmp_path: Path) -> None:
    lines = bash_lines(DOCS.read_text(encoding="utf-8"))
    for fragment in SKIPPED:
        assert any(fragment in line for line in lines), f"stale skip: {fragment!r}"
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = _env(home)
    ran = 0
    for line in lines:
        if any(fragment in line for fragment in SKIPPED):
            continue
        if any(marker in line for marker in UNTIL_STOPPED):
            result = _until_stopped(line, work, env)
        else:
            result = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=work, env=env,
                                    text=True, capture_output=True, timeout=180,
                                    stdin=subprocess.DEVNULL, check=False)
        assert result.returncode == 0, f"{line}\nexit {result.returncode}\n{result.stderr}"
        assert "error:" not in result.stderr, f"{line}\n{result.stderr}"
        ran += 1
    assert ran >= 40  # the page's examples, less the few skipped


@pytest.mark.parametrize("fragment", sorted(SKIPPED))
def test_each_skipped_example_needs_a_server_or_an_llm(fragment: str) -> None:
    # The reason is stated, and it names one of the two allowed causes.
    assert re.search(r"server|LLM", SKIPPED[fragment]), SKIPPED[fragment]

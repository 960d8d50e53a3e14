"""Every ```python block of README.md and docs/*.md as a test: pasted into a file and run by a
fresh ``python`` in an empty working directory, with its own HOME (no configuration, no
database) and no network, as a reader trying it would. It must exit 0 and print no traceback.

A snippet that talks to something gets a real one, set up by ``SETUPS``: a scripted LLM
server (tests/llm_servers.py) configured through ``CLAWMEM_LLM__*`` / ``OPENAI_*``, a real
``clawmem serve`` app on a loopback port, the suite's PostgreSQL server, or the files it
reads. Where the page names an address or a key the reader would have (``127.0.0.1:8765``,
``cmk_...``, a PostgreSQL URL), the test puts the real one in its place; each replaced text
must be in the snippet, so a setup cannot go stale unnoticed. A snippet that cannot run
standalone is marked in the page by ``<!-- not run: reason -->`` on the line before it; the
test lists those, and there may be at most ``MAX_NOT_RUN``.

No network: the runner refuses every DNS lookup of a name that is not loopback and every
connect to an address that is not loopback before the snippet runs (a snippet that phones
home fails here with the address it tried).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from clawmemory import Memory, Settings
from clawmemory.auth import keys_for
from llm_servers import ScriptedLLMServer, text, tool_call
from rest_server import serving

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->\s*$")
MAX_NOT_RUN = 2

# Installed before the snippet: loopback only, for names and for connects.
GUARD = r"""
import ipaddress, runpy, socket, sys

def _loopback(host):
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False

_getaddrinfo = socket.getaddrinfo
_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex

def getaddrinfo(host, *args, **kwargs):
    if isinstance(host, bytes):
        host = host.decode()
    if not _loopback(host):
        raise OSError(f"no network in a docs snippet: lookup of {host!r}")
    return _getaddrinfo(host, *args, **kwargs)

def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        raise OSError(f"no network in a docs snippet: connect to {address!r}")

def connect(self, address):
    _check(self, address)
    return _connect(self, address)

def connect_ex(self, address):
    _check(self, address)
    return _connect_ex(self, address)

socket.getaddrinfo = getaddrinfo
socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@dataclass(frozen=True)
class Snippet:
    page: str  # "docs/rest.md"
    line: int  # of the opening fence
    code: str
    not_run: str | None  # the reason the page gives

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"


def snippets() -> list[Snippet]:
    found = []
    for path in PAGES:
        text_ = path.read_text(encoding="utf-8")
        for match in BLOCK.finditer(text_):
            before = text_[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = NOT_RUN.search(before)
            found.append(Snippet(str(path.relative_to(ROOT)), text_.count("\n", 0, match.start())
                                 + 1, match.group(1), marker.group(1) if marker else None))
    return found


# --- what a snippet needs -------------------------------------------------------------------------
@dataclass
class Setup:
    """What one snippet runs with: environment, texts replaced, and what its output must hold."""

    env: dict[str, str] = field(default_factory=dict)
    replace: dict[str, str] = field(default_factory=dict)
    expect: tuple[str, ...] = ()


# (the snippet's HOME, its working directory, ...) -> what it runs with
Prepare = Callable[[Path, Path, ExitStack, pytest.FixtureRequest], Setup]


def _llm(stack: ExitStack, *replies: object, then: object = None) -> ScriptedLLMServer:
    server = stack.enter_context(ScriptedLLMServer("openai"))
    server.script(replies, then=then)  # type: ignore[arg-type]
    return server


def plain(*expect: str) -> Prepare:
    return lambda home, work, stack, request: Setup(expect=expect)


def openai_agents(home: Path, work: Path, stack: ExitStack,
                  request: pytest.FixtureRequest) -> Setup:
    server = _llm(stack, tool_call("memory_store", {"content": "User takes tea without sugar"}),
                  text("Noted: no sugar."))
    return Setup(env={"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "test-key"},
                 expect=("Noted: no sugar.",))


def configured_llm(*replies: object, then: object = None, expect: tuple[str, ...] = ()
                   ) -> Prepare:
    def prepare(home: Path, work: Path, stack: ExitStack,
                request: pytest.FixtureRequest) -> Setup:
        return Setup(env=_llm(stack, *replies, then=then).env(), expect=expect)
    return prepare


def openclaw_workspace(home: Path, work: Path, stack: ExitStack,
                       request: pytest.FixtureRequest) -> Setup:
    workspace = home / ".openclaw" / "workspace"
    (workspace / "memory").mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- Alice prefers dark mode\n",
                                         encoding="utf-8")
    (workspace / "memory" / "2026-01-05.md").write_text("Deployed the billing service.\n",
                                                        encoding="utf-8")
    return Setup(expect=("'created': 2",))


def sclaw_database(home: Path, work: Path, stack: ExitStack,
                   request: pytest.FixtureRequest) -> Setup:
    # By its path: a run that does not collect tests/portability has it nowhere on sys.path.
    spec = importlib.util.spec_from_file_location(
        "portability_fixtures", Path(__file__).parent / "portability" / "test_portability.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build_sclaw(work)  # work/sclaw.db, as the snippet names it
    return Setup(expect=("messages=2, conversations=1",))


def postgres(home: Path, work: Path, stack: ExitStack,
             request: pytest.FixtureRequest) -> Setup:
    url = request.getfixturevalue("postgres_server")
    return Setup(replace={"postgresql://clawmem@db.internal/memory": url})


@contextmanager
def _server(db: Path, key: bool) -> Iterator[tuple[str, str]]:
    settings = Settings(embedder={"provider": "none"})
    with Memory.open(db, settings=settings) as mem:
        secret = ""
        if key:
            keys = keys_for(mem.store_backend)
            assert keys is not None
            _, secret = keys.create(["default", "alice"], "write")
        with serving(mem) as url:
            yield url.removeprefix("http://"), secret


def served(*, key: bool, expect: tuple[str, ...] = ()) -> Prepare:
    def prepare(home: Path, work: Path, stack: ExitStack,
                request: pytest.FixtureRequest) -> Setup:
        address, secret = stack.enter_context(_server(home / "server.db", key))
        replace = {"127.0.0.1:8765": address}
        if key:
            replace["cmk_..."] = secret
        return Setup(replace=replace, expect=expect)
    return prepare


# page -> (a text of the snippet, how to run it). Each entry must match exactly one snippet.
SETUPS: dict[str, list[tuple[str, Prepare]]] = {
    "README.md": [("Memory.open(\"agent.db\")", plain("User prefers dark mode"))],
    "docs/install.md": [("from clawmemory import Memory", plain())],
    "docs/adapters.md": [
        ("ClawMemorySession", openai_agents),
        ("ClawMemoryStore", plain("Takes tea without sugar")),
        ("ClawMemoryBlock", plain()),
    ],
    "docs/agent.md": [("AgentSessions", configured_llm(then=text("[]"))),
                      ("MemoryResolver", plain())],
    "docs/history.md": [("History(mem", configured_llm(text("Hello Alice!")))],
    "docs/llm.md": [("ask_json", configured_llm(text("Hi."), text('["The user said hi"]')))],
    "docs/mcp.md": [("mcp.client", served(key=False, expect=("dark mode",)))],
    "docs/mem0.md": [("MemoryClient", served(key=True, expect=("without sugar",)))],
    "docs/portability.md": [("read_openclaw", openclaw_workspace),
                            ("import_history", sclaw_database)],
    "docs/postgres.md": [("postgresql://", postgres)],
    "docs/profiles.md": [('profile="devclaw"', plain())],
    "docs/rest.md": [("AsyncMemory", served(key=True, expect=("Deploys happen on Tuesdays",)))],
    "docs/tools.md": [("call_tool", plain())],
}


def _prepare_for(snippet: Snippet) -> Prepare | None:
    found = [prepare for fragment, prepare in SETUPS.get(snippet.page, ())
             if fragment in snippet.code]
    assert len(found) <= 1, f"{snippet.name}: more than one setup matches"
    return found[0] if found else None


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CLAWMEM_", "OPENAI_", "ANTHROPIC_"))}
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    env.update(HOME=str(home), XDG_CACHE_HOME=cache, CLAWMEM_LOG_LEVEL="ERROR",
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


RUNNABLE = [s for s in snippets() if s.not_run is None]


def test_the_pages_have_python_snippets_and_few_are_not_run() -> None:
    everything = snippets()
    skipped = [f"{s.name}: {s.not_run}" for s in everything if s.not_run is not None]
    print("not run:", skipped or "none")
    assert len(everything) >= 13
    assert len(skipped) <= MAX_NOT_RUN, skipped


def test_every_setup_matches_a_snippet() -> None:
    everything = snippets()
    for page, entries in SETUPS.items():
        for fragment, _ in entries:
            matches = [s.name for s in everything if s.page == page and fragment in s.code]
            assert len(matches) == 1, f"{page}: setup {fragment!r} matches {matches}"


@pytest.mark.parametrize("snippet", RUNNABLE, ids=[s.name for s in RUNNABLE])
def test_python_snippet_runs(snippet: Snippet, tmp_path: Path,
                             request: pytest.FixtureRequest) -> None:
    prepare = _prepare_for(snippet)
    assert prepare is not None, (f"{snippet.name}: add how to run it to SETUPS, or mark it"
                                 " <!-- not run: reason --> in the page")
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    with ExitStack() as stack:
        setup = prepare(home, work, stack, request)
        code = snippet.code
        for old, new in setup.replace.items():
            assert old in code, f"{snippet.name}: {old!r} is no longer in the snippet"
            code = code.replace(old, new)
        (work / "snippet.py").write_text(code, encoding="utf-8")
        proc = subprocess.run([sys.executable, "-c", GUARD, "snippet.py"], cwd=work,
                              env={**_env(home), **setup.env}, capture_output=True, text=True,
                              timeout=300, stdin=subprocess.DEVNULL, check=False)
    report = f"{snippet.name}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, report
    assert "Traceback" not in proc.stderr, report
    for wanted in setup.expect:
        assert wanted in proc.stdout, report

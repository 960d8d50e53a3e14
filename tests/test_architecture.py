"""The house rules, checked: the layers of docs/architecture.md hold (import-linter's contracts in
pyproject.toml, type-only and function-local imports included), no package has an import cycle,
and breaking either rule fails the check: an upward import or a cycle added to a copy of the
package is caught."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").exists())
SRC = ROOT / "src"
PACKAGE = SRC / "clawmemory"
_LINT = ("import sys; from importlinter.cli import lint_imports;"
         " sys.exit(lint_imports(config_filename=sys.argv[1], no_cache=True, no_logo=True))")

# Function-local imports of our own modules: only where one keeps a heavy library (numpy, httpx,
# FastAPI, uvicorn, the MCP SDK) or a rarely used layer off a path that must start fast, each
# named here with its reason (docs/architecture.md, "Imports").
NUMPY = "the vector modules load numpy, which a command that never embeds must not pay for"
HTTPX = "the HTTP clients load httpx (~150 ms), which `import clawmemory` must not"
DEFERRED: dict[str, str] = {
    "clawmemory.backends.memory -> clawmemory.backends.memory.vectors": NUMPY,
    "clawmemory.backends.sqlite -> clawmemory.backends.sqlite.vectors": NUMPY,
    "clawmemory.embed.factory -> clawmemory.embed.local": NUMPY,
    "clawmemory.embed.factory -> clawmemory.embed.http": HTTPX,
    "clawmemory.interfaces.cli.portability -> clawmemory.backends.transfer": NUMPY,
    "clawmemory.client -> clawmemory.client.remote": HTTPX,
    "clawmemory.memory -> clawmemory.client.remote": HTTPX,
    "clawmemory.interfaces.cli.common -> clawmemory.client.remote": HTTPX,
    "clawmemory.entities.pipeline -> clawmemory.entities.llm": HTTPX,
    "clawmemory.llm.factory -> clawmemory.llm.anthropic": HTTPX,
    "clawmemory.llm.factory -> clawmemory.llm.openai": HTTPX,
    "clawmemory.interfaces.cli.serving -> clawmemory.interfaces.mcp": "the MCP SDK (~0.3 s)",
    # Our own modules, kept off every start: what only a maintenance run or a configured
    # Markdown mirror needs (cognition, history and tools ~0.2 s; every importer ~60 ms).
    "clawmemory.memory -> clawmemory.cognition.steps": "the LLM steps, first maintenance run",
    "clawmemory.memory -> clawmemory.portability.markdown": "the mirror, storage.mirror_dir",
    "clawmemory.memory -> clawmemory.portability.notes": "the notes sync, storage.mirror_dir",
    "clawmemory.interfaces.cli.serving -> clawmemory.interfaces.rest": "FastAPI and uvicorn",
    "clawmemory.interfaces.cli.serving -> clawmemory.portability.notes":
        "the notes watcher, storage.mirror_dir",
    "clawmemory.interfaces.cli.chat -> clawmemory.agent":
        "the agent and its LLM steps (~0.1 s of every other command's start)",
    "clawmemory.interfaces.cli.hooks -> clawmemory.interfaces.cli.common":
        "the settings and the façade (~0.3 s), which `hooks run` must not load with `hooks`",
    "clawmemory.interfaces.cli.hookrun -> clawmemory.interfaces.cli.common":
        "the settings and the façade (~0.3 s): `hooks run` is on the path of every prompt",
}


def lint(src: Path) -> subprocess.CompletedProcess[str]:
    """import-linter over the package found under ``src`` (a copy, or the real one)."""
    return subprocess.run([sys.executable, "-c", _LINT, str(ROOT / "pyproject.toml")],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}, cwd=src)


def copy_of_package(tmp_path: Path) -> Path:
    dst = tmp_path / "src"
    shutil.copytree(PACKAGE, dst / "clawmemory", ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_the_layers_hold_and_no_package_has_a_cycle() -> None:
    result = lint(SRC)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "BROKEN" not in result.stdout


@pytest.mark.parametrize("line", [
    "from clawmemory.interfaces import cli as _cli\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from clawmemory.agent import loop\n",
    "def _late() -> object:\n    from clawmemory.tools import registry\n    return registry\n",
], ids=["top-level", "type-only", "function-local"])
def test_an_upward_import_breaks_the_layers(tmp_path: Path, line: str) -> None:
    src = copy_of_package(tmp_path)
    model = src / "clawmemory" / "model.py"
    model.write_text(model.read_text() + "\n" + line)
    result = lint(src)
    assert result.returncode != 0
    assert "clawmemory.model ->" in result.stdout, result.stdout


def test_an_import_cycle_inside_a_package_breaks_the_rules(tmp_path: Path) -> None:
    src = copy_of_package(tmp_path)
    schema = src / "clawmemory" / "backends" / "sqlite" / "schema.py"
    schema.write_text(schema.read_text() + "\nfrom clawmemory.backends.sqlite import store\n")
    result = lint(src)
    assert result.returncode != 0
    assert "No cycles are allowed in clawmemory.backends.sqlite" in result.stdout, result.stdout


def local_imports_of_our_modules(path: Path, src: Path = SRC) -> list[tuple[str, int, str]]:
    """(module, line, imported) for each import of a clawmemory module inside a function."""
    module = ".".join(path.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
    found: set[tuple[str, int, str]] = set()  # a set: nested functions are walked twice
    for func in ast.walk(ast.parse(path.read_text())):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            found |= {(module, node.lineno, n) for n in names
                      if n == "clawmemory" or n.startswith("clawmemory.")}
    return sorted(found)


def test_function_local_imports_of_our_modules_only_defer_heavy_libraries() -> None:
    found = [f for p in sorted(PACKAGE.rglob("*.py")) for f in local_imports_of_our_modules(p)]
    unexpected = [f"{m}:{n} imports {i}" for m, n, i in found if f"{m} -> {i}" not in DEFERRED]
    assert not unexpected, "\n".join(unexpected)
    stale = sorted(set(DEFERRED) - {f"{m} -> {i}" for m, _, i in found})
    assert not stale, f"listed in DEFERRED but gone: {stale}"


def test_the_local_import_check_sees_imports_in_functions(tmp_path: Path) -> None:
    mod = tmp_path / "src" / "clawmemory" / "x.py"
    mod.parent.mkdir(parents=True)
    mod.write_text("def f():\n    from clawmemory.model import Kind\n    import json\n")
    found = local_imports_of_our_modules(mod, tmp_path / "src")
    assert found == [("clawmemory.x", 2, "clawmemory.model")]

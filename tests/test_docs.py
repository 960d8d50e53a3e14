"""Documentation as tests: every command, tool and MCP tool a user can meet is documented.

- docs/cli.md has a heading naming each ``clawmem`` command (``## clawmem add``), sub-module
  commands included (every ``clawmemory.interfaces.cli`` module's ``register(app)``);
- docs/tools.md has, under each dialect's ``## Dialect `name``` section, a ``### tool`` heading
  for each of that dialect's tools, and none for tools the dialect does not have;
- docs/mcp.md has one table row per dialect naming exactly the tools an MCP client of that
  dialect lists (asked of the real server, in-process), linking to docs/tools.md.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
from mcp.client import Client

from clawmemory import Memory, Settings
from clawmemory.config import EmbedderSettings
from clawmemory.interfaces import cli
from clawmemory.interfaces.cli.app import app as clawmem_app
from clawmemory.interfaces.mcp import build_server
from clawmemory.tools import dialect_names, tools_for
from clawmemory.tools.dialects import DIALECT_ALIASES

DOCS = Path(__file__).resolve().parent.parent / "docs"
CLAWMEM = Path(sys.executable).parent / "clawmem"
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$", re.M)
CODE = re.compile(r"`([^`]+)`")


def _read(name: str) -> str:
    path = DOCS / name
    if not path.exists():
        pytest.fail(f"docs/{name} is missing")
    return path.read_text(encoding="utf-8")


# --- the CLI -------------------------------------------------------------------------------------
def _register_hooks() -> Iterator[tuple[str, Callable[[typer.Typer], None]]]:
    """Every ``clawmemory.interfaces.cli`` module that adds commands with ``register(app)``."""
    for info in pkgutil.iter_modules(cli.__path__):
        module = importlib.import_module(f"{cli.__name__}.{info.name}")
        hook = getattr(module, "register", None)
        if callable(hook):
            yield info.name, hook


def _full_app() -> typer.Typer:
    """A copy of the ``clawmem`` app with every sub-module's commands registered on it."""
    app = typer.Typer(add_completion=False)
    app.registered_callback = clawmem_app.registered_callback
    app.registered_commands = list(clawmem_app.registered_commands)
    app.registered_groups = list(clawmem_app.registered_groups)
    app.info = clawmem_app.info
    for _, hook in _register_hooks():
        hook(app)
    return app


def _command_paths(command: Any, prefix: str = "clawmem") -> list[str]:
    # duck-typed: typer's groups need not derive from the installed click's Group
    subcommands: dict[str, Any] | None = getattr(command, "commands", None)
    if subcommands is None:
        return [prefix]
    paths: list[str] = []
    for name, sub in sorted(subcommands.items()):
        if not getattr(sub, "hidden", False):
            paths += _command_paths(sub, f"{prefix} {name}")
    return paths


def cli_commands() -> list[str]:
    return _command_paths(typer.main.get_command(_full_app()))


def test_the_command_list_includes_every_registered_module() -> None:
    commands = cli_commands()
    for expected in ("clawmem add", "clawmem recall", "clawmem mcp", "clawmem serve"):
        assert expected in commands
    assert {name for name, _ in _register_hooks()} >= {"serving"}  # cli/serving.py (was cli_mcp.py)


def test_every_cli_command_has_an_entry_in_docs_cli_md() -> None:
    path = DOCS / "cli.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""  # missing: list them all
    headings = [title.replace("`", "") for _, title in HEADING.findall(text)]
    missing = [c for c in cli_commands()
               if not any(re.search(rf"(^|\s){re.escape(c)}(\s|$)", h) for h in headings)]
    assert not missing, ("docs/cli.md needs a heading (e.g. '## clawmem add') for: "
                         + ", ".join(missing))


def test_the_clawmem_console_script_has_every_registered_command() -> None:
    """The installed ``clawmem`` runs the same app: cli/app.py wires each ``register`` hook."""
    shown = subprocess.run([str(CLAWMEM), "--help"], capture_output=True, text=True, timeout=120,
                           check=False, env={**os.environ, "COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    listed = {m.group(1) for m in re.finditer(r"^\W+([a-z][\w-]*)\s", shown.stdout, re.M)}
    missing = sorted({c.split()[1] for c in cli_commands()} - listed)
    assert not missing, f"'clawmem --help' does not list {missing}: wire register(app) in app.py"


# --- the tool registry ---------------------------------------------------------------------------
def tools_md_sections() -> dict[str, list[str]]:
    """docs/tools.md: dialect name -> the ``###`` headings in its ``## Dialect `x``` section."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for level, title in HEADING.findall(_read("tools.md")):
        if len(level) <= 2:
            named = re.fullmatch(r"Dialect `([\w-]+)`.*", title)
            current = sections.setdefault(named.group(1), []) if named else None
        elif len(level) == 3 and current is not None:
            current.append(title.strip("` "))
    return sections


@pytest.mark.parametrize("dialect", dialect_names())
def test_every_tool_of_every_dialect_is_in_docs_tools_md(dialect: str) -> None:
    sections = tools_md_sections()
    assert dialect in sections, f"docs/tools.md has no '## Dialect `{dialect}`' section"
    expected = [t.name for t in tools_for(dialect)]
    assert sorted(sections[dialect]) == sorted(expected), (
        f"docs/tools.md, dialect {dialect}: documented {sections[dialect]}, registry {expected}")


# --- the MCP server ------------------------------------------------------------------------------
def mcp_listed_tools(dialect: str, where: Path, *, all_tools: bool = True) -> list[str]:
    """What an MCP client of this dialect is offered, asked of the real server in-process
    (``all_tools``: every tool a client may get, as with ``--all-tools``)."""
    settings = Settings(embedder=EmbedderSettings(provider="none"))
    with Memory.open(where / f"{dialect}-{all_tools}.db", settings=settings) as mem:
        server = build_server(mem, dialect, all_tools=all_tools)

        async def listed() -> list[str]:
            async with Client(server) as client:
                return [t.name for t in (await client.list_tools()).tools]

        return anyio.run(listed)


def mcp_md_rows() -> dict[str, set[str]]:
    """docs/mcp.md's dialect table: dialect -> the tool names its row gives."""
    names = set(dialect_names())
    rows: dict[str, set[str]] = {}
    for line in _read("mcp.md").splitlines():
        cells = line.split("|")
        if not line.startswith("|") or len(cells) < 3:
            continue
        first = CODE.findall(cells[1])
        if len(first) == 1 and first[0] in names and "tools.md" in cells[1]:
            aliases = {first[0], *(a for a, d in DIALECT_ALIASES.items() if d == first[0])}
            rows[first[0]] = set(CODE.findall("|".join(cells[2:]))) - aliases
    return rows


@pytest.mark.parametrize("dialect", dialect_names())
def test_every_mcp_tool_is_documented(dialect: str, tmp_path: Path) -> None:
    listed = mcp_listed_tools(dialect, tmp_path)
    assert listed == [t.name for t in tools_for(dialect)]
    assert set(listed) <= set(tools_md_sections().get(dialect, ())), "see docs/tools.md"
    rows = mcp_md_rows()
    assert dialect in rows, f"docs/mcp.md: no dialect table row for `{dialect}` linking tools.md"
    assert rows[dialect] == set(listed), f"docs/mcp.md, dialect {dialect}: {rows[dialect]}"


def mcp_md_columns() -> dict[str, tuple[list[str], list[str]]]:
    """docs/mcp.md's dialect table: dialect -> (the tools it says a client is offered by
    default, the ones it says ``--all-tools`` adds)."""
    names = set(dialect_names())
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for line in _read("mcp.md").splitlines():
        cells = line.split("|")
        first = CODE.findall(cells[1]) if line.startswith("|") and len(cells) == 7 else []
        if len(first) == 1 and first[0] in names:
            rows[first[0]] = (CODE.findall(cells[4]), CODE.findall(cells[5]))
    return rows


@pytest.mark.parametrize("dialect", dialect_names())
def test_docs_mcp_md_says_which_tools_are_offered_by_default(dialect: str,
                                                             tmp_path: Path) -> None:
    """The table's "tools offered" column is exactly what a client of a plain ``clawmem mcp``
    lists, in order, and "more with --all-tools" exactly what ``--all-tools`` adds."""
    columns = mcp_md_columns()
    assert dialect in columns, f"docs/mcp.md: no row for `{dialect}` with both tool columns"
    offered, more = columns[dialect]
    default = mcp_listed_tools(dialect, tmp_path, all_tools=False)
    everything = mcp_listed_tools(dialect, tmp_path, all_tools=True)
    assert offered == default, f"docs/mcp.md, dialect {dialect}: says {offered}"
    assert sorted(more) == sorted(set(everything) - set(default)), more


def test_docs_mcp_md_covers_both_commands_and_every_client() -> None:
    text = _read("mcp.md")
    for needed in ("clawmem mcp", "clawmem serve", "claude_desktop_config.json",
                   "claude mcp add clawmemory -- ", ".cursor/mcp.json", "--dialect",
                   "--namespace", "CLAWMEM_NAMESPACE", "## Troubleshooting",
                   "http://127.0.0.1:8765/mcp"):
        assert needed in text, needed


def test_every_setting_is_in_docs_configuration_md() -> None:
    """Each top-level setting is a row of "Top level"; each key of a section is named in
    backticks under that section's ``## `[section]``` heading."""
    from pydantic import BaseModel

    from clawmemory.config import Settings as AllSettings

    text = (DOCS / "configuration.md").read_text()
    parts = re.split(r"^## ", text, flags=re.M)
    by_heading = {part.splitlines()[0].strip(): part for part in parts[1:]}
    missing = []
    for name, field in AllSettings.model_fields.items():
        model = field.annotation
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            if f"| `{name}` |" not in by_heading["Top level"]:
                missing.append(name)
            continue
        section = by_heading.get(f"`[{name}]`", "")
        named = set(CODE.findall(section))
        missing += [f"{name}.{key}" for key in model.model_fields if key not in named]
    assert missing == []


# --- no doc points outside the repository -------------------------------------------------------
ROOT = DOCS.parent
# A folder beside the checkout (``../shared/...``), a machine's own paths (``/work/...``): a
# reader of the repository has neither. Example paths (``/home/you``, ``/tmp``) are fine.
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w./-])shared/|(?<![\w.])/work/|\bfile://")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _user_docs() -> list[Path]:
    """README.md, docs/, bench/*.md and examples/: what a reader of the repository opens."""
    paths = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    paths += sorted((ROOT / "bench").glob("*.md"))
    paths += sorted(p for p in (ROOT / "examples").rglob("*") if p.suffix in {".md", ".py"})
    return paths


def test_no_doc_points_outside_the_repository() -> None:
    found = []
    for path in _user_docs():
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            found += [f"{where}: {m.group(0)}" for m in OUTSIDE.finditer(line)]
            if path.suffix != ".md":
                continue
            for target in LINK.findall(line):
                if re.match(r"[a-z][a-z0-9+.-]*:", target):   # https:, mailto: ...
                    continue
                resolved = (path.parent / target).resolve()
                if ROOT.resolve() not in resolved.parents or not resolved.exists():
                    found.append(f"{where}: link {target}")
    assert found == []


# --- decision records --------------------------------------------------------------------------
ADR_SECTIONS = ["Status", "Date", "Context", "Decision", "Alternatives considered",
                "Consequences"]


ADRS = sorted(p for p in (DOCS / "adr").glob("[0-9]*.md") if p.name != "0000-template.md")


@pytest.mark.parametrize("path", ADRS, ids=lambda p: p.stem)
def test_every_adr_follows_the_template(path: Path) -> None:
    """docs/adr/0000-template.md's six sections, in its order; the date as YYYY-MM-DD."""
    text = path.read_text("utf-8")
    assert re.findall(r"^## (.+)$", text, re.M) == ADR_SECTIONS
    date = text.split("## Date\n\n", 1)[1].split("\n", 1)[0]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), date

"""The TypeScript client (clients/typescript/) against a real server, and its generated parts
kept in step with the code.

- The committed OpenAPI document is what scripts/openapi.py makes of the current code, and what
  a real server serves (but ``info.version``: scripts/openapi.py says why).
- The committed types are what openapi-typescript (the package's ``npm run generate``) makes of
  that document.
- The package builds with ``tsc``, and its Node tests (``node --test``) pass against a real
  ``clawmem serve`` app over a real store, with keys required.
- ``npm pack`` ships the built ``dist/``, the README and the licence, and nothing else.

Each test works in a copy of the package in its own temporary folder (its ``node_modules`` a
link to the one ``scripts/setup.sh`` installs), so nothing is written into the checkout and two
test workers never build in one folder. Node and npm are required, never skipped: CI has Node
20, and a machine without it fails here with the fix.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import httpx
import pytest

from clawmemory import Memory, Settings
from clawmemory.auth import Keys, key_store_for
from rest_server import serving

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clients" / "typescript"
DOCUMENT = PACKAGE / "openapi.json"
SCHEMA = PACKAGE / "src" / "generated" / "schema.ts"
# What a copy of the package needs to build, test, pack and regenerate; node_modules is linked.
SOURCES = ("package.json", "package-lock.json", "tsconfig.json", "openapi.json", "README.md",
           "LICENSE", "src", "test")
STEP_TIMEOUT = 180  # tsc or npm on two busy cores
REGENERATE_TYPES = "run `npm run generate` in clients/typescript and commit src/generated"



def _script(path: Path) -> ModuleType:
    """scripts/openapi.py as a module (scripts/ is no package, and not on the path)."""
    spec = importlib.util.spec_from_file_location("clawmem_scripts_openapi", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


openapi = _script(ROOT / "scripts" / "openapi.py")  # the document's one definition


def _node_tools() -> tuple[str, str]:
    """node and npm, or the test fails saying what to install."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("the TypeScript client's tests need Node.js 20 or later with npm on PATH:"
                    " install Node.js 20 (it ships npm), then run `bash scripts/setup.sh`")
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30,
                             check=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.fail(f"the TypeScript client needs Node.js 20 or later; this node is {version}")
    tools = PACKAGE / "node_modules" / ".bin"
    if not ((tools / "tsc").exists() and (tools / "openapi-typescript").exists()):
        pytest.fail("clients/typescript/node_modules is missing or incomplete: run"
                    " `bash scripts/setup.sh` (it runs `npm ci` there)")
    return node, npm


def _env(**extra: str) -> dict[str, str]:
    # npm's nags off: no update check, audit or funding request (no network beyond the build).
    return {**os.environ, "npm_config_update_notifier": "false", "npm_config_audit": "false",
            "npm_config_fund": "false", "NO_COLOR": "1", **extra}


def _completed(cmd: list[str], cwd: Path, env: dict[str, str],
               timeout: float) -> subprocess.CompletedProcess[str]:
    """``cmd`` run to the end in a process group of its own: npm runs its scripts in shells,
    ``node --test`` each test file in a child, so on a timeout the whole group is killed, not
    only the process started here."""
    with subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"{' '.join(cmd)} ran past {timeout} s\n{out[-6000:]}\n{err[-6000:]}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _run(*cmd: str, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = STEP_TIMEOUT) -> subprocess.CompletedProcess[str]:
    proc = _completed(list(cmd), cwd, env or _env(), timeout)
    assert proc.returncode == 0, (
        f"{' '.join(cmd)} exited {proc.returncode} in {cwd}\n--- stdout\n{proc.stdout[-6000:]}"
        f"\n--- stderr\n{proc.stderr[-6000:]}")
    return proc


def _copy_package(where: Path) -> Path:
    """The package's sources in ``where`` with the checkout's node_modules linked in."""
    where.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        source = PACKAGE / name
        if source.is_dir():
            shutil.copytree(source, where / name)
        else:
            shutil.copy2(source, where / name)
    (where / "node_modules").symlink_to(PACKAGE / "node_modules", target_is_directory=True)
    return where


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package, built (``npm run build``: tsc to dist/)."""
    _, npm = _node_tools()
    package = _copy_package(tmp_path_factory.mktemp("ts") / "clawmemory")
    _run(npm, "run", "build", cwd=package)
    return package


# --- generated parts -----------------------------------------------------------------------------
def _diff(want: str, have: str, name: str) -> str:
    lines = difflib.unified_diff(have.splitlines(), want.splitlines(), f"committed {name}",
                                 "regenerated", lineterm="", n=1)
    return "\n".join(list(lines)[:60])


def test_the_committed_openapi_document_is_the_current_codes() -> None:
    want = openapi.render(openapi.build_document())
    have = DOCUMENT.read_text("utf-8")
    assert have == want, (f"clients/typescript/openapi.json is out of date: "
                          f"{openapi.REGENERATE}\n{_diff(want, have, 'openapi.json')}")


def test_the_document_keeps_no_release_version() -> None:
    """A release bump changes nothing to regenerate (scripts/openapi.py's docstring)."""
    doc = json.loads(DOCUMENT.read_text("utf-8"))
    assert doc["info"]["version"] == openapi.API_VERSION == "v1"
    assert "/v1/recall" in doc["paths"] and "MemoryOut" in doc["components"]["schemas"]


def test_the_committed_types_are_generated_from_the_committed_document(tmp_path: Path) -> None:
    _, npm = _node_tools()
    package = _copy_package(tmp_path / "clawmemory")
    regenerated = package / "src" / "generated" / "schema.ts"
    regenerated.unlink()  # so a generator that writes nothing cannot pass
    _run(npm, "run", "generate", cwd=package)
    want, have = regenerated.read_text("utf-8"), SCHEMA.read_text("utf-8")
    assert have == want, f"{REGENERATE_TYPES}\n{_diff(want, have, 'schema.ts')}"


# --- the client against a real server ------------------------------------------------------------
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A real server (uvicorn over a real SQLite store) that requires keys, as one beyond
    loopback does; the environment the Node tests read."""
    where = tmp_path_factory.mktemp("ts-server")
    settings = Settings(embedder={"provider": "none"})  # keyword recall: no model to load
    with Memory.open(where / "ts.db", settings=settings) as mem:
        keys = Keys(key_store_for(mem.store_backend))
        _, write_key = keys.create(["ts-a", "ts-b"], "write")
        _, read_key = keys.create(["ts-a"], "read")
        with serving(mem, loopback=False) as url:
            yield {"CLAWMEM_URL": url, "CLAWMEM_API_KEY": write_key,
                   "CLAWMEM_READ_KEY": read_key}


def test_the_server_serves_the_committed_document(server: dict[str, str]) -> None:
    served = httpx.get(f"{server['CLAWMEM_URL']}/openapi.json", timeout=30).json()
    assert openapi.render(served) == DOCUMENT.read_text("utf-8"), openapi.REGENERATE


def test_the_node_tests_pass_against_a_real_server(built: Path, server: dict[str, str]) -> None:
    node, _ = _node_tools()
    files = sorted(str(p.relative_to(built)) for p in (built / "test").glob("*.test.mjs"))
    assert files, "no clients/typescript/test/*.test.mjs"
    proc = _completed([node, "--test", "--test-reporter=spec", *files], built, _env(**server),
                      timeout=120)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"node --test failed:\n{output[-12000:]}"
    # Every test() of the files ran and passed: none skipped, none lost to a bad import.
    declared = sum(len(re.findall(r"^\s*test\(", (built / f).read_text("utf-8"), re.M))
                   for f in files)
    counts = dict(re.findall(r"^ℹ (tests|pass|fail|skipped|todo|cancelled) (\d+)$", output,
                             re.M))
    assert counts.get("pass") == str(declared) and counts.get("fail") == "0", (
        f"{declared} tests declared, node reported {counts}:\n{output[-6000:]}")


# The ```ts examples of these pages, type-checked against the built package's declarations.
EXAMPLES = (ROOT / "docs" / "typescript.md", PACKAGE / "README.md")
TS_BLOCK = re.compile(r"^```ts\n(.*?)^```", re.M | re.S)


def test_the_documented_examples_type_check(built: Path) -> None:
    """Each example compiles with ``tsc --strict`` against dist/index.d.ts, importing the
    package by its name; one that uses ``mem`` without making it gets it declared."""
    check = built / "examples"
    check.mkdir()
    count = 0
    for page in EXAMPLES:
        for number, block in enumerate(TS_BLOCK.findall(page.read_text("utf-8")), 1):
            # process.env without @types/node; `export {}` makes any block a module (top-level
            # await)
            prelude = ["declare const process: { env: Record<string, string | undefined> };",
                       "export {};"]
            if "const mem " not in block:
                prelude.append('declare const mem: import("clawmemory").ClawMemory;')
            name = f"{page.stem.lower()}-{number}.ts"
            (check / name).write_text("\n".join([*prelude, block]), "utf-8")
            count += 1
    assert count >= 4, count
    (check / "tsconfig.json").write_text(json.dumps({
        "extends": "../tsconfig.json", "include": ["*.ts"],
        "compilerOptions": {"noEmit": True, "rootDir": "."}}), "utf-8")
    _run(str(built / "node_modules" / ".bin" / "tsc"), "-p", "examples", cwd=built)


def test_npm_pack_ships_dist_readme_and_licence_only(tmp_path: Path) -> None:
    """From a copy with no dist/: packing builds it (the ``prepack`` script) and ships it."""
    _, npm = _node_tools()
    package = _copy_package(tmp_path / "clawmemory")
    proc = _run(npm, "pack", "--dry-run", "--json", cwd=package)
    # npm 11 prints the prepack script's output to stderr; older npm may print it before the
    # JSON on stdout.
    start = re.search(r"^\[", proc.stdout, re.M)
    report = json.loads(proc.stdout[start.start() if start else 0:])
    shipped = {f["path"] for f in report[0]["files"]}
    assert {"dist/index.js", "dist/index.d.ts", "dist/errors.js", "dist/errors.d.ts",
            "dist/generated/schema.js", "dist/generated/schema.d.ts"} <= shipped, shipped
    assert {p for p in shipped if not p.startswith("dist/")} == {
        "LICENSE", "README.md", "package.json"}, shipped
    assert all(p.endswith((".js", ".d.ts")) for p in shipped if p.startswith("dist/")), shipped
    assert (PACKAGE / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes(), (
        "clients/typescript/LICENSE must be a copy of the repository's LICENSE")
    manifest = json.loads((PACKAGE / "package.json").read_text("utf-8"))
    assert "dependencies" not in manifest, "the client has no runtime dependency"
    assert manifest["type"] == "module"
    assert manifest["exports"]["."] == {"types": "./dist/index.d.ts",
                                        "import": "./dist/index.js"}

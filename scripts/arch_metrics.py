"""Architecture metrics for contributors: import cycles, upward imports, function-local imports
of the package's own modules, checks of a concrete backend outside the backends, source lines.

    python scripts/arch_metrics.py [--src src/clawmemory] [--json]

Reads the source with ``ast`` (nothing is imported). The layer of a module is the first prefix
of ``LAYERS`` it matches, top layer first; an import from a lower layer to a higher one is
"upward". The import-linter contracts in pyproject.toml enforce the same layers in the suite.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = "clawmemory"
# (layer index, module prefixes): lower index = higher layer.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("interfaces", ("interfaces", "adapters")),
    ("agent", ("agent",)),
    # The façade (``engine`` was its module before the redesign).
    ("memory", ("memory", "engine")),
    ("cognition/history/tools/context/portability/client",
     ("cognition", "history", "tools", "context", "portability", "client")),
    ("core", ("core", "engine_io", "engine_service", "write_path", "components", "lifecycle",
              "ingest", "indexing", "repair", "maintenance", "provenance")),
    ("search/auth", ("search", "auth")),
    ("backends", ("backends", "store", "transfer")),
    ("entities/vectors/snapshot", ("entities", "vectors", "snapshot")),
    ("providers", ("embed", "llm")),
    ("api", ("api",)),
    ("foundation", ("model", "config", "errors", "validation", "quiet", "private", "text")),
]
_BACKEND_CHECK = re.compile(
    r"isinstance\([^)]*(SQLiteStore|PostgresStore|MemoryStore|JSONFileStore|NoneStore)"
    r"|\.backend\s*(==|!=|in)\s"
    r"|getattr\([^)]*\"(key_store|backend)\""
)


def module_name(path: Path, src: Path) -> str:
    rel = path.relative_to(src.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int | None:
    rest = module.split(".")[1:]
    if not rest:
        return None
    # backends-in-disguise of the old layout: store/, vectors/<backend>, entities/<backend> ...
    if len(rest) > 1 and rest[0] in ("vectors", "entities", "history", "auth") and rest[1] in (
            "sqlite", "postgres", "memory", "queue", "base") and not (
            rest[0] in ("vectors", "entities") and rest[1] == "base"):
        return _index("backends")
    for i, (_, prefixes) in enumerate(LAYERS):
        if rest[0] in prefixes:
            return i
    return None


def _index(name: str) -> int:
    return [n for n, _ in LAYERS].index(name)


class Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_pkg: bool, modules: set[str]) -> None:
        self.module, self.is_pkg, self.modules = module, is_pkg, modules
        self.depth = 0
        self.type_only = 0
        self.edges: list[tuple[str, str, str]] = []  # (target, kind, line) kind: top/type/local

    def _kind(self) -> str:
        return "local" if self.depth else ("type" if self.type_only else "top")

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # noqa: N815 (ast.NodeVisitor's name)

    def visit_If(self, node: ast.If) -> None:
        test = ast.unparse(node.test)
        if "TYPE_CHECKING" in test:
            self.type_only += 1
            for n in node.body:
                self.visit(n)
            self.type_only -= 1
            for n in node.orelse:
                self.visit(n)
        else:
            self.generic_visit(node)

    def _add(self, target: str) -> None:
        while target and target not in self.modules:
            target = target.rpartition(".")[0]
        if target and target != self.module:
            self.edges.append((target, self._kind(), ""))

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name.split(".")[0] == ROOT:
                self._add(a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module.split(".")
            if not self.is_pkg:
                base = base[:-1]
            base = base[: len(base) - node.level + 1]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if mod.split(".")[0] != ROOT:
            return
        for a in node.names:
            full = f"{mod}.{a.name}"
            self._add(full if full in self.modules else mod)


def sccs(graph: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def graph_of(
    edges: dict[str, list[tuple[str, str, str]]], kinds: Iterable[str]
) -> dict[str, set[str]]:
    kinds = set(kinds)
    return {m: {t for t, k, _ in es if k in kinds} for m, es in edges.items()}


def measure(src: Path) -> dict[str, object]:
    files = sorted(src.rglob("*.py"))
    modules = {module_name(f, src): f for f in files}
    names = set(modules)
    edges: dict[str, list[tuple[str, str, str]]] = {}
    lines = 0
    checks: list[str] = []
    for mod, f in modules.items():
        text = f.read_text()
        lines += text.count("\n")
        v = Imports(mod, f.name == "__init__.py", names)
        v.visit(ast.parse(text))
        edges[mod] = v.edges
        top = layer_of(mod)
        if top is not None and LAYERS[top][0] != "backends":
            for n, line in enumerate(text.splitlines(), 1):
                if _BACKEND_CHECK.search(line):
                    checks.append(f"{mod}:{n}")
    with_types = sccs(graph_of(edges, ("top", "type")))
    runtime_top = sccs(graph_of(edges, ("top",)))
    runtime_all = sccs(graph_of(edges, ("top", "local")))
    upward = []
    for m, es in edges.items():
        lm = layer_of(m)
        for t, _, _ in es:
            lt = layer_of(t)
            if lm is not None and lt is not None and lt < lm:
                upward.append(f"{m} -> {t}")
    local = sum(1 for es in edges.values() for _, k, _ in es if k == "local")
    return {
        "modules": len(modules),
        "source_lines": lines,
        "modules_in_cycles_with_type_imports": sum(len(c) for c in with_types),
        "cycles_with_type_imports": len(with_types),
        "largest_cycle_with_type_imports": max((len(c) for c in with_types), default=0),
        "modules_in_cycles_runtime_top_level": sum(len(c) for c in runtime_top),
        "modules_in_cycles_runtime_incl_function_local": sum(len(c) for c in runtime_all),
        "cycles_runtime_incl_function_local": len(runtime_all),
        "upward_imports": len(set(upward)),
        "function_local_imports_of_own_modules": local,
        "backend_checks_outside_backends": len(checks),
        "_upward": sorted(set(upward)),
        "_checks": checks,
        "_cycles_with_types": with_types,
        "_cycles_runtime": runtime_all,
    }


def grimp_cycles(src: Path) -> dict[str, int]:
    """The same question asked of grimp's graph (import-linter's), which counts every import:
    top-level, type-only and inside functions. Run in a subprocess so ``src`` is the package
    it reads."""
    code = (
        "import grimp, json, sys\n"
        "sys.setrecursionlimit(10000)\n"
        f"g = grimp.build_graph({ROOT!r}, cache_dir=None)\n"
        "adj = {m: set(g.find_modules_directly_imported_by(m)) & g.modules for m in g.modules}\n"
        "print(json.dumps({m: sorted(t) for m, t in adj.items()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"PYTHONPATH": str(src.parent)}, check=True)
    graph = {m: set(t) for m, t in json.loads(done.stdout).items()}
    cycles = sccs(graph)
    return {"grimp_cycles": len(cycles), "grimp_modules_in_cycles": sum(map(len, cycles)),
            "grimp_largest_cycle": max(map(len, cycles), default=0)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--src", default=str(Path(__file__).resolve().parent.parent / "src" / ROOT))
    p.add_argument("--json", action="store_true", help="print everything as JSON")
    p.add_argument("--details", action="store_true", help="list the offending imports")
    a = p.parse_args()
    m = measure(Path(a.src))
    with contextlib.suppress(OSError, subprocess.CalledProcessError):  # no grimp installed
        m.update(grimp_cycles(Path(a.src)))
    if a.json:
        print(json.dumps(m, indent=2))
        return
    for k, v in m.items():
        if not k.startswith("_"):
            print(f"{k:50} {v}")
        elif a.details:
            print(f"{k}:")
            for item in v:  # type: ignore[attr-defined]
                print("   ", item)


if __name__ == "__main__":
    main()

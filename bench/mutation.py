"""Mutation testing of the core modules (not a test, not CI: hours on two cores).

    .venv/bin/python bench/mutation.py                      # every core module, one after another
    .venv/bin/python bench/mutation.py lifecycle tools      # some of them
    .venv/bin/python bench/mutation.py --resume lifecycle   # only the mutants without a result
    .venv/bin/python bench/mutation.py --survivors lifecycle  # the survivors again, after new tests
    .venv/bin/python bench/mutation.py --report             # the scores of what has run, no run

mutmut (the ``[tool.mutmut]`` table in pyproject.toml) copies ``src/`` into ``mutants/`` with
every small change ("mutant") of every function of the core modules built in, runs the whole
suite once to learn which tests call which function, then, per mutant, runs only those tests
with the mutant switched on. A mutant the tests notice is *killed*; one they do not notice
*survived*: a behaviour no test protects. docs/testing.md says how to read a survivor and
lists the survivors that are equivalent (no behaviour changed), which the report leaves out
of "to explain".

Two things this script adds to a plain ``mutmut run``:

- The CLI tests run the installed ``clawmem`` script in subprocesses. With ``PYTHONPATH`` on
  ``mutants/src`` those import the mutated package too, so a mutant is seen there as well
  (mutmut picks the active mutant from the environment the subprocess inherits). While mutmut
  learns which test calls what, ``PYTHONPATH`` is left unset: a subprocess cannot report its
  calls back, and the mutated code would look for mutmut's settings in the test's directory.
- It runs one module at a time (a ``mutmut run 'clawmemory.lifecycle.*'`` each) and prints
  the score per module: killed / survived / timeout / no tests, and the share caught
  ((killed + timeout) / checked, mutmut's own score).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
TESTING_DOC = ROOT / "docs" / "testing.md"

# Module name -> the mutant-name pattern mutmut selects it by. Order: the modules nobody
# changes often first; search (being reworked) last.
MODULES: dict[str, str] = {
    "lifecycle": "clawmemory.lifecycle.*",
    "maintenance": "clawmemory.maintenance.*",
    "context": "clawmemory.context.*",
    "tools": "clawmemory.tools.*",
    "portability": "clawmemory.portability.*",
    "vectors": "clawmemory.vectors.*",
    "store": "clawmemory.store.*",
    "engine": "clawmemory.engine.*",
    "search": "clawmemory.search.*",
}

# mutmut's result codes (mutmut.stats.status_by_exit_code), folded into the report's columns.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
          34: "skipped", 36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout",
          255: "timeout", 37: "killed", None: "not run"}


def run_mutmut(args: list[str]) -> None:
    """``mutmut args...`` in this process, with PYTHONPATH off while it collects its stats."""
    import mutmut.__main__ as mutmut_main

    collect = mutmut_main.run_stats_collection

    def collect_without_subprocess_mutants(*a: object, **k: object) -> None:
        saved = os.environ.pop("PYTHONPATH", None)
        try:
            collect(*a, **k)  # type: ignore[arg-type]
        finally:
            if saved is not None:
                os.environ["PYTHONPATH"] = saved

    create = mutmut_main.create_mutants

    def create_then_compile(*a: object, **k: object) -> Any:
        # The CLI tests start `clawmem` in subprocesses, each importing the mutated package:
        # without bytecode on disk (PYTHONDONTWRITEBYTECODE, or a fresh mutants/) each of them
        # compiles every mutated module again, seconds per process.
        out = create(*a, **k)
        compileall.compile_dir(str(MUTANTS / "src"), quiet=1, workers=0)
        return out

    mutmut_main.run_stats_collection = collect_without_subprocess_mutants
    mutmut_main.create_mutants = create_then_compile
    os.chdir(ROOT)
    mutmut_main.cli(args)


def results() -> dict[str, int | None]:
    """Every mutant mutmut knows of, by name, with its result code (None: not run yet)."""
    found: dict[str, int | None] = {}
    for meta in sorted((MUTANTS / "src").rglob("*.py.meta")):
        found.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return found


def module_of(mutant: str) -> str | None:
    for name, pattern in MODULES.items():
        if mutant.startswith(pattern[:-1]):
            return name
    return None


def equivalent() -> set[str]:
    """The survivors docs/testing.md lists as equivalent: a table row starting ``| `name` |``."""
    if not TESTING_DOC.exists():
        return set()
    return set(re.findall(r"^\| `(clawmemory\.[^`]+)` \|", TESTING_DOC.read_text("utf-8"), re.M))


def report(modules: list[str], show: int) -> None:
    found = results()
    known_equivalent = equivalent()
    header = f"{'module':<12}{'mutants':>8}{'killed':>8}{'survived':>9}{'timeout':>8}" \
             f"{'no tests':>9}{'not run':>8}{'caught':>8}{'to explain':>11}"
    print(header)
    print("-" * len(header))
    unexplained: list[str] = []
    for name in modules:
        counts: Counter[str] = Counter()
        for mutant, code in found.items():
            if module_of(mutant) == name:
                counts[STATUS.get(code, "suspicious")] += 1
                if STATUS.get(code) in ("survived", "no tests") and mutant not in known_equivalent:
                    unexplained.append(mutant)
        total = sum(counts.values())
        checked = total - counts["skipped"] - counts["not run"]
        caught = counts["killed"] + counts["timeout"]
        score = f"{100 * caught / checked:.1f}%" if checked else "-"
        to_explain = sum(1 for m in unexplained if module_of(m) == name)
        print(f"{name:<12}{total:>8}{counts['killed']:>8}{counts['survived']:>9}"
              f"{counts['timeout']:>8}{counts['no tests']:>9}{counts['not run']:>8}{score:>8}"
              f"{to_explain:>11}")
    if unexplained and show:
        print(f"\nSurvivors not listed as equivalent in docs/testing.md ({len(unexplained)}); "
              "`.venv/bin/mutmut show NAME` prints the change:")
        for mutant in unexplained[:show]:
            print(f"  {mutant}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", metavar="MODULE",
                    help=f"some of: {', '.join(MODULES)} (default: all, in that order)")
    ap.add_argument("--resume", action="store_true",
                    help="run only the mutants that have no result yet")
    ap.add_argument("--survivors", action="store_true",
                    help="run again only the survivors (after adding tests for them)")
    ap.add_argument("--report", action="store_true", help="print the scores, run nothing")
    ap.add_argument("--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    ap.add_argument("--show", type=int, default=200,
                    help="list at most this many unexplained survivors (default 200)")
    ap.add_argument("--mutmut", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.mutmut is not None:
        run_mutmut(args.mutmut)
        return
    modules = args.modules or list(MODULES)
    unknown = sorted(set(modules) - set(MODULES))
    if unknown:
        ap.error(f"unknown module(s) {', '.join(unknown)}; choose from {', '.join(MODULES)}")
    if not args.report:
        env = {**os.environ, "PYTHONPATH": str(MUTANTS / "src")}
        for name in modules:
            names = [MODULES[name]]
            if (args.resume or args.survivors) and results():
                wanted = {None} if args.resume else {"survived", "no tests"}
                names = [m for m, code in results().items()
                         if module_of(m) == name and STATUS.get(code) in wanted]
                if not names:
                    continue
            print(f"== {name}: mutmut run {' '.join(names[:3])}{' ...' * (len(names) > 3)}",
                  flush=True)
            subprocess.run([sys.executable, __file__, "--mutmut", "run", "--max-children",
                            str(args.jobs), *names], env=env, cwd=ROOT, check=False)
    report(modules, args.show)


if __name__ == "__main__":
    main()

"""Mutation testing of the core modules (not a test, not CI: hours on two cores).

    .venv/bin/python bench/mutation.py                      # every core module, one after another
    .venv/bin/python bench/mutation.py core tools      # some of them
    .venv/bin/python bench/mutation.py --resume core   # only the mutants without a result
    .venv/bin/python bench/mutation.py --survivors core  # the survivors again, after new tests
    .venv/bin/python bench/mutation.py --report             # the scores of what has run, no run
    .venv/bin/python bench/mutation.py --sample 60 backends # 60 mutants drawn at random (seeded)

mutmut (the ``[tool.mutmut]`` table in pyproject.toml) copies ``src/`` into ``mutants/`` with
every small change ("mutant") of every function of the core modules built in, runs the whole
suite once to learn which tests call which function, then, per mutant, runs only those tests
with the mutant switched on. A mutant the tests notice is *killed*; one they do not notice
*survived*: a behaviour no test protects. docs/testing.md says how to read a survivor;
bench/mutation-equivalents.md lists the survivors that are equivalent (no behaviour changed),
which the report leaves out of "to explain".

Two things this script adds to a plain ``mutmut run``:

- The CLI tests run the installed ``clawmem`` script in subprocesses. With ``PYTHONPATH`` on
  ``mutants/src`` those import the mutated package too, so a mutant is seen there as well
  (mutmut picks the active mutant from the environment the subprocess inherits). While mutmut
  learns which test calls what, ``PYTHONPATH`` is left unset: a subprocess cannot report its
  calls back, and the mutated code would look for mutmut's settings in the test's directory.
- It runs one module at a time (a ``mutmut run 'clawmemory.core.*'`` each) and prints
  the score per module: killed / survived / timeout / no tests, and the share caught
  ((killed + timeout) / checked, mutmut's own score).
"""

from __future__ import annotations

import argparse
import compileall
import json
import math
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MUTANTS = ROOT / "mutants"
EQUIVALENTS = ROOT / "bench" / "mutation-equivalents.md"
SAMPLE = MUTANTS / "sample.json"

# Module name -> the mutant-name pattern mutmut selects it by. Order: the modules nobody
# changes often first; search (being reworked) last.
MODULES: dict[str, str] = {
    "context": "clawmemory.context.*",
    "tools": "clawmemory.tools.*",
    "portability": "clawmemory.portability.*",
    "vectors": "clawmemory.vectors.*",
    "backends": "clawmemory.backends.*",
    # The engine's collaborators (the façade only delegates), lifecycle and jobs included.
    "core": "clawmemory.core.*",
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
    """The survivors bench/mutation-equivalents.md lists: a table row starting ``| `name` |``."""
    if not EQUIVALENTS.exists():
        return set()
    return set(re.findall(r"^\| `(clawmemory\.[^`]+)` \|", EQUIVALENTS.read_text("utf-8"), re.M))


def draw(modules: list[str], per_module: int, seed: int) -> list[str]:
    """The first ``per_module`` mutants of each module in a seeded shuffle of all of them.

    The draw is over every mutant of the module, whether it has run or not, and is kept in
    ``mutants/sample.json``: the sample's score is then an unbiased estimate of the module's
    even when some mutants ran before (mutmut runs the cheapest first, so those are not a
    random subset). A larger ``--sample`` with the same seed keeps the smaller draw as its
    start, so it grows the sample instead of replacing it. Returns the drawn mutants that have
    no result yet (the ones to run)."""
    found = results()
    drawn = load_sample()
    for name in modules:
        every = sorted(m for m in found if module_of(m) == name)
        random.Random(f"{seed}:{name}").shuffle(every)
        drawn[name] = every[:per_module]
    SAMPLE.write_text(json.dumps(drawn, indent=1), encoding="utf-8")
    return [m for name in modules for m in drawn[name] if found[m] is None]


def load_sample() -> dict[str, list[str]]:
    """The mutants drawn by ``--sample`` so far, by module (empty before any draw)."""
    return json.loads(SAMPLE.read_text("utf-8")) if SAMPLE.exists() else {}


def interval(caught: int, checked: int) -> str:
    """The 95% Wilson interval of the share caught, as ``lo-hi%`` (for a sampled module)."""
    z = 1.96
    p = caught / checked
    centre = (p + z * z / (2 * checked)) / (1 + z * z / checked)
    half = z * math.sqrt(p * (1 - p) / checked + z * z / (4 * checked * checked)) \
        / (1 + z * z / checked)
    return f"{100 * max(0.0, centre - half):.0f}-{100 * min(1.0, centre + half):.0f}%"


def print_diffs(mutants: list[str]) -> None:
    """The change each of these mutants makes, as ``mutmut show`` prints it."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    os.chdir(ROOT)
    for mutant in mutants:
        # clawmemory.backends.sqlite.store.xǁSQLiteStoreǁput__mutmut_3
        #   -> src/clawmemory/backends/sqlite/store.py
        module = mutant.split(".x", 1)[0] if ".x" in mutant else mutant
        path = Path("src", *module.split(".")).with_suffix(".py")
        if not path.exists():
            path = path.with_suffix("") / "__init__.py"
        print(f"# {mutant}")
        print(get_diff_for_mutant(mutant, path=path))


def report(modules: list[str], show: int, diffs: bool = False) -> None:
    found = results()
    known_equivalent = equivalent()
    sample = load_sample()
    header = f"{'module':<12}{'mutants':>8}{'killed':>8}{'survived':>9}{'timeout':>8}" \
             f"{'no tests':>9}{'not run':>8}{'caught':>8}{'  sample: caught (95%)':<30}" \
             f"{'to explain':>10}"
    print(header)
    print("-" * len(header))
    unexplained: list[str] = []
    for name in modules:
        mine = {m: code for m, code in found.items() if module_of(m) == name}
        counts = Counter(STATUS.get(code, "suspicious") for code in mine.values())
        unexplained += [m for m, code in mine.items()
                        if STATUS.get(code) in ("survived", "no tests")
                        and m not in known_equivalent]
        checked = len(mine) - counts["skipped"] - counts["not run"]
        caught = counts["killed"] + counts["timeout"]
        score = f"{100 * caught / checked:.1f}%" if checked else "-"
        print(f"{name:<12}{len(mine):>8}{counts['killed']:>8}{counts['survived']:>9}"
              f"{counts['timeout']:>8}{counts['no tests']:>9}{counts['not run']:>8}{score:>8}"
              f"{sampled(mine, sample.get(name, [])):<30}"
              f"{sum(1 for m in unexplained if module_of(m) == name):>10}")
    if unexplained and show:
        print(f"\nSurvivors not listed in bench/mutation-equivalents.md ({len(unexplained)}); "
              "`.venv/bin/mutmut show NAME` prints the change:")
        if diffs:
            print_diffs(unexplained[:show])
            return
        for mutant in unexplained[:show]:
            print(f"  {mutant}")


def sampled(mine: dict[str, int | None], drawn: list[str]) -> str:
    """The score of a module's drawn mutants that have run, with its 95% interval: the
    estimate for a module not run in full ("" for a module with nothing left to run)."""
    if not drawn or all(code is not None for code in mine.values()):
        return ""
    codes = [STATUS.get(mine[m]) for m in drawn if mine.get(m) is not None]
    checked = [c for c in codes if c != "skipped"]
    if not checked:
        return ""
    caught = sum(c in ("killed", "timeout") for c in checked)
    return (f"  {len(checked)}/{len(drawn)}: {100 * caught / len(checked):.1f}% "
            f"({interval(caught, len(checked))})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", metavar="MODULE",
                    help=f"some of: {', '.join(MODULES)} (default: all, in that order)")
    ap.add_argument("--resume", action="store_true",
                    help="run only the mutants that have no result yet")
    ap.add_argument("--survivors", action="store_true",
                    help="run again only the survivors not listed as equivalent (after adding "
                         "tests for them)")
    ap.add_argument("--report", action="store_true", help="print the scores, run nothing")
    ap.add_argument("--sample", type=int, metavar="N",
                    help="run N mutants of each module, drawn at random among those not run "
                         "yet, all in one mutmut run; the report then gives a 95%% interval")
    ap.add_argument("--diffs", action="store_true",
                    help="with --report: print each unexplained survivor's change")
    ap.add_argument("--seed", type=int, default=0, help="seed of --sample's draw (default 0)")
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
    env = {**os.environ, "PYTHONPATH": str(MUTANTS / "src")}
    if args.sample and not args.report:
        if not results():
            # The draw needs the mutants' names: let mutmut generate them (and learn which
            # test calls what) on one small module first.
            run_one(["clawmemory.vectors.matrix.xǁVectorMatrixǁ__init____mutmut_1"], args.jobs, env)
        names = draw(modules, args.sample, args.seed)
        # One mutmut run for the whole draw: its clean run of the tests and its forced failure
        # are paid once, not once per module.
        print(f"== sample: {len(names)} mutants of {', '.join(modules)}", flush=True)
        run_one(names, args.jobs, env)
    elif (args.resume or args.survivors) and results():
        # Every module's mutants in one mutmut run: its stats update, clean run of the tests
        # and forced failure (minutes each) are paid once, not once per module.
        wanted = {None} if args.resume else {"survived", "no tests"}
        # A survivor listed in bench/mutation-equivalents.md stays one: no test to rerun for it.
        listed = equivalent()
        names = [m for m, code in results().items()
                 if module_of(m) in modules and STATUS.get(code) in wanted and m not in listed]
        if names:
            print(f"== {len(names)} mutants of {', '.join(modules)}", flush=True)
            run_one(names, args.jobs, env)
    elif not args.report:
        for name in modules:
            print(f"== {name}: mutmut run {MODULES[name]}", flush=True)
            run_one([MODULES[name]], args.jobs, env)
    report(modules, args.show, args.diffs)


def run_one(names: list[str], jobs: int, env: dict[str, str]) -> None:
    """One ``mutmut run`` of these mutants (names or patterns), in a process of its own."""
    subprocess.run([sys.executable, __file__, "--mutmut", "run", "--max-children", str(jobs),
                    *names], env=env, cwd=ROOT, check=False)


if __name__ == "__main__":
    main()

"""Start-up and footprint benchmark (not a test): the targets of ADR 0008 in one table.

    .venv/bin/python bench/startup.py                  # everything (~15 minutes on 2 cores)
    .venv/bin/python bench/startup.py --skip-install   # without the fresh-venv install
    .venv/bin/python bench/startup.py --runs 9 --serve-stores 2000

Rows (ONNX Runtime, the default, next to the torch runtime measured in the same run):
torch runs with the thread count the library forced on it before (half the usable CPUs).

* cold ``clawmem --version`` / ``list`` / ``add`` / ``recall --mode keyword`` / ``recall``
  (hybrid): a fresh process each time, wall median and peak resident memory (the child's
  ru_maxrss) of ``--runs`` (5); the two runtimes alternate run by run, so a busy machine weighs
  on both alike. The targets are relative to ``--version`` (issue 25): the keyword paths
  within 1.2x, hybrid recall within 1.5x and 150 MiB;
* query embedding p50, warm: the same fresh queries, one runtime then the other per query;
* ingest with embeddings (``store_many``): alternating rounds into fresh databases, median;
* resident memory of ``clawmem serve`` after ``--serve-stores`` (20,000) stores over the REST
  API (``POST /v1/memories``, 8 at a time), anonymous and file-backed (the mapped model) apart;
* install size: a fresh venv with ``pip install .[local]`` (no torch), measured with du.

The machine's page cache is warm for every run (the files were just read): "cold" means a new
process, which is what a user or an agent that shells out per turn gets.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
CLAWMEM = str(Path(sys.executable).with_name("clawmem"))
console = Console(width=140)
SENTENCES = [
    "The staging database is rebuilt every Monday night",
    "User prefers dark mode in every editor",
    "Alice moved to the Berlin office in March",
    "The payment API signs the body with HMAC-SHA256",
    "Deployments freeze during the last week of December",
]
QUERIES = ["when is staging rebuilt", "which theme does the user like",
           "where does Alice work now", "how are payment requests signed",
           "is there a deploy freeze"]


def env_for(home: Path, runtime: str) -> dict[str, str]:
    """The environment of one CLI run. torch gets the thread count the library used to force
    on it (half the usable CPUs): its own default collapses on a shared 2-core machine, and the
    comparison is with the torch path as it ran before ADR 0008."""
    from clawmemory.embed.local import default_threads

    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env.update(CLAWMEM_HOME=str(home), CLAWMEM_EMBEDDER__RUNTIME=runtime)
    if runtime == "torch":
        env["CLAWMEM_EMBEDDER__THREADS"] = str(default_threads())
    return env


# Runs the command in a grandchild and prints its ru_maxrss (KiB) last on stderr. Linux keeps
# a process's peak across exec and starts a fork's from its parent's pages, so a command run
# straight from this process (numpy, ONNX Runtime loaded) would report this process's peak;
# forked from a bare interpreter (python -S, ~9 MiB), it reports its own.
_PEAK = ("import os, sys\npid = os.fork()\nif pid == 0:\n    os.execv(sys.argv[1], sys.argv[1:])\n"
         "_, status, usage = os.wait4(pid, 0)\nsys.stderr.write(f'\\n{usage.ru_maxrss}\\n')\n"
         "sys.exit(os.waitstatus_to_exitcode(status))\n")


def timed_run(cmd: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and peak resident MiB of one command (its own, see ``_PEAK``)."""
    t = time.perf_counter()
    done = subprocess.run([sys.executable, "-S", "-c", _PEAK, *cmd], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                          check=False)
    took = time.perf_counter() - t
    err, _, peak_kib = done.stderr.rstrip().rpartition("\n")
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {err.strip()}")
    return took, int(peak_kib) / 1024


Cold = tuple[str, tuple[float, float], tuple[float, float]]  # measure, (s, MiB) onnx, torch


def cold_rows(work: Path, runs: int) -> list[Cold]:
    """(measure, onnx (median s, peak MiB), torch (median s, peak MiB)) per cold command."""
    db = work / "cold.db"
    seed = [sys.executable, "-c",
            "import sys; from clawmemory import Memory\n"
            "with Memory.open(sys.argv[1]) as m:\n"
            "    m.store_many([{'content': f'{s} (note {i})'} for i in range(200)"
            " for s in sys.argv[2:]])", str(db), *SENTENCES]
    subprocess.run(seed, env=env_for(work, "onnx"), check=True)
    shutil.copy(db, work / "add.db")  # add queues vectors: recall must not embed them first
    commands: list[tuple[str, Callable[[int], list[str]]]] = [
        ("`clawmem --version` cold", lambda i: ["--version"]),
        ("`clawmem list` cold", lambda i: ["--db", str(db), "list", "--limit", "10"]),
        ("`clawmem add` cold",
         lambda i: ["--db", str(work / "add.db"), "add", f"cold start note {i}"]),
        ("`clawmem recall --mode keyword` cold",
         lambda i: ["--db", str(db), "recall", "--mode", "keyword", QUERIES[i % len(QUERIES)]]),
        ("`clawmem recall` hybrid cold",
         lambda i: ["--db", str(db), "recall", QUERIES[i % len(QUERIES)]]),
    ]
    out = []
    for label, args in commands:
        runs_of: dict[str, list[tuple[float, float]]] = {"onnx": [], "torch": []}
        for i in range(runs):
            for runtime in ("onnx", "torch") if i % 2 == 0 else ("torch", "onnx"):
                runs_of[runtime].append(timed_run([CLAWMEM, *args(i)], env_for(work, runtime)))
        onnx, torch = ((statistics.median(s for s, _ in runs_of[r]),
                        max(m for _, m in runs_of[r])) for r in ("onnx", "torch"))
        out.append((label, onnx, torch))
        console.print(f"  {label}: done")
    return out


def embedders() -> tuple[Any, Any]:
    from clawmemory.embed import make_embedder
    from clawmemory.embed.factory import LocalOptions
    from clawmemory.embed.local import default_threads

    onnx = make_embedder("local", query_cache_size=0)
    torch = make_embedder("local", query_cache_size=0,
                          local=LocalOptions("torch", threads=default_threads()))
    for e in (onnx, torch):
        e.embed_query("warm up")  # type: ignore[union-attr]
    return onnx, torch


def query_row(onnx: Any, torch: Any, n: int) -> tuple[float, float]:
    """p50 ms of embedding the same fresh queries, one runtime then the other, alternating."""
    times: dict[int, list[float]] = {0: [], 1: []}
    for i in range(n):
        q = f"{QUERIES[i % len(QUERIES)]} number {i}"
        pair = (0, 1) if i % 2 == 0 else (1, 0)
        for which in pair:
            t = time.perf_counter()
            (onnx, torch)[which].embed_query(q)
            times[which].append(time.perf_counter() - t)
    return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000


def ingest_row(onnx: Any, torch: Any, work: Path, n: int, rounds: int) -> tuple[float, float]:
    """Memories/s through ``store_many`` with real embeddings, alternating rounds, median."""
    from clawmemory import Memory, Settings

    rates: dict[int, list[float]] = {0: [], 1: []}
    for r in range(rounds):
        for which in (0, 1) if r % 2 == 0 else (1, 0):
            texts = [f"{SENTENCES[i % 5]} — round {r} item {i} ({'ab'[which]})" for i in range(n)]
            db = work / f"ingest-{r}-{which}.db"
            with Memory.open(settings=Settings(db=db), embedder=(onnx, torch)[which]) as mem:
                t = time.perf_counter()
                mem.store_many({"content": s} for s in texts)
                rates[which].append(n / (time.perf_counter() - t))
    return statistics.median(rates[0]), statistics.median(rates[1])


def serve_rss(work: Path, stores: int, runtime: str) -> dict[str, float]:
    """MiB resident in `clawmem serve` after ``stores`` stores over the REST API, 8 at a time:
    ``rss``, and its ``anon`` (the heap: vectors, caches) and ``file`` (mapped files: the
    model's weights, libraries) parts."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    db = work / f"serve-{runtime}.db"
    proc = subprocess.Popen([CLAWMEM, "--db", str(db), "serve", "--port", "0"],
                            env=env_for(work, runtime), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        url = re.search(r"(http://\S+)/mcp", line)
        if url is None:
            raise SystemExit(f"clawmem serve said: {line!r}")
        with httpx.Client(base_url=url.group(1) + "/v1", timeout=300) as client:

            def one(i: int) -> None:
                client.post("/memories", json={
                    "content": f"{SENTENCES[i % 5]} (stored through the server, {i})",
                }).raise_for_status()

            with ThreadPoolExecutor(8) as pool:
                list(pool.map(one, range(stores)))
            client.post("/recall", json={"query": QUERIES[0]}).raise_for_status()
        status = Path(f"/proc/{proc.pid}/status").read_text()
        return {name: int(re.search(rf"{key}:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
                for name, key in (("rss", "VmRSS"), ("anon", "RssAnon"), ("file", "RssFile"))}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def install_size(work: Path) -> float:
    """MiB of a fresh venv holding clawmemory[local] (no torch)."""
    venv = work / "fresh-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check"]
    subprocess.run([*pip, f"{ROOT}[local]"], check=True)
    size = subprocess.run(["du", "-sm", str(venv)], capture_output=True, text=True, check=True)
    return float(size.stdout.split()[0])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="cold runs per command and runtime")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--ingest-n", type=int, default=1000)
    p.add_argument("--ingest-rounds", type=int, default=3)
    p.add_argument("--serve-stores", type=int, default=20_000)
    p.add_argument("--skip-install", action="store_true")
    args = p.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="clawmem-startup-"))
    t = Table(title="Start-up and footprint: ONNX Runtime (default) vs torch, same run")
    for col, justify in (("measure", "left"), ("onnx", "right"), ("torch", "right"),
                         ("target", "left"), ("met", "left")):
        t.add_column(col, justify=justify)  # type: ignore[arg-type]
    try:
        rows = cold_rows(work, args.runs)
        version_s = rows[0][1][0]
        for label, (onnx_s, onnx_mib), (torch_s, torch_mib) in rows:
            factor, mib = (1.5, 150.0) if "hybrid" in label else (1.2, float("inf"))
            target = "—" if "version" in label else f"≤ {factor} × --version" + (
                f", ≤ {mib:.0f} MiB" if mib != float("inf") else "")
            met = "—" if "version" in label else _met(
                onnx_s <= factor * version_s and onnx_mib <= mib)
            t.add_row(label, f"{onnx_s:.2f} s / {onnx_mib:.0f} MiB",
                      f"{torch_s:.2f} s / {torch_mib:.0f} MiB", target, met)
        onnx, torch = embedders()
        q_onnx, q_torch = query_row(onnx, torch, args.queries)
        t.add_row("query embedding p50, warm", f"{q_onnx:.2f} ms", f"{q_torch:.2f} ms",
                  f"≤ 0.7 × torch (is {q_onnx / q_torch:.2f})", _met(q_onnx <= 0.7 * q_torch))
        i_onnx, i_torch = ingest_row(onnx, torch, work, args.ingest_n, args.ingest_rounds)
        t.add_row("ingest with embeddings", f"{i_onnx:,.0f}/s", f"{i_torch:,.0f}/s",
                  f"≥ 1.0 × torch (is {i_onnx / i_torch:.2f})", _met(i_onnx >= i_torch))
        console.print("  runtimes compared")
        rss = serve_rss(work, args.serve_stores, "onnx")
        rss_torch = serve_rss(work, min(args.serve_stores, 1000), "torch")
        t.add_row(f"RSS of `clawmem serve` after {args.serve_stores:,} REST stores",
                  f"{rss['rss']:.0f} MiB (anon {rss['anon']:.0f}, file {rss['file']:.0f})",
                  f"{rss_torch['rss']:.0f} MiB (1,000 stores)", "≤ 250 MiB",
                  _met(rss["rss"] <= 250))
        if not args.skip_install:
            size = install_size(work)
            t.add_row("install size, extra local (no torch)", f"{size:.0f} MiB", "—",
                      "≤ 350 MB", _met(size * 1.048576 <= 350))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    console.print(t)
    return 0


def _met(ok: bool) -> str:
    return "yes" if ok else "NO"


if __name__ == "__main__":
    sys.exit(main())

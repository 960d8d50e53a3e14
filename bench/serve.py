"""Load on the REST API: several client processes store and recall (1:4) against a real
``clawmem serve`` on loopback for a bounded time, then every acknowledged write is read back.

    .venv/bin/python bench/serve.py --mode keyword --seconds 20 --procs 4
    .venv/bin/python bench/serve.py --mode hybrid --seconds 20 --procs 4

Reports throughput, p50/p95/p99 latency and errors per operation, lost writes (acknowledged
with 201 but not readable afterwards) and the machine's load average before and after (the
machine may be shared: a busy neighbour lowers every number). Targets on the 2-core reference
machine: >= 200 recalls/s keyword and >= 50/s hybrid, p99 <= 250 ms, no error, no lost write.
Traffic goes to 127.0.0.1 only; the run stops by itself.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

# A vocabulary of 3,000 made-up words drawn with Zipf frequencies (a few common, most rare),
# like the words of real notes: a query's terms match a realistic share of the memories.
_SYLLABLES = ("ka", "lo", "mi", "ra", "te", "su", "no", "vi", "da", "pe", "zo", "ul", "an",
              "or", "be", "ti", "go", "sa", "ne", "ri")
WORDS = [a + b + c for a in _SYLLABLES for b in _SYLLABLES for c in ("", "n", "s", "r", "l",
                                                                      "m", "t", "k")][:3000]
_WEIGHTS = [1 / (rank + 1) for rank in range(len(WORDS))]
MAIN = "import sys\nfrom clawmemory.interfaces.cli import main\nsys.exit(main())\n"


def _words(rng: random.Random, n: int) -> list[str]:
    return rng.choices(WORDS, weights=_WEIGHTS, k=n)


def _sentence(rng: random.Random) -> str:
    return " ".join(_words(rng, rng.randint(8, 16))).capitalize() + "."


def start_server(db: Path, embedder: str) -> tuple[subprocess.Popen[bytes], str]:
    env = {**os.environ, "CLAWMEM_EMBEDDER__PROVIDER": embedder, "CLAWMEM_LOG_LEVEL": "WARNING"}
    out = db.with_suffix(".out")
    with out.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", MAIN, "--db", str(db), "serve",
                                 "--port", "0"], stdout=sink, stderr=subprocess.DEVNULL,
                                env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        words = out.read_text().split()
        if "at" in words:
            url = words[words.index("at") + 1]
            return proc, url.removesuffix("/mcp")
        if proc.poll() is not None:
            raise SystemExit(f"server exited {proc.returncode}")
        time.sleep(0.2)
    raise SystemExit("server did not start")


def _worker(url: str, seconds: float, mode: str, seed: int, out: Any) -> None:
    rng = random.Random(seed)
    samples: list[tuple[str, float, int]] = []
    stored: list[str] = []
    deadline = time.monotonic() + seconds
    i = 0
    with httpx.Client(base_url=url, timeout=30, trust_env=False) as client:
        while time.monotonic() < deadline:
            start = time.perf_counter()
            if i % 5 == 0:
                op = "store"
                r = client.post("/v1/memories", json={"content": _sentence(rng)})
                if r.status_code == 201:
                    stored.append(r.json()["id"])
            else:
                op = "recall"
                query = " ".join(_words(rng, 3))
                r = client.post("/v1/recall", json={"query": query, "mode": mode, "limit": 5})
            samples.append((op, time.perf_counter() - start, r.status_code))
            i += 1
    out.put((samples, stored))


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process has used: on a shared machine the server's CPU
    per request says more about its capacity than throughput does."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def run(args: argparse.Namespace) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix="clawmem-serve-bench-"))
    proc, url = start_server(folder / "bench.db", args.embedder)
    try:
        rng = random.Random(1)
        with httpx.Client(base_url=url, timeout=600, trust_env=False) as client:
            for start in range(0, args.seed_memories, 1000):
                n = min(1000, args.seed_memories - start)
                items = [{"content": _sentence(rng)} for _ in range(n)]
                assert client.post("/v1/memories/batch", json={"items": items}).status_code == 201
            warm = {"query": " ".join(WORDS[:2]), "mode": args.mode}
            assert client.post("/v1/recall", json=warm).status_code == 200
        load_before = os.getloadavg()
        cpu_before = _cpu_s(proc.pid)
        queue: Any = mp.get_context("spawn").Queue()
        workers = [mp.get_context("spawn").Process(
            target=_worker, args=(url, args.seconds, args.mode, 100 + n, queue))
            for n in range(args.procs)]
        for w in workers:
            w.start()
        results = [queue.get(timeout=args.seconds + 120) for _ in workers]
        for w in workers:
            w.join(timeout=30)
        load_after = os.getloadavg()
        server_cpu = _cpu_s(proc.pid) - cpu_before
        samples = [s for part, _ in results for s in part]
        stored = [i for _, part in results for i in part]
        with httpx.Client(base_url=url, timeout=60, trust_env=False) as client:
            lost = sum(client.get(f"/v1/memories/{i}").status_code != 200 for i in stored)
            total = client.get("/v1/count").json()["count"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    report: dict[str, Any] = {"mode": args.mode, "embedder": args.embedder,
                              "seconds": args.seconds, "procs": args.procs,
                              "seed_memories": args.seed_memories, "lost_writes": lost,
                              "count_after": total, "expected_count":
                              args.seed_memories + len(stored),
                              "load_before": load_before, "load_after": load_after,
                              "server_cpu_ms_per_request": 1000 * server_cpu / max(len(samples), 1),
                              "ops": {}}
    for op in ("recall", "store"):
        lat = [s[1] for s in samples if s[0] == op]
        errors = sum(1 for s in samples if s[0] == op and s[2] >= 400)
        report["ops"][op] = {"count": len(lat), "per_s": len(lat) / args.seconds,
                             "p50_ms": _pct(lat, 0.50), "p95_ms": _pct(lat, 0.95),
                             "p99_ms": _pct(lat, 0.99), "errors": errors,
                             "mean_ms": statistics.fmean(lat) * 1000 if lat else 0.0}
    return report


def _table(r: dict[str, Any]) -> str:
    lines = [f"mode {r['mode']} (embedder {r['embedder']}), {r['procs']} client processes,"
             f" {r['seconds']} s, {r['seed_memories']} memories seeded; load average"
             f" {r['load_before'][0]:.2f} before, {r['load_after'][0]:.2f} after",
             "", "| op | requests | per s | p50 ms | p95 ms | p99 ms | errors |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for op, o in r["ops"].items():
        lines.append(f"| {op} | {o['count']} | {o['per_s']:.0f} | {o['p50_ms']:.1f} |"
                     f" {o['p95_ms']:.1f} | {o['p99_ms']:.1f} | {o['errors']} |")
    lines.append(f"\nlost writes: {r['lost_writes']} (count after {r['count_after']}, expected"
                 f" {r['expected_count']}); server CPU per request"
                 f" {r['server_cpu_ms_per_request']:.2f} ms")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("keyword", "hybrid"), default="keyword")
    parser.add_argument("--embedder", default="local", help="server's embedder provider")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seed-memories", type=int, default=2000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not 1 <= args.seconds <= 600 or not 1 <= args.procs <= 32:
        parser.error("--seconds 1..600 and --procs 1..32 (a bounded run)")
    report = run(args)
    print(json.dumps(report, indent=2) if args.json else _table(report))


if __name__ == "__main__":
    main()

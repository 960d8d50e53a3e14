"""Resident memory of ``clawmem serve``: at start, after N single REST stores, after recalls.

    .venv/bin/python bench/serve_rss.py                    # 20,000 stores, 8 client threads
    .venv/bin/python bench/serve_rss.py --stores 2000 --recalls 20

Starts a real ``clawmem serve`` (the default embedder, a new database in a temporary folder)
on a loopback port, stores ``--stores`` memories one ``POST /v1/memories`` each from
``--threads`` client threads, then runs ``--recalls`` hybrid recalls, and prints the server's
``VmRSS`` (Linux ``/proc``) after each step with the load average. Issue 25's target: at most
250 MiB after 20,000 stores.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from serve import start_server  # bench/serve.py: the same server start

PEOPLE = ("Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS (Linux only)")


def store_share(url: str, first: int, total: int, step: int) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:
        for j in range(first, total, step):
            content = (f"{PEOPLE[j % 8]} mentioned item {j}: the meeting about project"
                       f" {j % 97} moved to room {j % 13}")
            client.post("/v1/memories", json={"content": content}).raise_for_status()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stores", type=int, default=20_000)
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--recalls", type=int, default=50)
    args = p.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="clawmem-rss-"))
    server, url = start_server(folder / "m.db", "local")  # the default embedder
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            print(f"started: {rss_mib(server.pid):.0f} MiB", flush=True)
            began = time.monotonic()
            with ThreadPoolExecutor(args.threads) as pool:
                list(pool.map(lambda i: store_share(url, i, args.stores, args.threads),
                              range(args.threads)))
            print(f"after {args.stores:,} stores ({time.monotonic() - began:.0f} s):"
                  f" {rss_mib(server.pid):.0f} MiB", flush=True)
            for q in range(args.recalls):
                client.post("/v1/recall", json={
                    "query": f"where is the meeting about project {q}"}).raise_for_status()
            print(f"after {args.recalls} recalls: {rss_mib(server.pid):.0f} MiB", flush=True)
        print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())

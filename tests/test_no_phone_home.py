"""No connection the user did not configure, from any process: a long-lived ``clawmem serve``
and a library process, each with the real local embedder loaded, stay up together in a network
namespace whose resolver logs every query (tests/netns_watch.py), and try no lookup and no
connection beyond loopback.

ONNX Runtime's native telemetry client is what this catches: without ``ORT_DISABLE_TELEMETRY``
set before onnxruntime loads, it looked up ``mobile.events.data.microsoft.com`` 9 s after the
import, then every 5-8 s, and connected to port 443 of the address it was given (12 lookups
and 12 connects from the two processes); a short CLI run exits before that, the idle period
here does not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

WATCH = Path(__file__).with_name("netns_watch.py")
IDLE = 20.0  # seconds both processes sit idle with the model loaded: telemetry fired at ~9 s,
# then every 5-8 s, so this catches it two or three times
START_TIMEOUT = 150.0  # two busy shared cores: a cold server start takes a while
PORT = 8765  # the namespace is new: nothing else listens in it

MAIN = "import sys\nfrom clawmemory.interfaces.cli import main\nsys.exit(main())\n"

# A store and a hybrid recall over REST, once the server answers.
CLIENT = """
import json, sys, time, urllib.request
base = sys.argv[1]
http = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy

def post(path, body):
    request = urllib.request.Request(base + path, json.dumps(body).encode(),
                                     {"content-type": "application/json"})
    with http.open(request, timeout=60) as response:
        return json.load(response)

deadline = time.monotonic() + float(sys.argv[2])
while True:
    try:
        http.open(base + "/openapi.json", timeout=5).close()
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.3)
post("/v1/memories", {"content": "User prefers dark mode in every editor"})
hits = post("/v1/recall", {"query": "dark theme", "mode": "hybrid"})["hits"]
assert hits and hits[0]["memory"]["content"].startswith("User prefers"), hits
print("ready", flush=True)
"""

# Memory.open on a SQLite file, store, hybrid recall, then idle until SIGTERM.
LIBRARY = """
import signal, sys, threading
from clawmemory import Memory
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
with Memory.open(sys.argv[1]) as mem:
    mem.store("User prefers dark mode in every editor")
    hits = mem.recall("dark theme", mode="hybrid")
    assert hits and hits[0].memory.content.startswith("User prefers"), hits
    print("ready", mem.components.embedder.name, "onnxruntime" in sys.modules, flush=True)
    stop.wait()
"""


def _namespaces_available() -> str | None:
    """Why this machine cannot run the test, or None."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return "needs root on Linux for a network and mount namespace"
    for tool in ("unshare", "ip", "mount"):
        if shutil.which(tool) is None:
            return f"needs {tool} (util-linux / iproute2) to build the namespace"
    probe = subprocess.run(["unshare", "--net", "--mount", "true"], capture_output=True,
                           text=True, check=False)
    if probe.returncode != 0:
        return f"network namespaces are not available here: {probe.stderr.strip()}"
    return None


def _plan(work: Path) -> dict[str, Any]:
    base = f"http://127.0.0.1:{PORT}"
    python = sys.executable
    return {"workdir": str(work), "idle": IDLE, "start_timeout": START_TIMEOUT, "jobs": [
        {"name": "server", "ready": " at http://",
         "argv": [python, "-c", MAIN, "--db", str(work / "served.db"), "serve",
                  "--port", str(PORT)]},
        {"name": "client", "ready": "ready",
         "argv": [python, "-c", CLIENT, base, str(START_TIMEOUT)]},
        {"name": "library", "ready": "ready",
         "argv": [python, "-c", LIBRARY, str(work / "library.db")]},
    ]}


def _environment() -> dict[str, str]:
    """This process's environment without any telemetry or offline switch: a switch the test
    process picked up (a test before this one loaded onnxruntime) would hide what the code
    under test does not set itself."""
    drop = {"ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY",
            "DO_NOT_TRACK", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["CLAWMEM_LOG_LEVEL"] = "WARNING"
    return env


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_a_server_and_a_library_process_make_no_lookup_and_no_connection(
    tmp_path: Path,
) -> None:
    if (why := _namespaces_available()) is not None:
        pytest.skip(why)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan(tmp_path)))
    done = subprocess.run(["unshare", "--net", "--mount", sys.executable, str(WATCH), str(plan)],
                          capture_output=True, text=True, check=False, env=_environment(),
                          timeout=START_TIMEOUT + IDLE + 120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["self_check"] == {"dns": True, "udp": True, "tcp": True}, report
    jobs = report["jobs"]
    for name, job in jobs.items():
        assert job["ready_at"] is not None, (name, job)
        assert job["rc"] == 0, (name, job)
    # Both processes really ran the local model (ONNX Runtime), not keyword recall only.
    assert "embedder local:sentence-transformers/all-MiniLM-L6-v2 warmed up" in (
        jobs["server"]["out"]), jobs["server"]
    assert "ready local:sentence-transformers/all-MiniLM-L6-v2 True" in jobs["library"]["out"]
    # The idle period really passed with both up: SIGTERM came after it, not a crash.
    last_ready = max(job["ready_at"] for job in jobs.values())
    assert report["stopped_at"] - last_ready >= IDLE, report
    assert report["queries"] == [], report["queries"]
    assert report["packets"] == [], report["packets"]


# --- the switches themselves (no namespace needed) ---------------------------------------------

_SWITCHED = """
import logging, os, sys
logging.basicConfig(level=logging.WARNING, format="%(message)s")
before = [os.environ.get(k) for k in ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY")]
import clawmemory
from clawmemory import Memory
with Memory.open(backend="memory") as mem:  # no embedder (provider none): no model loads
    mem.store("User prefers dark mode")
    mem.recall("dark mode")
imported = [os.environ.get(k) for k in ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY")]
for name in sys.argv[1:]:
    __import__(name)
from clawmemory.quiet import quiet_dependencies
quiet_dependencies()
quiet_dependencies()
after = [os.environ.get(k) for k in ("ORT_DISABLE_TELEMETRY", "HF_HUB_DISABLE_TELEMETRY")]
hub = sys.modules.get("huggingface_hub.constants")
print(repr((before, imported, after, hub.HF_HUB_DISABLE_TELEMETRY if hub else None)))
"""


def _switched(*early: str, **env: str) -> tuple[Any, str]:
    environment = {**_environment(), "CLAWMEM_EMBEDDER__PROVIDER": "none", **env}
    done = subprocess.run([sys.executable, "-c", _SWITCHED, *early], capture_output=True,
                          text=True, check=False, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1]), done.stderr


def test_importing_and_using_clawmemory_sets_nothing_until_a_model_library_is_loaded() -> None:
    (before, imported, after, hub), warned = _switched()
    assert before == imported == [None, None]  # nothing at import time, nor without a model
    assert after == ["1", "1"]
    assert hub is None  # nothing was imported to switch them off
    assert warned == ""


def test_a_users_setting_does_not_turn_telemetry_back_on() -> None:
    (before, _, after, _), _ = _switched(ORT_DISABLE_TELEMETRY="0",
                                         HF_HUB_DISABLE_TELEMETRY="false")
    assert before == ["0", "false"]
    assert after == ["1", "1"]


def test_a_library_the_host_imported_first_is_switched_off_or_named() -> None:
    """huggingface_hub reads its switch on every call, so it is corrected in place; ONNX
    Runtime read its switch when it loaded, so the warning says how to start the process."""
    (_, _, after, hub), warned = _switched("huggingface_hub.constants", "onnxruntime")
    assert after == ["1", "1"]
    assert hub is True
    assert warned.count("onnxruntime was imported before clawmemory could switch its"
                        " telemetry off") == 1, warned
    assert "ORT_DISABLE_TELEMETRY=1" in warned
    assert "huggingface_hub" not in warned

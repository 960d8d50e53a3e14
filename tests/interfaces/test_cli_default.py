"""The README's path with the shipped defaults: `clawmem add` (which loads no model and queues
the vector) followed by `clawmem recall` finds the memory by meaning, not only by its words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CLAWMEM = Path(sys.executable).parent / "clawmem"


def _cli(db: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAWMEM_")}
    env |= {"CLAWMEM_HOME": str(home), "CLAWMEM_CONFIG": str(home / "absent.toml")}
    return subprocess.run([str(CLAWMEM), "--db", str(db), *args], capture_output=True,
                          text=True, env=env, timeout=180, check=False)


def test_add_then_recall_finds_a_paraphrase_with_the_default_model(tmp_path: Path) -> None:
    db, home = tmp_path / "a.db", tmp_path / "home"
    for text in ("The user adores hiking in the Alps every summer",
                 "Payment API requests carry an HMAC signature"):
        assert _cli(db, home, "add", text).returncode == 0
    queued = json.loads(_cli(db, home, "--json", "stats").stdout)["vectors_queued"]
    assert queued == 2  # add loaded no model: the vectors wait

    done = _cli(db, home, "--json", "recall", "mountain walking holidays")

    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["hits"]
    assert hits[0]["memory"]["content"].startswith("The user adores hiking")
    assert "vector" in hits[0]["explain"]["lists"]  # found by meaning: no word in common
    assert json.loads(_cli(db, home, "--json", "stats").stdout)["vectors_queued"] == 0

#!/usr/bin/env bash
# Idempotent set-up: creates .venv/ in the repo root and installs clawmemory with everything the
# embedded default, the tests and the benchmarks need. torch is installed first and pinned, so
# nothing that depends on it can pull a multi-gigabyte CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.clawmemory-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[local,mcp,server,scheduler,postgres,dev]"
echo "$want" > "$stamp"

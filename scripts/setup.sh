#!/usr/bin/env bash
# Idempotent set-up: creates .venv/ in the repo root and installs clawmemory with everything the
# embedded default, the tests and the benchmarks need, then exports the default embedding model
# to ONNX once (into ~/.cache/clawmemory/models). torch is installed first and pinned, so
# nothing that depends on it can pull a multi-gigabyte CUDA build; the library itself runs the
# model with ONNX Runtime (ADR 0013), torch is here for the export, the tests and benchmarks
# that compare against it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
model="${XDG_CACHE_HOME:-$HOME/.cache}/clawmemory/models/all-MiniLM-L6-v2-onnx-2/model.onnx"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.clawmemory-setup
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -e ".[all,torch,dev]"
  echo "$want" > "$stamp"
fi
# The inspector's browser test drives Debian's Chromium through its ChromeDriver (never a browser
# a tool downloads). Installed once; a no-op when both are there.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      chromium chromium-driver >/dev/null
  else
    echo "setup: install chromium and chromium-driver (apt) for the inspector's browser test" >&2
  fi
fi
# The TypeScript client's build tools (typescript, openapi-typescript: dev dependencies only),
# exactly as package-lock.json pins them; again only when the lock file or package.json changed
# (npm ci empties node_modules/, the stamp with it). Its tests (tests/clients/test_typescript.py)
# need Node.js 20+ and fail, saying so, without it.
ts=clients/typescript
ts_stamp=$ts/node_modules/.clawmemory-setup
if command -v node >/dev/null && command -v npm >/dev/null; then
  ts_want="$(cat $ts/package.json $ts/package-lock.json | sha256sum | cut -c1-16)"
  if [ ! -f "$ts_stamp" ] || [ "$(cat "$ts_stamp")" != "$ts_want" ]; then
    (cd $ts && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$ts_want" > "$ts_stamp"
  fi
else
  echo "setup: install Node.js 20 or later (with npm) for the TypeScript client in $ts;" \
       "its tests fail without it. Then run scripts/setup.sh again." >&2
fi
# Exports the model once, or makes its folder from one an earlier version exported (format 1,
# a float32 word table; clawmemory.embed.model_files, ADR 0035).
if [ ! -f "$model.data" ]; then
  .venv/bin/python -m clawmemory.embed.model_files >/dev/null
fi
# Bytecode for the package (stale files are recompiled by mtime): where PYTHONDONTWRITEBYTECODE
# is set, as on these machines, every `clawmem` the tests start would compile it again (~0.3 s).
.venv/bin/python -m compileall -q src >/dev/null

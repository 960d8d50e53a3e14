#!/usr/bin/env bash
# Re-measure every table of docs/benchmarks.md, one benchmark after another (never two at once:
# on a 2-core box a second job doubles every latency). Each benchmark's output goes to its own
# file in OUT, headed by the time, the commit and the load average before it ran.
#
#   bench/run_all.sh OUT [STEP...]        # every step, or only the named ones
#
# Steps: locomo locomo-anchored speed speed-1m speed-extras ingest first-recall recall-quality
#        startup serve-rss forget provenance names serve hooks postgres peers longmemeval
#
# Databases are kept in $WORK (default OUT/work) so that a second run measures without
# filling again; the 1M file takes ~25 minutes to fill the first time, LongMemEval's 80
# haystacks ~40. The data files are each benchmark's own --data default (LoCoMo, LongMemEval_S)
# unless LOCOMO / LONGMEMEVAL name them. `peers` needs PEERS_DIR (the harness's folder) and
# PEERS_HOME (its venvs, built as bench/peers.md says); it is skipped without them.
set -u
export COLUMNS=${COLUMNS:-250}  # rich cuts tables to 80 columns when its output is a file
OUT=${1:?usage: bench/run_all.sh OUT [STEP...]}
shift
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)  # before the cd below: OUT and WORK may be relative to the caller
WORK=${WORK:-$OUT/work}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
STEPS=${*:-locomo locomo-anchored speed speed-1m speed-extras ingest first-recall recall-quality startup serve-rss forget provenance names serve hooks postgres peers longmemeval}
LOCOMO_ARGS=()
LME_ARGS=()
if [ -n "${LOCOMO:-}" ]; then LOCOMO_ARGS=(--data "$LOCOMO"); fi
if [ -n "${LONGMEMEVAL:-}" ]; then LME_ARGS=(--data "$LONGMEMEVAL"); fi

step() {  # step NAME COMMAND...: run it, its output in OUT/NAME.txt
  local name=$1
  shift
  {
    echo "# $name: $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "\$ $*"
  } > "$OUT/$name.txt"
  local t0=$SECONDS
  "$@" >> "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "# rc=$rc, ${SECONDS}s since the sweep began, $((SECONDS - t0)) s, load after $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/$name.txt"
  echo "$name: rc=$rc, $((SECONDS - t0)) s"
}

for s in $STEPS; do
  case $s in
    locomo) step locomo "$PY" bench/locomo.py "${LOCOMO_ARGS[@]}" --modes keyword,vector,hybrid --db "$WORK/locomo" ;;
    locomo-anchored) step locomo-anchored "$PY" bench/locomo.py "${LOCOMO_ARGS[@]}" --anchored --modes keyword,vector,hybrid --db "$WORK/locomo" ;;
    speed) step speed "$PY" bench/speed.py --sizes 20000,100000 --queries 200 --no-extras --sqlite-db "$WORK/speed.db" ;;
    speed-1m) step speed-1m "$PY" bench/speed.py --sizes 1000000 --queries 100 --no-extras --sqlite-db "$WORK/speed-1m.db" ;;
    speed-extras) step speed-extras "$PY" bench/speed.py --sizes 2000 --queries 100 --ingest-n 2000 ;;
    ingest) step ingest "$PY" bench/ingest.py "${LME_ARGS[@]}" --rounds 2 ;;
    first-recall) step first-recall "$PY" bench/first_recall.py --fill 20000 ;;
    recall-quality)
      step recall-quality "$PY" bench/recall_quality.py --db "$WORK/rq"
      step first-recall-reopen "$PY" bench/first_recall.py --db "$WORK/rq/peers-20000.db" --namespace u1 ;;
    startup) step startup "$PY" bench/startup.py ;;
    serve-rss) step serve-rss "$PY" bench/serve_rss.py ;;
    forget) step forget "$PY" bench/forget.py --size 100000 ;;
    provenance) step provenance "$PY" bench/provenance.py ;;
    names) step names "$PY" bench/names_precision.py "${LOCOMO_ARGS[@]}" ;;
    serve)
      step serve-keyword "$PY" bench/serve.py --mode keyword --seconds 20 --procs 4
      step serve-hybrid "$PY" bench/serve.py --mode hybrid --seconds 20 --procs 4 ;;
    hooks) step hooks "$PY" bench/hooks.py --runs 30 ;;
    postgres)
      step postgres-speed "$PY" bench/speed.py --backend postgres --sizes 10000,100000 --no-extras --queries 100
      step postgres-locomo "$PY" bench/locomo.py "${LOCOMO_ARGS[@]}" --backend postgres --modes keyword,vector,hybrid --db "$WORK/locomo-pg" ;;
    peers)
      if [ -n "${PEERS_DIR:-}" ] && [ -n "${PEERS_HOME:-}" ]; then
        step peers-floor-before "$PY" bench/peers_floor.py --peers-dir "$PEERS_DIR" --n 2000 --q 100
        step peers env CLAW_VENV="$PWD/.venv" PEERS_HOME="$PEERS_HOME" R="$OUT/peers" "$PEERS_DIR/run_paired.sh"
        step peers-floor-after "$PY" bench/peers_floor.py --peers-dir "$PEERS_DIR" --n 20000 --q 200
      else
        echo "peers: skipped (set PEERS_DIR and PEERS_HOME)"
      fi ;;
    longmemeval) step longmemeval "$PY" bench/longmemeval.py "${LME_ARGS[@]}" --db "$WORK/lme" ;;
    *) echo "unknown step: $s" >&2 ;;
  esac
done

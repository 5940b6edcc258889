#!/usr/bin/env bash
# Flush out timing-dependent tests: run the fault, interrupt and Dask test modules ROUNDS times while
# a CPU hog keeps every core busy, and count the failures. Not part of `make test` (it takes hours);
# docs/development.md "Tests" records its last outcome.
#
#   scripts/stress-faults.sh [ROUNDS] [LOGDIR]      (default 20 rounds, logs in /tmp/etfarm-stress)
#
# STRESS_HOGS=N sets the number of busy loops (default: one per core). A second loop run at the same time
# from another clone with STRESS_HOGS=0 doubles the rounds per hour and only adds load to the first.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}
logdir=${2:-/tmp/etfarm-stress}
mkdir -p "$logdir"
modules=(
  tests/integration/test_close_after_fault.py
  tests/integration/test_transport_faults.py
  tests/integration/test_faults.py
  tests/integration/test_run_faults.py
  tests/integration/test_interrupt_resume.py
  tests/integration/test_honest_exits.py
  tests/integration/test_device_lock.py
  tests/integration/test_farm.py
  tests/integration/test_farm_probes.py
)
hog_count=${STRESS_HOGS:-$(nproc)}
hogs=()
for _ in $(seq "$hog_count"); do
  ( while :; do :; done ) &
  hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
failed_rounds=0
for round in $(seq "$rounds"); do
  log="$logdir/round-$round.log"
  if .venv/bin/python -m pytest -q -p no:cacheprovider --durations=25 "${modules[@]}" >"$log" 2>&1; then
    echo "round $round: passed ($(tail -1 "$log"))"
  else
    failed_rounds=$((failed_rounds + 1))
    echo "round $round: FAILED: $(grep -E '^(FAILED|ERROR) ' "$log" | tr '\n' ' ')"
  fi
done
echo "$failed_rounds of $rounds round(s) failed with $hog_count busy loop(s) on $(nproc) cores; logs in $logdir"
[ "$failed_rounds" -eq 0 ]

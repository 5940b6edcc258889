#!/usr/bin/env bash
# Issue 37's live must-holds beside a BLAS neighbour on every core (one single-threaded numpy matmul loop per
# core, killed at the end). Run from the repository root after `make setup`:
#
#   bash benchmarks/live_beside_blas.sh jobs      # six identical tiny_cnn jobs, all 15 `compare` pairs, then
#                                                 # `run --ab` of tiny_cnn against a byte-identical copy
#   bash benchmarks/live_beside_blas.sh plan [N]  # the example plan (configs/nightly.yaml) on the unchanged models,
#                                                 # N nights (default 5)
#
# Prints each command's exit code and verdict line; REGRESSED anywhere between identical programs is a false
# alarm (an op "held back", `inconclusive (alone: regressed; ...)`, is not: its pair could not be judged), and a night must exit 0 (unchanged) or 3 (could not judge), never 1. Work files under /tmp/etfarm-live-*.
set -u
mode=${1:-jobs}
E=.venv/bin/etfarm
W=/tmp/etfarm-live-$mode; rm -rf "$W"; mkdir -p "$W"
export ETFARM_STORE=$W/results.db
for _ in $(seq "$(nproc)"); do
  OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python -c "import numpy as np
a = np.random.rand(384, 384)
while True: a @ a" &
done
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT
sleep 1  # the neighbours at full speed before the first job

if [ "$mode" = plan ]; then
  sed "s|^report: reports/ |report: $W/reports/ |" configs/nightly.yaml > "$W/plan.yaml"
  grep -q "$W/reports" "$W/plan.yaml" || { echo "configs/nightly.yaml: its report: line was not rewritten"; exit 2; }
  for n in $(seq 1 "${2:-5}"); do
    start=$(date +%s); $E nightly --plan "$W/plan.yaml" -q > "$W/n$n.txt" 2>&1; rc=$?
    echo "night $n exit $rc ($(( $(date +%s) - start )) s): $(grep '^verdict:' "$W/n$n.txt" | head -1)"
  done
  exit 0
fi

for j in 1 2 3 4 5 6; do
  $E run --devices local --model configs/models/tiny_cnn.py:build --out "$W/j$j" --no-report -q > "$W/j$j.log" 2>&1
  echo "job $j exit $?"
done
for a in 1 2 3 4 5 6; do for b in 1 2 3 4 5 6; do
  [ "$a" -lt "$b" ] || continue
  $E compare "$W/j$a" "$W/j$b" > "$W/c$a$b.txt" 2>&1; rc=$?
  echo "compare j$a j$b exit $rc, $(grep -c REGRESSED "$W/c$a$b.txt") line(s) saying REGRESSED," \
       "$(grep -c 'alone: regressed' "$W/c$a$b.txt") op(s) held back; $(grep '^verdict:' "$W/c$a$b.txt")"
done; done
cp configs/models/tiny_cnn.py "$W/tiny_cnn_copy.py"
$E run --ab configs/models/tiny_cnn.py:build "$W/tiny_cnn_copy.py:build" --devices local --out "$W/ab" > "$W/ab.txt" 2>&1
rc=$?
echo "run --ab exit $rc; $(grep '^verdict:' "$W/ab.txt"); $(grep -c REGRESSED "$W/ab.txt") line(s) saying REGRESSED"

"""The results store: what recording a run and reading history cost, against reading the run itself.

    python -m benchmarks.bench_store [--devices 3] [--models 5] [--runs 5] [--iterations 50]
                                     [--layers 40] [--rounds 3] [--json]

Data: a synthetic run directory (tests/unit/store/rundirs.py: a real manifest and real ETDump
bytes), `devices` x `models`, each with `runs` process runs of `iterations` executions of a
`layers`-deep portable-style profile (2 events per layer + Method::execute).

Measured, medians over rounds (each round records into a fresh SQLite file):
- anchor: `read_run(dir)`: the manifest through load_manifest plus every ETDump read, grouped
  and summarised: what any consumer of the run directory pays;
- record: `Store.record(dir)` (read_run + one transaction writing every row and BLOB);
- record again: the same run re-recorded (replaces it);
- job / history_points / event_samples of one (device, model) from the store;
- `etfarm history` as a fresh process (interpreter start and imports included).
Printed as seconds and as ratios to the anchor; the DB size per raw sample.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.results.record import RunRecord
from orchestrator.store import open_store  # noqa: E402 - after the sys.path line above
from orchestrator.store.ingest import read_run  # noqa: E402
from tests.unit.store.rundirs import make_run_dir  # noqa: E402


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=3)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--layers", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        root = Path(tmp)
        devices = tuple(f"dev{k}" for k in range(args.devices))
        models = tuple(f"model{k}" for k in range(args.models))
        run = make_run_dir(root, "bench-run", "2026-11-22T10:00:00+0000", devices=devices, models=models,
                           runs=args.runs, iterations=args.iterations, layers=args.layers)
        samples = sum(len(e.samples_ms) for e in read_run(RunRecord(run)).events if e.samples_ms is not None)
        times: dict[str, list[float]] = {k: [] for k in ("anchor", "record", "record again", "job", "history_points",
                                                         "event_samples", "etfarm history")}
        size = 0
        for k in range(args.rounds):
            db = root / f"round{k}.db"
            times["anchor"].append(timed(lambda: read_run(RunRecord(run))))
            with open_store(db) as store:
                times["record"].append(timed(lambda: store.record(RunRecord(run))))
                times["record again"].append(timed(lambda: store.record(RunRecord(run))))
                times["job"].append(timed(lambda: store.job("bench-run")))
                times["history_points"].append(timed(lambda: store.history_points(models[0])))
                times["event_samples"].append(timed(lambda: store.event_samples("bench-run", devices[0], models[0])))
            size = db.stat().st_size + sum(p.stat().st_size for p in root.glob(f"round{k}.db-*"))
            command = [sys.executable, "-m", "orchestrator.cli", "history", "--store", str(db)]
            times["etfarm history"].append(timed(partial(subprocess.run, command, check=True, capture_output=True)))
    medians = {k: statistics.median(v) for k, v in times.items()}
    anchor = medians["anchor"]
    if args.json:
        print(json.dumps({"medians_s": medians, "samples": samples, "db_bytes": size}, indent=2))
        return 0
    print(f"{args.devices} devices x {args.models} models x {args.runs} runs x {args.iterations} iterations, "
          f"{args.layers} layers: {samples} raw event samples; medians of {args.rounds} rounds")
    for name, value in medians.items():
        print(f"  {name:<16} {value * 1000:9.1f} ms  {value / anchor:6.2f}x read_run")
    print(f"  database         {size / 1e6:9.2f} MB  {size / samples:6.1f} bytes per raw sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Real nights on the testbed (issue 32, item 5): A/A nights, a creep, a 5 % step, alternating models.

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_nights --scenario aa|creep|step|alternate [--nights N]
        [--trials T] [--history H] [--threshold 5] [--runs 10] [--confirm-max-runs N] [--out DIR] [--json]

Each night is `app.nightly.run_nightly` (what `etfarm nightly --plan` runs) with the example plan's
defaults (configs/nightly.yaml: 10 process runs x 50 iterations, 5 warmup, threshold 5 %, center: the default (mean since issue 37),
noise_floor auto, confirm true, baseline last-good) on `local` pinned to core 1 (`taskset -c 1`), its own
results store, and the model of the issue: configs/models/deep_mlp.py (40 Linear+ReLU layers), copied, whose
DEPTH is edited between nights as a developer edits a model file:

- aa: H nights of 40 layers, then N more: any `regressed` is a false alarm;
- creep: H nights of 40, then one more layer a night (+2.5 %): the night it is first regressed, and the
  change points it names; the issue's rule: by the night the cumulative slowdown passes 5 % (night 2:
  42 layers) plus two;
- step: per trial, H nights of 40, then nights of 43 (`--step-depth`): the night it is first regressed. 43 layers
  are the +5 % step in time: interleaved (`run --ab`, 20 runs a side, quiet, 2026-11-28) 42 layers measured 1.026x,
  43 1.046x, 44 1.077x (each layer's share is smaller than 1/40: a fixed cost per execution);
- alternate: 40 and 42 layers on alternating nights: the noise floor after each night, and any regression.

Prints one line per night (verdict, neighbour ratio, series verdict, floor) and a summary; the simulated
rates over many more nights are benchmarks/bench_series.py's, and this run is what checks its model.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from orchestrator.app.nightly import run_nightly  # noqa: E402
from orchestrator.app.nightly_plan import load_plan  # noqa: E402
from orchestrator.base.progress import Progress  # noqa: E402
from orchestrator.store import open_store  # noqa: E402

MODEL = ROOT / "configs" / "models" / "deep_mlp.py"


def night(root: Path, depth: int, runs: int, threshold: float, center: str | None = None,
          confirm_max_runs: int | None = None) -> dict[str, Any]:
    """One night of the model at `depth` layers, in the store and report folder under `root`."""
    (root / "model").mkdir(parents=True, exist_ok=True)
    (root / "model" / "mlp.py").write_text(MODEL.read_text().replace("DEPTH = 40", f"DEPTH = {depth}"))
    inventory = root / "devices.json"
    inventory.write_text(json.dumps({"devices": {"pinned": {"transport": "local", "target": "host",
                                                            "workdir": str(root / "work"), "exec_prefix": "taskset -c 1"}}}))
    plan_file = root / "plan.json"
    plan_file.write_text(json.dumps({"devices": ["pinned"], "models": [{"spec": f"{root / 'model' / 'mlp.py'}:build",
                                                                       "name": "mlp"}],
                                     "runs": runs, "iterations": 50, "warmup": 5, "threshold": f"{threshold}%",
                                     "noise_floor": "auto", "baseline": "last-good", "confirm": True,
                                     "report": str(root / "reports"), "config": str(inventory),
                                     **({"center": center} if center else {}),
                                     **({"confirm_max_runs": confirm_max_runs} if confirm_max_runs else {})}))
    started = time.perf_counter()
    with open_store(root / "results.db") as store:
        outcome = run_nightly(load_plan(plan_file), store, Progress(quiet=True))
    (pair,) = outcome.comparison.pairs
    series = pair.series
    return {"depth": depth, "exit": outcome.exit_code, "verdict": pair.verdict.value, "regressed": pair.regressed,
            "ratio": round(pair.estimate.ratio, 4) if pair.estimate else None,
            "ci": [round(pair.estimate.ci_low, 4), round(pair.estimate.ci_high, 4)] if pair.estimate else None,
            "series": series.describe() if series is not None else None,
            "series_regressed": bool(series is not None and series.regressed),
            "steps": [s.run_id for s in series.steps] if series is not None else [],
            "below": pair.below.describe() if pair.below else None,
            "floor": pair.noise.floor if pair.noise else None,
            "confirmed": [c.confirmed for c in outcome.confirmations], "seconds": round(time.perf_counter() - started, 1)}


def scenario(name: str, nights: int, history: int, step: int = 42) -> list[int]:
    """The depth of each night."""
    if name == "aa":
        return [40] * (history + nights)
    if name == "creep":
        return [40] * history + [40 + k for k in range(1, nights + 1)]
    if name == "step":
        return [40] * history + [step] * nights
    return [40 if k % 2 == 0 else 42 for k in range(history + nights)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=("aa", "creep", "step", "alternate"), required=True)
    parser.add_argument("--nights", type=int, default=20)
    parser.add_argument("--history", type=int, default=3, help="nights of the base model first")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--threshold", type=float, default=5.0, help="percent")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path, help="keep the stores and runs here (default: a temporary directory)")
    parser.add_argument("--step-depth", type=int, default=43,
                        help="the step scenario's layers after the step (43: +5 %% in time, measured 1.046x; 42: 1.026x)")
    parser.add_argument("--center", help="the plan's `center:` (default: the plan's default)")
    parser.add_argument("--confirm-max-runs", type=int,
                        help="the plan's `confirm_max_runs:` (default: the plan's default, 80 runs a side)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="etfarm-bench-nights-") as tmp:
        base = args.out or Path(tmp)
        for trial in range(args.trials):
            depths = scenario(args.scenario, args.nights, args.history, args.step_depth)
            for k, depth in enumerate(depths):
                found = night(base / f"trial-{trial}", depth, args.runs, args.threshold, args.center,
                              args.confirm_max_runs)
                found.update(trial=trial, night=k - args.history + 1)
                results.append(found)
                print(json.dumps(found) if args.json else
                      f"trial {trial} night {found['night']:+3d} depth {depth}: {found['verdict']} {found['ratio']} "
                      f"{found['ci']} exit {found['exit']} floor {found['floor']} | series: {found['series']} "
                      f"| below: {found['below']} ({found['seconds']} s)", flush=True)
    judged = [r for r in results if r["night"] >= 1]
    first = {}
    for r in judged:
        if r["regressed"] and r["trial"] not in first:
            first[r["trial"]] = r["night"]
    print(f"summary: {args.scenario}, {args.trials} trial(s) x {args.nights} nights after {args.history}: "
          f"{sum(r['regressed'] for r in judged)} regressed nights; first regressed night per trial {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

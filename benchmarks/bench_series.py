"""Power and false alarms of the nightly verdicts over many simulated nights (issue 32, items 5 and 6).

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_series [--trials 100] [--history 10] [--recorded DIR ...]
        [--thresholds 5 3] [--center mean] [--nights-only] [--json]

Nights are synthetic jobs of the testbed's process model (tests/helpers/two_state.py: fitted to 58 real jobs of
the 40-layer MLP), judged by the nightly's own code on in-memory series (verdicts/series.py and compare.py):
each night against its last good night (with the automatic noise floor from replicate nights) and against
its series; a regressed night is run again (a fresh job of the same model, `confirm: true`) and is regressed
only if that job is too; a night that is not regressed joins the good history. Every trial starts with
`history` nights of the base model. benchmarks/bench_nights.py runs the same scenarios as real nights on the
testbed, which is what checks this model.

Scenarios (each `trials` times, example plan defaults: 10 runs, threshold 5 %, center: VerdictSettings' default, mean since issue 37, fast-state before):
- aa: 20 nights of the same model: the share of trials with any regressed night (and of nights);
- creep: +2.5 % a night: the night of the first regression (the issue's rule: by night 4, as 1.025^2 passes
  5 % on night 2), and whether it names a change point in the creep;
- step5, step2: +5 % / +2 % from night 1 on: the share regressed by night 1, 2, 3, 5, with threshold 5 % and 3 %,
  10 and 20 runs;
- alternate: base and +5 % on alternating nights: the noise floor of the replicate method against identical
  nights and against the old consecutive-jobs method, and any regressed night.
Statistics (item 6): on single comparisons (what `compare` and `run --ab` do) of synthetic jobs, each center's
A/A false-alarm rate, its power at +5 %, +10 % and 2x, and its interval's coverage; with `--recorded DIR`, the same
on every pair of the real jobs there (run directories `DIR/runs/NNN-<kind>`, kinds base, p5, p10, x2: 40, 42, 44
and 80 layers of configs/models/deep_mlp.py). `--record DIR` makes such jobs on this host first (`local` pinned to
core 1, 10 process runs x 50 iterations, 5 warmup: the example plan's shape; 16 then 48 jobs in a shuffled order,
as the figures in benchmarks/README.md were made), then scores them.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from orchestrator.verdicts.compare import Side, compare_sides  # noqa: E402
from orchestrator.verdicts.noise import estimate_floor  # noqa: E402
from orchestrator.verdicts.series import WINDOW, SeriesPoint, judge, levels, replicate_floor  # noqa: E402
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import DEFAULT_CENTER, VerdictSettings, decide, estimate  # noqa: E402
from tests.helpers.two_state import two_state_job  # noqa: E402

Scale = Callable[[int], float]  # night (1, 2, ...) -> the model's time against the base model's


def point(rng: np.random.Generator, k: int, scale: float, runs: int) -> SeriesPoint:
    side = Side(f"n{k}", "pinned", "mlp", tuple(SideRun(f"run-{j}", tuple(r.tolist()), None)
                                                for j, r in enumerate(two_state_job(rng, scale, runs))))
    return SeriesPoint(f"n{k}", f"{k:04d}", f"c{k}", f"{scale:.6f}", side)


def verdict(good: list[SeriesPoint], night: SeriesPoint, settings: VerdictSettings) -> tuple[bool, Any]:
    """As the nightly judges: against the last good night (replicate floor) and against the series."""
    window = good[-WINDOW:]
    floor = replicate_floor(window, settings.center)
    neighbour = compare_sides(window[-1].side, night.side, settings, per_op=False, noise=floor)
    series = judge(window, night, settings, floor)
    return neighbour.regressed or bool(series is not None and series.regressed), series


def run_nights(rng: np.random.Generator, scale: Scale, nights: int, history: int, settings: VerdictSettings,
               runs: int) -> list[dict[str, Any]]:
    good = [point(rng, -k, 1.0, runs) for k in range(history, 0, -1)]
    out = []
    for night in range(1, nights + 1):
        first = point(rng, night, scale(night), runs)
        regressed, series = verdict(good, first, settings)
        if regressed:  # confirm: the same model once more
            regressed, series = verdict(good, point(rng, night, scale(night), runs), settings)
        out.append({"night": night, "regressed": regressed,
                    "steps": [s.run_id for s in series.steps] if series is not None else []})
        if not regressed:
            good.append(first)
    return out


def first_regressed(nights: list[dict[str, Any]]) -> int | None:
    return next((n["night"] for n in nights if n["regressed"]), None)


def scenarios(trials: int, history: int, seed: int, thresholds: tuple[float, ...] = (0.05, 0.03),
              center: str = DEFAULT_CENTER) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    for threshold in thresholds:
        settings, tag = VerdictSettings(threshold=threshold, center=center), f"threshold{round(threshold * 100)}"
        aa = [run_nights(rng, lambda n: 1.0, 20, history, settings, 10) for _ in range(trials)]
        out[f"aa_{tag}"] = {"trials": trials, "nights": 20 * trials,
                            "trials_with_a_regression": sum(any(n["regressed"] for n in t) for t in aa) / trials,
                            "regressed_nights": sum(n["regressed"] for t in aa for n in t) / (20 * trials)}
        creep = [run_nights(rng, lambda n: 1.025**n, 10, history, settings, 10) for _ in range(trials)]
        firsts = [first_regressed(t) for t in creep]
        named = [bool(t[f - 1]["steps"]) and all(int(s[1:]) >= 1 for s in t[f - 1]["steps"])
                 for t, f in zip(creep, firsts, strict=True) if f is not None]
        out[f"creep_{tag}"] = {"trials": trials, "first_regressed_night": _counts(firsts),
                               "by_night_4": sum(f is not None and f <= 4 for f in firsts) / trials,
                               "names_a_step_in_the_creep": sum(named) / max(len(named), 1)}
        for size in (0.05, 0.02):
            for runs in (10, 20):
                step = [first_regressed(run_nights(rng, lambda n, s=size: 1.0 + s, 5, history, settings, runs))
                        for _ in range(trials)]
                out[f"step{round(size * 100)}_{tag}_runs{runs}"] = {
                    f"by_night_{k}": sum(f is not None and f <= k for f in step) / trials for k in (1, 2, 3, 5)}
        out[f"alternate_{tag}"] = alternate(rng, trials, settings)
    return out


def alternate(rng: np.random.Generator, trials: int, settings: VerdictSettings) -> dict[str, Any]:
    """Floors after 12 nights: identical, alternating base/+5 % (replicate method), alternating (old method)."""
    same, alt, old, alarms = [], [], [], 0
    for _ in range(trials):
        nights = run_nights(rng, lambda n: 1.05 if n % 2 else 1.0, 12, 0 + 2, settings, 10)
        alarms += any(n["regressed"] for n in nights)
        aa = [point(rng, k, 1.0, 10) for k in range(12)]
        mixed = [point(rng, k, 1.05 if k % 2 else 1.0, 10) for k in range(12)]
        same.append(replicate_floor(aa, settings.center).floor)
        alt.append(replicate_floor(mixed, settings.center).floor)
        old.append(estimate_floor([math.exp(v) for v in levels(mixed, settings.center)]).floor)
    return {"trials": trials, "floor_identical_median": _median(same), "floor_alternating_median": _median(alt),
            "floor_alternating_old_method_median": _median(old), "trials_with_a_regression": alarms / trials}


def statistics(trials: int, seed: int, recorded: list[Path]) -> dict[str, Any]:
    """Each center on single comparisons: A/A false alarms, power, coverage (synthetic), and on recorded jobs."""
    rng = np.random.default_rng(seed + 1)
    out: dict[str, Any] = {}
    jobs = {scale: [(two_state_job(rng, 1.0), two_state_job(rng, scale)) for _ in range(trials)]
            for scale in (1.0, 1.05, 1.1, 2.0)}
    real = _recorded(recorded)
    for center in ("mean", "fast", "fast-state"):
        row: dict[str, Any] = {}
        for scale, pairs in jobs.items():
            found = [estimate(a, b, center=center, resamples=1000) for a, b in pairs]
            regressed = [decide(e, e.p_value, 0.05).value == "regressed" for e in found]
            row[f"synthetic_regressed_x{scale}"] = sum(regressed) / trials
            row[f"synthetic_coverage_x{scale}"] = sum(e.ci_low <= scale <= e.ci_high for e in found) / trials
        if real:
            kinds = {"base": list(itertools.permutations(real.get("base", []), 2)),
                     **{k: list(itertools.product(real.get("base", []), real.get(k, []))) for k in ("p5", "p10", "x2")}}
            for kind, pairs in kinds.items():
                found = [estimate(a, b, center=center, resamples=1000) for a, b in pairs]
                row[f"recorded_{kind}_pairs"] = len(found)
                row[f"recorded_{kind}_regressed"] = sum(decide(e, e.p_value, 0.05).value == "regressed"
                                                        for e in found) / max(len(found), 1)
                if kind == "base":  # identical jobs: the true ratio is 1
                    row["recorded_base_coverage"] = sum(e.ci_low <= 1.0 <= e.ci_high for e in found) / max(len(found), 1)
        out[center] = row
    return out


RECORD_ORDERS = (["base", "base", "p5", "base", "x2", "base", "p10", "base", "base", "p5", "base", "x2", "base", "p10",
                  "base", "base"], ["base"] * 30 + ["p5"] * 8 + ["p10"] * 6 + ["x2"] * 4)
DEPTHS = {"base": 40, "p5": 42, "p10": 44, "x2": 80}


def record(root: Path) -> list[Path]:
    """Real jobs of the deep MLP variants under root/jobs1 and root/jobs2 (jobs already there are kept)."""
    import random

    from device_agents import DeviceSpec
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.base.progress import Progress
    from orchestrator.results.model import JobOptions
    from orchestrator.run.engine.job import run_job

    text = (ROOT / "configs" / "models" / "deep_mlp.py").read_text()
    orders = [RECORD_ORDERS[0], list(RECORD_ORDERS[1])]
    random.Random(1).shuffle(orders[1])
    out = []
    for k, order in enumerate(orders, start=1):
        base = root / f"jobs{k}"
        specs = {}
        for kind, depth in DEPTHS.items():
            (base / "models" / kind).mkdir(parents=True, exist_ok=True)
            (base / "models" / kind / "mlp.py").write_text(text.replace("DEPTH = 40", f"DEPTH = {depth}"))
            specs[kind] = parse_model_spec(f"{base / 'models' / kind / 'mlp.py'}:build", "mlp")
        device = DeviceSpec("pinned", "local", "host", str(base / "work"), ("taskset", "-c", "1"))
        options = JobOptions(runs=10, iterations=50, warmup=5, untraced_runs=0)
        for i, kind in enumerate(order):
            target = base / "runs" / f"{i:03d}-{kind}"
            if not (target / "manifest.json").is_file():
                run_job([device], [specs[kind]], backend="xnnpack", options=options, out=target, progress=Progress(quiet=True))
        out.append(base)
    return out


def _recorded(roots: list[Path]) -> dict[str, list[list[list[float]]]]:
    from orchestrator.results.model import load_manifest

    out: dict[str, list[list[list[float]]]] = {}
    for root in roots:
        for run_dir in sorted(root.glob("runs/*")):
            model = load_manifest(run_dir).devices[0].model("mlp")
            if model is not None and model.traced_runs:
                out.setdefault(run_dir.name.split("-", 1)[1], []).append([list(r.execute_ms) for r in model.traced_runs])
    return out


def _counts(values: list[int | None]) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


def _median(values: list[float | None]) -> float | None:
    kept = sorted(v for v in values if v is not None)
    return round(kept[len(kept) // 2], 4) if kept else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--history", type=int, default=10)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--recorded", type=Path, nargs="*", default=[], help="directories of recorded real jobs")
    parser.add_argument("--record", type=Path, help="record the real jobs under this directory first, then score them")
    parser.add_argument("--thresholds", type=float, nargs="+", default=[5.0, 3.0], help="percent, nights' scenarios")
    parser.add_argument("--center", default=DEFAULT_CENTER, help="the nights' statistic (the plan's `center:`)")
    parser.add_argument("--nights-only", action="store_true", help="the nights' scenarios, not the single comparisons")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.record is not None:
        args.recorded = [*args.recorded, *record(args.record)]
    started = time.perf_counter()
    result = {"scenarios": scenarios(args.trials, args.history, args.seed, tuple(t / 100 for t in args.thresholds),
                                   args.center),
              "statistics": None if args.nights_only else statistics(args.trials * 2, args.seed, args.recorded),
              "elapsed_s": None}
    result["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(result, indent=2))
    found = result["scenarios"]  # issue 32's targets, at the example plan's threshold (configs/nightly.yaml: 3 %)
    if "aa_threshold3" not in found:
        return 0
    ok = (found["aa_threshold3"]["trials_with_a_regression"] <= 0.05 and found["creep_threshold3"]["by_night_4"] >= 0.9
          and found["step5_threshold3_runs10"]["by_night_5"] >= 0.9
          and found["alternate_threshold3"]["floor_alternating_median"] <= 1.1 * found["alternate_threshold3"][
              "floor_identical_median"])
    print("targets met" if ok else "TARGET MISSED (threshold 3 %): 20 A/A nights with a regression in <= 5 % of trials, "
          "the creep by night 4 and a 5 % step by night 5 in >= 90 %, alternating models' floor within 10 % of "
          "identical nights'")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""False-alarm rate and detection power of the regression verdicts, measured on the testbed.

    python benchmarks/bench_verdicts.py [--transport ssh|local] [--pairs 20] [--runs 10] [--iterations 20] [--json]

The device: the integration testbed's sshd on loopback with `exec_prefix: taskset -c 1` (the runner
pinned to one core), or `local` pinned the same way. The model: configs/models/deep_mlp.py
(40 Linear+ReLU layers, XNNPACK), copied to a temporary file; the slow variants are the same file
with DEPTH edited: 80 (2x) and 44 (10 % more layers). Every job is a separate `run_job` of ONE
model with `--runs` process runs, as nightly runs are, so job-to-job variation (the two process
states of docs/architecture.md, "Measurement") is in every comparison. Jobs of the variants alternate with baseline jobs.

Reported:
- A/A: 2 x `pairs` baseline jobs compared in disjoint pairs (`pairs` independent comparisons):
  the fraction with ANY `regressed` verdict (end to end or per op). Target <= 5 %. Also over
  all pairs of baseline jobs (not independent, more of them).
- 2x: each 2x job against a baseline job: the fraction flagged `regressed`. Target 100 %.
- 10 %: each 10 %-more-layers job against a baseline job (runs per side = --runs), and pooled
  k jobs per side (k x runs per side): detection rate and the measured ratio.
- `<center>+auto`: the A/A, 2x and 10 % comparisons again with the automatic noise floor
  (orchestrator/verdicts/noise.py) from the base jobs that ran before each B job (a rolling
  history, as a nightly has): rates over all comparisons, and plain vs auto over those that had
  enough history for a floor.
With `--mode ab`, both sides come from ONE job per comparison, interleaved A B B A (`run --ab`):
`pairs` A/A jobs (the same file twice) and `pairs` jobs of base against +10 %.
Exit 1 when the A/A or 2x targets are missed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from device_agents import DeviceSpec
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.progress import Progress
from orchestrator.results.model import JobOptions, load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.job import run_job
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.compare import Side, compare_sides, side_from_job
from orchestrator.verdicts.noise import WINDOW, NoiseFloor, estimate_floor
from orchestrator.verdicts.sides import pool
from orchestrator.verdicts.statistics import VerdictSettings, run_median

MODEL = ROOT / "configs" / "models" / "deep_mlp.py"
CENTERS = (VerdictSettings(center="mean"), VerdictSettings(center="fast"))  # both statistics, on the same runs


def side(run_dir: Path, device: str) -> Side:
    job = load_manifest(run_dir)
    return side_from_job(RunRecord(run_dir, job), device, "mlp")


def run_jobs(device: DeviceSpec, models: dict[str, Path], order: list[str], out: Path, runs: int,
             iterations: int) -> dict[str, list[Path]]:
    options = JobOptions(runs=runs, iterations=iterations, warmup=3, untraced_runs=0)
    done: dict[str, list[Path]] = {k: [] for k in models}
    quiet = Progress(quiet=True)
    specs = {k: parse_model_spec(f"{p}:build", "mlp") for k, p in models.items()}
    for i, kind in enumerate(order):
        existing = out / f"{i:03d}-{kind}"
        if (existing / "manifest.json").is_file():  # --keep DIR of an earlier run: score it again
            done[kind].append(existing)
            continue
        result = run_job([device], [specs[kind]], backend="xnnpack", options=options, out=out / f"{i:03d}-{kind}",
                         progress=quiet)
        if result.exit_code != 0:
            raise SystemExit(f"job {i} ({kind}) failed: {result.job.devices[0].error}")
        done[kind].append(result.rundir.root)
        print(f"  job {i + 1}/{len(order)} {kind}", file=sys.stderr, flush=True)
    return done


def measure(transport: str, pairs: int, runs: int, iterations: int, pool_k: int,
            keep: Path | None = None) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="etfarm-bench-verdicts-") as tmp:
        tmpdir = Path(tmp) if keep is None else keep
        tmpdir.mkdir(parents=True, exist_ok=True)
        text = MODEL.read_text()
        models = {"base": tmpdir / "base" / "mlp.py", "x2": tmpdir / "x2" / "mlp.py", "p10": tmpdir / "p10" / "mlp.py"}
        for kind, depth in (("base", 40), ("x2", 80), ("p10", 44)):
            models[kind].parent.mkdir(exist_ok=True)
            models[kind].write_text(text.replace("DEPTH = 40", f"DEPTH = {depth}"))
        host = None
        if transport == "ssh":
            from orchestrator.emulate.sshd import start_sshd

            host = start_sshd(tmpdir / "sshd")
            device = host.spec("pinned", tmpdir / "workdir", exec_prefix=("taskset", "-c", "1"))
        else:
            device = DeviceSpec("pinned", "host", str(tmpdir / "workdir"), ("taskset", "-c", "1"))
        # Baseline jobs interleaved with the variants: base, x2, base, p10, base, x2, ...
        order = [kind for _ in range(pairs) for kind in ("base", "x2", "base", "p10")]
        started = time.perf_counter()
        try:
            jobs = run_jobs(device, models, order, tmpdir / "runs", runs, iterations)
        finally:
            if host is not None:
                host.stop()
        elapsed = time.perf_counter() - started
        base = [side(p, "pinned") for p in jobs["base"]]
        x2 = [side(p, "pinned") for p in jobs["x2"]]
        p10 = [side(p, "pinned") for p in jobs["p10"]]
        out: dict[str, object] = {"mode": "jobs", "transport": transport, "runs": runs, "iterations": iterations,
                                  "jobs": len(order), "elapsed_s": round(elapsed, 1)}
        for settings in CENTERS:
            aa = [compare_sides(base[2 * i], base[2 * i + 1], settings) for i in range(pairs)]
            aa_all = [compare_sides(a, b, settings) for a, b in itertools.combinations(base, 2)]
            twice = [compare_sides(base[i], x2[i], settings) for i in range(len(x2))]
            ten = [compare_sides(base[i], p10[i], settings) for i in range(len(p10))]
            pooled = [compare_sides(pool(base[i:i + pool_k]), pool(p10[i:i + pool_k]), settings)
                      for i in range(0, len(p10) - pool_k + 1, pool_k)]
            out[settings.center] = {
                "aa_comparisons": len(aa), "aa_false_alarm_rate": _rate(aa), "aa_verdicts": _counts(aa),
                "aa_ratios": _ratios(aa), "aa_all_pairs": len(aa_all), "aa_all_pairs_false_alarm_rate": _rate(aa_all),
                "aa_all_pairs_verdicts": _counts(aa_all),
                "x2_comparisons": len(twice), "x2_detection_rate": _rate(twice), "x2_ratios": _ratios(twice),
                "p10_comparisons": len(ten), "p10_detection_rate": _rate(ten), "p10_verdicts": _counts(ten),
                "p10_ratios": _ratios(ten),
                "p10_pooled_runs_per_side": runs * pool_k, "p10_pooled_comparisons": len(pooled),
                "p10_pooled_detection_rate": _rate(pooled), "p10_pooled_verdicts": _counts(pooled),
            }
            out[f"{settings.center}+auto"] = _score_auto(base, x2, p10, pairs, settings)
    return out


def _score_auto(base: list[Side], x2: list[Side], p10: list[Side], pairs: int,
                settings: VerdictSettings) -> dict[str, object]:
    """The same comparisons with the automatic noise floor, as a nightly would have it.

    Jobs ran in the order base 0, x2 0, base 1, p10 0, base 2, x2 1, ...; each comparison's floor is
    `noise.estimate_floor` over the base jobs that ran before its B job (the newest noise.WINDOW of
    them: a rolling history). Unlike a nightly, history keeps base jobs a nightly would have
    flagged (the estimator is a MAD, so a few do not move it). Comparisons with fewer than
    noise.MIN_JOBS earlier base jobs get no floor (plain thresholds), as a young nightly would; the
    `*_with_floor` figures compare plain and auto on only the comparisons that had one."""
    stats = [run_median(s.e2e, settings.center) for s in base]

    def floor(before: int) -> NoiseFloor:  # from base jobs 0 .. before-1
        return estimate_floor(stats[max(0, before - WINDOW):before])

    def score(name: str, triples: list[tuple[Side, Side, NoiseFloor]]) -> dict[str, object]:
        plain = [compare_sides(a, b, settings) for a, b, _ in triples]
        auto = [compare_sides(a, b, settings, noise=f) for a, b, f in triples]
        kept = [i for i, (_, _, f) in enumerate(triples) if f.floor is not None]
        floors = sorted(triples[i][2].value for i in kept)
        return {f"{name}_comparisons": len(auto), f"{name}_rate": _rate(auto), f"{name}_verdicts": _counts(auto),
                f"{name}_with_floor": len(kept), f"{name}_with_floor_rate_plain": _rate([plain[i] for i in kept]),
                f"{name}_with_floor_rate_auto": _rate([auto[i] for i in kept]),
                f"{name}_floor_min_median_max": [round(floors[0], 3), round(floors[len(floors) // 2], 3),
                                                 round(floors[-1], 3)] if floors else None}

    aa = [(base[2 * i], base[2 * i + 1], floor(2 * i + 1)) for i in range(pairs)]
    aa_all = [(base[i], base[j], floor(j)) for i, j in itertools.combinations(range(len(base)), 2)]
    twice = [(base[i], x2[i], floor(2 * i + 1)) for i in range(len(x2))]  # x2 i ran after base 0 .. 2i
    ten = [(base[i], p10[i], floor(2 * i + 2)) for i in range(len(p10))]  # p10 i ran after base 0 .. 2i+1
    return {**score("aa", aa), **score("aa_all_pairs", aa_all), **score("x2", twice), **score("p10", ten)}


def measure_ab(transport: str, pairs: int, runs: int, iterations: int, pool_k: int,
               keep: Path | None = None) -> dict[str, object]:
    """A/B inside one job (run --ab): `pairs` ABBA jobs of base vs base (A/A) and of base vs +10 %."""
    with tempfile.TemporaryDirectory(prefix="etfarm-bench-verdicts-ab-") as tmp:
        tmpdir = Path(tmp) if keep is None else keep
        tmpdir.mkdir(parents=True, exist_ok=True)
        text = MODEL.read_text()
        files = {}
        for kind, depth in (("a", 40), ("same", 40), ("p10", 44)):
            (tmpdir / kind).mkdir(exist_ok=True)
            files[kind] = tmpdir / kind / "mlp.py"
            files[kind].write_text(text.replace("DEPTH = 40", f"DEPTH = {depth}"))
        specs = {k: parse_model_spec(f"{p}:build", f"mlp-{k}") for k, p in files.items()}
        options = JobOptions(runs=runs, iterations=iterations, warmup=3, untraced_runs=0, order=RunOrder.ABBA)
        host = None
        if transport == "ssh":
            from orchestrator.emulate.sshd import start_sshd

            host = start_sshd(tmpdir / "sshd")
            device = host.spec("pinned", tmpdir / "workdir", exec_prefix=("taskset", "-c", "1"))
        else:
            device = DeviceSpec("pinned", "host", str(tmpdir / "workdir"), ("taskset", "-c", "1"))
        done: dict[str, list[tuple[Side, Side]]] = {"same": [], "p10": []}
        started = time.perf_counter()
        try:
            for i in range(pairs):
                for kind in ("same", "p10"):
                    kept = tmpdir / "runs" / f"{i:03d}-{kind}"
                    if (kept / "manifest.json").is_file():  # --keep DIR of an earlier run: score it again
                        job = load_manifest(kept)
                        done[kind].append((side_from_job(RunRecord(kept, job), "pinned", "mlp-a"),
                                           side_from_job(RunRecord(kept, job), "pinned", f"mlp-{kind}")))
                        continue
                    result = run_job([device], [specs["a"], specs[kind]], backend="xnnpack", options=options,
                                     out=tmpdir / "runs" / f"{i:03d}-{kind}", progress=Progress(quiet=True))
                    if result.exit_code != 0:
                        raise SystemExit(f"job {i} ({kind}) failed: {result.job.devices[0].error}")
                    root, job = result.rundir.root, result.job
                    done[kind].append((side_from_job(RunRecord(root, job), "pinned", "mlp-a"),
                                       side_from_job(RunRecord(root, job), "pinned", f"mlp-{kind}")))
                    print(f"  ab job {i + 1}/{pairs} {kind}", file=sys.stderr, flush=True)
        finally:
            if host is not None:
                host.stop()
        elapsed = time.perf_counter() - started
    out: dict[str, object] = {"mode": "ab", "transport": transport, "runs_per_side": runs, "iterations": iterations,
                              "jobs": 2 * pairs, "elapsed_s": round(elapsed, 1)}
    for settings in CENTERS:
        same = [compare_sides(a, b, settings) for a, b in done["same"]]
        ten = [compare_sides(a, b, settings) for a, b in done["p10"]]
        pooled = [compare_sides(pool(a for a, _ in done["p10"][i:i + pool_k]),
                                pool(b for _, b in done["p10"][i:i + pool_k]), settings)
                  for i in range(0, len(done["p10"]) - pool_k + 1, pool_k)]
        out[settings.center] = {
            "aa_comparisons": len(same), "aa_false_alarm_rate": _rate(same), "aa_verdicts": _counts(same),
            "aa_ratios": _ratios(same),
            "p10_comparisons": len(ten), "p10_detection_rate": _rate(ten), "p10_verdicts": _counts(ten),
            "p10_ratios": _ratios(ten),
            "p10_pooled_runs_per_side": runs * pool_k, "p10_pooled_comparisons": len(pooled),
            "p10_pooled_detection_rate": _rate(pooled), "p10_pooled_verdicts": _counts(pooled),
        }
    return out


def _rate(verdicts: list) -> float:
    return sum(v.regressed for v in verdicts) / len(verdicts) if verdicts else float("nan")


def _ratios(verdicts: list) -> list[float]:
    return [round(v.estimate.ratio, 3) for v in verdicts if v.estimate]


def _counts(verdicts: list) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in verdicts:
        out[v.verdict.value] = out.get(v.verdict.value, 0) + 1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("jobs", "ab"), default="jobs",
                        help="jobs: one model per job, sides from separate jobs (nightly); ab: both in one ABBA job")
    parser.add_argument("--transport", choices=("ssh", "local"), default="ssh")
    parser.add_argument("--pairs", type=int, default=20, help="independent A/A comparisons (2x as many baseline jobs)")
    parser.add_argument("--runs", type=int, default=10, help="process runs per job")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--pool", type=int, default=4, help="jobs pooled per side for the 10 %% power figure")
    parser.add_argument("--keep", type=Path, help="keep the run directories here (default: a temporary directory); "
                        "jobs already there are reused, so a second call with the same DIR only re-scores")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.mode == "ab":
        result = measure_ab(args.transport, args.pairs, args.runs, args.iterations, args.pool, args.keep)
    else:
        result = measure(args.transport, args.pairs, args.runs, args.iterations, args.pool, args.keep)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            if isinstance(value, dict):
                for inner, figure in value.items():
                    print(f"{key}.{inner}: {figure}")
            else:
                print(f"{key}: {value}")
    ok = all(result[s.center]["aa_false_alarm_rate"] <= 0.05  # type: ignore[index]
             and result[s.center].get("x2_detection_rate", 1.0) == 1.0 for s in CENTERS)  # type: ignore[index]
    print("targets met" if ok else "TARGET MISSED: A/A false alarms <= 5 % and 2x always flagged")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

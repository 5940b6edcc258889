"""`etfarm compare` at nightly scale (issue 21, item 7): the vectorised bootstrap against the old one.

Three measurements, each printing new / old figures and their ratio:

- pair: the case of the issue, one device x one 80-op model. Two separate jobs of
  configs/models/deep_mlp.py lowered to portable ops (40 Linear + ReLU: 240 events), run on
  `local`, 6 process runs x 1000 iterations a side, made once and kept under `--pair-dir`. Timed:
  `etfarm compare A B` as a user runs it (a new process: interpreter, imports, two manifests, 12
  ETDumps of 16 MB, 241 estimates), wall and CPU (user + sys: steadier on a shared machine),
  median of `--rounds`; and the comparison in process. Old: the same comparison with the old
  per-op reading (pandas) and estimates (tests/helpers/verdicts_reference.py), once, in process.
  Target: under 2 s.
- nightly: 5 devices x 20 models x (100 ops + end to end) x 10 runs x 100 iterations a side,
  synthetic samples in memory (each process run in a fast or a slow state that slows all its ops
  alike, 2 % jitter; B unchanged, +10 % or 2x), all 100 pairs through `compare_sides`. Old:
  `--old-pairs` pairs through the old estimates, scaled to 100. Target: under 10 s. Reading the
  ETDumps of such a nightly is apart (per-file cost of a synthetic 10k-event ETDump x 2000 files).
- coverage: identical synthetic jobs (A/A) and B 1.1x A, 6 runs x 50 iterations: how often each
  implementation's 95 % interval misses the true ratio, `--coverage-jobs` jobs, both centers.

Verdicts are compared case by case with the old implementation wherever it ran.

    .venv/bin/python -m benchmarks.bench_compare [--rounds 3] [--old-pairs 1] [--coverage-jobs 200] [--skip-old] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.profiles.op_identity import OpIdentity
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import Side, compare_jobs, compare_sides, side_from_job
from orchestrator.verdicts.op_samples import OpSamples
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import VerdictSettings, decide, estimate
from tests.helpers import verdicts_reference as reference

ROOT = Path(__file__).resolve().parents[1]
PAIR_TARGET_S, NIGHTLY_TARGET_S = 2.0, 10.0
DEVICES, MODELS, OPS, RUNS, ITERATIONS = 5, 20, 100, 10, 100


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def timed(fn: Callable[[], Any]) -> tuple[Any, float, float]:
    cpu, wall = cpu_seconds(), time.perf_counter()
    out = fn()
    return out, time.perf_counter() - wall, cpu_seconds() - cpu


# ---- the 80-op pair ------------------------------------------------------------------------


def pair_dirs(root: Path) -> tuple[Path, Path]:
    """Two jobs of the 80-op portable MLP, made once (about a minute) and kept."""
    dirs = (root / "a", root / "b")
    for out in dirs:
        if not (out / "manifest.json").is_file():
            run = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", "--devices", "local", "--model",
                                  f"{ROOT / 'configs' / 'models' / 'deep_mlp.py'}:build", "--backend", "portable",
                                  "--runs", "6", "--iterations", "1000", "--untraced-runs", "0", "--out", str(out),
                                  "--no-store", "--no-report", "--quiet"], capture_output=True, text=True, check=False)
            if run.returncode != 0:
                raise SystemExit(f"etfarm run failed: {run.stderr[-2000:]}")
    return dirs


def command_seconds(a: Path, b: Path) -> tuple[float, float]:
    before = cpu_seconds(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "compare", str(a), str(b)], capture_output=True,
                            text=True, check=False)
    wall = time.perf_counter() - started
    if result.returncode not in (0, 1):
        raise SystemExit(f"etfarm compare failed: {result.stderr[-2000:]}")
    return wall, cpu_seconds(resource.RUSAGE_CHILDREN) - before


def old_pair(a: Path, b: Path) -> tuple[dict[Any, str], float]:
    """The old comparison of the pair's ops, in process: pandas reading + one old estimate per op."""
    from orchestrator.results.model import load_manifest

    started = time.perf_counter()
    sides = [side_from_job(RunRecord(d, load_manifest(d)), "local", "deep_mlp") for d in (a, b)]
    ops = [reference.per_op_runs([r.etdump for r in s.runs]) for s in sides]
    e2e = reference.estimate(sides[0].e2e, sides[1].e2e)
    verdicts = {key: v for key, v, _ in reference.op_verdicts(ops[0], ops[1])}
    verdicts["end to end"] = decide(e2e, e2e.p_value, 0.05).value  # type: ignore[union-attr,arg-type]
    return verdicts, time.perf_counter() - started


def bench_pair(root: Path, rounds: int, skip_old: bool) -> dict[str, Any]:
    a, b = pair_dirs(root)
    command_seconds(a, b)  # warm the page cache
    runs = [command_seconds(a, b) for _ in range(rounds)]
    comparison, in_process, in_process_cpu = timed(lambda: compare_jobs(RunRecord(a), RunRecord(b)))
    (pair,) = comparison.pairs
    new = {(o.event_block, o.event_name, _occurrence(pair.ops, o)): o.verdict.value for o in pair.ops}
    new["end to end"] = pair.verdict.value
    out = {"command_wall_s": statistics.median(r[0] for r in runs), "command_cpu_s": statistics.median(r[1] for r in runs),
           "in_process_s": in_process, "in_process_cpu_s": in_process_cpu, "ops": len(pair.ops),
           "samples_per_side": 6 * 1000, "verdicts": _count(new.values())}
    if not skip_old:
        old, old_s = old_pair(a, b)
        out.update(old_in_process_s=old_s, speedup_in_process=old_s / in_process,
                   verdicts_differ=sorted(str(k) for k in old if old[k] != new.get(k)))
    return out


def _occurrence(ops: Any, op: Any) -> int:
    same = [o for o in ops if o.event_block == op.event_block and o.event_name == op.event_name]
    return same.index(op)


def _count(verdicts: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    return counts


# ---- nightly scale -------------------------------------------------------------------------


def nightly_pair(rng: np.random.Generator, scale: float) -> tuple[Side, Side]:
    """One (device, model): A and B, each 10 runs x 100 iterations of 100 ops and end to end."""
    base = rng.lognormal(-3, 1, OPS)

    def side(name: str, factor: float) -> Side:
        states = np.where(rng.random(RUNS) < 0.5, 1.0, 1.2) * factor
        ops = {("forward", OpIdentity("", f"op{j % 7}", j // 7)): (j, [base[j] * s * (1 + 0.02 * rng.standard_normal(ITERATIONS))
                                                         for s in states]) for j in range(OPS)}
        e2e = [1.05 * base.sum() * s * (1 + 0.01 * rng.standard_normal(ITERATIONS)) for s in states]
        runs = tuple(SideRun(f"run-{k + 1}", tuple(e2e[k]), None) for k in range(RUNS))
        return Side(name, "dev", "model", runs, op_samples=OpSamples(ops))

    return side("A", 1.0), side("B", scale)


def bench_nightly(old_pairs: int, skip_old: bool) -> dict[str, Any]:
    rng = np.random.default_rng(21)
    scales = [2.0 if k % 10 == 0 else 1.1 if k % 10 == 5 else 1.0 for k in range(DEVICES * MODELS)]
    settings = VerdictSettings()
    wall = cpu = 0.0
    verdicts: list[str] = []
    kept: list[tuple[Side, Side, Any]] = []
    for k, scale in enumerate(scales):
        a, b = nightly_pair(rng, scale)
        pair, pair_wall, pair_cpu = timed(lambda a=a, b=b: compare_sides(a, b, settings))
        wall, cpu = wall + pair_wall, cpu + pair_cpu
        verdicts += [pair.verdict.value] + [o.verdict.value for o in pair.ops]
        if k < old_pairs:
            kept.append((a, b, pair))
    out: dict[str, Any] = {"pairs": len(scales), "estimates": len(verdicts), "wall_s": wall, "cpu_s": cpu,
                           "verdicts": _count(verdicts), "etdump_reading": etdump_reading()}
    if not skip_old and kept:
        started, differ, compared = time.perf_counter(), 0, 0
        for a, b, pair in kept:
            old = reference.op_verdicts(a.op_samples.ops, b.op_samples.ops)  # type: ignore[union-attr]
            e2e = reference.estimate(a.e2e, b.e2e)
            differ += sum(v != o.verdict.value for (_, v, _), o in zip(old, pair.ops, strict=True))
            differ += decide(e2e, e2e.p_value, 0.05).value != pair.verdict.value  # type: ignore[union-attr,arg-type]
            compared += len(old) + 1
        old_s = (time.perf_counter() - started) / len(kept) * len(scales)
        out.update(old_s_extrapolated=old_s, old_pairs_run=len(kept), speedup=old_s / wall, verdicts_compared=compared,
                   verdicts_differ=differ)
    return out


def etdump_reading() -> dict[str, float]:
    """Per-file cost of reading one nightly-shaped ETDump (100 iterations x 100 ops), x 2000 files."""
    import tempfile

    from orchestrator.verdicts.op_samples import read_op_samples
    from tests.helpers.etdumps import Profile, Run, build_etdump

    events = [Profile(f"op{j % 7}", chain=0, instr=j, start=1000 * j, end=1000 * j + 500) for j in range(OPS)]
    data = build_etdump([Run("Execute", events) for _ in range(ITERATIONS)])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "etdump.etdp"
        path.write_bytes(data)
        read_op_samples([path])
        files = 40
        _, wall, _ = timed(lambda: [read_op_samples([path]) for _ in range(files)])
    per_file = wall / files
    return {"per_file_ms": per_file * 1000, "nightly_files": 2 * DEVICES * MODELS * RUNS,
            "nightly_s": per_file * 2 * DEVICES * MODELS * RUNS}


# ---- coverage ------------------------------------------------------------------------------


def bench_coverage(jobs: int) -> dict[str, Any]:
    """How often the 95 % interval misses the true ratio (1.0 for A/A, 1.1 for B = 1.1 A)."""
    rng = np.random.default_rng(7)

    def side(factor: float) -> list[np.ndarray]:  # the two-state mixture: the true ratio of the means is `factor`
        return [factor * (0.069 if rng.random() < 0.5 else 0.088) * (1 + 0.02 * rng.standard_normal(50))
                for _ in range(6)]

    out: dict[str, Any] = {"jobs": jobs}
    for center in ("mean", "fast"):
        for truth in (1.0, 1.1):
            cases = [(side(1.0), side(truth)) for _ in range(jobs)]
            for name, fn in (("new", estimate), ("old", reference.estimate)):
                misses = sum(not (e.ci_low <= truth <= e.ci_high) for e in (fn(a, b, center=center) for a, b in cases))
                out[f"{center} x{truth} {name} miss rate"] = misses / jobs
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pair-dir", type=Path,
                        default=Path(os.environ.get("ETFARM_CACHE_DIR", Path.home() / ".cache" / "etfarm")) / "bench-compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old-pairs", type=int, default=1)
    parser.add_argument("--coverage-jobs", type=int, default=200)
    parser.add_argument("--skip-old", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {"pair": bench_pair(args.pair_dir, args.rounds, args.skip_old),
               "nightly": bench_nightly(args.old_pairs, args.skip_old)}
    if args.coverage_jobs and not args.skip_old:
        results["coverage"] = bench_coverage(args.coverage_jobs)
    results["load_average"] = os.getloadavg()
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)
    missed = results["pair"]["command_wall_s"] > PAIR_TARGET_S or results["nightly"]["wall_s"] > NIGHTLY_TARGET_S
    raise SystemExit(1 if missed else 0)


def _print(results: dict[str, Any]) -> None:
    pair, nightly = results["pair"], results["nightly"]
    print(f"pair (80-op portable MLP, 6 x 1000 a side, {pair['ops']} ops + end to end)")
    print(f"  etfarm compare, new process   {pair['command_wall_s']:.2f} s wall  {pair['command_cpu_s']:.2f} s CPU"
          f"  (target {PAIR_TARGET_S:.0f} s)")
    print(f"  in process                    {pair['in_process_s']:.2f} s")
    if "old_in_process_s" in pair:
        print(f"  old, in process               {pair['old_in_process_s']:.1f} s   speedup {pair['speedup_in_process']:.0f}x;"
              f"  verdicts that differ: {pair['verdicts_differ'] or 'none'}")
    print(f"  verdicts {pair['verdicts']}")
    print(f"nightly ({nightly['pairs']} pairs, {nightly['estimates']} estimates, 10 x 100 a side)")
    print(f"  new                           {nightly['wall_s']:.2f} s wall  {nightly['cpu_s']:.2f} s CPU"
          f"  (target {NIGHTLY_TARGET_S:.0f} s)")
    if "old_s_extrapolated" in nightly:
        print(f"  old ({nightly['old_pairs_run']} pair(s), x{nightly['pairs']})     {nightly['old_s_extrapolated']:.0f} s"
              f"   speedup {nightly['speedup']:.0f}x;  verdicts that differ: {nightly['verdicts_differ']} of "
              f"{nightly['verdicts_compared']}")
    reading = nightly["etdump_reading"]
    print(f"  reading its {reading['nightly_files']} ETDumps (apart): {reading['per_file_ms']:.1f} ms a file,"
          f" {reading['nightly_s']:.1f} s")
    print(f"  verdicts {nightly['verdicts']}")
    for key, value in results.get("coverage", {}).items():
        print(f"coverage: {key}: {value:.3f}" if isinstance(value, float) else f"coverage: {key}: {value}")
    print(f"load average {results['load_average']}")


if __name__ == "__main__":
    main()

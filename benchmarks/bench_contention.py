"""Does the runner's direct contention measure catch what the calibration workload catches? (issue 37, item 1)

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_contention [--jobs 6] [--runs 5] [--iterations 20] [--json]

Identical process runs of tiny_cnn (the runner as a job runs it: traced, warmup 3, `--calibration_rounds=250`
and the contention measure both on, unpinned) in three environments:

- `quiet-rt`: the anchor: the runner under SCHED_FIFO (`chrt -f 10`), so no ordinary process (the shared
  VM's other work) can take a CPU from it: what waits remain are the kernel's own (wake-ups, interrupts);
- `quiet`: nothing added (on the shared VM: other developers' work goes on, say so beside the figures);
- `neighbour`: a numerical neighbour on both cores, numpy matrix products (one single-threaded BLAS process
  pinned to each core), started before the first run;
- `quota`: the runner in a cgroup v1 cpu group with `cpu.cfs_quota_us` 10000 of 100000 (a tenth of a CPU,
  the shape of a throttling phone); the group is removed whatever happens.

Per process run, each signal's verdict: `calibration` is etfarm's flag (run/calibration.py over each job of
`--runs` runs: more than 25 % slower than the job's fastest calibration), `calibration-vs-quiet` the same
against quiet-rt's fastest (a reference a job never has); `wait` is results/contention.py's rule
(some execution waited for a CPU beyond its bound), with the share of executions it drops; `preempted`
any involuntary context switch; `wait|cal` is the share of the calibration's flagged runs the wait rule flags too
(does it catch what the calibration catches?), `wait p99` the 99th percentile of one execution's wait.
Then the p50 of all executions and of the clean ones against quiet-rt's.
Then the cost: per process run without the calibration, the runner's time outside program load, method
load and executions, warmup included (`runner_ms - loads - execute_ms - warmup_ms`), and the reading's own
cost (`contention.read_ms`), the runner pinned to core 1 under SCHED_FIFO (`chrt -f 10`), so that the shared
VM's other work cannot take its core and add to the figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from orchestrator.artifacts.build import build_runner  # noqa: E402
from orchestrator.artifacts.lowering import export_model  # noqa: E402
from orchestrator.artifacts.modelspec import parse_model_spec  # noqa: E402
from orchestrator.results.model import ProcessRun  # noqa: E402
from orchestrator.run.calibration import SLOWDOWN_THRESHOLD, flag_runs  # noqa: E402
from orchestrator.run.runner_contract import RunnerInvocation, parse_result  # noqa: E402

MODEL = ROOT / "configs" / "models" / "tiny_cnn.py"
WARMUP = 3
CALIBRATION_BEFORE = 250  # the rounds every process run timed before issue 37 retired the workload
QUOTA_US = 10_000  # of the default 100000 us period: a tenth of a CPU
CGROUP_ROOT = Path("/sys/fs/cgroup/cpu")
NEIGHBOUR = ("import numpy as np\na = np.random.rand(384, 384)\nwhile True:\n    a = a @ a\n    a /= np.abs(a).max()\n")
ENVIRONMENTS = ("quiet-rt", "quiet", "neighbour", "quota")
RT = ("chrt", "-f", "10")  # quiet-rt and the cost runs: no ordinary process (the VM's other work) can take a CPU


@contextlib.contextmanager
def neighbour() -> Iterator[None]:
    """numpy matrix products on both cores, one single-threaded process pinned to each."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    procs = [subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", NEIGHBOUR], env=env)
             for cpu in range(os.cpu_count() or 1)]
    try:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(1.0)"], check=True)  # let them reach speed
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def quota_group() -> Iterator[Path]:
    """A cgroup v1 cpu group with QUOTA_US per period; removed on the way out."""
    group = CGROUP_ROOT / f"etfarm-bench-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cpu.cfs_quota_us").write_text(str(QUOTA_US))
        yield group
    finally:
        for pid in (group / "cgroup.procs").read_text().split():  # none normally: the runners have ended
            with contextlib.suppress(OSError):
                (CGROUP_ROOT / "cgroup.procs").write_text(pid)
        group.rmdir()


def emptied(out_dir: str) -> None:
    """The output directory emptied, as device_agents' step does before every process run: the runner then
    writes new files (on ext4, writing over an existing file by rename flushes it, ~0.3 ms a file)."""
    for entry in Path(out_dir).iterdir():
        entry.unlink()


def one_run(argv: list[str], invocation: RunnerInvocation, group: Path | None, label: str) -> ProcessRun:
    emptied(invocation.out_dir)
    if group is not None:  # join the group, then become the runner: every thread it starts is in it
        argv = ["sh", "-c", f'echo $$ > {group / "cgroup.procs"} && exec "$@"', "sh", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise SystemExit(f"runner failed ({done.returncode}): {done.stderr[-500:]}")
    return ProcessRun.from_runner(parse_result(done.stdout, invocation), label=label, traced=True)


def environment(name: str, jobs: int, runs: int, invocation: RunnerInvocation) -> list[list[ProcessRun]]:
    argv = [*(RT if name == "quiet-rt" else ()), *invocation.argv()]
    with contextlib.ExitStack() as stack:
        group = None
        if name == "neighbour":
            stack.enter_context(neighbour())
        elif name == "quota":
            group = stack.enter_context(quota_group())
        return [[one_run(argv, invocation, group, f"run-{k + 1}") for k in range(runs)] for _ in range(jobs)]


def signals(found: dict[str, list[list[ProcessRun]]]) -> list[dict[str, Any]]:
    quiet_all = [r for job in found[ENVIRONMENTS[0]] for r in job]
    reference = min(min(v for v in (r.calibration_before_ms, r.calibration_after_ms) if v) for r in quiet_all)
    base_all = statistics.median(ms for r in quiet_all for ms in r.execute_ms)
    base_clean = statistics.median(ms for r in quiet_all for ms in r.clean_execute_ms or r.execute_ms)
    rows = []
    for name, jobs in found.items():
        flagged = [r for job in jobs for r in flag_runs(job)]
        every = [r for job in jobs for r in job]
        n = len(every)
        executions = sum(len(r.execute_ms) for r in every)
        dropped = sum(not ok for r in every for ok in r.clean)
        clean = [ms for r in every for ms in r.clean_execute_ms]
        rows.append({
            "environment": name, "runs": n,
            "calibration": sum(r.flag is not None for r in flagged) / n,
            "calibration_vs_quiet": sum((r.calibration_ms or 0) / reference - 1 > SLOWDOWN_THRESHOLD for r in every) / n,
            "wait": sum(not all(r.clean) for r in every) / n,
            # of the runs the calibration flags, the share the wait rule flags too: does it catch what it catches?
            "wait_of_calibration": (sum(not all(r.clean) for r in flagged if r.flag is not None)
                                    / max(1, sum(r.flag is not None for r in flagged))),
            "executions_dropped": dropped / executions,
            "preempted": sum((r.contention.involuntary_switches or 0) > 0 for r in every if r.contention) / n,
            "wait_p99_ms": float(np.percentile([w for r in every if r.contention for w in r.contention.wait_ms], 99)),
            "cpu_over_wall": statistics.median(r.contention.cpu_share for r in every if r.contention and r.contention.cpu_share),
            "p50_all_vs_quiet": statistics.median(ms for r in every for ms in r.execute_ms) / base_all,
            "p50_clean_vs_quiet": statistics.median(clean) / base_clean if clean else None,
        })
    return rows


def overhead(invocation: RunnerInvocation, runs: int) -> dict[str, Any]:
    """The runner's own time outside loads and executions, with and without reading contention; quiet, pinned."""
    out: dict[str, Any] = {}
    for sched in (True, False):
        argv = [*RT, "taskset", "-c", "1", *invocation.argv(), f"--sched_stats={'true' if sched else 'false'}"]
        other, share, read = [], [], []
        for _ in range(runs):
            emptied(invocation.out_dir)
            done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=True)
            result = parse_result(done.stdout, invocation)
            executions = sum(result.execute_ms) + sum(result.warmup_ms or ())
            rest = result.runner_ms - result.program_load_ms - result.load_ms - executions
            other.append(rest)
            share.append(rest / result.runner_ms)
            if result.contention is not None and result.contention.read_ms is not None:
                read.append(result.contention.read_ms)
        out["sched" if sched else "no_sched"] = {"outside_ms_p50": statistics.median(other),
                                                 "outside_ms_p90": float(np.percentile(other, 90)),
                                                 "outside_share_p50": statistics.median(share),
                                                 "read_ms_p50": statistics.median(read) if read else None}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--environments", default=",".join(ENVIRONMENTS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    build = build_runner("host")
    model = export_model(parse_model_spec(str(MODEL) + ":build"))
    with tempfile.TemporaryDirectory(prefix="etfarm-bench-contention-") as tmp:
        invocation = RunnerInvocation(str(build.runner), str(model.pte), str(model.inputs), tmp, args.iterations, WARMUP,
                                      traced=True, calibration_rounds=CALIBRATION_BEFORE)
        found = {name: environment(name, args.jobs, args.runs, invocation)
                 for name in args.environments.split(",")}
        cost = overhead(replace(invocation, calibration_rounds=0), args.jobs * args.runs)
    rows = signals(found)
    if args.json:
        print(json.dumps({"signals": rows, "overhead": cost}, indent=2))
        return
    print(f"tiny_cnn, {args.jobs} jobs x {args.runs} process runs x {args.iterations} executions per environment; "
          "share of process runs each signal flags")
    print(f"{'environment':12} {'calibration':>11} {'cal-vs-quiet':>12} {'wait':>6} {'wait|cal':>8} {'dropped':>8} "
          f"{'preempted':>9} {'wait p99':>8} "
          f"{'cpu/wall':>8} {'p50 all':>8} {'p50 clean':>9}")
    for r in rows:
        clean = f"{r['p50_clean_vs_quiet']:.3f}x" if r["p50_clean_vs_quiet"] else "-"
        print(f"{r['environment']:12} {r['calibration']:>11.0%} {r['calibration_vs_quiet']:>12.0%} {r['wait']:>6.0%} "
              f"{r['wait_of_calibration']:>8.0%} "
              f"{r['executions_dropped']:>8.0%} {r['preempted']:>9.0%} {r['wait_p99_ms']:>8.3f} {r['cpu_over_wall']:>8.2f} "
              f"{r['p50_all_vs_quiet']:>7.3f}x {clean:>9}")
    for name, figures in cost.items():
        read = f", reading {figures['read_ms_p50']:.3f} ms" if figures["read_ms_p50"] is not None else ""
        print(f"process run outside loads and executions ({name}): {figures['outside_ms_p50']:.2f} ms p50 "
              f"({figures['outside_share_p50']:.1%} of the run), {figures['outside_ms_p90']:.2f} ms p90{read}")


if __name__ == "__main__":
    main()

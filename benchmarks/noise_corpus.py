"""Record the noise corpus (issue 37): real tiny_cnn jobs on `local` under five environments, kept as compact samples.

    PYTHONPATH=. .venv/bin/python -m benchmarks.noise_corpus --out tests/unit/verdicts/fixtures/noise_corpus.npz \
        [--jobs 6] [--ab-jobs 3] [--runs 10] [--iterations 30] [--env quiet blas bursty quota slow]

Environments (each job is a separate `run_job`, as nightly and `compare` jobs are):
- quiet: nothing started here. This host is shared with other developers, so "quiet" is only as quiet as they are;
- blas: one single-threaded numpy matmul loop per core beside every job;
- bursty: one loop per core alternating 50-500 ms of matmul with 50-500 ms of sleep;
- quota: the jobs in a cgroup v1 CPU group (/sys/fs/cgroup/cpu/etfarm-noise-PID) whose cfs quota drops from
  unlimited to 10 % of a core (10 ms of each 100 ms) 0.5 s after the job's process runs begin (the shape of a
  phone that throttles mid-job); the group is always removed;
- slow: the runner pinned to core 1 (`exec_prefix: taskset -c 1`) and a memory-streaming numpy loop (64 MB
  copies) pinned to core 0 for the whole job: every execution slowed through the shared cache and memory, none
  waiting for a CPU: a job wholly in a slow state that run-queue wait cannot see.
Besides `--jobs` single-model jobs per environment it runs `--ab-jobs` `run --ab`-shaped jobs (ABBA order) of
tiny_cnn against a byte-identical copy. Kept per job: each traced process run's per-execution times, each op's
per-execution times (ETDump), and, when the runner records it (issue 37 item 1, `ProcessRun.contention`), each
execution's run-queue wait. float32 ms in one .npz; an index in its `meta` entry (JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from device_agents import DeviceSpec
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.progress import Progress
from orchestrator.results.model import JobOptions
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.job import run_job
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.compare import side_from_job
from orchestrator.verdicts.op_samples import read_op_samples

MODEL = ROOT / "configs" / "models" / "tiny_cnn.py"
CGROUP = Path("/sys/fs/cgroup/cpu")
ENVIRONMENTS = ("quiet", "blas", "bursty", "quota", "slow")

_BLAS = "import numpy as np\na = np.random.rand(384, 384)\nwhile True:\n    a @ a\n"
_STREAM = "import numpy as np\na = np.ones(8 << 20)\nb = np.empty_like(a)\nwhile True:\n    np.copyto(b, a)\n"
_BURSTY = ("import numpy as np, random, time\na = np.random.rand(384, 384)\nwhile True:\n"
           "    end = time.monotonic() + random.uniform(0.05, 0.5)\n    while time.monotonic() < end:\n        a @ a\n"
           "    time.sleep(random.uniform(0.05, 0.5))\n")


@contextlib.contextmanager
def neighbours(code: str | None, cores: tuple[int, ...] | None = None) -> Iterator[None]:
    """One single-threaded numpy loop per core (or pinned to each of `cores`) while the block runs; each killed by
    its own pid after."""
    procs: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    pins = [("taskset", "-c", str(c)) for c in cores] if cores else [()] * (os.cpu_count() or 1)
    try:
        for pin in pins if code else ():
            procs.append(subprocess.Popen([*pin, sys.executable, "-c", code], env=env))
        time.sleep(1.0 if code else 0)  # at full speed before the first job
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@contextlib.contextmanager
def cpu_group() -> Iterator[Path]:
    """This process (and the runners it starts) in a fresh cgroup v1 CPU group; moved back and the group removed."""
    group = CGROUP / f"etfarm-noise-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(os.getpid()))
        yield group
    finally:
        (CGROUP / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:  # a runner still leaving
                time.sleep(0.1)


def set_quota(group: Path, quota_us: int, period_us: int = 100_000) -> None:
    (group / "cpu.cfs_quota_us").write_text("-1")  # the period may only change with no quota in place
    (group / "cpu.cfs_period_us").write_text(str(period_us))
    (group / "cpu.cfs_quota_us").write_text(str(quota_us))


def one_job(device: DeviceSpec, specs: list[Any], options: JobOptions, out: Path,
            progress: Progress | None = None) -> dict[str, Any]:
    """Run one job; per model: e2e (runs, iterations), wait (same shape, or None), ops [(label, (runs, iterations))]."""
    result = run_job([device], specs, backend="xnnpack", options=options, out=out,
                     progress=progress or Progress(quiet=True))
    if result.exit_code != 0:
        raise SystemExit(f"job {out.name} failed: {result.job.devices[0].error}")
    found: dict[str, Any] = {}
    for spec in specs:
        side = side_from_job(RunRecord(out, result.job), device.name, spec.name)
        model = result.job.device(device.name).model(spec.name)
        waits = [r.contention.wait_ms if r.contention is not None and r.contention.wait_ms else None
                 for r in model.traced_runs]
        # every execution, contended or not: the corpus keeps the raw samples and the waits beside them
        ops = read_op_samples([r.etdump for r in side.runs if r.etdump is not None], dict(side.identities)).ops
        found[spec.name] = {
            "e2e": [list(r.execute_ms) for r in model.traced_runs],
            "wait": [list(w) for w in waits] if all(w is not None for w in waits) else None,
            "ops": [(f"{key[0]}|{key[1].module_path}|{key[1].op}|{key[1].occurrence}|{key[1].basis}",
                     [list(map(float, r)) for r in runs]) for key, (_, runs) in ops.items()],
        }
    return found


def record_env(env: str, jobs: int, ab_jobs: int, runs: int, iterations: int, tmp: Path) -> list[dict[str, Any]]:
    pinned = ("taskset", "-c", "1") if env == "slow" else ()
    device = DeviceSpec("local", "host", str(tmp / "workdir"), pinned)
    options = JobOptions(runs=runs, iterations=iterations, warmup=3, untraced_runs=0)
    tmp.mkdir(parents=True, exist_ok=True)
    copy = tmp / "tiny_cnn_copy.py"
    shutil.copyfile(MODEL, copy)
    single = [parse_model_spec(f"{MODEL}:build", "cnn")]
    pair = [parse_model_spec(f"{MODEL}:build", "cnn-a"), parse_model_spec(f"{copy}:build", "cnn-b")]
    ab_options = JobOptions(runs=runs, iterations=iterations, warmup=3, untraced_runs=0, order=RunOrder.ABBA)
    plan = [("job", single, options)] * jobs + [("ab", pair, ab_options)] * ab_jobs
    code = {"blas": _BLAS, "bursty": _BURSTY, "slow": _STREAM}.get(env)
    recorded: list[dict[str, Any]] = []
    with neighbours(code, (0,) if env == "slow" else None), \
            (cpu_group() if env == "quota" else contextlib.nullcontext()) as group:
        for k, (kind, specs, opts) in enumerate(plan):
            throttle = _Throttle(group) if group is not None else None
            started = time.monotonic()
            try:
                found = one_job(device, specs, opts, tmp / f"{env}-{k:02d}-{kind}", throttle)
            finally:
                if throttle is not None:
                    throttle.cancel()
            recorded.append({"env": env, "kind": kind, "seconds": round(time.monotonic() - started, 2),
                             "models": found})
            print(f"  {env} {kind} {k + 1}/{len(plan)}: {recorded[-1]['seconds']} s", file=sys.stderr, flush=True)
    return recorded


class _Throttle(Progress):
    """Unlimited CPU until the job's runs begin (its "run ID: ..." line), then 10 % of a core 0.5 s later."""

    def __init__(self, group: Path) -> None:
        super().__init__(quiet=True)
        self.group = group
        set_quota(group, -1)
        self.timer: threading.Timer | None = None

    def __call__(self, message: str, device: str | None = None) -> None:
        if self.timer is None and message.startswith("run ") and "device(s)" in message:
            self.timer = threading.Timer(0.5, set_quota, (self.group, 10_000))
            self.timer.start()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()


def save(recorded: list[dict[str, Any]], path: Path) -> None:
    """Everything as float32 arrays (runs padded with NaN) plus a JSON index in `meta`."""
    import numpy as np

    arrays: dict[str, Any] = {}
    index = []
    for j, job in enumerate(recorded):
        entry = {"env": job["env"], "kind": job["kind"], "seconds": job["seconds"], "models": {}}
        for name, found in job["models"].items():
            stem = f"j{j}/{name}"
            arrays[f"{stem}/e2e"] = _padded(found["e2e"])
            if found["wait"] is not None:
                arrays[f"{stem}/wait"] = _padded(found["wait"])
            labels = []
            for k, (label, runs) in enumerate(found["ops"]):
                arrays[f"{stem}/op{k}"] = _padded(runs)
                labels.append(label)
            entry["models"][name] = {"ops": labels, "wait": found["wait"] is not None}
        index.append(entry)
    arrays["meta"] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)


def _padded(runs: list[list[float]]) -> Any:
    import numpy as np

    width = max((len(r) for r in runs), default=0)
    out = np.full((len(runs), width), np.nan, dtype=np.float32)
    for i, r in enumerate(runs):
        out[i, : len(r)] = r
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--env", nargs="+", default=list(ENVIRONMENTS), choices=ENVIRONMENTS)
    parser.add_argument("--jobs", type=int, default=6)
    parser.add_argument("--ab-jobs", type=int, default=3)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    random.seed(args.seed)
    recorded: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="etfarm-noise-") as tmp:
        for env in args.env:
            recorded += record_env(env, args.jobs, args.ab_jobs, args.runs, args.iterations, Path(tmp) / env)
    save(recorded, args.out)
    print(f"{args.out}: {args.out.stat().st_size / 1e6:.2f} MB, {len(recorded)} jobs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The stability measure's thresholds, measured on this project's devices (issue 19, item 4).

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_stability [--jobs 8] [--runs 5] [--iterations 100] [--json]

Devices: `local` and the integration testbed's sshd on loopback, both with the runner pinned to
core 1 (`cpus: "1"` / `exec_prefix: taskset -c 1`). Conditions, per device and model:

- `pinned`: the runner pinned, nothing else done (the host's own background: on the shared
  benchmark VM, other jobs on both vCPUs);
- `pinned-rt`: the same, the runner under SCHED_FIFO (`chrt -f 10`): no ordinary process can
  take its core from it; what is left is what no scheduler setting removes (the other vCPU's
  load slows this one on this KVM guest);
- `busy`: `pinned`, and from the job's third process run on, a busy loop of the same priority on
  the same core (`taskset -c 1 python -c "while True: pass"`): the interference the flags are for;
- `busy-rt`: `pinned-rt`, and from the third process run on, a real-time busy loop of higher
  priority on the same core that spins 1 ms of every 2 (what tests/integration/test_runloop.py
  uses: the background load of a shared machine can neither hide it nor imitate it).

Per job: each traced process run's within-run spread (IQR / median of its executions), the spread
between process runs (IQR / median of the per-run medians), the old CV of all executions, and the
calibration flags. The report prints, per condition, the quantiles of each measure over jobs and
how often the thresholds of orchestrator/base/stats.py fire. Models: configs/models/tiny_cnn.py
(~0.3 ms per execution) and deep_mlp.py (~0.02 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from device_agents import DeviceSpec  # noqa: E402
from orchestrator.artifacts.modelspec import parse_model_spec  # noqa: E402
from orchestrator.base.progress import Progress  # noqa: E402
from orchestrator.results.model import JobOptions, ModelResult  # noqa: E402
from orchestrator.run.engine.job import run_job  # noqa: E402

MODELS = {"tiny_cnn": ROOT / "configs" / "models" / "tiny_cnn.py", "deep_mlp": ROOT / "configs" / "models" / "deep_mlp.py"}
CORE = "1"
RT = ("chrt", "-f", "10")
BUSY_FROM_RUN = 3
CONDITIONS = ("pinned", "pinned-rt", "busy", "busy-rt")


@dataclass(frozen=True)
class JobFigures:
    device: str
    condition: str
    model: str
    within: tuple[float, ...]  # IQR / median of each traced run
    between: float | None  # IQR / median of the per-run medians
    cv: float | None
    flagged: tuple[str, ...]
    load: float
    medians: tuple[float, ...] = ()  # per traced run
    labels: tuple[str, ...] = ()
    flagged_labels: tuple[str, ...] = ()
    unstable: bool = False  # orchestrator/base/stats.py's rule, as the report applies it
    reasons: tuple[str, ...] = ()


def figures(model: ModelResult) -> tuple[tuple[float, ...], float | None, float | None]:
    import numpy as np

    within = []
    for run in model.traced_runs:
        x = np.asarray(run.execute_ms)
        q25, q50, q75 = np.percentile(x, [25, 50, 75])
        within.append(float((q75 - q25) / q50) if q50 > 0 else float("nan"))
    medians = np.asarray([np.median(r.execute_ms) for r in model.traced_runs])
    between = None
    if len(medians) >= 2 and np.median(medians) > 0:
        q25, q75 = np.percentile(medians, [25, 75])
        between = float((q75 - q25) / np.median(medians))
    samples = np.asarray(model.wall_execute_ms)
    cv = float(samples.std(ddof=1) / samples.mean()) if samples.size > 1 else None
    return tuple(within), between, cv


class BusyFrom(Progress):
    """Starts a busy loop on CORE when the job reaches process run BUSY_FROM_RUN."""

    def __init__(self, realtime: bool) -> None:
        super().__init__(quiet=True)
        self.realtime = realtime
        self.busy: subprocess.Popen[bytes] | None = None

    def __call__(self, message: str, device: str | None = None) -> None:
        if f"run {BUSY_FROM_RUN}/" in message and self.busy is None:
            from tests.helpers.busy import busy_loop

            self.busy = busy_loop(CORE, realtime=self.realtime)

    def stop(self) -> None:
        if self.busy is not None:
            self.busy.kill()
            self.busy.wait()


def one_job(device: DeviceSpec, condition: str, model: str, options: JobOptions, out: Path) -> JobFigures:
    progress = BusyFrom(condition == "busy-rt") if condition.startswith("busy") else Progress(quiet=True)
    try:
        result = run_job([device], [parse_model_spec(f"{MODELS[model]}:build")], backend="xnnpack", options=options,
                         out=out, progress=progress)
    finally:
        if isinstance(progress, BusyFrom):
            progress.stop()
    if result.exit_code != 0:
        raise SystemExit(f"{device.name} {condition} {model}: {result.job.devices[0].error}")
    found = result.job.devices[0].model(model)
    assert found is not None
    within, between, cv = figures(found)
    import numpy as np

    rule = found.stability
    return JobFigures(device.name, condition, model, within, between, cv,
                      tuple(f"{r.label} {r.flag} {r.slowdown:+.0%}" for r in found.flagged_runs if r.slowdown is not None),
                      os.getloadavg()[0], tuple(float(np.median(r.execute_ms)) for r in found.traced_runs),
                      tuple(r.label for r in found.traced_runs), tuple(r.label for r in found.flagged_runs),
                      rule.unstable, rule.reasons)


def devices(tmp: Path, transports: list[str], conditions: list[str]) -> dict[str, dict[str, DeviceSpec]]:
    out: dict[str, dict[str, DeviceSpec]] = {}
    if "local" in transports:
        out["local"] = {c: DeviceSpec("local", "host", str(tmp / f"local-{c}"), cpus=CORE,
                                      exec_prefix=RT if c.endswith("-rt") else ()) for c in conditions}
    if "ssh" in transports:
        from orchestrator.emulate.sshd import start_sshd

        host = start_sshd(tmp / "sshd")
        out["ssh"] = {c: host.spec("ssh", tmp / f"ssh-{c}",
                                   exec_prefix=("taskset", "-c", CORE, *(RT if c.endswith("-rt") else ())))
                      for c in conditions}
    return out


def summarise(found: list[JobFigures]) -> list[dict[str, Any]]:
    import numpy as np

    rows = []
    keys = sorted({(f.device, f.model, f.condition) for f in found})
    for device, model, condition in keys:
        mine = [f for f in found if (f.device, f.model, f.condition) == (device, model, condition)]
        typical = np.array([float(np.median(f.within)) for f in mine])
        between = np.array([f.between for f in mine if f.between is not None])
        cv = np.array([f.cv for f in mine if f.cv is not None])
        fired = sum(1 for f in mine if f.unstable)
        rows.append({"device": device, "model": model, "condition": condition, "jobs": len(mine),
                     "within_median": _q(typical), "between": _q(between), "cv": _q(cv),
                     "unstable": f"{fired}/{len(mine)}", "cv_over_10pct": f"{int((cv > 0.10).sum())}/{len(cv)}",
                     "flagged_jobs": f"{sum(1 for f in mine if f.flagged)}/{len(mine)}",
                     "load": f"{min(f.load for f in mine):.1f}-{max(f.load for f in mine):.1f}"})
    return rows


def _q(values: Any) -> str:
    import numpy as np

    if len(values) == 0:
        return "-"
    lo, mid, hi = np.percentile(values, [0, 50, 100])
    return f"{mid:.3f} ({lo:.3f}-{hi:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=8, help="jobs per device, model and condition")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--transports", default="local,ssh")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--conditions", default=",".join(CONDITIONS))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    options = JobOptions(runs=args.runs, iterations=args.iterations, warmup=5, untraced_runs=0, cpu_threads=1)
    found: list[JobFigures] = []
    with tempfile.TemporaryDirectory(prefix="etfarm-bench-stability-") as tmp:
        specs = devices(Path(tmp), args.transports.split(","), args.conditions.split(","))
        for k in range(args.jobs):  # conditions interleaved job by job: the host's load hits them alike
            for transport, conditions in specs.items():
                for model in args.models.split(","):
                    for condition, device in conditions.items():
                        out = Path(tmp) / f"{transport}-{model}-{condition}-{k}"
                        found.append(one_job(device, condition, model, options, out))
            print(f"  round {k + 1}/{args.jobs}", file=sys.stderr, flush=True)
    rows = summarise(found)
    if args.json:
        print(json.dumps({"rows": rows, "jobs": [f.__dict__ for f in found]}, indent=1))
        return
    from orchestrator.report.terminal.table import format_table

    headers = ["device", "model", "condition", "jobs", "within-run IQR/median", "between runs IQR/median", "CV (old)",
               "unstable", "CV > 10 %", "flagged jobs", "load"]
    print(format_table(headers, [[r[k] for k in ("device", "model", "condition", "jobs", "within_median", "between", "cv",
                                                 "unstable", "cv_over_10pct", "flagged_jobs", "load")] for r in rows]))


if __name__ == "__main__":
    main()

"""Fleet parallelism: two devices pinned to separate cores vs one device alone.

Both "devices" are this host (transport local), each pinned to its own core with
`taskset` and one runner thread, so the only thing measured is etfarm's per-device
concurrency. Export and build are warmed first and excluded.

    .venv/bin/python -m benchmarks.bench_fleet
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from device_agents import DeviceSpec
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.progress import Progress
from orchestrator.results.model import JobOptions
from orchestrator.run.engine.job import run_job

MODEL = str(Path(__file__).parent / "models" / "deep_mlp.py") + ":build"
OPTIONS = JobOptions(runs=3, iterations=200, warmup=5, cpu_threads=1)
TARGET_RATIO = 1.25


def pinned_device(name: str, core: int, root: Path) -> DeviceSpec:
    return DeviceSpec(name=name, target="host", workdir=str(root / name),
                      exec_prefix=("taskset", "-c", str(core)))


def timed_job(devices: list[DeviceSpec], root: Path, label: str) -> float:
    started = time.monotonic()
    result = run_job(devices, [parse_model_spec(MODEL)], backend="portable", options=OPTIONS,
                     out=root / label, progress=Progress(quiet=True))
    elapsed = time.monotonic() - started
    if result.exit_code != 0:
        raise SystemExit(f"{label}: job failed: {[d.error for d in result.devices]}")
    return elapsed


def main() -> None:
    if (os.cpu_count() or 1) < 2:
        raise SystemExit("needs at least 2 cores")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        a, b = pinned_device("core0", 0, root), pinned_device("core1", 1, root)
        timed_job([a, b], root, "warm")  # export, build and staging out of the way
        one = min(timed_job([a], root, f"one-{i}") for i in range(2))
        two = min(timed_job([a, b], root, f"two-{i}") for i in range(2))
    ratio = two / one
    print(f"fleet: one device {one:.2f}s, two devices on separate cores {two:.2f}s, "
          f"ratio {ratio:.2f}x (target <= {TARGET_RATIO}x) {'OK' if ratio <= TARGET_RATIO else 'MISSED'}")


if __name__ == "__main__":
    main()

"""`etfarm report` of a 3-device, 5-model run: wall time against the 3 s budget (issue 8).

The run directory is synthetic but shaped like a real one (tests/helpers/synthetic_run.py):
3 devices x 5 models, 10 process runs x 50 iterations + 1 untraced run each, 40 delegate
kernels + a DELEGATE_CALL + a portable op per model in stats.csv. Timed:

- the command as a user runs it (`python -m orchestrator.cli report DIR --format F`, a new
  process: interpreter start, imports, build, charts, render, write), per format, wall clock
  and CPU (user + sys: steadier than wall when other jobs share the cores);
- in process, `write_report` with 10 earlier runs of history per model and device, so the
  fourth chart (the history trend) is drawn too; imports already warm.

Median of `--rounds` rounds. Exit 1 when the HTML command misses the budget.

    .venv/bin/python -m benchmarks.bench_report [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.report.destination import ReportFormat
from orchestrator.report.output import write_report
from orchestrator.results.record import RunRecord
from orchestrator.store.history import HistoryPoint
from tests.helpers.synthetic_run import make_run_dir

BUDGET_S = 3.0
DEVICES = ("pixel8", "rpi5", "local")
MODELS = ("mobilenet", "vit", "bert", "resnet", "mlp")


def command_seconds(run: Path, fmt: str, out: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one `etfarm report` process; CPU = user + sys, steadier on a shared machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "report", str(run), "--format", fmt,
                             "--output", out], capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit(f"report --format {fmt} failed: {result.stderr[-2000:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = make_run_dir(root / "run", devices=DEVICES, models=MODELS, runs=10, iterations=50, kernels=40)
        history = [HistoryPoint(f"r{i:02d}", f"2026-11-{i + 1:02d}T00:00:00", d, m, "ok", 1.0 + 0.01 * i, 1.2, None)
                   for i in range(10) for d in DEVICES for m in MODELS]
        times: dict[str, list[float]] = {f.value: [] for f in ReportFormat}
        cpu: dict[str, list[float]] = {f.value: [] for f in ReportFormat}
        with_history = []
        for _ in range(args.rounds):
            for fmt in ReportFormat:
                wall, used = command_seconds(run, fmt.value, f"{root / ('out-' + fmt.value)}/")
                times[fmt.value].append(wall)
                cpu[fmt.value].append(used)
            started = time.monotonic()
            write_report(RunRecord(run), ReportFormat.HTML, root / "history.html", history=history)
            with_history.append(time.monotonic() - started)
        size_kb = (root / "out-html" / "report.html").stat().st_size / 1024
    html = statistics.median(times["html"])
    for fmt, values in times.items():
        median = statistics.median(values)
        print(f"report --format {fmt:4}: {median:.2f}s wall, {statistics.median(cpu[fmt]):.2f}s CPU; "
              f"ratio to the {BUDGET_S:.0f} s budget {median / BUDGET_S:.2f}x")
    print(f"in process, html with 10 runs of history (4 charts per model, 20 in all): "
          f"{statistics.median(with_history):.2f}s; report.html {size_kb:.0f} KB")
    print(f"load average while measuring: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    verdict = "OK" if html <= BUDGET_S else "MISSED"
    print(f"report: 3 devices x 5 models, html {html:.2f}s vs budget {BUDGET_S:.1f}s: {verdict}")
    if html > BUDGET_S:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

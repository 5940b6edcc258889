"""What the energy phase adds to a job, and energy's run-to-run spread, on the emulated phone (issue 39).

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_energy [--jobs 3] [--phases 3] [--seconds 10] [--json]

The integration testbed's phone (a real adb server, the device daemon and its shell, the runner under
qemu) with its emulated rails (orchestrator/emulate/powerstats.py: energy grows with the CPU time of
the phone's processes). Two models, configs/models/wide_linear.py `build_small` (2 x Linear(1024)) and
`build` (8 x), in one job; per job alternately without and with `--energy`, so both kinds share the
machine's load. Printed: each job's wall time, the energy phase's share of it (the anchor: the job
without `--energy`), each model's uJ per inference and its interval, and over the jobs the spread of
uJ per inference (CV and max/min) and the large model's ratio to the small one's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "integration")]

from orchestrator.results.model import load_manifest  # noqa: E402
from tests.helpers.inventory import write_inventory  # noqa: E402

WIDE = ROOT / "configs" / "models" / "wide_linear.py"
SIZES = ("small", "large")
# Its own name: host device locks are per name in the shared cache, and another developer's job may hold `pixel8`.
DEVICE = f"benchphone{os.getpid()}"


def job(config: Path, out: Path, energy: bool, phases: int, seconds: float) -> tuple[float, dict[str, Any]]:
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "--config", str(config), "--devices", DEVICE,
            "--model", f"{WIDE}:build_small", "--model", f"{WIDE}:build", "--name", "small", "--name", "large",
            "--runs", "2", "--iterations", "10", "--warmup", "2", "--out", str(out), "--no-store", "--no-report"]
    if energy:
        argv += ["--energy", "--energy-phases", str(phases), "--energy-seconds", str(seconds)]
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"etfarm run failed ({done.returncode}): {done.stderr[-2000:]}")
    device = load_manifest(out).device(DEVICE)
    assert device is not None
    figures = {}
    for name in SIZES:
        model = device.model(name)
        e = model.energy if model is not None else None
        if e is not None and e.available:
            figures[name] = {"uj": e.uj_per_inference, "low": e.uj_per_inference_low, "high": e.uj_per_inference_high,
                             "mw": e.mw, "idle_mw": e.idle_mw, "phases": [p.uj_per_inference for p in e.phases],
                             "phase_s": sum(p.idle_s + p.active_s for p in e.phases)}
    return wall, figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--phases", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from orchestrator.emulate.adbserver import start_adb_server
    from orchestrator.emulate.android import start_android_phone

    with tempfile.TemporaryDirectory(prefix="bench-energy-") as tmp_dir:
        tmp = Path(tmp_dir)
        server = start_adb_server(tmp / "adb")
        try:
            phone = start_android_phone(server, tmp / "phone")
            try:
                config = write_inventory(tmp / "devices.yaml", [phone.spec(DEVICE)])
                rows = []
                for k in range(args.jobs):
                    plain, _ = job(config, tmp / f"plain-{k}", False, args.phases, args.seconds)
                    with_energy, figures = job(config, tmp / f"energy-{k}", True, args.phases, args.seconds)
                    rows.append({"job": k + 1, "plain_s": plain, "energy_s": with_energy, "models": figures})
            finally:
                phone.stop()
        finally:
            server.stop()
    report(rows, args)


def report(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    spread = {}
    for name in SIZES:
        values = [r["models"][name]["uj"] for r in rows if name in r["models"]]
        if len(values) >= 2:
            spread[name] = {"cv": statistics.stdev(values) / statistics.fmean(values), "max_over_min": max(values) / min(values)}
    ratios = [r["models"]["large"]["uj"] / r["models"]["small"]["uj"] for r in rows if set(SIZES) <= set(r["models"])]
    if args.json:
        print(json.dumps({"jobs": rows, "spread": spread, "large_over_small": ratios}, indent=2))
        return
    for r in rows:
        cells = "; ".join(f"{n} {m['uj']:.0f} uJ [{m['low']:.0f}, {m['high']:.0f}] {m['mw']:.0f} mW (idle {m['idle_mw']:.0f})"
                          for n, m in r["models"].items())
        print(f"job {r['job']}: {r['plain_s']:.1f} s without, {r['energy_s']:.1f} s with --energy "
              f"({r['energy_s'] / r['plain_s']:.2f}x); {cells}")
    for name, s in spread.items():
        print(f"{name}: run-to-run CV {s['cv']:.1%}, max/min {s['max_over_min']:.2f}")
    if ratios:
        print(f"large / small per inference: {', '.join(f'{x:.2f}' for x in ratios)}")


if __name__ == "__main__":
    main()

"""The model zoo: every architecture of benchmarks/zoo/ under every recipe, on `local` and the emulated board.

    python -m benchmarks.bench_zoo [--devices local,board] [--models mobilenet_v2,bert_tiny] [--recipes ...]
                                   [--runs 3] [--iterations 10] [--out DIR] [--from DIR]... [--table-only]
                                   [--no-readme]

One `etfarm run` per model (its recipes swept in one job, so a configuration that fails is left out and the
others are measured), on the devices given: `local` is this host; `board` is the emulated Cortex-A76 board of
the testbed (an sshd on loopback whose runner runs under `qemu-aarch64 -cpu cortex-a76`, as
orchestrator/emulate/sshd.py builds it; needs qemu-user and the aarch64 cross g++). Each job's figures
(benchmarks/zoo/figures.py) go to DIR/zoo.json as they come, and the table under "## Model zoo" in
benchmarks/README.md (benchmarks/zoo/table.py). `--from DIR` (repeatable) starts from a previous DIR/zoo.json
and adds what this call measures; with `--table-only` it measures nothing and writes the table. Needs the `zoo` extra (transformers). No target: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.zoo.catalog import RECIPES, ZOO, ZooModel, zoo_model  # noqa: E402
from benchmarks.zoo.figures import ZooRow, failed_job_rows, job_rows  # noqa: E402
from benchmarks.zoo.table import section, write_section  # noqa: E402

BOARD = "board"
QEMU_SYSROOT = "/usr/aarch64-linux-gnu"
JOB_TIMEOUT_S = 3600


def main() -> int:
    args = _arguments()
    out = Path(args.out or tempfile.mkdtemp(prefix="etfarm-zoo-")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    devices = tuple(args.devices.split(","))
    recipes = tuple(args.recipes.split(","))
    models = [zoo_model(n) for n in args.models.split(",")] if args.models else list(ZOO)
    rows: dict[str, list[ZooRow]] = {}
    for folder in args.from_dir:
        rows.update(_previous(Path(folder)))
    if args.table_only:
        models = []
    with _inventory(out, () if args.table_only else devices) as inventory:  # a table alone needs no board
        for model in models:
            started = time.monotonic()
            found = _measure(model, devices, recipes, args, inventory, out)
            rows[model.name] = found
            measured = sum(r.measured for r in found)
            print(f"{model.name}: {measured}/{len(found)} measured in {time.monotonic() - started:.0f} s", flush=True)
            for row in found:
                if row.reason:
                    print(f"  {row.recipe} on {row.device}: {row.reason}", flush=True)
            (out / "zoo.json").write_text(json.dumps({n: [r.to_json() for r in rs] for n, rs in rows.items()}, indent=1))
    ordered = [r for m in ZOO if m.name in rows for r in rows[m.name]]
    intro = (f"`python -m benchmarks.bench_zoo --devices {args.devices} --runs {args.runs} --iterations {args.iterations}`"
             f" ({time.strftime('%Y-%m-%d', time.gmtime())}, on the shared 2-core VM beside other work: times are "
             "indicative). Random weights, configurations written in benchmarks/zoo/hf_models.py; `board` is the "
             "testbed's emulated Cortex-A76 (qemu-user: its times are emulation's, its agreement is the point). "
             "Phases: eager run, capture, calibration, quantization, lowering, ETRecord, host reference, per-layer "
             "replay; etfarm's own = eager run + host reference + replay over the export.")
    text = section(ordered, intro)
    (out / "zoo.md").write_text(text)
    if not args.no_readme:
        write_section(ROOT / "benchmarks" / "README.md", text)
    print(f"figures: {out / 'zoo.json'}; table: {out / 'zoo.md'}")
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", default=f"local,{BOARD}")
    parser.add_argument("--models", default="", help="zoo models by name (default: all)")
    parser.add_argument("--recipes", default=",".join(RECIPES))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--out", default="")
    parser.add_argument("--from", dest="from_dir", action="append", default=[],
                        help="a previous --out whose zoo.json to start from (repeatable)")
    parser.add_argument("--table-only", action="store_true", help="measure nothing: the table from --from alone")
    parser.add_argument("--no-readme", action="store_true")
    return parser.parse_args()


def _measure(model: ZooModel, devices: tuple[str, ...], recipes: tuple[str, ...], args: argparse.Namespace,
             inventory: Path | None, out: Path) -> list[ZooRow]:
    run_dir = out / model.name
    argv = [sys.executable, "-m", "orchestrator.cli", "run", "--devices", ",".join(devices), "--model", model.spec,
            "--recipe", ",".join(recipes), "--runs", str(args.runs), "--iterations", str(args.iterations),
            "--warmup", "2", "--untraced-runs", "0", "--out", str(run_dir), "--no-store", "--no-report"]
    if inventory is not None:
        argv += ["--config", str(inventory)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return failed_job_rows(model.name, recipes, devices, f"the job took longer than {JOB_TIMEOUT_S} s")
    (out / f"{model.name}.log").write_text(done.stderr)
    if not (run_dir / "manifest.json").is_file():
        last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return failed_job_rows(model.name, recipes, devices, last.removeprefix("error: "))
    return job_rows(model.name, recipes, devices, run_dir)


def _previous(folder: Path) -> dict[str, list[ZooRow]]:
    data = json.loads((folder / "zoo.json").read_text())
    return {name: [ZooRow.from_json(r) for r in rows] for name, rows in data.items()}


class _inventory:
    """The device inventory of the zoo's jobs: the testbed's emulated board when `board` is asked for."""

    def __init__(self, out: Path, devices: tuple[str, ...]) -> None:
        self._out, self._wanted, self._host = out, BOARD in devices, None

    def __enter__(self) -> Path | None:
        if not self._wanted:
            return None
        from device_agents import DeviceSpec
        from orchestrator.emulate.sshd import start_sshd
        from tests.helpers.inventory import write_inventory

        self._host = start_sshd(self._out / "sshd")
        board = self._host.spec(BOARD, self._out / "board-workdir", target="linux-aarch64",
                                exec_prefix=("qemu-aarch64", "-cpu", "cortex-a76", "-L", QEMU_SYSROOT))
        local = DeviceSpec("local", "host", str(self._out / "local-workdir"))
        return write_inventory(self._out / "devices.yaml", [board, local])

    def __exit__(self, *exc: object) -> None:
        if self._host is not None:
            self._host.stop()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    raise SystemExit(main())

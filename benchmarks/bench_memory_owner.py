"""What memory by owner adds to a process run (issue 39): this runner against one built from `--ref`'s runners/.

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_memory_owner [--ref main] [--rounds 15] [--json]

Both runners are built here with cmake against the wheel's runtime (the anchor: `git archive REF runners`,
before the counting loader and allocators and the /proc reads existed). They run alternately, round by
round, on the same programs (configs/models/wide_linear.py `build` exported as fp32 and int8 static: 32 and
8 MiB of weights), untraced, 3 warmup + 20 executions, no calibration. Printed: the medians of each runner's
whole time (runner_ms), program load and method load, and the ratio this/anchor; and this runner's owners
against its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

WIDE = ROOT / "configs" / "models" / "wide_linear.py"


def build(runners: Path, out: Path) -> Path:
    import executorch

    cmake_dir = Path(next(iter(executorch.__path__))) / "share" / "cmake"
    subprocess.run(["cmake", "-S", str(runners), "-B", str(out), "-DCMAKE_BUILD_TYPE=Release",
                    f"-Dexecutorch_DIR={cmake_dir}"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(out), "--parallel", "2"], check=True, capture_output=True)
    return out / "etfarm_runner"


def anchor_sources(ref: str, where: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "runners"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(where, filter="data")
    return where / "runners"


def export(tmp: Path) -> dict[str, Path]:
    out = {}
    for recipe in ("fp32", "int8-static"):
        done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "export", f"{WIDE}:build", "--recipe", recipe,
                               "--out", str(tmp / recipe)], capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        out[recipe] = next((tmp / recipe).rglob("*.pte"))
    return out


def one(runner: Path, pte: Path) -> dict[str, Any]:
    import executorch

    lib = Path(next(iter(executorch.__path__))) / "lib"
    done = subprocess.run([str(runner), f"--model_path={pte}", "--num_executions=20", "--warmup=3"],
                          capture_output=True, text=True, env={"LD_LIBRARY_PATH": str(lib)}, check=True)
    line = next(x for x in done.stdout.splitlines() if x.startswith("ETFARM_RESULT "))
    return json.loads(line[len("ETFARM_RESULT "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp_dir:
        tmp = Path(tmp_dir)
        runners = {"this": build(ROOT / "runners", tmp / "this"),
                   "anchor": build(anchor_sources(args.ref, tmp / "src"), tmp / "anchor")}
        programs = export(tmp)
        found: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for _ in range(args.rounds):
            for recipe, pte in programs.items():
                for name, runner in runners.items():
                    found.setdefault((recipe, name), []).append(one(runner, pte))
    rows = []
    for recipe in programs:
        this, anchor = found[(recipe, "this")], found[(recipe, "anchor")]
        row = {"recipe": recipe}
        for key in ("runner_ms", "program_load_ms", "load_ms"):
            a, b = statistics.median(r[key] for r in anchor), statistics.median(r[key] for r in this)
            row[key] = {"anchor": a, "this": b, "ratio": b / a}
        end = this[-1]["memory"]["end"]
        row["owners_over_peak"] = sum(end[k] for k in ("program", "planned", "delegate", "runtime", "other")) / end["peak_rss"]
        row["delegate_mib"] = end["delegate"] / (1 << 20)
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for row in rows:
        parts = [f"{k} {row[k]['anchor']:.2f} -> {row[k]['this']:.2f} ms ({row[k]['ratio']:.2f}x)"
                 for k in ("runner_ms", "program_load_ms", "load_ms")]
        print(f"{row['recipe']}: {'; '.join(parts)}; delegate {row['delegate_mib']:.1f} MiB, "
              f"owners / peak {row['owners_over_peak']:.3f}")


if __name__ == "__main__":
    main()

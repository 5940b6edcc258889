"""Numerical gaps of one run: etfarm's torch-free analysis against ExecuTorch's Inspector.

    python -m benchmarks.bench_numerics [--backend portable|xnnpack] [--iterations 10] [--rounds 3] [--json]

Data: benchmarks/models/deep_mlp.py (40 layers: 20 Linear + 20 ReLU, 256 wide, batch 8) exported
by etfarm (portable by default: every op is compared, 60 rows), run by etfarm's host runner with
`--dump_intermediate_outputs` for `iterations` measured executions: one ETDump and its debug
buffer, exactly what `etfarm run --numerics` pulls per run. Cached under
$ETFARM_CACHE_DIR/bench-numerics.

1. Library, same process, torch already imported, ETRecord parse included (cache cleared):
   `Inspector(etdump, etrecord, debug_buffer).calculate_numeric_gap("MSE")` against
   `gaps_against_reference(load_reference(...), runtime_outputs(...))`, which yields MSE, L1 and
   SNR at once from the AOT outputs captured at export time.
2. Whole process, the same work from a cold interpreter: a script doing (1) with Inspector
   against one doing it with etfarm (which never imports torch).

The gaps are checked equal to Inspector's first. Rounds alternate the variants; medians are
reported. Target (issue 12): library >= 10x, whole process >= 10x. Exits 1 when either fails.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.base.cache import cache_dir, sha256_parts  # noqa: E402 - after the sys.path line above

LIBRARY_TARGET = 10.0
PROCESS_TARGET = 10.0
MODEL = f"{ROOT / 'benchmarks' / 'models' / 'deep_mlp.py'}:build"

INSPECTOR_SCRIPT = '''
import sys, warnings
warnings.filterwarnings("ignore")
from executorch.devtools import Inspector
etdump, etrecord, debug = sys.argv[1:4]
frame = Inspector(etdump_path=etdump, etrecord=etrecord, debug_buffer_path=debug).calculate_numeric_gap("MSE")
print(len(frame), max(g[0] for g in frame["gap"]))
'''

OURS_SCRIPT = '''
import sys
sys.path.insert(0, sys.argv[5])
from orchestrator.numerics import gaps_against_reference, load_reference, runtime_outputs
from orchestrator.profiles.etrecord import load_etrecord
etdump, etrecord, debug, reference = sys.argv[1:5]
rows = gaps_against_reference(load_reference(reference), runtime_outputs(etdump, debug, load_etrecord(etrecord)))
assert "torch" not in sys.modules
print(len(rows), max(r.gaps[0].mse for r in rows))
'''


def ensure_data(backend: str, iterations: int) -> dict[str, Path]:
    """Export the model (etfarm's cache) and run it once with intermediate outputs; cached."""
    from orchestrator.artifacts.build import build_runner, runner_env
    from orchestrator.artifacts.lowering import export_model
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.profiles.debug_buffer import debug_buffer_size

    model = export_model(parse_model_spec(MODEL, "deep_mlp"), backend, log=lambda m: print(m, file=sys.stderr))
    runner = build_runner("host", log=lambda m: print(m, file=sys.stderr))
    folder = cache_dir("bench-numerics") / f"{backend}-{iterations}-{sha256_parts([model.key, str(runner.root)])[:16]}"
    files = {"etdump": folder / "etdump.etdp", "debug": folder / "debug_output.bin", "etrecord": model.etrecord,
             "reference": model.numerics_reference}
    if files["etdump"].is_file() and files["debug"].is_file():
        return files
    folder.mkdir(parents=True, exist_ok=True)
    argv = [str(runner.root / "bin" / "etfarm_runner"), f"--model_path={model.pte}", f"--inputs={model.inputs}",
            f"--num_executions={iterations}", "--warmup=1", f"--etdump_path={files['etdump']}",
            "--dump_intermediate_outputs", f"--debug_buffer_size={debug_buffer_size(model.etrecord, iterations)}",
            f"--debug_output_path={files['debug']}"]
    subprocess.run(argv, check=True, capture_output=True, env=runner_env(str(folder)))
    return files


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_library(files: dict[str, Path], rounds: int) -> dict[str, float]:
    from executorch.devtools import Inspector

    from orchestrator.numerics import (
        gaps_against_reference,
        load_reference,
        runtime_outputs,
    )
    from orchestrator.profiles.etrecord import clear_cache, load_etrecord

    def inspector():  # type: ignore[no-untyped-def]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Inspector(etdump_path=str(files["etdump"]), etrecord=str(files["etrecord"]),
                             debug_buffer_path=str(files["debug"])).calculate_numeric_gap("MSE")

    def ours():  # type: ignore[no-untyped-def]
        clear_cache()
        return gaps_against_reference(load_reference(files["reference"]),
                                      runtime_outputs(files["etdump"], files["debug"], load_etrecord(files["etrecord"])))

    theirs, mine = inspector(), ours()
    if len(theirs) != len(mine) or any(
        abs(float(t[0]) - m.gaps[0].mse) > 1e-6 * max(abs(float(t[0])), 1e-300) for t, m in zip(theirs["gap"], mine, strict=False)
    ):
        raise SystemExit("sanity check failed: gaps differ from Inspector's")
    inspector_s, ours_s = [], []
    for _ in range(rounds):
        inspector_s.append(timed(inspector))
        ours_s.extend(timed(ours) for _ in range(5))
    return {"inspector_s": statistics.median(inspector_s), "ours_s": statistics.median(ours_s), "rows": len(mine)}


def bench_process(files: dict[str, Path], rounds: int) -> dict[str, float]:
    args = [str(files["etdump"]), str(files["etrecord"]), str(files["debug"])]
    with tempfile.TemporaryDirectory() as tmp:
        theirs_script, ours_script = Path(tmp) / "inspector_gap.py", Path(tmp) / "etfarm_gap.py"
        theirs_script.write_text(INSPECTOR_SCRIPT)
        ours_script.write_text(OURS_SCRIPT)
        theirs_cmd = [sys.executable, str(theirs_script), *args]
        ours_cmd = [sys.executable, str(ours_script), *args, str(files["reference"]), str(ROOT)]
        inspector_s, ours_s = [], []
        for _ in range(rounds):
            inspector_s.append(timed(lambda: subprocess.run(theirs_cmd, check=True, capture_output=True)))
            ours_s.extend(timed(lambda: subprocess.run(ours_cmd, check=True, capture_output=True)) for _ in range(3))
    return {"inspector_s": statistics.median(inspector_s), "ours_s": statistics.median(ours_s)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["portable", "xnnpack"], default="portable")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="Inspector runs per comparison (ours run more)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    files = ensure_data(args.backend, args.iterations)
    library = bench_library(files, args.rounds)
    process = bench_process(files, max(1, args.rounds - 1))
    result = {
        "etdump_bytes": files["etdump"].stat().st_size, "debug_buffer_bytes": files["debug"].stat().st_size,
        "library": {**library, "ratio": library["inspector_s"] / library["ours_s"], "target": LIBRARY_TARGET},
        "process": {**process, "ratio": process["inspector_s"] / process["ours_s"], "target": PROCESS_TARGET},
    }
    ok = result["library"]["ratio"] >= LIBRARY_TARGET and result["process"]["ratio"] >= PROCESS_TARGET
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        lib, proc = result["library"], result["process"]
        print(f"data: deep_mlp ({args.backend}), {args.iterations} executions: ETDump {result['etdump_bytes'] / 1e6:.2f} MB, "
              f"debug buffer {result['debug_buffer_bytes'] / 1e6:.1f} MB, {lib['rows']} compared ops")
        print(f"library:       Inspector {lib['inspector_s']:.3f} s   etfarm {lib['ours_s'] * 1000:.1f} ms   "
              f"{lib['ratio']:.0f}x (target {LIBRARY_TARGET:.0f}x)")
        print(f"whole process: Inspector script {proc['inspector_s']:.2f} s   etfarm script {proc['ours_s']:.2f} s   "
              f"{proc['ratio']:.0f}x (target {PROCESS_TARGET:.0f}x)")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

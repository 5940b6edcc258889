"""ETDump analysis: etfarm's reader and statistics against ExecuTorch's Inspector, one run.

    python -m benchmarks.bench_analysis [--backend xnnpack|portable] [--layers 40]
                                        [--iterations 500] [--rounds 3] [--json]

Data: a `layers`-deep residual MLP (Linear -> ReLU -> add per layer) lowered to XNNPACK
(default) or to portable ops, run `iterations` times per process by the ExecuTorch Python
runtime with event tracing, three process runs -> three ETDumps (XNNPACK, 40 layers x 500:
~41k profile events, 3.3 MB each; portable: ~161k events, 11 MB). Cached under
$ETFARM_CACHE_DIR/bench-analysis (export takes ~15 s).

1. Library, same process, torch already imported, ETRecord parse included (cache cleared):
   `Inspector(etdump_path, etrecord).to_dataframe()` vs `analyze_files([etdump], etrecord)`.
2. Whole process, three files: `etfarm analyze F1 F2 F3 --etrecord E` vs a Python script
   that does the same with Inspector (per-op stats merged across the files).

Rounds alternate the variants so both see the same machine load; medians are reported.
Targets (issue 4): library >= 50x, whole process >= 20x. Exits 1 when either fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from orchestrator.base.cache import cache_dir, sha256_parts  # noqa: E402

LIBRARY_TARGET = 50.0
PROCESS_TARGET = 20.0
FILES = 3

INSPECTOR_SCRIPT = '''
import sys, warnings
warnings.filterwarnings("ignore")
import numpy as np
from executorch.devtools import Inspector

etrecord, paths = sys.argv[1], sys.argv[2:]
raw, names = {}, {}
for path in paths:
    seen = {}
    for block in Inspector(etdump_path=path, etrecord=etrecord).event_blocks:
        seen[block.name] = seen.get(block.name, 0) + 1
        key = block.name if seen[block.name] == 1 else f"{block.name}#{seen[block.name]}"
        for index, event in enumerate(block.events):
            if event.perf_data is not None:
                raw.setdefault((key, index), []).extend(event.perf_data.raw)
                names[(key, index)] = (event.name, event.op_types)
rows = []
for key, values in raw.items():
    rows.append((np.mean(values), key, len(values), np.percentile(values, 50), np.percentile(values, 90), np.std(values, ddof=1) / np.mean(values) if len(values) > 1 and np.mean(values) else 0.0))
for avg, key, n, p50, p90, cv in sorted(rows, key=lambda r: -r[0])[:20]:
    print(key[0], key[1], names[key][0], n, f"{avg:.4f} {p50:.4f} {p90:.4f} {cv:.1%}")
'''


def ensure_data(backend: str, layers: int, iterations: int) -> tuple[Path, list[Path]]:
    """The ETRecord and FILES ETDumps, exported and run once, then cached."""
    import executorch.version as et_version

    helper = (ROOT / "tests" / "helpers" / "etdumps.py").read_bytes()
    key = sha256_parts([et_version.__version__, backend, str(layers), str(iterations), str(FILES), helper])[:16]
    folder = cache_dir("bench-analysis") / f"{backend}-{layers}x{iterations}-{key}"
    etdumps = [folder / f"run-{k}.etdp" for k in range(FILES)]
    etrecords = list(folder.glob("*.etrecord"))
    if etrecords and all(p.exists() for p in etdumps):
        return etrecords[0], etdumps
    from tests.helpers.etdumps import export_mlp, run_etdump

    staging = Path(tempfile.mkdtemp(prefix="bench-", dir=folder.parent))
    print(f"exporting a {layers}-layer {backend} model and running it {FILES} x {iterations} times...", file=sys.stderr)
    model = export_mlp(staging, backend, layers)
    for k in range(FILES):
        run_etdump(model, staging / f"run-{k}.etdp", iterations)
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return next(folder.glob("*.etrecord")), etdumps


def timed(fn) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_library(etrecord: Path, etdump: Path, rounds: int) -> dict[str, float]:
    from executorch.devtools import Inspector

    from orchestrator.profiles.analysis import analyze_files
    from orchestrator.profiles.etrecord import clear_cache

    def inspector() -> object:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Inspector(etdump_path=str(etdump), etrecord=str(etrecord)).to_dataframe()

    def ours() -> object:
        clear_cache()  # cold: parse the ETRecord every time, as Inspector does
        return analyze_files([etdump], etrecord)

    theirs, mine = inspector(), ours()  # warm-up (lazy imports), and a sanity check
    timed_rows = theirs[theirs["p50 (ms)"].notna()]
    if not (mine["p50_ms"].to_numpy() == timed_rows["p50 (ms)"].astype(float).to_numpy()).all():
        raise SystemExit("sanity check failed: p50 differs from Inspector's")
    inspector_s, ours_s = [], []
    for _ in range(rounds):
        inspector_s.append(timed(inspector))
        ours_s.extend(timed(ours) for _ in range(5))
    return {"inspector_s": statistics.median(inspector_s), "ours_s": statistics.median(ours_s)}


def bench_process(etrecord: Path, etdumps: list[Path], rounds: int) -> dict[str, float]:
    etfarm = Path(sys.executable).with_name("etfarm")
    ours_cmd = [str(etfarm)] if etfarm.exists() else [sys.executable, "-m", "orchestrator.cli"]
    ours_cmd += ["analyze", *map(str, etdumps), "--etrecord", str(etrecord)]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "inspector_analyze.py"
        script.write_text(INSPECTOR_SCRIPT)
        theirs_cmd = [sys.executable, str(script), str(etrecord), *map(str, etdumps)]
        inspector_s, ours_s = [], []
        for _ in range(rounds):
            inspector_s.append(timed(lambda: subprocess.run(theirs_cmd, check=True, capture_output=True)))
            ours_s.extend(timed(lambda: subprocess.run(ours_cmd, check=True, capture_output=True)) for _ in range(3))
    return {"inspector_s": statistics.median(inspector_s), "ours_s": statistics.median(ours_s), "command": " ".join(ours_cmd)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["xnnpack", "portable"], default="xnnpack")
    parser.add_argument("--layers", type=int, default=40)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3, help="Inspector runs per comparison (ours run more)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    etrecord, etdumps = ensure_data(args.backend, args.layers, args.iterations)
    from orchestrator.profiles.etdump import read_etdump

    events = len(read_etdump(etdumps[0]).events)
    library = bench_library(etrecord, etdumps[0], args.rounds)
    process = bench_process(etrecord, etdumps, max(1, args.rounds - 1))
    result = {
        "etdump_bytes": etdumps[0].stat().st_size,
        "events_per_file": events,
        "library": {**library, "ratio": library["inspector_s"] / library["ours_s"], "target": LIBRARY_TARGET},
        "process": {**process, "ratio": process["inspector_s"] / process["ours_s"], "target": PROCESS_TARGET},
    }
    ok = result["library"]["ratio"] >= LIBRARY_TARGET and result["process"]["ratio"] >= PROCESS_TARGET
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        lib, proc = result["library"], result["process"]
        print(f"data: {FILES} ETDumps of {events} events ({result['etdump_bytes'] / 1e6:.1f} MB each), {args.backend}, {args.layers} layers x {args.iterations} iterations")
        print(f"library, 1 file:       Inspector {lib['inspector_s']:.3f} s   analyze_files {lib['ours_s'] * 1000:.1f} ms   {lib['ratio']:.0f}x (target {LIBRARY_TARGET:.0f}x)")
        print(f"whole process, {FILES} files: Inspector script {proc['inspector_s']:.2f} s   etfarm analyze {proc['ours_s']:.2f} s   {proc['ratio']:.0f}x (target {PROCESS_TARGET:.0f}x)")
        print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Export recipes: the time each recipe takes to export a model, and the time of the per-layer accuracy analysis.

    python -m benchmarks.bench_recipes [--model configs/models/tiny_cnn.py:build] [--rounds 2] [--json]

1. Export, per recipe this ExecuTorch offers (`etfarm export --recipe NAME`, a fresh cache each round, so every
   round exports): the whole command from a cold interpreter, the export (`export_s` of the entry's meta.json:
   lowering, the program's own outputs, the numerics and eager references) and within it the lowering alone
   (`lower_s`: `executorch.export.export`), the program's size against fp32's, and for a quantizing recipe its
   accuracy on the host (the program's own outputs against the fp32 eager model's).
2. Per-layer accuracy (numerics/layer_accuracy.py: the quantized program's graph against the fp32 eager
   model, layer by layer), in process and torch-free, for each quantizing recipe, against the eager
   references' load alone.

Medians over rounds. No target: the figures go to benchmarks/README.md, "Recipes".
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
sys.path.insert(0, str(ROOT))

from orchestrator.artifacts.recipes import available_recipes  # noqa: E402 - after the sys.path line above

DEFAULT_MODEL = f"{ROOT / 'configs' / 'models' / 'tiny_cnn.py'}:build"


def export_once(model: str, recipe: str, cache: Path) -> dict[str, Any]:
    env = {**os.environ, "ETFARM_CACHE_DIR": str(cache)}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "export", model, "--recipe", recipe, "--json"],
                          capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return {"recipe": recipe, "error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    found = json.loads(done.stdout)
    meta = json.loads((Path(found["pte"]).parent / "meta.json").read_text())
    quantized = found["recipe"]["quantized"]
    return {"recipe": recipe, "command_s": wall, "export_s": meta["export_s"], "lower_s": meta["lower_s"],
            "pte_bytes": Path(found["pte"]).stat().st_size, "quantized": quantized,
            "calibration_batches": found["recipe"]["calibration_batches"],
            "accuracy": host_accuracy(found) if quantized else None, "numerics_reference": found["numerics_reference"],
            "eager_reference": found["eager_reference"]}


def host_accuracy(found: dict[str, Any]) -> float | None:
    """SNR (dB) of the program's own host outputs against the eager model's: what a device computing exactly
    the program's outputs would show."""
    from orchestrator.artifacts.tensorfile import read_tensors
    from orchestrator.results.accuracy import compare_outputs

    return compare_outputs(read_tensors(Path(found["eager_outputs"])),
                           read_tensors(Path(found["reference_outputs"]))).snr_db


def layer_seconds(program: str, eager: str, rounds: int) -> dict[str, float]:
    from orchestrator.numerics.layer_accuracy import layer_accuracy
    from orchestrator.numerics.sources import load_reference

    def timed(fn: Any) -> float:
        started = time.perf_counter()
        fn()
        return time.perf_counter() - started

    found = layer_accuracy("bench", program, eager)
    total = [timed(lambda: layer_accuracy("bench", program, eager)) for _ in range(5 * rounds)]
    load = [timed(lambda: (load_reference(program), load_reference(eager))) for _ in range(5 * rounds)]
    return {"layers": len(found.layers), "analysis_s": statistics.median(total), "load_s": statistics.median(load),
            "worst": found.worst.key.label if found.worst else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    recipes = list(available_recipes())
    rows: dict[str, list[dict[str, Any]]] = {r: [] for r in recipes}
    for _ in range(args.rounds):
        for recipe in recipes:  # interleaved: each round exports every recipe once, on a fresh cache
            with tempfile.TemporaryDirectory() as cache:
                found = export_once(args.model, recipe, Path(cache))
                if "error" not in found and found["quantized"]:
                    found.update(layer_seconds(found["numerics_reference"], found["eager_reference"], args.rounds))
                rows[recipe].append(found)
    summary = []
    fp32 = statistics.median(r["pte_bytes"] for r in rows.get("fp32", []) if "pte_bytes" in r) if rows.get("fp32") else None
    for recipe, found in rows.items():
        ok = [r for r in found if "error" not in r]
        if not ok:
            summary.append({"recipe": recipe, "error": found[0]["error"]})
            continue
        line = {"recipe": recipe, "export_s": statistics.median(r["export_s"] for r in ok),
                "lower_s": statistics.median(r["lower_s"] for r in ok),
                "command_s": statistics.median(r["command_s"] for r in ok), "pte_bytes": ok[0]["pte_bytes"],
                "of_fp32": ok[0]["pte_bytes"] / fp32 if fp32 else None, "host_snr_db": ok[0]["accuracy"],
                "calibration_batches": ok[0]["calibration_batches"]}
        if "analysis_s" in ok[0]:
            line.update(layers=ok[0]["layers"], worst=ok[0]["worst"],
                        layer_analysis_ms=1000 * statistics.median(r["analysis_s"] for r in ok),
                        reference_load_ms=1000 * statistics.median(r["load_s"] for r in ok))
        summary.append(line)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    for line in summary:
        if "error" in line:
            print(f"{line['recipe']:<24} FAILED: {line['error']}")
            continue
        snr = "-" if line["host_snr_db"] is None else f"{line['host_snr_db']:.1f} dB"
        layers = (f"  per-layer accuracy {line['layer_analysis_ms']:.1f} ms over {line['layers']} layers "
                  f"(loading the two references {line['reference_load_ms']:.1f} ms; loses most: {line['worst']})"
                  if "layer_analysis_ms" in line else "")
        print(f"{line['recipe']:<24} export {line['export_s']:5.1f} s (lowering {line['lower_s']:5.1f} s, command "
              f"{line['command_s']:5.1f} s)  "
              f"program {line['pte_bytes'] / 1024:6.1f} KiB ({line['of_fp32']:.0%} of fp32)  host SNR {snr}{layers}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run every benchmark in turn: `python -m benchmarks` (or `make bench`)."""

import runpy
import sys

BENCHMARKS = ("benchmarks.bench_analysis", "benchmarks.bench_hostile_etdump", "benchmarks.bench_push", "benchmarks.bench_fleet", "benchmarks.bench_numerics",
              "benchmarks.bench_report", "benchmarks.bench_runloop", "benchmarks.bench_verdicts", "benchmarks.bench_series",
              "benchmarks.bench_compare",
              "benchmarks.bench_farm", "benchmarks.bench_llm_decode", "benchmarks.bench_recipes",
              "benchmarks.bench_publish", "benchmarks.bench_bisect", "benchmarks.bench_energy")

for name in BENCHMARKS:
    print(f"== {name}", flush=True)
    sys.argv = [name]
    try:
        runpy.run_module(name, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            print(f"{name} exited {exc.code}", flush=True)

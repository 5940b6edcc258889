"""A hostile ETDump against an ordinary one of the same size: `etfarm analyze`, whole process.

    python -m benchmarks.bench_hostile_etdump [--size-mb 2] [--rounds 7] [--json]

Hostile: every profile event names one string of about `size` bytes, stored once and referenced by
every event (flatbuffers' shared strings), so a reader that widens its string matrix to the longest
name, or decodes per reference, pays for the name once per 8 bytes or once per event. Anchor: an
ordinary ETDump of about the same size (a 2-layer profile over many iterations, short names).
Both files are made with the test suite's ETDump builder (tests/helpers/etdumps.py) in a temporary
folder; the commands alternate round by round and medians are reported.

Target (issue 31): the hostile file under 0.5 s whole process. Exits 1 when it is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.helpers.etdumps import Profile, Run, build_etdump, typical_runs  # noqa: E402

TARGET_S = 0.5


def hostile(size: int) -> bytes:
    name = "x" * size
    return build_etdump([Run("Execute", [Profile(name, start=i, end=i + 1) for i in range(5000)])], shared_strings=True)


def ordinary(size: int) -> bytes:
    iterations = 50
    while True:
        data = build_etdump(typical_runs(iterations=iterations, layers=2))
        if len(data) >= size:
            return data
        iterations *= 2


def whole_process(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    size = int(args.size_mb * 1_000_000)
    base = [sys.executable, "-m", "orchestrator.cli"]  # this checkout's etfarm, whatever is installed
    with tempfile.TemporaryDirectory() as tmp:
        files = {"hostile": Path(tmp) / "hostile.etdp", "ordinary": Path(tmp) / "ordinary.etdp"}
        files["hostile"].write_bytes(hostile(size))
        files["ordinary"].write_bytes(ordinary(files["hostile"].stat().st_size))
        commands = {kind: [*base, "analyze", str(path)] for kind, path in files.items()}
        for command in commands.values():
            whole_process(command)  # warm-up: page cache, bytecode
        times: dict[str, list[float]] = {kind: [] for kind in files}
        for _ in range(args.rounds):
            for kind, command in commands.items():
                times[kind].append(whole_process(command))
        sizes = {kind: path.stat().st_size for kind, path in files.items()}
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    result = {
        "hostile_s": medians["hostile"], "ordinary_s": medians["ordinary"],
        "ratio": medians["hostile"] / medians["ordinary"], "sizes": sizes, "target_s": TARGET_S,
        "command": " ".join([*base, "analyze", "FILE"]),
    }
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"etfarm analyze, whole process, median of {args.rounds}:")
        print(f"  hostile  ({sizes['hostile'] / 1e6:.1f} MB, every event naming one long string): {medians['hostile']:.3f} s")
        print(f"  ordinary ({sizes['ordinary'] / 1e6:.1f} MB, short names):                       {medians['ordinary']:.3f} s")
        print(f"  hostile / ordinary: {result['ratio']:.2f}x; target hostile < {TARGET_S} s: "
              f"{'met' if medians['hostile'] < TARGET_S else 'MISSED'}")
    return 0 if medians["hostile"] < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())

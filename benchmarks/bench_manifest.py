"""How long reading a manifest takes, and what msgspec would change (issue 36 item 2, "one serializer").

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_manifest [--devices 8] [--models 16] [--runs 20]
        [--executions 200] [--rounds 5] [--json]

A job of `--devices` x `--models` x `--runs` traced process runs of `--executions` samples each, every field
set (tests/unit/run/golden_results.py `rich_job`'s device, model and run, copied), written as manifest.json.
The anchor is today's reader, `load_manifest` (json + base/codec.py). Beside it, best of `--rounds`:

- `json.loads` alone and `Job.from_dict` alone (the codec), to show where the time goes;
- `msgspec.json.decode` (untyped) + the codec: msgspec as the JSON parser only, everything else as today;
- `msgspec.convert` of every process run into `ProcessRun` (typed decoding, the bulk of a manifest), against the
  codec's `ProcessRun.from_dict` of the same dicts: what msgspec's own dataclass decoding would give where the
  manifest's layout lets it (the keyed mappings, flat config and derived `summary` of the file it cannot read
  without a reshaping step, and DeviceState's own JSON form needs a dec_hook).

msgspec is not a dependency: without it installed, its lines say so.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from orchestrator.results.model import Job, ProcessRun, load_manifest  # noqa: E402
from tests.unit.run.golden_results import rich_job  # noqa: E402


def big_job(devices: int, models: int, runs: int, executions: int) -> Job:
    job = rich_job()
    dev, model = next(iter(job.results()))
    rng = random.Random(0)
    traced = tuple(replace(model.runs[0], label=f"run-{k}", execute_ms=tuple(rng.uniform(1, 2) for _ in range(executions)),
                           contention=None, llm=None) for k in range(1, runs + 1))
    ms = tuple(replace(model, name=f"m{j}", runs=traced) for j in range(models))
    return replace(job, devices=tuple(replace(dev, name=f"d{i}", models=ms) for i in range(devices)))


def best(f: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    job = big_job(args.devices, args.models, args.runs, args.executions)
    folder = Path(tempfile.mkdtemp(prefix="bench-manifest-"))
    path = folder / "manifest.json"
    path.write_text(json.dumps(job.to_dict(), sort_keys=True))
    raw = path.read_bytes()
    data = json.loads(raw)
    run_dicts = [r.to_dict() for _, m in job.results() for r in m.runs]
    out: dict[str, Any] = {"manifest_bytes": len(raw), "process_runs": len(run_dicts)}
    out["load_manifest_s"] = best(lambda: load_manifest(path), args.rounds)
    out["json_loads_s"] = best(lambda: json.loads(raw), args.rounds)
    out["codec_decode_s"] = best(lambda: Job.from_dict(data), args.rounds)
    out["codec_runs_s"] = best(lambda: [ProcessRun.from_dict(r) for r in run_dicts], args.rounds)
    try:
        import msgspec
    except ImportError:
        out["msgspec"] = None
        return out
    out["msgspec"] = msgspec.__version__
    out["msgspec_parse_s"] = best(lambda: msgspec.json.decode(raw), args.rounds)
    out["msgspec_parse_codec_s"] = best(lambda: Job.from_dict(msgspec.json.decode(raw)), args.rounds)

    def hook(kind: type, value: Any) -> Any:
        if hasattr(kind, "from_json"):  # DeviceState: a JSON form of its own
            return kind.from_json(value)
        raise NotImplementedError(kind)

    try:
        typed = [msgspec.convert(r, ProcessRun, dec_hook=hook, strict=False) for r in run_dicts]
        out["msgspec_runs_equal"] = typed == [ProcessRun.from_dict(r) for r in run_dicts]
        out["msgspec_runs_s"] = best(lambda: [msgspec.convert(r, ProcessRun, dec_hook=hook, strict=False)
                                              for r in run_dicts], args.rounds)
    except (msgspec.ValidationError, NotImplementedError, TypeError) as exc:
        out["msgspec_runs_error"] = str(exc)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--models", type=int, default=16)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--executions", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    out = measure(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    anchor = out["load_manifest_s"]
    print(f"manifest.json {out['manifest_bytes'] / 1e6:.1f} MB, {out['process_runs']} process runs; best of {args.rounds}")
    print(f"  load_manifest (today: json + codec)   {anchor * 1e3:8.1f} ms   1.00x")
    print(f"    json.loads alone                    {out['json_loads_s'] * 1e3:8.1f} ms")
    print(f"    codec (Job.from_dict) alone         {out['codec_decode_s'] * 1e3:8.1f} ms")
    if out["msgspec"] is None:
        print("  msgspec: not installed (pip install msgspec to measure it)")
        return 0
    print(f"  msgspec {out['msgspec']}:")
    print(f"    msgspec.json.decode alone           {out['msgspec_parse_s'] * 1e3:8.1f} ms   "
          f"{out['json_loads_s'] / out['msgspec_parse_s']:.2f}x json.loads")
    print(f"    msgspec parse + codec               {out['msgspec_parse_codec_s'] * 1e3:8.1f} ms   "
          f"{anchor / out['msgspec_parse_codec_s']:.2f}x load_manifest")
    if "msgspec_runs_s" in out:
        print(f"    process runs, msgspec.convert       {out['msgspec_runs_s'] * 1e3:8.1f} ms   "
              f"{out['codec_runs_s'] / out['msgspec_runs_s']:.2f}x the codec's {out['codec_runs_s'] * 1e3:.1f} ms "
              f"(equal objects: {out['msgspec_runs_equal']})")
    else:
        print(f"    process runs, msgspec.convert: cannot decode them as they are: {out['msgspec_runs_error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`etfarm bisect` (issue 38): the must-hold on a real repository, and the commits measured for longer ranges.

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_bisect [--culprit K] [--trials T] [--skip-real] [--json]

Real: a repository of 9 commits (GOOD and 8 after it) made in a temporary directory: GOOD has the 40-layer MLP
of configs/models/deep_mlp.py, commit K (default 5) adds 6 layers (46: about +15 %), every other commit
changes a notes file or a comment in the model file. `etfarm bisect --devices local` with run's default
measurement options (5 process runs x 20 iterations, --until-confident up to 40 runs per side), as a whole
command in its own process, its own store, temporary folders and (unless --warm) export and runner cache. The must-hold: it names commit K after
measuring at most 6 commits, in under 25 minutes.

Simulated: ranges of 8, 64 and 512 commits in which every commit changes the program (no program measured
twice: the worst case) and the culprit sits at each position in turn; bisect_search.search probes them, a
step deciding as the real run's steps did. Time is the probes times the real run's cost of a step (its A/B
job's wall time from the manifests, plus the rest of the command's time per probe: exports, worktrees);
with --inconclusive P a step stays inconclusive with probability P (set aside, as a skipped commit is).
Prints the commits measured (mean and most) and the time the most would take.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from orchestrator.app.bisect_search import Outcome, Step, search  # noqa: E402
from tests.helpers.git_repo import FACTORY, MODEL, make_repo, mlp_source  # noqa: E402

MUST_MEASURE_AT_MOST = 6
MUST_TAKE_UNDER_S = 25 * 60


def real(culprit: int, folder: Path, warm: bool) -> dict[str, Any]:
    """The 9-commit repository bisected by `etfarm bisect` in its own process; cold: its own empty cache (every
    export and the runner's build are part of the time)."""
    commits: list[tuple[str, dict[str, str]]] = [("a 40-layer MLP", {MODEL: mlp_source(40), "NOTES.md": "v0\n"})]
    depth, note = 40, ""
    for k in range(1, 9):
        if k == culprit:
            depth = 46
            commits.append(("model: 6 more layers", {MODEL: mlp_source(depth, note)}))
        elif k % 2:
            commits.append((f"notes {k}", {"NOTES.md": f"v{k}\n"}))
        else:
            note = f"comment {k}"
            commits.append((f"model: comment {k}", {MODEL: mlp_source(depth, note)}))
    shas = make_repo(folder / "repo", commits)
    env = {**os.environ, "TMPDIR": str(folder), "ETFARM_STORE": str(folder / "results.db"),
           **({} if warm else {"ETFARM_CACHE_DIR": str(folder / "cache")})}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "bisect", "--repo", str(folder / "repo"),
                           "--good", shas[0], "--bad", shas[-1], "--model", f"{MODEL}:{FACTORY}", "--devices", "local",
                           "--out", str(folder / "out"), "--json"], env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    if not done.stdout.strip():
        raise SystemExit(f"bisect printed nothing (exit {done.returncode}): {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    ab_s = sum(_job_seconds(m) for m in (folder / "out").glob("*/manifest.json"))
    return {"exit": done.returncode, "ab_seconds": round(ab_s, 1),
            "other_seconds_per_probe": round((seconds - ab_s) / max(1, len(result["steps"])), 1), "found": result["culprit"] == shas[culprit], "culprit_index": culprit,
            "measured": len(result["measured"]), "probes": len(result["steps"]), "seconds": round(seconds, 1),
            "steps": [(s["sha"][:8], s["verdict"], s["ratio"], s["measured"]) for s in result["steps"]],
            "against_good": result["against_good"]}


def _job_seconds(manifest: Path) -> float:
    """A job's wall time from its manifest (started, finished: ISO 8601)."""
    data = json.loads(manifest.read_text())
    started, finished = (datetime.strptime(data[k], "%Y-%m-%dT%H:%M:%S%z") for k in ("started", "finished"))
    return (finished - started).total_seconds()


def simulated(count: int, inconclusive: float, trials: int, seed: int) -> dict[str, Any]:
    """Commits measured over every culprit position (and `trials` noisy passes when `inconclusive` > 0)."""
    rng = random.Random(seed)
    measured, found = [], 0
    for _ in range(max(1, trials if inconclusive else 1)):
        for culprit in range(count):
            asked: list[int] = []

            def probe(index: int, culprit: int = culprit, asked: list[int] = asked) -> Step:
                asked.append(index)
                if index != count - 1 and rng.random() < inconclusive:
                    return Step(str(index), "", Outcome.UNDECIDED, "inconclusive", measured=True)
                slower = index >= culprit
                return Step(str(index), "", Outcome.SLOWER if slower else Outcome.NOT_SLOWER, "", measured=True)

            result = search(count, probe)
            measured.append(len(asked))
            found += result.culprit == culprit
    return {"commits": count, "inconclusive": inconclusive, "mean_measured": round(sum(measured) / len(measured), 2),
            "most_measured": max(measured), "named": round(found / len(measured), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--culprit", type=int, default=5, help="the commit (1-8) that adds the layers")
    parser.add_argument("--inconclusive", type=float, default=0.1, help="simulated: chance a step cannot tell")
    parser.add_argument("--trials", type=int, default=20, help="simulated noisy passes per range")
    parser.add_argument("--step-s", type=float, help="simulated: seconds per measured step, export and A/B job "
                                                     "(default: the real run's)")
    parser.add_argument("--skip-real", action="store_true", help="simulated ranges only (then give --step-s)")
    parser.add_argument("--warm", action="store_true", help="use the shared export and runner cache (default: cold)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    step_s = args.step_s
    if not args.skip_real:
        with tempfile.TemporaryDirectory(prefix="etfarm-bench-bisect-") as tmp:
            results["real"] = found = real(args.culprit, Path(tmp), args.warm)
        # a simulated step: an A/B job as the real run's took, and the export and worktree of a probe as they took
        step_s = step_s or found["ab_seconds"] / max(1, found["measured"]) + found["other_seconds_per_probe"]
        holds = found["found"] and found["measured"] <= MUST_MEASURE_AT_MOST and found["seconds"] < MUST_TAKE_UNDER_S
        print(f"real, 9 commits (culprit at {args.culprit}, {'warm' if args.warm else 'cold'} cache): exit {found['exit']}, culprit named {found['found']}, "
              f"{found['measured']} commit(s) measured of {found['probes']} probed, {found['seconds']} s; must-hold "
              f"(<= {MUST_MEASURE_AT_MOST} measured, < {MUST_TAKE_UNDER_S // 60} min): {'holds' if holds else 'FAILS'}")
        print(f"  steps: {found['steps']}; against good: {found['against_good']}; A/B jobs {found['ab_seconds']} s, "
              f"the rest {found['other_seconds_per_probe']} s a probe (exports, worktrees, torch's import once)")
    step_s = step_s or 60.0
    for count in (8, 64, 512):
        for p in (0.0, args.inconclusive):
            row = simulated(count, p, args.trials, seed=count)
            row["most_minutes"] = round(row["most_measured"] * step_s / 60, 1)
            results[f"simulated-{count}-{p}"] = row
            print(f"simulated {count:4d} commits, inconclusive {p:.0%}: measured mean {row['mean_measured']}, most "
                  f"{row['most_measured']} (~{row['most_minutes']} min at {step_s:.0f} s a step), culprit named "
                  f"{row['named']:.0%}")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

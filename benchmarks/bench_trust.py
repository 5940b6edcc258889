"""Verdicts you can trust on any machine (issue 37): false alarms, interval coverage and power per environment.

    PYTHONPATH=. .venv/bin/python -m benchmarks.bench_trust [--corpus FILE... [--corpus FILE...]] [--center auto mean
        fast-state paired] [--json]

Replays the noise corpus (benchmarks/noise_corpus.py records it; tests/unit/verdicts/fixtures/noise_corpus.npz:
real tiny_cnn jobs, 10 process runs x 30 executions, under quiet / blas / bursty / quota / slow) through the
verdicts' own code (compare.compare_sides: end to end and every op, trust.py's rules), per environment:
- compare: every ordered pair of the environment's separate jobs (6 jobs: 30 pairs), as `etfarm compare A B` with a
  store holding the recording's separate jobs (what they show of the machine's speed states: device_states.py);
- run --ab: each A/B job of tiny_cnn against a byte-identical copy (A B B A in one job), both ways round;
- --until-confident: run --ab's pairs, and while one is inconclusive end to end the environment's next A/B job's
  rounds pooled in (as `run --ab --until-confident` pools its extra jobs), up to `run --ab`'s default --max-runs a side;
- nightly: every ordered pair of the environment's separate jobs as (last good, night) (no history: no noise
  floor; the store's view of speed states, as compare's); a night that is regressed
  or could not be judged is settled by an interleaved A/B job of the same environment (issue 37 item 4, as
  `run --ab` would: the corpus's A/B jobs, B slowed as the night was), whose verdict is the night's (as the
  nightly confirms when the baseline's program can be found: app/confirm_ab.py), more of them pooled while it is
  inconclusive, up to a plan's default `confirm_max_runs` a side.
For each: false `regressed` (any verdict, end to end or per op, on identical programs; target <= 1 %), the share
the verdicts could not judge (inconclusive: exit 3), interval coverage end to end (the 95 % interval holds 1 on
identical programs, and the injected factor on slowed ones; target >= 90 %), and power: B's samples (end to end
and every op) multiplied by 1.05, 1.10 and 2 (the share called `regressed` end to end); "power op 2x": B's first
max-pool alone twice as slow (~4 % of the model, under the end-to-end threshold), the share whose verdict on that
op is `regressed`. Per environment, how many A/B jobs' own intervals hold 1 (coverage by job, the unit its
intervals share), with an exact binomial interval. Each recording (one machine: the first VM's two files, the
second VM's noise_corpus_states.npz) is scored apart: separate jobs of two machines are no A/A pair.
Thresholds: the defaults (5 % end to end, 10 % per op). `--center paired` scores interleaved jobs' paired estimator
(verdicts/paired.py) on the interleaved rows only (run --ab, --until-confident, the nightly's settlement).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS  # noqa: E402
from orchestrator.verdicts.compare import PairVerdict, Side, compare_sides  # noqa: E402
from orchestrator.verdicts.confirmation import must_show_again, suspected  # noqa: E402
from orchestrator.verdicts.device_states import DeviceStates, has_states  # noqa: E402
from orchestrator.verdicts.paired import PAIRED, by_round  # noqa: E402
from orchestrator.verdicts.statistics import Verdict, VerdictSettings, run_median  # noqa: E402
from orchestrator.verdicts.trust import JOB_SHIFT_SD  # noqa: E402
from tests.helpers.noise_corpus import (  # noqa: E402
    CORPUS,
    CORPUS_AB,
    CORPUS_STATES,
    Recorded,
    envs,
    load,
    op_slowed,
    pooled,
    slowed,
    stored_states,
    taking_turns,
)

FACTORS = (1.05, 1.10, 2.0)
# one layer twice as slow: tiny_cnn's first max-pool, ~4 % of the model's time (under the 5 % end-to-end threshold,
# so only its per-op verdict can find it): "power op 2x" is the share of pairs whose verdict on that op is `regressed`
ONE_OP, ONE_OP_FACTOR = "features.2 max_pool2d", 2.0
Slow = Callable[[Side], Side]
Record = Callable[[PairVerdict], None]


def by_factor(factor: float) -> Slow:
    return lambda side: slowed(side, factor)


def one_op_slowed(side: Side) -> Side:
    return op_slowed(side, ONE_OP, ONE_OP_FACTOR)


@dataclass
class Tally:
    """Counts over one (environment, mode, center)."""

    pairs: int = 0
    false_regressed: int = 0
    false_ops: int = 0  # of which only an op regressed
    unjudged: int = 0
    covered: int = 0
    intervals: int = 0
    power: dict[float, list[int]] = field(default_factory=lambda: {f: [0, 0] for f in FACTORS})
    covered_slow: dict[float, list[int]] = field(default_factory=lambda: {f: [0, 0] for f in FACTORS})
    op_power: list[int] = field(default_factory=lambda: [0, 0])

    def injections(self) -> list[tuple[Record, Slow | None]]:
        """What each pair is scored under, and where its verdict is counted: as recorded (the A/A), B slowed by each
        factor, and B's one op slowed."""
        return [(self.aa, None), *((functools.partial(self.slow, f), by_factor(f)) for f in FACTORS),
                (self.one_op, one_op_slowed)]

    def one_op(self, pair: PairVerdict) -> None:
        self.op_power[0] += any(o.op == ONE_OP and o.verdict is Verdict.REGRESSED for o in pair.ops)
        self.op_power[1] += 1

    def aa(self, pair: PairVerdict) -> None:
        self.pairs += 1
        self.false_regressed += pair.regressed
        self.false_ops += pair.regressed and pair.verdict is not Verdict.REGRESSED
        self.unjudged += pair.unjudged
        self._cover(pair, 1.0, None)

    def slow(self, factor: float, pair: PairVerdict) -> None:
        self.power[factor][0] += pair.verdict is Verdict.REGRESSED
        self.power[factor][1] += 1
        self._cover(pair, factor, factor)

    def _cover(self, pair: PairVerdict, truth: float, factor: float | None) -> None:
        est = pair.estimate
        if est is None:
            return
        hit = est.ci_low <= truth <= est.ci_high
        if factor is None:
            self.covered += hit
            self.intervals += 1
        else:
            self.covered_slow[factor][0] += hit
            self.covered_slow[factor][1] += 1

    def row(self) -> dict[str, object]:
        def share(k: int, n: int) -> str:
            return f"{k / n:.0%} ({k}/{n})" if n else "-"

        covered = self.covered + sum(c[0] for c in self.covered_slow.values())
        intervals = self.intervals + sum(c[1] for c in self.covered_slow.values())
        return {"pairs": self.pairs, "false regressed": share(self.false_regressed, self.pairs),
                "of which per op only": self.false_ops, "could not judge (A/A)": share(self.unjudged, self.pairs),
                "coverage": share(covered, intervals),
                **{f"power {f:g}x": share(*self.power[f]) for f in FACTORS},
                f"power op {ONE_OP_FACTOR:g}x": share(*self.op_power)}


def compare_pairs(jobs: list[Side]) -> Iterable[tuple[Side, Side]]:
    return itertools.permutations(jobs, 2)


def ab_pairs(abs_: list[Recorded]) -> Iterable[tuple[Side, Side]]:
    for job in abs_:
        a, b = by_round(job.sides["cnn-a"], job.sides["cnn-b"])  # round k of A beside round k of B (aligned already)
        yield a, b
        yield b, a


def score(pairs: Iterable[tuple[Side, Side]], settings: VerdictSettings, states: DeviceStates | None = None) -> Tally:
    tally = Tally()
    for a, b in pairs:
        for record, slow in tally.injections():
            record(compare_sides(a, slow(b) if slow is not None else b, settings, states=states))
    return tally


def score_until_confident(abs_: list[Recorded], settings: VerdictSettings,
                          max_runs: int = UNTIL_CONFIDENT_MAX_RUNS) -> Tally:
    """`run --ab --until-confident`: each A/B job (both ways round), and while its end-to-end verdict is inconclusive,
    the environment's next A/B job's rounds pooled in (as run_ab pools its extra jobs, taking turns to start), up to
    `max_runs` a side. The extra rounds are the environment's other jobs' (pairs share jobs: not independent)."""
    tally = Tally()
    for k in range(len(abs_)):
        jobs = abs_[k:] + abs_[:k]
        for first, second in (("cnn-a", "cnn-b"), ("cnn-b", "cnn-a")):
            for record, slow in tally.injections():
                record(until_confident(jobs, first, second, settings, slow, max_runs))
    return tally


def until_confident(jobs: list[Recorded], first: str, second: str, settings: VerdictSettings, slow: Slow | None,
                    max_runs: int, states: DeviceStates | None = None) -> PairVerdict:
    """The pair of the first A/B job, and while it is inconclusive the next jobs pooled in (app/ab.py
    `pool_until_confident`), B slowed by `slow` (None: as recorded), up to `max_runs` a side; with the device's
    `states` (a night's confirmation), a change of the first job within their span pooled once more."""
    pair, used = None, 0

    def doubted(pair: PairVerdict) -> bool:
        return pair.verdict is Verdict.INCONCLUSIVE or must_show_again(pair, used, settings.threshold, states)

    while used < len(jobs) and (pair is None or doubted(pair)):
        used += 1
        a, b = (pooled(sides) for sides in taking_turns(jobs[:used], first, second))
        if pair is not None and len(b.runs) > max_runs:
            break
        pair = compare_sides(a, slow(b) if slow is not None else b, settings)
    assert pair is not None
    return pair


def score_nights(jobs: list[Side], abs_: list[Recorded], settings: VerdictSettings,
                 confirming: VerdictSettings | None = None, states: DeviceStates | None = None) -> Tally:
    """Every ordered pair of the environment's separate jobs as (last good night, night): 30 nights of 6 jobs, where
    each job against the one before gave only 5, too few to tell 60 % power from 90 %. A night regressed or not
    judged is settled by an interleaved A/B job, more pooled while inconclusive (up to the plan's default
    confirm_max_runs a side, as app/nightly.py confirms), judged with `confirming` (default `settings`); the nights
    start their confirmations at each A/B job in turn, taking each side order in turn."""
    tally = Tally()
    for k, (base, night) in enumerate(itertools.permutations(jobs, 2), start=1):
        shift = k % len(abs_)
        settling = abs_[shift:] + abs_[:shift]
        # each round of len(abs_) nights flips the side order, so every (first job, side order) comes up
        sides = ("cnn-a", "cnn-b") if (k + k // len(abs_)) % 2 else ("cnn-b", "cnn-a")
        for record, slow in tally.injections():
            first = compare_sides(base, slow(night) if slow is not None else night, settings, states=states)
            if suspected(first):  # what a night sends to its interleaved confirmation
                first = until_confident(settling, *sides, confirming or settings, slow, UNTIL_CONFIDENT_MAX_RUNS,
                                        states)
            record(first)
    return tally


def measure(corpus: tuple[Recorded, ...], centers: list[str],
            held: dict[str, tuple[int, int]]) -> dict[str, dict[str, dict[str, object]]]:
    """Every mode's row per environment and center; `held`: each environment's A/B jobs whose interval holds 1."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    states = stored_states(corpus)
    print(f"  {states.describe() if has_states(states) else 'no speed states in the stored jobs'}", file=sys.stderr)
    for env in envs(corpus):
        jobs = [r.sides["cnn"] for r in corpus if r.env == env and r.kind == "job"]
        abs_ = [r for r in corpus if r.env == env and r.kind == "ab"]
        out.setdefault(env, {})["jobs"] = {**_describe(jobs), "A/B jobs whose interval holds 1": coverage_text(*held[env])}
        for center in centers:
            settings = VerdictSettings(center=center, job_shift=JOB_SHIFT_SD)  # as `etfarm compare` sets it
            if center == PAIRED:  # interleaved jobs only: the night's own job against its last good is separate jobs
                ab = VerdictSettings(center=PAIRED)
                out[env][f"run --ab, {center}"] = score(ab_pairs(abs_), ab).row()
                out[env][f"--until-confident, {center}"] = score_until_confident(abs_, ab).row()
                out[env][f"nightly, {center}"] = score_nights(jobs, abs_, replace(settings, center="mean"), ab,
                                                              states).row()
                continue
            out.setdefault(env, {})[f"compare, {center}"] = score(compare_pairs(jobs), settings, states).row()
            out[env][f"run --ab, {center}"] = score(ab_pairs(abs_), settings).row()
            out[env][f"--until-confident, {center}"] = score_until_confident(abs_, replace(settings, job_shift=0)).row()
            out[env][f"nightly, {center}"] = score_nights(jobs, abs_, settings, states=states).row()
            print(f"  {env} {center} done", file=sys.stderr, flush=True)
    return out


def _held(abs_: list[Recorded]) -> tuple[int, int]:
    """How many of the A/B jobs' own end-to-end 95 % intervals (`run --ab --once`, A against its copy, etfarm's
    defaults) hold 1: coverage counted by job, the unit its intervals share (both ways round and every injected
    factor are the same samples), with its exact (Clopper-Pearson) 95 % interval."""
    held = 0
    for job in abs_:
        est = compare_sides(*by_round(job.sides["cnn-a"], job.sides["cnn-b"]), per_op=False).estimate
        held += est is not None and est.ci_low <= 1.0 <= est.ci_high
    return held, len(abs_)


def coverage_text(held: int, jobs: int) -> str:
    from scipy.stats import binomtest

    if not jobs:
        return "-"
    ci = binomtest(held, jobs).proportion_ci(confidence_level=0.95, method="exact")
    return f"{held}/{jobs} ({held / jobs:.0%}, 95% CI {ci.low:.0%}-{ci.high:.0%})"


def _describe(jobs: list[Side]) -> dict[str, object]:
    """The environment's jobs: contended share, executions dropped, the spread of the job statistic between jobs
    and of run medians within them (what a compare of two separate jobs cannot see: the former)."""
    import numpy as np

    levels = np.log([run_median(s.e2e) for s in jobs])
    within = [np.std(np.log([np.median(r) for r in s.e2e if len(r)])) for s in jobs]
    shares = [s.load.share for s in jobs if s.load is not None]
    return {"contended": f"{min(shares):.0%}-{max(shares):.0%}" if shares else "not measured",
            "dropped": sum(s.dropped for s in jobs), "job-to-job sd": f"{np.std(levels, ddof=1):.1%}",
            "run-to-run sd": f"{np.mean(within):.1%}"}


def markdown(results: dict[str, dict[str, dict[str, object]]]) -> str:
    lines = []
    for env, rows in results.items():
        rows = dict(rows)
        jobs = rows.pop("jobs")
        columns = list(next(iter(rows.values())).keys())
        lines += [f"**{env}** (jobs: " + ", ".join(f"{k} {v}" for k, v in jobs.items()) + ")", ""]
        lines += ["| | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
        lines += [f"| {name} | " + " | ".join(str(v) for v in row.values()) + " |" for name, row in rows.items()]
        lines.append("")
    return "\n".join(lines)


RECORDINGS = ((CORPUS, CORPUS_AB), (CORPUS_STATES,))  # one machine each: the first VM's two files, the second VM's


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, nargs="+", action="append",
                        help="corpus files of one recording (one machine), their jobs pooled per environment; repeat "
                             "for another recording, scored apart (separate jobs of two machines are no A/A pair). "
                             "Default: the first VM's fixture and its A/B extension, then the second VM's corpus")
    parser.add_argument("--center", nargs="+", default=["auto"],
                        help=f"statistics to score (default: auto, etfarm's); {PAIRED!r}: interleaved jobs' paired "
                             "estimator (verdicts/paired.py), scored on run --ab and the nightly's interleaved "
                             "settlement only")
    parser.add_argument("--raw", action="store_true", help="every execution, as if no contention were measured")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    recordings = args.corpus or [[path for path in files if path.is_file()] for files in RECORDINGS]
    results = {}
    for files in recordings:
        name = " + ".join(path.name for path in files)
        print(f"{name}:", file=sys.stderr, flush=True)
        corpus = tuple(job for path in files for job in load(path, clean=not args.raw))
        held = {env: _held([r for r in corpus if r.env == env and r.kind == "ab"]) for env in envs(corpus)}
        results[name] = measure(corpus, args.center, held)
        total = coverage_text(sum(k for k, _ in held.values()), sum(n for _, n in held.values()))
        print(f"{name}: A/B jobs whose interval holds 1, all environments: {total}", file=sys.stderr)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print("\n".join(f"### {name}\n\n{markdown(found)}" for name, found in results.items()))
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Paired verdicts for interleaved jobs: B against A round by round (issue 37).

An interleaved job (`run --ab`, `--until-confident`'s extra jobs, a night's interleaved confirmation) runs its two
programs A B B A A B ... (run/schedule.py: round k runs both programs' `run-k` back to back). Adjacent runs of a
round share the machine's state (drift, heat, a neighbour's burst), so the round, not the side, is the unit: each
round gives one log ratio d_k = log(median of B's run k / median of A's run k), the within-round state cancels, and
the estimate and its interval are over rounds:

- the ratio: exp(mean of d_k) (over complete ABBA blocks a linear drift cancels exactly);
- its interval: Student's t on the d_k (n - 1 degrees of freedom, scipy.special);
- the test: the paired t test on the d_k, two-sided.

A job's sides are aligned first (`by_round`): run k of A with run k of B, a round missing a side left out. When the
runs of a pair cannot be paired (unequal counts, fewer than two usable rounds: an op timed only on some runs) the
pair falls back to the unpaired estimate (statistics.py, mean of per-run medians).

NOT the default of any command. Measured on the noise corpus against the unpaired estimate interleaved jobs use
(`PYTHONPATH=. .venv/bin/python -m benchmarks.bench_trust --center mean paired`; benchmarks/README.md "Trust"): no
false `regressed` either way, but coverage no better (quiet run --ab 75 % against 100 %, bursty 75 % both) and power
at +10 % mixed (quiet 50 % against 38 %, bursty 62 % against 75 %). Adjacent runs are correlated (0.3 on average:
pairing cuts the variance of a round's ratio by a quarter), but the intervals it then gives are narrower than the
truth allows: in 3 of the 20 recorded A/B jobs the byte-identical copy ran 2-3 % slower round after round (7-9 of
10 rounds), an effect of the program instance, not of drift, that no within-job estimator can remove. Kept for
measurement (`center="paired"` reaches it through this module's estimate / estimate_many, which compare.py calls;
never a `--center` choice).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from orchestrator.verdicts import statistics
from orchestrator.verdicts.estimates import run_medians
from orchestrator.verdicts.statistics import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, Center, Estimate, RunSamples

if TYPE_CHECKING:
    from orchestrator.verdicts.compare import Side

PAIRED = "paired"  # the center value that selects this estimator (never a --center choice; statistics.statistic_name)


def estimate(a: RunSamples, b: RunSamples, *, confidence: float = DEFAULT_CONFIDENCE,
             resamples: int = DEFAULT_RESAMPLES, seed: int = 0, center: str = Center.MEAN,
             interleaved: bool = False) -> Estimate | None:
    """statistics.estimate, or the paired estimate when `center` is PAIRED."""
    return estimate_many([(a, b)], confidence=confidence, resamples=resamples, seed=seed, center=center,
                         interleaved=interleaved)[0]


def estimate_many(pairs: Sequence[tuple[RunSamples, RunSamples]], *, confidence: float = DEFAULT_CONFIDENCE,
                  resamples: int = DEFAULT_RESAMPLES, seed: int = 0, center: str = Center.MEAN,
                  interleaved: bool = False) -> list[Estimate | None]:
    """statistics.estimate_many, or the paired estimates when `center` is PAIRED (what compare.py calls)."""
    if center == PAIRED:
        return paired_estimates(pairs, confidence, resamples, seed)
    return statistics.estimate_many(pairs, confidence=confidence, resamples=resamples, seed=seed, center=center,
                                    interleaved=interleaved)


def paired_estimates(pairs: Sequence[tuple[RunSamples, RunSamples]], confidence: float, resamples: int,
                     seed: int) -> list[Estimate | None]:
    """One estimate per (A's runs, B's runs), runs paired by position (round); unpaired where they cannot be."""
    out: list[Estimate | None] = []
    fallback: list[int] = []
    for a, b in pairs:
        found = _paired(a, b, confidence)
        out.append(found)
        if found is None:
            fallback.append(len(out) - 1)
    if fallback:
        unpaired = statistics.estimate_many([pairs[k] for k in fallback], confidence=confidence, resamples=resamples, seed=seed,
                                 center=Center.MEAN)
        for k, est in zip(fallback, unpaired, strict=True):
            out[k] = est
    return out


def round_ratios(a: RunSamples, b: RunSamples) -> list[float] | None:
    """log(B's run median / A's) per round, rounds with samples on both sides; None when the runs cannot be paired."""
    import numpy as np

    if len(a) != len(b):
        return None
    logs = []
    for run_a, run_b in zip(a, b, strict=True):
        if len(run_a) and len(run_b):
            med_a, med_b = float(np.median(run_a)), float(np.median(run_b))
            if not (med_a > 0 and med_b > 0):
                return None
            logs.append(math.log(med_b / med_a))
    return logs if len(logs) >= 2 else None


def _paired(a: RunSamples, b: RunSamples, confidence: float) -> Estimate | None:
    import numpy as np
    from scipy.special import stdtr, stdtrit

    logs = round_ratios(a, b)
    if logs is None:
        return None
    d = np.asarray(logs)
    n, mean = len(d), float(d.mean())
    se = float(d.std(ddof=1)) / math.sqrt(n)
    half = float(stdtrit(n - 1, 0.5 + confidence / 2)) * se
    # every round the same ratio (no spread): certain of it, unless it is no change at all
    p = 2.0 * float(stdtr(n - 1, -abs(mean) / se)) if se > 0 else float(mean == 0)
    med_a, med_b = run_medians(a), run_medians(b)
    return Estimate(ratio=math.exp(mean), ci_low=math.exp(mean - half), ci_high=math.exp(mean + half), p_value=p,
                    runs_a=len(med_a), runs_b=len(med_b), median_a_ms=float(np.mean(med_a)),
                    median_b_ms=float(np.mean(med_b)))


def by_round(a: Side, b: Side) -> tuple[Side, Side]:
    """A's and B's runs of one job in round order, only the rounds both sides ran (labels `run-<k>`), and only where
    both runs have an ETDump or neither has (per-op samples pair by position too); a side without data is kept."""
    if a.missing is not None or b.missing is not None:
        return a, b
    runs_b = {r.label: r for r in b.runs}
    keep = [r.label for r in a.runs if r.label in runs_b and (r.etdump is None) == (runs_b[r.label].etdump is None)]
    if Counter(r.label for r in a.runs) != Counter(r.label for r in b.runs) or keep != [r.label for r in b.runs]:
        return _only(a, keep), _only(b, keep)
    return a, b


def _only(side: Side, labels: list[str]) -> Side:
    """The side with only the runs `labels` names, in that order (and its in-memory per-op samples alike)."""
    index = {r.label: k for k, r in enumerate(side.runs)}
    order = [index[label] for label in labels]
    ops = side.op_samples
    if ops is not None:
        from orchestrator.verdicts.op_samples import OpSamples

        ops = OpSamples({key: (i, [arrays[k] for k in order if k < len(arrays)]) for key, (i, arrays) in ops.ops.items()},
                        ops.names)
    return replace(side, runs=tuple(side.runs[k] for k in order), op_samples=ops)

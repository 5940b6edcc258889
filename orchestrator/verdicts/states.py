"""The `fast-state` statistic: which speed state each process run landed in, and B/A within the fast state.

Why (docs/architecture.md, "Facts"; measured again for issue 32): on the testbed a runner process settles
for its whole life in one of a few speed states, the 40-layer MLP at ~24.5 us, ~34 us (1.4x) or, rarely,
~49 us (2x); which one is luck per process and per job, and one job in about 40 had no run in the fast state
at all. Within a state the per-run medians spread by ~1-2 %. So the speed of a model is the level of its
fastest state, and its noise is the spread within a state, not the spread between states. The `fast`
statistic (the minimum of the per-run medians) aims at the same level, but its bootstrap interval is that
of an extreme order statistic, which jumps whenever a resample leaves out the fastest runs ([1.006, 2.248]
on nights within 1 %); and a side with no run in the fast state moves it by a whole state (1.56x on an A/A).

Method, on the log of each side's per-run medians:
- states: sorted, a new state begins wherever two neighbours are more than STATE_GAP apart (8 %: the
  states here are >= 25 % apart, neighbours within a state < 7 %);
- the estimate: the ratio of the two sides' fastest-state levels (each the mean log of its runs);
- its interval: Student's t with the spread WITHIN states pooled over both sides' states (every run
  counts, whichever state it is in; df = runs - states; the spread is floored at MIN_SPREAD so that
  timer-quantised ops with identical medians are not infinitely precise); the p-value is the same t test;
- states that may not match: a side's fastest state is only comparable with the other's if both reached
  it. When one side's fastest runs are clearly slower than the other's fastest (beyond STATE_GAP), "its
  fastest state is the other's state k" (it missed k states, as one job in 30 misses the fast state) is a
  further reading wherever it explains how the side's runs share its states about as well as the plain
  reading (a multinomial likelihood with the other side's shares, within a ratio of PLAUSIBLE, weighed by
  MISSED_FAST for each event rarer than one job missing the fast state; sides that took turns in the same jobs by
  the chance that none of the other side's faster runs was theirs, `missed_together`, end to end: compare.py);
  the interval is then the union of the readings' intervals and the p-value their largest. A job wholly in
  the slow state (most runs on its first state, few above) against a mixed one is then about [1.0, 1.4] --
  `inconclusive`, with the reason in `note` -- while a change under STATE_GAP is never ambiguous, and a slower
  model whose runs share the states as usual is read as what it is (a 2x model's job wholly in its slow state
  spans [2.0, 2.8]: still `regressed`, and the interval holds the true 2.0). The states on the testbed form a ladder (1, 1.4, 2x),
  so a 2x model in its fast state runs at the speed of a baseline process in the 2x state: about 1 pair of
  700 of 2x against base (synthetic, 6-10 runs) stays `inconclusive`. PLAUSIBLE = 10 was chosen by measurement: 0 of 780
  recorded identical pairs regressed at 20, 10 and 5; 10 % more layers found in 85, 92, 92 of 96; synthetic
  coverage 94-96 % at each (benchmarks/README.md "Verdicts: the statistics and the nights").
Two one-state sides in different states cannot be told from a regression by any statistic of one job a
side; the nightly's confirmation job and its series reference (series.py: many jobs, every state) catch it.
numpy and scipy.special only (no scipy.stats import).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

STATE_GAP = math.log(1.08)  # neighbouring per-run medians further apart than 8 % are different states
MIN_SPREAD = 0.005  # log units: the within-state spread is taken as at least 0.5 %
PLAUSIBLE = 10.0  # a reading of the states is kept while it explains the runs within this likelihood ratio
MISSED_FAST = 1 / 30  # how often a whole job has no run in a state (1 of the 58 recorded jobs, 1 in 30 in the model)
OFF_LADDER = 0.05  # the chance of a run's state lying on no state of the other side
# Runs "split into speed states" (`splits`: the `auto` statistic's switch to this model) when at least two of them
# sit in states this much slower than the fastest state: the testbed's states are 1.4x and 2x apart, while on the
# noise corpus of issue 37 (tiny_cnn, five environments, 70 jobs) no job's end-to-end runs split at 1.2 (6 did at
# STATE_GAP's 1.08: contention spreads runs, it does not make states).
SPLIT = math.log(1.2)
BRIDGE_SHARE = 0.02  # in a pool of 100 runs or more, a run with under 2 % of the runs near it is between states


@dataclass(frozen=True)
class States:
    """One side's process runs by speed state, fastest first (log per-run medians)."""

    levels: tuple[float, ...]  # mean log per-run median of each state
    counts: tuple[int, ...]  # runs in each state
    within: float  # sum of squared log deviations from the state levels

    @property
    def runs(self) -> int:
        return sum(self.counts)

    def describe(self) -> str:
        fastest = math.exp(self.levels[0])
        return " + ".join(f"{c} at {math.exp(level) / fastest:.2f}x" if k else f"{c} fast"
                          for k, (level, c) in enumerate(zip(self.levels, self.counts, strict=True)))


def states_of(medians: Sequence[float]) -> States | None:
    """The states of runs whose medians (ms) are given; None when no median is positive."""
    import numpy as np

    logs = np.sort(np.log(np.asarray([m for m in medians if m > 0 and math.isfinite(m)], dtype=np.float64)))
    if logs.size == 0:
        return None
    logs = _without_bridges(logs)
    cuts = np.flatnonzero(np.diff(logs) > STATE_GAP) + 1
    groups = np.split(logs, cuts)
    levels = tuple(float(g.mean()) for g in groups)
    within = float(sum(((g - g.mean()) ** 2).sum() for g in groups))
    return States(levels, tuple(len(g) for g in groups), within)


def _without_bridges(logs: Any) -> Any:
    """Sorted log medians without the runs that lie between states in a pool of many jobs' runs. A process that
    changed state mid-run has its median between two states; in one job of 10-20 runs there are one or two, each a
    state of its own, but a series' reference pools 20 jobs, and their in-between runs close every STATE_GAP (on
    the second VM the 40-layer MLP's states 1.48x apart read as one state, and a night's fast level as 0.80x of the
    mixture). So where the runs are many (BRIDGE_SHARE x runs > 1), a run with fewer than that many runs within half
    a STATE_GAP of it (itself included) is left out of the states; fewer runs leave every run in."""
    import numpy as np

    needed = int(BRIDGE_SHARE * logs.size)
    if needed <= 1:
        return logs
    near = (np.searchsorted(logs, logs + STATE_GAP / 2, side="right")
            - np.searchsorted(logs, logs - STATE_GAP / 2, side="left"))
    dense = logs[near >= needed]
    return dense if dense.size >= 2 else logs


def splits(medians: Sequence[float]) -> bool:
    """Whether these per-run medians split into speed states: two runs or more at least SPLIT slower than the
    fastest state (one slow run is an outlier, not a state), a fastest state of two runs or more (one run is no
    level to judge by), and most runs sharing a state with another. Runs each in a state of their own are spread,
    not states, and leave no spread within states to measure: a clean-clone CI round's LLM decode rates, four runs
    8 % apart or more, had no interval under the states' t; a 5 us op on a 1 us timer beside a BLAS neighbour (the
    second noise corpus) had its run medians in eight "states", five of one run, and the states' t read an identical
    program 2.4x [2.22, 2.60] from the two fastest runs."""
    usable = [m for m in medians if m > 0 and math.isfinite(m)]
    if len(usable) < 3 or max(usable) < min(usable) * math.exp(SPLIT):  # no run that far above the fastest: no split
        return False
    found = states_of(usable)
    if found is None or len(found.levels) < 2 or found.counts[0] < 2:
        return False
    if 2 * sum(c for c in found.counts if c == 1) > found.runs:
        return False
    return sum(c for level, c in zip(found.levels, found.counts, strict=True) if level - found.levels[0] >= SPLIT) >= 2


@dataclass(frozen=True)
class StateEstimate:
    """B/A of the fastest-state levels, its interval and p-value (union over the readings of the states)."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float
    level_a_ms: float
    level_b_ms: float
    note: str | None  # why the interval spans several readings of the states, if it does


def compare_states(a: States, b: States, confidence: float, interleaved: bool = False) -> StateEstimate:
    """B against A within the fast state (see the module docstring); `interleaved`: the sides took turns in the same
    jobs, so a side missing a state is weighed by `missed_together`, not MISSED_FAST."""
    import numpy as np
    from scipy.special import stdtr, stdtrit

    df = a.runs + b.runs - len(a.counts) - len(b.counts)
    point = b.levels[0] - a.levels[0]
    level_a, level_b = math.exp(a.levels[0]), math.exp(b.levels[0])
    if df < 1:  # one run per state: no spread to measure
        return StateEstimate(math.exp(point), math.nan, math.nan, 1.0, level_a, level_b, None)
    spread = max(math.sqrt((a.within + b.within) / df), MIN_SPREAD)
    t = float(stdtrit(df, 0.5 + confidence / 2.0))
    readings = _readings(a, b, interleaved)
    lows, highs, ps = [], [], []
    for i, j in readings:  # A's state i against B's state j
        diff = b.levels[j] - a.levels[i]
        se = spread * math.sqrt(1.0 / a.counts[i] + 1.0 / b.counts[j])
        lows.append(diff - t * se)
        highs.append(diff + t * se)
        ps.append(float(2.0 * stdtr(df, -abs(diff) / se)))
    note = None
    if len(readings) > 1:
        which, other = ("B", "A") if any(j == 0 and i > 0 for i, j in readings) else ("A", "B")
        note = (f"{which}'s fastest runs are at the speed of {other}'s slower state and {which} does not show "
                f"{other}'s step from its fast state ({which}: {(b if which == 'B' else a).describe()}; {other}: "
                f"{(a if which == 'B' else b).describe()}): {which} may have had no run in the fast state (a whole "
                "job in a slow state), so the interval spans both readings")
    return StateEstimate(math.exp(point), float(np.exp(min(lows))), float(np.exp(max(highs))), max(ps), level_a,
                         level_b, note)


def _readings(a: States, b: States, interleaved: bool) -> list[tuple[int, int]]:
    """(A state, B state) pairs that may both be the fast state: (0, 0), and (k, 0) where B may have missed the
    fast state and run only in A's slower state k (and (0, k) the other way round), see `_may_lack_fast`."""
    return [(0, 0), *((k, 0) for k in _may_lack_fast(b, a, interleaved)),
            *((0, k) for k in _may_lack_fast(a, b, interleaved))]


def missed_together(runs_side: int, runs_other: int, faster: int) -> float:
    """Log of the chance that, of the `faster` runs of two interleaved sides in the states below some rung, none was
    the side's (its `runs_side` against the other's `runs_other`) if the two programs were the same: in jobs where the
    sides take turns (A B B A), which process lands in which state does not depend on its side, so the faster runs
    are a draw without replacement from both sides' runs (hypergeometric). The draw per job is more constrained, so
    over pooled jobs this is the larger, cautious figure. A whole job in a slow state has no faster run and costs
    nothing; a side that missed 72 fast runs of 80 beside the other's costs 2^-72: no reading."""
    return (math.lgamma(runs_other + 1) - math.lgamma(runs_other - faster + 1)
            - math.lgamma(runs_other + runs_side + 1) + math.lgamma(runs_other + runs_side - faster + 1))


def _may_lack_fast(side: States, other: States, interleaved: bool) -> list[int]:
    """The slower states k of `other` that `side`'s fastest state may be (all of `side`'s runs then missed the fast
    state): only when `side`'s fastest level is clearly slower than `other`'s fastest (beyond STATE_GAP), and the
    reading explains `side`'s runs about as well as the plain one (`_fit`: within a likelihood ratio of
    PLAUSIBLE), weighed by MISSED_FAST for each rarer event it needs: a side at the speed of the first slower
    state (within STATE_GAP) that missed only the fast one is the job mode the readings are for (free); each
    state missed counts when it missed more, or changed speed besides (a 2x model in its fast state runs at the
    speed of the baseline's 2x state: that reading needs two misses). On the testbed the states form a ladder
    (1, 1.4, 2x), so a job wholly in the slow state looks like the whole ladder one rung up, a 1.4x regression;
    what tells them apart is how the runs share the rungs: a job that missed the fast state has most runs on
    its first rung and few above, a slower model the usual share. Interleaved sides (`run --ab`, a night's
    confirmation) share their jobs, so their prior is measured, not assumed: `missed_together` of the other side's
    runs below rung k, for every reading. With MISSED_FAST per side, a night's confirmation pooling 8 interleaved
    jobs read +10 % as `inconclusive 1.09x [0.58, 1.12]` on the second VM: B's 80 runs "may all have missed" a
    fast state that A's 72 of 80 runs were in."""
    if side.levels[0] <= other.levels[0] + STATE_GAP:
        return []
    plain = _fit(side, other, 0)
    out = []
    for k in range(1, len(other.levels)):
        if other.counts[k] < 2:  # a lone run is no state to have run in wholly
            continue
        # a side at the speed of the first slower state missed the fast one: the job mode the readings are for (no
        # prior); missing more states, or a change of speed besides, is as rare as a whole job missing a state, each
        missed = sum(1 for j in range(k) if j == 0 or other.counts[j] >= 2)  # a lone run between states is no state
        rare = 0 if missed == 1 and abs(side.levels[0] - other.levels[k]) < STATE_GAP else missed
        prior = (missed_together(side.runs, other.runs, sum(other.counts[:k])) if interleaved
                 else rare * math.log(MISSED_FAST))
        if _fit(side, other, k) + prior >= plain - math.log(PLAUSIBLE):
            out.append(k)
    return out


def _fit(side: States, other: States, rung: int) -> float:
    """Log-likelihood of `side`'s runs per state under the reading "its fastest state is `other`'s state `rung`":
    `side` shifted so its fastest level lies on that rung, each of its states falls on the rung of `other` within
    STATE_GAP (else on none: probability OFF_LADDER), rungs drawn with `other`'s shares (smoothed by half a run)
    among the rungs from `rung` up."""
    shift = side.levels[0] - other.levels[rung]
    shares = [c + 0.5 for c in other.counts[rung:]]
    total = sum(shares)
    out = 0.0
    for level, count in zip(side.levels, side.counts, strict=True):
        near = [j for j, at in enumerate(other.levels[rung:]) if abs(level - shift - at) < STATE_GAP]
        share = shares[near[0]] / total * (1 - OFF_LADDER) if near else OFF_LADDER
        out += count * math.log(share)
    return out

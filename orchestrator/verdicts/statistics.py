"""The statistics behind a verdict: is B slower than A by more than a practical threshold?

The verdicts' ratio estimates (docs/architecture.md, "Measurement"): `estimate` and
`estimate_many` share one bootstrap (bootstrap.py); a report's ratios between devices are
report/builders/ratios.py's (p50 over every execution, the same process-run resampling).
orchestrator/base/stats.py keeps the light descriptive statistics
(median, percentile, CV, the instability rule).

The replication unit is the PROCESS RUN. Iterations inside one runner process are correlated
(on the testbed a process settles in one of two speed states ~20 % apart and stays there), so
treating 200 iterations as 200 independent draws makes every interval far too narrow and a
verdict cry wolf. Method, per (device, model) end to end and per op:

- effect size: the ratio of medians B / A, where a side's median is the MEAN OF ITS PER-RUN
  MEDIANS (each process contributes its median once). The median of all pooled samples was
  tried first: with two process states it jumps between the modes, so its interval for 10
  identical runs against themselves spanned 0.74-1.35; the run-averaged median gave 0.86-1.16;
- its interval: a hierarchical (two-level) bootstrap: resample process runs with replacement,
  then iterations with replacement within each chosen run, recompute both sides' statistic, and
  take the percentile interval of the ratio over `resamples` replicates. A side with few runs
  gets an interval as wide as its run-to-run spread (the two-state mixture included). Each drawn
  run's median is drawn from its exact law rather than from its iterations (bootstrap.py), and
  every op of a comparison is estimated in one batch (`estimate_many`);
- the test: a two-sided Mann-Whitney U rank test (`scipy.stats.mannwhitneyu`, as ranks.py
  computes it) on the per-run medians: n_a + n_b numbers, one per process, so its p-value counts
  processes, not iterations;
- multiplicity: per-op p-values are adjusted together with Benjamini-Hochberg
  (`scipy.stats.false_discovery_control`, ranks.py);
- the verdict (Pinpoint's DIFFERENT / SAME / UNKNOWN, as asv's significance + factor):
  `regressed` when the adjusted p < alpha AND the whole interval lies above 1 + threshold;
  `improved` when adjusted p < alpha AND the whole interval lies below 1 - threshold;
  `unchanged` when the whole interval lies inside [1 - threshold, 1 + threshold];
  `inconclusive` otherwise. A side with no samples is `no-data`, never a regression.

An optional noise floor (the device's own job-to-job spread, set by hand or estimated per
(device, model) from stored history: noise.py) raises the bar for `regressed` and `improved` to
max(threshold, noise_floor); `unchanged` still needs the interval inside the plain threshold (a
floor of 40 % must not make a 30 % shift "unchanged"; it is `inconclusive`). numpy and scipy
are imported inside the functions: light commands never pay for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from orchestrator.base.codec import Layout
from orchestrator.verdicts import centers
from orchestrator.verdicts.bootstrap import draw_resamples, resampled_medians
from orchestrator.verdicts.centers import CenterStatistic
from orchestrator.verdicts.estimates import Estimate, RunSamples, run_medians
from orchestrator.verdicts.memory import DEFAULT_MEMORY_THRESHOLD
from orchestrator.verdicts.ranks import benjamini_hochberg, mannwhitneyu_two_sided

DEFAULT_THRESHOLD = 0.05  # end to end: 5 %
DEFAULT_OP_THRESHOLD = 0.10  # per op: 10 %
DEFAULT_ALPHA = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000

def statistic(center: str) -> CenterStatistic:
    """The registered statistic named `center` (centers/); a name not registered is a ValueError, as `Center(name)`."""
    # "paired" (an interleaved job's rounds, verdicts/paired.py) reduces each side as the mean does where it reaches
    # here (LLM metrics, ranks): the pairing is paired.py's alone
    found = centers.find("mean" if center == "paired" else center)
    if found is None:
        raise ValueError(f"{center!r} is not a verdict statistic")
    return found


def statistic_name(center: str) -> str:
    """A side's statistic under `center`, as columns, sentences and JSON name it: a different estimator from a
    report's p50, so it never appears without its own name."""
    if center == "paired":  # an interleaved job's rounds: verdicts/paired.py, not a --center choice
        return "mean run median; ratio paired by ABBA round"
    return (centers.find(center) or statistic(DEFAULT_CENTER)).label


# A side's location statistic over its per-run medians, one module each in centers/ (mean.py, fast.py, fast_state.py:
# what each is and why); the enum's members are the registry's, so `Center.MEAN` and plans' names keep working.
Center = StrEnum("Center", {s.name.upper().replace("-", "_"): s.name for s in centers.registered()})  # type: ignore[misc]

# `auto` (centers/auto.py: the mean of per-run medians of clean executions, or the fast state's level where a side's
# runs split into speed states) is the default; `mean`, `fast-state` and `fast` stay choices and compute as before.
DEFAULT_CENTER = Center.AUTO  # type: ignore[attr-defined]


def _center_help() -> str:
    parts = [s.help for s in sorted(centers.registered(), key=lambda s: (s.help_order, s.name))]
    listed = ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]
    return f"A side's statistic over its per-run medians of clean executions: {listed}. docs/guide/trust.md."


CENTER_HELP = _center_help()


def check_center(value: str, where: str = "--center") -> str:
    """`value` as a Center's name, or a UsageError naming `where` and the choices."""
    from orchestrator.base.errors import UsageError

    if centers.find(value) is None:
        raise UsageError(f"{where}: {value!r}; choose {', '.join(s.name for s in centers.registered())}")
    return value


class Verdict(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
    NO_DATA = "no-data"  # nothing to compare (a device or model failed): infrastructure, not a regression
    NEW = "new"  # no baseline yet (first night): passes, and this run becomes the baseline
    SETTINGS_DIFFER = "settings-differ"  # A and B ran with different settings (verdicts/likeness.py): no judgement


@dataclass(frozen=True)
class VerdictSettings:
    """How strict verdicts are; recorded beside every comparison."""

    threshold: float = DEFAULT_THRESHOLD
    op_threshold: float = DEFAULT_OP_THRESHOLD
    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0
    noise_floor: float = 0.0  # the device's relative run-to-run noise; widens both thresholds
    center: str = DEFAULT_CENTER  # FAST_STATE, MEAN of per-run medians, or FAST: their minimum (see Center)
    auto_noise_floor: bool = False  # the floor of each (device, model) from its stored history (noise.py)
    memory_threshold: float = DEFAULT_MEMORY_THRESHOLD  # `memory-grew` beyond this (verdicts/memory.py)
    job_shift: float = 0.0  # sides from separate jobs without a measured floor: each side's job-level shift (trust.py)

    def effective(self, threshold: float) -> float:
        return max(threshold, self.noise_floor)

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)


def usable_runs(runs: RunSamples) -> list[list[float]]:
    """The runs that have at least one sample."""
    return [list(r) for r in runs if len(r)]


def estimate(a: RunSamples, b: RunSamples, *, confidence: float = DEFAULT_CONFIDENCE,
             resamples: int = DEFAULT_RESAMPLES, seed: int = 0, center: str = DEFAULT_CENTER,
             interleaved: bool = False) -> Estimate | None:
    """The ratio of run-averaged medians B / A with its hierarchical-bootstrap interval and p-value.

    None when either side has no samples, or A's median is not positive (nothing to divide by). `interleaved`: the
    sides ran in the same job(s), taking turns (states.py weighs a side missing a speed state by it)."""
    return estimate_many([(a, b)], confidence=confidence, resamples=resamples, seed=seed, center=center,
                         interleaved=interleaved)[0]


def estimate_many(pairs: Sequence[tuple[RunSamples, RunSamples]], *, confidence: float = DEFAULT_CONFIDENCE,
                  resamples: int = DEFAULT_RESAMPLES, seed: int = 0, center: str = DEFAULT_CENTER,
                  interleaved: bool = False) -> list[Estimate | None]:
    """`[estimate(a, b, ...) for a, b in pairs]`, computed together (every op of a comparison at once).

    Each estimate draws its bootstrap from `seed` alone, so it is the same however it is batched;
    pairs whose runs have the same lengths share one set of gathers (bootstrap.py)."""
    stat = statistic(center)
    judges = stat.delegates(pairs)
    if any(judge is not stat for judge in judges):  # pairs handed to other statistics (auto: mean or fast-state)
        out: list[Estimate | None] = [None] * len(pairs)
        for judge in {id(j): j for j in judges}.values():
            chosen = [k for k, j in enumerate(judges) if j is judge]
            found = estimate_many([pairs[k] for k in chosen], confidence=confidence, resamples=resamples, seed=seed,
                                  center=judge.name, interleaved=interleaved)
            for k, est in zip(chosen, found, strict=True):
                out[k] = est
        return out
    own = stat.estimates(pairs, confidence, interleaved)
    if own is not None:  # a statistic with an estimate of its own (fast-state: its states)
        return own
    measured: list[tuple[int, _Side, _Side]] = []
    for k, (a, b) in enumerate(pairs):
        side_a, side_b = _Side.of(a, stat), _Side.of(b, stat)
        if side_a is not None and side_b is not None and not side_a.statistic <= 0:  # nothing to divide by
            measured.append((k, side_a, side_b))
    groups: dict[tuple[tuple[int, ...], tuple[int, ...]], list[tuple[int, _Side, _Side]]] = {}
    for member in measured:
        groups.setdefault((member[1].lengths, member[2].lengths), []).append(member)
    intervals: dict[int, tuple[float, float]] = {}
    for members in groups.values():
        found = _intervals([m[1] for m in members], [m[2] for m in members], confidence, resamples, seed, stat)
        intervals.update((k, interval) for (k, _, _), interval in zip(members, found, strict=True))
    p_values = rank_p_values([(side_a.medians, side_b.medians) for _, side_a, side_b in measured], center)
    out = [None] * len(pairs)
    for (k, side_a, side_b), p_value in zip(measured, p_values, strict=True):
        low, high = intervals[k]
        out[k] = Estimate(ratio=side_b.statistic / side_a.statistic, ci_low=low, ci_high=high, p_value=p_value,
                          runs_a=len(side_a.lengths), runs_b=len(side_b.lengths), median_a_ms=side_a.statistic,
                          median_b_ms=side_b.statistic)
    return out


@dataclass(frozen=True, eq=False)
class _Side:
    """One side of one estimate: its usable runs sorted, padded to a (runs, width) array."""

    values: Any  # float64 (runs, width), each run sorted ascending in its first lengths[j] places
    lengths: tuple[int, ...]
    medians: Any  # float64 (runs,): np.median of each run
    statistic: float  # `run_median`: the statistic's (centers/) of the per-run medians

    @classmethod
    def of(cls, runs: RunSamples, stat: CenterStatistic) -> _Side | None:
        import numpy as np

        arrays = [np.asarray(r, dtype=np.float64) for r in runs if len(r)]
        if not arrays:
            return None
        lengths = tuple(len(r) for r in arrays)
        if len(set(lengths)) == 1:
            values = np.sort(np.stack(arrays), axis=1)
        else:
            values = np.full((len(arrays), max(lengths)), np.inf)
            for j, r in enumerate(arrays):
                values[j, : len(r)] = np.sort(r)
        n = np.asarray(lengths)
        if np.isnan(values).any():  # np.median's own NaN rule
            medians = np.array([np.median(r) for r in arrays])
        else:  # np.median of a sorted run: the middle value, or the mean of the two middle ones
            rows = np.arange(len(arrays))
            medians = (values[rows, (n - 1) // 2] + values[rows, n // 2]) / 2
        return cls(values, lengths, medians, stat.of_medians(medians))


# Gathers of (ops, resamples, runs) values per chunk of ops: bounds memory at ~64 MB per side.
_CHUNK_VALUES = 8_000_000


def _intervals(a: list[_Side], b: list[_Side], confidence: float, resamples: int, seed: int,
               stat: CenterStatistic) -> list[tuple[float, float]]:
    """The bootstrap percentile interval of B/A for sides whose runs have the same lengths."""
    import numpy as np

    rng = np.random.default_rng(seed)
    draws_b = draw_resamples(b[0].lengths, rng, resamples)  # B first (bootstrap.py)
    draws_a = draw_resamples(a[0].lengths, rng, resamples)
    tail = (1.0 - confidence) / 2.0 * 100.0
    per_chunk = max(1, _CHUNK_VALUES // (resamples * max(len(a[0].lengths), len(b[0].lengths))))
    out: list[tuple[float, float]] = []
    for start in range(0, len(a), per_chunk):
        values_a = np.stack([s.values for s in a[start : start + per_chunk]])
        values_b = np.stack([s.values for s in b[start : start + per_chunk]])
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios = stat.resampled(resampled_medians(values_b, draws_b)) / stat.resampled(resampled_medians(values_a, draws_a))
        out.extend(_percentiles(ratios, tail))
    return out


def _percentiles(ratios: Any, tail: float) -> list[tuple[float, float]]:
    """Each row's (tail, 100 - tail) percentiles over its finite ratios; NaN when it has none."""
    import numpy as np

    finite = np.isfinite(ratios).all(axis=1)
    out = [(math.nan, math.nan)] * ratios.shape[0]
    if finite.any():
        rows = np.flatnonzero(finite)
        bounds = np.percentile(ratios[rows], [tail, 100.0 - tail], axis=1)
        for j, row in enumerate(rows):
            out[row] = (float(bounds[0, j]), float(bounds[1, j]))
    for row in np.flatnonzero(~finite):
        kept = ratios[row][np.isfinite(ratios[row])]
        if kept.size:
            low, high = np.percentile(kept, [tail, 100.0 - tail])
            out[row] = (float(low), float(high))
    return out


def run_median(runs: RunSamples, center: str = DEFAULT_CENTER) -> float:
    """A side's statistic (centers/: the mean, the minimum, the fast state's level, ...) of its per-run medians."""
    return statistic(center).run_median(runs)


def rank_p_value(a: RunSamples, b: RunSamples, center: str = DEFAULT_CENTER) -> float:
    """Two-sided Mann-Whitney U on per-run medians (FAST: the faster half of each side's runs);
    1.0 when a side has fewer than two runs."""
    return rank_p_values([(run_medians(a), run_medians(b))], center)[0]


def rank_p_values(medians: Sequence[tuple[Sequence[float], Sequence[float]]], center: str = DEFAULT_CENTER) -> list[float]:
    """`rank_p_value` of many (A's per-run medians, B's per-run medians) pairs, one call per shape:
    the method `mannwhitneyu` would choose for each pair alone (exact for 8 runs or fewer a side
    without ties, else asymptotic) is passed explicitly, so batching changes no p-value (ranks.py:
    scipy.stats' test, to the last bit, without importing scipy.stats)."""
    import numpy as np

    stat = statistic(center)
    out = [1.0] * len(medians)
    shapes: dict[tuple[int, int, str], list[tuple[int, list[float], list[float]]]] = {}
    for k, (ma, mb) in enumerate(medians):
        med_a, med_b = sorted(float(x) for x in ma), sorted(float(x) for x in mb)
        med_a, med_b = stat.tested(med_a), stat.tested(med_b)  # fast: the faster half of each side's runs
        if len(med_a) < 2 or len(med_b) < 2 or len(set(med_a) | set(med_b)) == 1:
            continue  # no test, or all equal: no evidence of any difference
        ties = len(set(med_a) | set(med_b)) < len(med_a) + len(med_b)
        method = "asymptotic" if (len(med_a) > 8 and len(med_b) > 8) or ties else "exact"
        shapes.setdefault((len(med_a), len(med_b), method), []).append((k, med_a, med_b))

    for (_, _, method), rows in shapes.items():
        p = mannwhitneyu_two_sided(np.array([r[2] for r in rows]), np.array([r[1] for r in rows]), method)
        for (k, _, _), value in zip(rows, p, strict=True):
            out[k] = float(value)
    return out


def runs_for_significance(center: str = DEFAULT_CENTER, alpha: float = DEFAULT_ALPHA) -> int:
    """The fewest process runs per side with which the test can reach `alpha` at all: the exact
    two-sided Mann-Whitney p of k runs against k is at least 2 / C(2k, k) (0.1 for 3 against 3,
    0.029 for 4 against 4). MEAN tests every run (4); FAST the faster half (7). A statistic with a test of its
    own says (fast-state's t test: 2)."""
    stat = statistic(center)
    own = stat.significance_runs(alpha)
    if own is not None:
        return own
    n = 2
    while True:
        tested = len(stat.tested(list(range(n))))
        if 2 / math.comb(2 * tested, tested) < alpha:
            return n
        n += 1


def can_reach_significance(runs_a: int, runs_b: int, center: str, alpha: float) -> bool:
    """Whether ANY outcome of these run counts could give p < alpha: the p-value of complete separation (every
    run of B slower than every run of A) by the verdicts' own test."""
    own = statistic(center).can_reach(runs_a, runs_b, alpha)
    if own is not None:
        return own
    best = rank_p_values([([float(k) for k in range(runs_a)], [float(runs_a + k) for k in range(runs_b)])], center)[0]
    return best < alpha


def adjust_p_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the same order."""
    return benjamini_hochberg(list(p_values))


def beyond_threshold(est: Estimate, threshold: float) -> Verdict | None:
    """The bar a change must clear: REGRESSED when the whole interval lies above 1 + threshold, IMPROVED when it
    lies below 1 - threshold, else None (whatever its significance)."""
    if est.ci_low > 1.0 + threshold:
        return Verdict.REGRESSED
    if est.ci_high < 1.0 - threshold:
        return Verdict.IMPROVED
    return None


def decide(est: Estimate | None, p_value: float, threshold: float, alpha: float = DEFAULT_ALPHA,
           same_within: float | None = None) -> Verdict:
    """Significance AND practical size: see the module docstring. `p_value` is the adjusted one.

    `threshold` is what a regression or improvement must exceed (a noise floor raises it);
    `same_within` (default: `threshold`) is what `unchanged` must stay inside. With a noise floor
    the caller passes the plain threshold here: a shift inside the device's noise but beyond the
    threshold is not a regression, and not `unchanged` either, but `inconclusive`."""
    if est is None:
        return Verdict.NO_DATA
    low, high = est.ci_low, est.ci_high
    if math.isnan(low) or math.isnan(high):
        return Verdict.INCONCLUSIVE
    same = threshold if same_within is None else min(same_within, threshold)
    cleared = beyond_threshold(est, threshold)
    if cleared is not None and p_value < alpha:
        return cleared
    if low >= 1.0 - same and high <= 1.0 + same:
        return Verdict.UNCHANGED
    return Verdict.INCONCLUSIVE

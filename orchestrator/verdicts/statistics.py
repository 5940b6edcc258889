"""The statistics behind a verdict: is B slower than A by more than a practical threshold?

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
  gets an interval as wide as its run-to-run spread (the two-state mixture included);
- the test: a two-sided Mann-Whitney U rank test (`scipy.stats.mannwhitneyu`) on the per-run
  medians: n_a + n_b numbers, one per process, so its p-value counts processes, not iterations;
- multiplicity: per-op p-values are adjusted together with Benjamini-Hochberg
  (`scipy.stats.false_discovery_control`);
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
from typing import Any

DEFAULT_THRESHOLD = 0.05  # end to end: 5 %
DEFAULT_OP_THRESHOLD = 0.10  # per op: 10 %
DEFAULT_ALPHA = 0.05
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
_CHUNK = 250  # bootstrap replicates drawn at once (bounds memory for many runs x iterations)

RunSamples = Sequence[Sequence[float]]  # one sequence of samples per process run


class Center(StrEnum):
    """A side's location statistic over its per-run medians.

    MEAN: their mean; every process counts. FAST: their minimum, with the rank test on the faster
    half of each side's runs: the speed of the uncontended state, for devices whose processes
    land in a fast state or in slower, interfered ones (DESIGN §2): interference only adds time.
    FAST has far more power there (see README "Regression verdicts") but assumes each side has
    some runs in the fast state; a whole job stuck in a slow state moves it."""

    MEAN = "mean"
    FAST = "fast"


class Verdict(StrEnum):
    REGRESSED = "regressed"
    IMPROVED = "improved"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"
    NO_DATA = "no-data"  # nothing to compare (a device or model failed): infrastructure, not a regression
    NEW = "new"  # no baseline yet (first night): passes, and this run becomes the baseline


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
    center: str = "mean"  # MEAN of per-run medians, or FAST: their minimum (see Center)
    auto_noise_floor: bool = False  # the floor of each (device, model) from its stored history (noise.py)

    def effective(self, threshold: float) -> float:
        return max(threshold, self.noise_floor)

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "op_threshold": self.op_threshold, "alpha": self.alpha,
                "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed,
                "noise_floor": self.noise_floor, "center": self.center,
                "auto_noise_floor": self.auto_noise_floor}


@dataclass(frozen=True)
class Estimate:
    """B against A: ratio of medians (B / A, > 1 is slower), its bootstrap interval, the rank test."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float  # two-sided Mann-Whitney U on per-run medians, before any adjustment
    runs_a: int
    runs_b: int
    median_a_ms: float  # mean of A's per-run medians
    median_b_ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"ratio": self.ratio, "ci_low": self.ci_low, "ci_high": self.ci_high, "p_value": self.p_value,
                "runs_a": self.runs_a, "runs_b": self.runs_b, "median_a_ms": self.median_a_ms,
                "median_b_ms": self.median_b_ms}


def usable_runs(runs: RunSamples) -> list[list[float]]:
    """The runs that have at least one sample."""
    return [list(r) for r in runs if len(r)]


def estimate(a: RunSamples, b: RunSamples, *, confidence: float = DEFAULT_CONFIDENCE,
             resamples: int = DEFAULT_RESAMPLES, seed: int = 0, center: str = Center.MEAN) -> Estimate | None:
    """The ratio of run-averaged medians B / A with its hierarchical-bootstrap interval and p-value.

    None when either side has no samples, or A's median is not positive (nothing to divide by)."""
    import numpy as np

    a_runs, b_runs = usable_runs(a), usable_runs(b)
    if not a_runs or not b_runs:
        return None
    center = Center(center)
    med_a = run_median(a_runs, center)
    med_b = run_median(b_runs, center)
    if med_a <= 0:
        return None
    rng = np.random.default_rng(seed)
    boot_a = _bootstrap_medians(a_runs, resamples, rng, center)
    boot_b = _bootstrap_medians(b_runs, resamples, rng, center)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = boot_b / boot_a
    ratios = ratios[np.isfinite(ratios)]
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = (np.percentile(ratios, [tail, 100.0 - tail]) if ratios.size else (float("nan"), float("nan")))
    return Estimate(ratio=med_b / med_a, ci_low=float(low), ci_high=float(high), p_value=rank_p_value(a_runs, b_runs, center),
                    runs_a=len(a_runs), runs_b=len(b_runs), median_a_ms=med_a, median_b_ms=med_b)


def run_median(runs: RunSamples, center: str = Center.MEAN) -> float:
    """A side's statistic: the mean (or, FAST, the minimum) of its per-run medians."""
    import numpy as np

    medians = [np.median(r) for r in runs if len(r)]
    return float(np.min(medians) if center == Center.FAST else np.mean(medians))


def _bootstrap_medians(runs: list[list[float]], resamples: int, rng: Any, center: str = Center.MEAN) -> Any:
    """`run_median` of each replicate: runs drawn with replacement, then iterations within each run.

    Each drawn run gets as many draws as the longest run has samples (a partial run's median
    is still its own)."""
    import numpy as np

    lengths = np.array([len(r) for r in runs])
    width = int(lengths.max())
    data = np.zeros((len(runs), width))
    for i, r in enumerate(runs):
        data[i, : len(r)] = r
    out = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        n = min(_CHUNK, resamples - start)
        picked = rng.integers(0, len(runs), size=(n, len(runs)))
        within = (rng.random((n, len(runs), width)) * lengths[picked][..., None]).astype(np.int64)
        values = data[picked[..., None], within]
        medians = np.median(values, axis=2)
        out[start : start + n] = medians.min(axis=1) if center == Center.FAST else medians.mean(axis=1)
    return out


def rank_p_value(a: RunSamples, b: RunSamples, center: str = Center.MEAN) -> float:
    """Two-sided Mann-Whitney U on per-run medians (FAST: the faster half of each side's runs);
    1.0 when a side has fewer than two runs."""
    import numpy as np
    from scipy.stats import mannwhitneyu

    med_a = sorted(float(np.median(r)) for r in a if len(r))
    med_b = sorted(float(np.median(r)) for r in b if len(r))
    if center == Center.FAST:
        med_a, med_b = med_a[: (len(med_a) + 1) // 2], med_b[: (len(med_b) + 1) // 2]
    if len(med_a) < 2 or len(med_b) < 2:
        return 1.0
    if len(set(med_a) | set(med_b)) == 1:  # all equal: no evidence of any difference
        return 1.0
    return float(mannwhitneyu(med_b, med_a, alternative="two-sided").pvalue)


def runs_for_significance(center: str = Center.MEAN, alpha: float = DEFAULT_ALPHA) -> int:
    """The fewest process runs per side with which the rank test can reach `alpha` at all: the exact
    two-sided Mann-Whitney p of k runs against k is at least 2 / C(2k, k) (0.1 for 3 against 3,
    0.029 for 4 against 4). MEAN tests every run (4); FAST the faster half (7)."""
    n = 2
    while True:
        tested = (n + 1) // 2 if center == Center.FAST else n
        if 2 / math.comb(2 * tested, tested) < alpha:
            return n
        n += 1


def adjust_p_values(p_values: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (false discovery rate), in the same order."""
    if not p_values:
        return []
    from scipy.stats import false_discovery_control

    return [float(p) for p in false_discovery_control(list(p_values), method="bh")]


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
    significant = p_value < alpha
    if significant and low > 1.0 + threshold:
        return Verdict.REGRESSED
    if significant and high < 1.0 - threshold:
        return Verdict.IMPROVED
    if low >= 1.0 - same and high <= 1.0 + same:
        return Verdict.UNCHANGED
    return Verdict.INCONCLUSIVE

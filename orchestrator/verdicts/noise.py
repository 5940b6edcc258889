"""The device's job-to-job noise floor for one (device, model, settings), from its stored history.

Why: under host load whole jobs shift (benchmarks/README.md "Verdicts": A/A ratios of the mean
statistic 0.64-1.85 between identical jobs), and a verdict's interval, built from ONE job's
process runs per side, cannot see a shift that moves every run of a job alike. The floor widens
both thresholds to max(threshold, floor) (statistics.VerdictSettings.effective), so a nightly
does not call a shift a regression when that device's identical jobs shift that much anyway.

Method (`estimate_floor`), on the per-job statistic the verdict uses (statistics.run_median:
the mean of the per-run medians, or `fast`: their minimum) of the last `WINDOW` good stored jobs,
oldest first:
- x = log of each job's statistic; d = successive differences x[i+1] - x[i], i.e. the log ratio
  between consecutive good jobs, which is what a nightly compare (night against last-good) sees;
- sigma = the MAD of d scaled to a normal standard deviation
  (`scipy.stats.median_abs_deviation(d, scale="normal")`). Differences rather than levels so an
  accepted step in history (a deliberate change, re-baselined) counts once, not as spread; the
  MAD so that one outlier job neither inflates the floor nor hides a 2x regression (a floor from
  the plain standard deviation went to ~40 % on the loaded benchmark host and missed a 2x job);
- floor = exp(z * sigma) - 1 with z = the normal (1 + COVERAGE) / 2 quantile (1.96): the
  two-sided 95 % bound of the ratio between two good jobs of the same model on that device.
Below MIN_JOBS good jobs (5 differences) there is no floor (`floor` None; the verdict table and
JSON say so) and the plain thresholds apply. What it does not cover, measured: rare whole-job
outliers (a job with no process in the fast state: ~1 in 10 jobs on a loaded host) lie beyond
any floor that still lets a 2x slowdown through; a single job cannot tell them from a regression.

Which stored jobs count (same model name, device, backend, iterations, warmup, threads; the
model succeeded with right outputs; not marked regressed; older than the run under test) is the
baseline finder's rule, in baseline.py (`good_history`, `history_noise_finder`): one home.

The nightly's automatic floor (`estimate_replicate_floor`, issue 32) no longer takes consecutive jobs:
nights alternating between two models raised that one from 1.5 % to 12.5 % in eight nights. It pools
the spread WITHIN groups of replicate jobs (the same model content between two change points of the
series: series.py), so real changes, accepted or not, never widen it. `estimate_floor` stays for
callers that have no such groups.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from orchestrator.base.codec import SKIP, Layout, named

COVERAGE = 0.95  # two-sided coverage of the job-to-job ratio bound
MIN_JOBS = 6  # good stored jobs needed (5 job-to-job differences) before a floor is set
WINDOW = 20  # newest good stored jobs used


@dataclass(frozen=True)
class NoiseFloor:
    """The floor used for one (device, model): a relative size (0.12 = 12 %), or None, and whence."""

    floor: float | None
    jobs: int = field(default=0, metadata=named("stored_runs"))  # stored good jobs it was estimated from (auto)
    auto: bool = field(default=True, metadata=SKIP)  # False: set by hand (--noise-floor PCT / plan `noise_floor: 3%`)
    min_jobs: int = field(default=MIN_JOBS, metadata=named("min_stored_runs"))
    method: str = field(default="consecutive", metadata=SKIP)  # "replicates": from groups of replicate jobs
    groups: int = field(default=0, metadata=SKIP)  # replicates: the groups (same model content, between change points)

    # what estimated it is said only of an automatic floor (null for one set by hand)
    LAYOUT: ClassVar[Layout] = Layout(derived=("source", "coverage", ("method", "auto_method"),
                                               ("replicate_groups", "auto_groups")),
                                      order=("floor", "source", "stored_runs", "min_stored_runs", "coverage"))

    @property
    def value(self) -> float:
        """The floor as a threshold widening (0.0 when there is none)."""
        return self.floor or 0.0

    def describe(self) -> str:
        if not self.auto:
            return f"{self.value:.1%} (set)"
        if self.floor is None:
            return f"none ({self.jobs} of {self.min_jobs} runs)"
        if self.method == "replicates":
            return f"{self.floor:.1%} ({self.jobs} runs, {self.groups} replicate groups)"
        return f"{self.floor:.1%} ({self.jobs} runs)"

    @property
    def source(self) -> str:
        return "auto" if self.auto else "set"

    @property
    def coverage(self) -> float | None:
        return COVERAGE if self.auto else None

    @property
    def auto_method(self) -> str | None:
        return self.method if self.auto else None

    @property
    def auto_groups(self) -> int | None:
        return self.groups if self.auto else None


NoiseFinder = Callable[[str, str], NoiseFloor]  # (device, model) -> the floor for that pair


def estimate_floor(job_statistics: Sequence[float], coverage: float = COVERAGE,
                   min_jobs: int = MIN_JOBS) -> NoiseFloor:
    """The noise floor from per-job statistics (ms, oldest first; see the module docstring).

    Non-positive or non-finite values are ignored (they cannot be logged); fewer than `min_jobs`
    usable values give `NoiseFloor(None, n)`."""
    import numpy as np
    from scipy.stats import median_abs_deviation, norm

    values = np.asarray([v for v in job_statistics if math.isfinite(v) and v > 0], dtype=float)
    if values.size < max(min_jobs, 2):
        return NoiseFloor(None, int(values.size), min_jobs=min_jobs)
    steps = np.diff(np.log(values))
    sigma = float(median_abs_deviation(steps, scale="normal"))
    z = float(norm.ppf(0.5 + coverage / 2.0))
    return NoiseFloor(math.expm1(z * sigma), int(values.size), min_jobs=min_jobs)


def estimate_replicate_floor(job_statistics: Sequence[float], groups: Sequence[object], coverage: float = COVERAGE,
                             min_jobs: int = MIN_JOBS) -> NoiseFloor:
    """The noise floor from jobs that are replicates of one another (issue 32): `groups[i]` names job i's group
    (series.py: the same model content between two change points), so a real change, accepted or not, is a
    difference BETWEEN groups and never widens the floor. Each job's log statistic minus its group's median (one
    outlier job, a whole job in a slow state, does not drag a small group's centre), scaled by sqrt(n / (n - 1))
    so small groups are not shrunk, pooled; sigma = the MAD of those deviations scaled to a
    normal sigma; the floor bounds the ratio of two replicate jobs: exp(z sqrt(2) sigma) - 1. Needs `min_jobs - 1`
    degrees of freedom (jobs minus groups), else no floor."""
    import numpy as np
    from scipy.special import ndtri

    by_group: dict[object, list[float]] = {}
    for value, group in zip(job_statistics, groups, strict=True):
        if math.isfinite(value) and value > 0:
            by_group.setdefault(group, []).append(math.log(value))
    used = sum(len(v) for v in by_group.values())
    deviations = [(x - float(np.median(v))) * math.sqrt(len(v) / (len(v) - 1))
                  for v in by_group.values() if len(v) > 1 for x in v]
    replicated = sum(1 for v in by_group.values() if len(v) > 1)
    if len(deviations) - replicated < max(min_jobs - 1, 1):
        return NoiseFloor(None, used, min_jobs=min_jobs, method="replicates", groups=replicated)
    sigma = 1.4826 * float(np.median(np.abs(deviations)))
    z = float(ndtri(0.5 + coverage / 2.0))
    return NoiseFloor(math.expm1(z * math.sqrt(2.0) * sigma), used, min_jobs=min_jobs, method="replicates",
                      groups=replicated)

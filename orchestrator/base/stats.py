"""Small statistics shared by every stage, and the one home of the instability rule.

Definitions follow numpy (and so ExecuTorch's Inspector): median, linear percentiles, sample
standard deviation (ddof=1). numpy is imported inside the functions so light commands stay light.
Ratios between devices or runs, with their bootstrap intervals and tests, live in
orchestrator/verdicts/statistics.py.

The instability rule (`stability`), robust and per process run, because a few preempted
executions must not decide it (a CV of all executions did: 437 % next to a p90/p50 of 1.06):
- within a process run: IQR / median of its executions, the median of that over the runs
  (a typical run's spread); unstable above WITHIN_RUN_LIMIT;
- between process runs: IQR / median of the per-run medians (linear percentiles, so with
  2 runs it is half their relative range); unstable above BETWEEN_RUNS_LIMIT: the runs do not
  agree on the number, so the number depends on which runs you got.
The limits come from measurement on this project's devices (benchmarks/README.md "Stability"):
above everything a pinned runner with its core to itself showed, below what a busy loop on that
core does.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

# The old rule, kept for analyze's per-event tables (Inspector's CV): rows above it are marked `!`.
UNSTABLE_CV = 0.10


def median(samples: Sequence[float]) -> float | None:
    import numpy as np

    return float(np.median(samples)) if len(samples) else None


def percentile(samples: Sequence[float], q: float) -> float | None:
    """numpy's linear percentile, as Inspector computes p10/p50/p90."""
    import numpy as np

    return float(np.percentile(samples, q)) if len(samples) else None


def coefficient_of_variation(samples: Sequence[float]) -> float | None:
    """std (ddof=1) / mean; None with fewer than two samples or a non-positive mean."""
    import numpy as np

    if len(samples) < 2:
        return None
    mean = float(np.mean(samples))
    return float(np.std(samples, ddof=1)) / mean if mean > 0 else None


def is_unstable(cv: float | None) -> bool:
    return cv is not None and cv == cv and cv > UNSTABLE_CV


WITHIN_RUN_LIMIT = 0.20
BETWEEN_RUNS_LIMIT = 0.10


@dataclass(frozen=True)
class Stability:
    """How far a (device, model)'s end-to-end numbers can be trusted, from its traced process runs."""

    within: float | None  # median over runs of IQR / median of each run's executions
    between: float | None  # IQR / median of the per-run medians; None with fewer than 2 runs
    worst_run: str | None = None  # the run with the largest within-run spread (its label)

    @property
    def unstable(self) -> bool:
        return bool(self.reasons)

    @property
    def reasons(self) -> tuple[str, ...]:
        out = []
        if self.within is not None and self.within > WITHIN_RUN_LIMIT:
            out.append(f"a process run's executions spread {self.within:.0%} (IQR / median; limit "
                       f"{WITHIN_RUN_LIMIT:.0%}): something shares the core, or the device changes speed mid-run")
        if self.between is not None and self.between > BETWEEN_RUNS_LIMIT:
            out.append(f"process runs disagree by {self.between:.0%} (IQR / median of their medians; limit "
                       f"{BETWEEN_RUNS_LIMIT:.0%}): the number depends on which runs you got")
        return tuple(out)


def spread(samples: Sequence[float]) -> float | None:
    """IQR / median (linear percentiles); None with fewer than two samples or a non-positive median."""
    import numpy as np

    if len(samples) < 2:
        return None
    q25, q50, q75 = (float(v) for v in np.percentile(samples, [25, 50, 75]))
    return (q75 - q25) / q50 if q50 > 0 else None


def stability(runs: Sequence[Sequence[float]], labels: Sequence[str] = (), flagged: Collection[str] = ()) -> Stability:
    """The within-run and between-run spread of process runs' executions (one sequence per run, `labels`
    naming them). Runs in `flagged` (the calibration says something shared the core or the clocks
    dropped: reported as such) are left out of the between-run spread: it measures whether the
    runs nothing disturbed agree."""
    import numpy as np

    kept = [(labels[k] if k < len(labels) else str(k), r) for k, r in enumerate(runs) if len(r)]
    within = [(label, s) for label, r in kept if (s := spread(r)) is not None]
    typical = float(np.median([s for _, s in within])) if within else None
    worst = max(within, key=lambda x: x[1])[0] if within else None
    medians = [float(np.median(r)) for label, r in kept if label not in flagged]
    return Stability(typical, spread(medians) if len(medians) >= 2 else None, worst)

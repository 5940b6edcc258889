"""What a ratio estimate is (`Estimate`: B against A) and what it is made from (`RunSamples`), apart from how it is
computed (statistics.py, and each statistic of centers/), so a statistic's module can build one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from orchestrator.base.codec import Layout

RunSamples = Sequence[Sequence[float]]  # one sequence of samples per process run


def run_medians(runs: RunSamples) -> list[float]:
    """Each process run's median (`np.median`), runs without samples left out. Runs of one length are one numpy call:
    the same numbers, and a comparison's ops times runs add up."""
    import numpy as np

    arrays = [r for r in runs if len(r)]
    if arrays and len({len(r) for r in arrays}) == 1:
        return np.median(np.asarray(arrays, dtype=np.float64), axis=1).tolist()
    return [float(np.median(r)) for r in arrays]


@dataclass(frozen=True)
class Estimate:
    """B against A: ratio of medians (B / A, > 1 is slower), its bootstrap interval, the rank test."""

    ratio: float
    ci_low: float
    ci_high: float
    p_value: float  # two-sided Mann-Whitney U on per-run medians, before any adjustment
    runs_a: int
    runs_b: int
    median_a_ms: float  # A's statistic: the mean (fast: the minimum; fast-state: the fast state's level) of its per-run medians
    median_b_ms: float
    states_a: str | None = None  # fast-state: A's runs by state ("6 fast + 4 at 1.40x")
    states_b: str | None = None
    state_note: str | None = None  # fast-state: why the interval spans several readings of the states

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)

    @property
    def ratio_and_interval(self) -> str:
        """How a sentence gives the estimate: "1.046x [1.030, 1.068]"."""
        return f"{self.ratio:.3f}x [{self.ci_low:.3f}, {self.ci_high:.3f}]"

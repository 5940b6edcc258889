"""`auto`, the default: the mean of a side's per-run medians, or the fast state's level where runs split into speed
states (states.py `splits`).

Why two in one: the noise of a busy host (issue 37's corpus: a neighbour on every core, bursts, a CPU quota, a slow
job) spreads runs without making states, and there `mean` is what held coverage (93-100 %) with no false alarm; a
device whose processes settle in speed states (the testbed's 40-layer MLP: fast, 1.4x, 2x, luck per process) makes
the mean carry the mixture, so replicate jobs differ by ~17 % and a night could not see a 5 % step, where
`fast-state` catches it. Each pair is judged by `fast-state` when either side's runs split, else by `mean`; a
side's level alone (the nightly's series, the noise floor) is its fast state's where its own runs split. A side
whose runs all landed in one state has that state's mean either way, so the two readings agree where they meet.
Measured: benchmarks/README.md "Trust: the noise corpus" and "Verdicts: the statistics and the nights".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.verdicts.centers.base import CenterStatistic, find, register
from orchestrator.verdicts.estimates import RunSamples, run_medians


@register
class Auto(CenterStatistic):
    name = "auto"
    label = "state-aware mean"
    help = ("'auto' (default: the mean, or the fast state's level where a side's runs split into speed states; "
            "no false regression on the noise corpus of issue 37, and nights that see a 5 % step on the testbed)")
    order = -1
    help_order = -1
    described = "mean of per-run medians (the fast state's level where runs split into speed states)"

    def of_medians(self, medians: Any) -> float:
        return self._for([float(m) for m in medians]).of_medians(medians)

    def resampled(self, medians: Any) -> Any:  # only pairs judged by the mean reach the bootstrap
        return _mean().resampled(medians)

    def delegates(self, pairs: Sequence[tuple[RunSamples, RunSamples]]) -> list[CenterStatistic]:
        from orchestrator.verdicts.states import splits

        state = find("fast-state")
        return [state if splits(run_medians(a)) or splits(run_medians(b)) else _mean()  # type: ignore[misc]
                for a, b in pairs]

    @staticmethod
    def _for(medians: list[float]) -> CenterStatistic:
        from orchestrator.verdicts.states import splits

        return find("fast-state") if splits(medians) else _mean()  # type: ignore[return-value]


def _mean() -> CenterStatistic:
    return find("mean")  # type: ignore[return-value]

"""`fast`: the minimum of a side's per-run medians, with the rank test on the faster half of each side's runs.

The speed of the uncontended state, for devices whose processes land in a fast state or in slower, interfered ones
(docs/architecture.md, "Measurement"): interference only adds time. It has far more power there (see
docs/explanation/verdicts.md) but assumes each side has some runs in the fast state; a whole job stuck in a slow state
moves it, and its bootstrap interval (of a minimum) does not hold its coverage. Kept for old plans.
"""

from __future__ import annotations

from typing import Any

from orchestrator.verdicts.centers.base import CenterStatistic, register


@register
class Fast(CenterStatistic):
    name = "fast"
    label = "fastest run median"
    help = "'fast' (their minimum; kept for old plans)"
    order = 1
    help_order = 2
    described = "fastest per-run median"
    tested_described = "the faster half of the per-run medians"

    def of_medians(self, medians: Any) -> float:
        import numpy as np

        return float(np.min(medians))

    def resampled(self, medians: Any) -> Any:
        return medians.min(axis=1)

    def tested(self, medians: list[float]) -> list[float]:
        return medians[: (len(medians) + 1) // 2]

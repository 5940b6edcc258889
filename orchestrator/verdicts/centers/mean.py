"""`mean`: the mean of a side's per-run medians (of clean executions only: results/contention.py); every
process counts.

`auto` (the default, auto.py) judges by it wherever no side's runs split into speed states. Replayed over the noise
corpus of real jobs under five environments (benchmarks/bench_trust.py, docs/guide/trust.md) it raised no false
`regressed` and its interval held 93-100 % coverage, where `fast-state` (a model of speed states fitted to one quiet
VM) held 50-94 %.
"""

from __future__ import annotations

from typing import Any

from orchestrator.verdicts.centers.base import CenterStatistic, register


@register
class Mean(CenterStatistic):
    name = "mean"
    label = "mean run median"
    help = "'mean' (their mean, whatever the states: auto's choice where runs do not split)"
    order = 0
    help_order = 0
    described = "mean of per-run medians"

    def of_medians(self, medians: Any) -> float:
        import numpy as np

        return float(np.mean(medians))

    def resampled(self, medians: Any) -> Any:
        return medians.mean(axis=1)

"""Which stored nights a series may stand on (issue 37, item 5): a night with too few clean executions is left out.

Change points, the automatic noise floor and the series verdict read each night's statistic over its clean
executions (the ones that waited for no CPU: results/contention.py). A night most of whose executions were contended
says more about the machine that night than about the model, and its few clean ones are the lucky ones: it is left
out of the series (the night's page says which nights and why), never silently averaged in. Nights whose runner
measured no contention (older manifests) are kept, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from orchestrator.base.codec import Layout

MIN_CLEAN_SHARE = 0.5  # at least half of a night's executions clean, or it is left out of its series


@dataclass(frozen=True)
class LeftOutNight:
    """A stored night of the series left out: how many of its executions were clean."""

    run_id: str
    clean: int
    measured: int

    def describe(self) -> str:
        return (f"run {self.run_id} ({self.clean} of {self.measured} executions clean, "
                f"under {MIN_CLEAN_SHARE:.0%})")

    LAYOUT: ClassVar[Layout] = Layout(derived=(("text", "describe"),))


def clean_enough(points: Sequence[Any]) -> tuple[list[Any], tuple[LeftOutNight, ...]]:
    """The series points (series.SeriesPoint) that keep enough clean executions, and the nights left out."""
    kept, left = [], []
    for point in points:
        load = point.side.load
        clean = load.measured - load.contended if load is not None else 0
        if load is not None and load.measured and clean < MIN_CLEAN_SHARE * load.measured:
            left.append(LeftOutNight(point.run_id, clean, load.measured))
        else:
            kept.append(point)
    return kept, tuple(left)

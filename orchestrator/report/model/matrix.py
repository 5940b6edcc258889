"""The device x model matrix at the top of a multi-device report (the view of PyTorch's HUD dashboards): p50 per
cell, its ratio to the baseline device with the interval, and whether the cell lies beyond the threshold. Filled by
report/builders/matrix.py; laid out by report/page/matrix.py, which picks each column's unit."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # report.py's Report holds the matrix: its Interval is only named here
    from orchestrator.report.model.report import Interval


class Beyond(StrEnum):
    """Where a cell lies against the baseline and the threshold."""

    SLOWER = "slower"  # beyond the threshold, slower than the baseline device
    FASTER = "faster"
    WITHIN = "within"  # within the threshold, or the interval reaches into it
    BASELINE = "baseline"
    NONE = "none"  # no figure: not run, or failed


@dataclass(frozen=True)
class MatrixCell:
    p50_ms: float | None
    ratio: float | None  # this device's p50 / the baseline's
    ratio_ci: Interval | None
    beyond: Beyond
    status: str = ""  # the model's status on the device (ok, partial, failed), "" when not run


@dataclass(frozen=True)
class DeviceMatrix:
    devices: tuple[str, ...]  # rows
    models: tuple[str, ...]  # columns
    cells: tuple[tuple[MatrixCell, ...], ...]  # [device][model]
    baseline: str | None
    threshold: float  # 0.05: a ratio beyond 1.05 (or under 1 / 1.05) is highlighted

    def column(self, k: int) -> tuple[MatrixCell, ...]:
        return tuple(row[k] for row in self.cells)

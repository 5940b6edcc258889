"""The dashboard index's device x model matrix (the view of PyTorch's HUD): each (device, model)'s newest p50, its
ratio to the device that measured the most models, cells beyond 5 % badged. The report's matrix, drawn by the
report's own blocks (report/page/matrix.py), a section of the index page like any other."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.builders.matrix import latest_matrix
from orchestrator.report.page.blocks import Section, text
from orchestrator.report.page.matrix import matrix_blocks

from .model import Summary


def index_matrix(series: Sequence[Summary]) -> Section | None:
    """The matrix's section of the index, None with fewer than two devices. Series are in most-recently-moved order,
    so a (device, model) with several configurations shows its most recently moved one."""
    matrix = latest_matrix([(s.key.device, s.key.model, s.latest[0] if s.latest else None) for s in series])
    if matrix is None:
        return None
    how = "(the device that measured the most models), newest night of each: no interval, the ratio alone decides"
    return Section(text("Devices x models"), "matrix", matrix_blocks(matrix, note=how))

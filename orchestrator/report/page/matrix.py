"""The report's first box: the device x model matrix of a multi-device run (p50 per cell in its column's unit, the
ratio to the baseline device with its interval, cells beyond the threshold badged), and when recipes were swept the
quantized answer (each recipe against fp32, per device). Lays out report/builders/matrix.py's matrix."""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.report.formats import column_unit, fmt_percent, fmt_scaled, interval, ratio
from orchestrator.report.model.matrix import Beyond, DeviceMatrix, MatrixCell
from orchestrator.report.page.blocks import Block, Paragraph, RunView, Section, Table, Text, badge, muted, text
from orchestrator.report.page.quantized import quantized_box
from orchestrator.report.page.run import device_heading

_BADGES = {Beyond.SLOWER: ("slower", "bad"), Beyond.FASTER: ("faster", "good"), Beyond.BASELINE: ("baseline", "info")}


def matrix_section(view: RunView) -> tuple[Section, ...]:
    """First on a page of several devices: the matrix, with the quantized answer above it."""
    matrix = view.report.matrix
    if matrix is None:
        return ()
    return (Section(text("Devices x models" + view.label), f"{view.prefix}matrix", (
        *quantized_box(view.report), *matrix_blocks(matrix, lambda d: device_heading(view.report, d))), nav="matrix"),)


def matrix_blocks(matrix: DeviceMatrix, heading: Callable[[str], str] = str,
                  note: str = "(--baseline) with its 95 % interval over process runs") -> tuple[Block, ...]:
    """The matrix's table, each column in its own unit, and the note that says how to read it."""
    units = [column_unit([c.p50_ms for c in matrix.column(k)]) for k in range(len(matrix.models))]
    headers = ("device", *(f"{m} p50 ({unit})" for m, (unit, _) in zip(matrix.models, units, strict=True)))
    rows = tuple((text(heading(device)), *(_cell(cell, factor) for cell, (_, factor) in zip(row, units, strict=True)))
                 for device, row in zip(matrix.devices, matrix.cells, strict=True))
    return (Table(headers, rows, (False, *([True] * len(matrix.models)))), Paragraph(_note(matrix, note)))


def _cell(cell: MatrixCell, factor: float) -> Text:
    if cell.p50_ms is None:
        return text(muted(cell.status or "not run"))
    parts: list = [fmt_scaled(cell.p50_ms, factor)]
    if cell.beyond is not Beyond.BASELINE and cell.ratio is not None:
        parts += [f" · {ratio(cell.ratio)} ", muted(interval(cell.ratio_ci))]
    if cell.beyond in _BADGES:
        label, tone = _BADGES[cell.beyond]
        parts += [" ", badge(label, tone)]
    return text(*parts)


def _note(matrix: DeviceMatrix, how: str) -> Text:
    return text(muted(f"p50 per execution, each column in its own unit; ratio of p50s to {matrix.baseline or '-'} "
                      f"{how}; badged when the whole interval lies beyond {fmt_percent(matrix.threshold)} either way."))

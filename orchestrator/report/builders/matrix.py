"""The device x model matrix (report/model/matrix.py) from a report's latency: a cell lies beyond the threshold when
its ratio's interval lies wholly beyond it, so noise is never highlighted; a ratio without an interval (fewer than
3 process runs) is never badged, as the report then claims no fastest device either. The dashboard's matrix has
one night per cell, so its ratios alone decide (said under it)."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.model.matrix import Beyond, DeviceMatrix, MatrixCell
from orchestrator.report.model.report import DeviceLatency, ModelSection

DEFAULT_MATRIX_THRESHOLD = 0.05  # as compare's end-to-end threshold


def device_matrix(devices: Sequence[str], models: Sequence[ModelSection], baseline: str | None,
                  threshold: float = DEFAULT_MATRIX_THRESHOLD) -> DeviceMatrix | None:
    """The matrix of a report with several devices; None for one device (its summary says it all)."""
    if len(devices) < 2 or not models:
        return None
    by_cell = {(d.device, m.name): d for m in models for d in m.latency}
    cells = tuple(tuple(_cell(by_cell.get((device, m.name)), device == baseline, threshold) for m in models)
                  for device in devices)
    return DeviceMatrix(tuple(devices), tuple(m.name for m in models), cells, baseline, threshold)


def _cell(latency: DeviceLatency | None, is_baseline: bool, threshold: float) -> MatrixCell:
    if latency is None:
        return MatrixCell(None, None, None, Beyond.NONE)
    if latency.p50_ms is None:
        return MatrixCell(None, None, None, Beyond.NONE, latency.status)
    return MatrixCell(latency.p50_ms, latency.ratio, latency.ratio_ci,
                      Beyond.BASELINE if is_baseline else _beyond(latency, threshold), latency.status)


def latest_matrix(latest: Sequence[tuple[str, str, float | None]],
                  threshold: float = DEFAULT_MATRIX_THRESHOLD) -> DeviceMatrix | None:
    """The dashboard's matrix from (device, model, newest p50) triples, the first triple of a (device, model) kept
    (the most recently moved series). Baseline: the device with the most models measured, ties by name. No interval
    here (a newest night alone): a cell is beyond the threshold by its ratio."""
    p50: dict[tuple[str, str], float | None] = {}
    for device, model, value in latest:
        p50.setdefault((device, model), value)
    devices = sorted({d for d, _ in p50})
    models = sorted({m for _, m in p50})
    if len(devices) < 2:
        return None
    baseline = max(devices, key=lambda d: (sum(p50.get((d, m)) is not None for m in models), [-ord(c) for c in d]))
    cells = tuple(tuple(_latest_cell(p50.get((d, m)), p50.get((baseline, m)), d == baseline, threshold) for m in models)
                  for d in devices)
    return DeviceMatrix(tuple(devices), tuple(models), cells, baseline, threshold)


def _latest_cell(value: float | None, base: float | None, is_baseline: bool, threshold: float) -> MatrixCell:
    if value is None:
        return MatrixCell(None, None, None, Beyond.NONE)
    if is_baseline:
        return MatrixCell(value, 1.0, None, Beyond.BASELINE)
    ratio = value / base if base else None
    return MatrixCell(value, ratio, None, _beyond_of(ratio, ratio, threshold))


def _beyond(latency: DeviceLatency, threshold: float) -> Beyond:
    if latency.ratio_ci is None:
        return Beyond.WITHIN
    return _beyond_of(latency.ratio_ci.low, latency.ratio_ci.high, threshold)


def _beyond_of(low: float | None, high: float | None, threshold: float) -> Beyond:
    """The one rule: beyond when the whole interval (or the ratio alone) lies past the threshold."""
    if low is None or high is None:
        return Beyond.WITHIN
    if low > 1.0 + threshold:
        return Beyond.SLOWER
    if high < 1.0 / (1.0 + threshold):
        return Beyond.FASTER
    return Beyond.WITHIN

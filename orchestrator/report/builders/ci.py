"""A report's CI points (report/model/ci.py): per model and device, latency with its interval, load time, memory (memory
by owner where the run measured it), energy per inference with its interval where a sensor gave it, and
an LLM's time to first token and decode rate; points that were not measured are left out, never written as zero."""

from __future__ import annotations

from collections.abc import Iterator
from statistics import fmean

from orchestrator.report.model import DeviceLatency, ModelSection, Report
from orchestrator.report.model.ci import OWNER_MEASURES, CiPoint, Measure


def ci_points(report: Report) -> tuple[CiPoint, ...]:
    targets = {f.device: f.target for f in report.facts}
    emulated = set(report.emulated)
    points: list[CiPoint] = []

    def point(device: str, model: str, configuration: str, measure: Measure, value: float | int | None,
              low: float | None = None, high: float | None = None, runs: int = 0) -> None:
        if value is not None:
            points.append(CiPoint(device, model, configuration, targets.get(device, ""), device in emulated, measure,
                                  float(value), low, high, runs))

    configuration = {m.name: m.backend for m in report.models}
    for model in report.models:
        for d in _measured(model):
            ci = d.p50_ci
            point(d.device, model.name, model.backend, Measure.LATENCY_MS, d.p50_ms, ci.low if ci else None,
                  ci.high if ci else None, d.runs)
            point(d.device, model.name, model.backend, Measure.MEAN_LATENCY_MS, fmean(d.samples), runs=d.runs)
            point(d.device, model.name, model.backend, Measure.LOAD_MS, d.load_p50_ms)
    for row in report.memory:
        backend = configuration.get(row.model, "")
        point(row.device, row.model, backend, Measure.PEAK_RSS_KB, row.peak_rss_kb)
        point(row.device, row.model, backend, Measure.PSS_KB, row.pss_kb)
        point(row.device, row.model, backend, Measure.PLANNED_BYTES, row.planned_bytes)
        if row.by_owner is not None:
            for owner, size in row.by_owner.by_owner.items():
                point(row.device, row.model, backend, OWNER_MEASURES[owner], size)
        energy = row.energy
        if energy is not None and energy.available:
            point(row.device, row.model, backend, Measure.ENERGY_UJ, energy.uj_per_inference,
                  energy.uj_per_inference_low, energy.uj_per_inference_high)
            point(row.device, row.model, backend, Measure.POWER_MW, energy.mw)
    for section in report.llm:
        backend = configuration.get(section.model, "")
        for device in section.devices:
            point(device.device, section.model, backend, Measure.TTFT_MS, device.ttft_ms)
            point(device.device, section.model, backend, Measure.DECODE_TOKENS_PER_S, device.decode_tokens_per_s)
    return tuple(points)


def _measured(model: ModelSection) -> Iterator[DeviceLatency]:
    return (d for d in model.latency if d.p50_ms is not None and d.samples)

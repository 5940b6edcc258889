"""One zoo job's figures, per (configuration, device): read from its run directory through etfarm's own readers.

Export time and phases (the export's meta.json), program size, p50 (every measured execution of the traced
runs), speed-up against the model's fp32 configuration on the same device with the report's cluster-bootstrap
interval, SNR and top-1 agreement against the fp32 eager model, the share of op time outside the delegate and
which ops, and for a configuration left out or failed, why (the exporter's, runtime's or device's own words).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.artifacts.export_phases import ExportPhases
from orchestrator.profiles.delegation import coverage
from orchestrator.profiles.stat_rows import group_rows, read_stats_csv
from orchestrator.report.builders.ratios import p50, ratio_with_ci
from orchestrator.results.model import Job, ModelResult, load_manifest


@dataclass(frozen=True)
class ZooRow:
    model: str
    recipe: str
    device: str
    measured: bool
    reason: str = ""  # why not measured (or what failed after measuring)
    export_s: float | None = None
    phases: ExportPhases | None = None
    pte_bytes: int | None = None
    p50_ms: float | None = None
    speedup: float | None = None  # fp32 p50 / this p50, on the same device
    speedup_ci: tuple[float, float] | None = None
    snr_db: float | None = None
    top1: float | None = None
    outside_share: float | None = None
    outside_ops: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "phases"}
        out["phases"] = self.phases.to_dict() if self.phases else None
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ZooRow:
        phases = ExportPhases.from_dict(data["phases"]) if data.get("phases") else None
        ci = tuple(data["speedup_ci"]) if data.get("speedup_ci") else None
        return cls(**{**data, "phases": phases, "speedup_ci": ci})


def job_rows(model: str, recipes: tuple[str, ...], devices: tuple[str, ...], run_dir: Path) -> list[ZooRow]:
    """Every (recipe, device) of one model's zoo job, measured or not, in recipe then device order."""
    job = load_manifest(run_dir)
    stats = group_rows(read_stats_csv(run_dir / "stats.csv")) if (run_dir / "stats.csv").is_file() else {}
    left_out = {lost.recipe: lost.reason for lost in job.left_out}
    names = {a.recipe.label: a.name for a in job.models if a.recipe is not None}
    rows = []
    for recipe in recipes:
        for device in devices:
            name = names.get(recipe)
            if name is None:
                rows.append(ZooRow(model, recipe, device, False, left_out.get(recipe, "not exported")))
                continue
            rows.append(_measured(job, model, recipe, device, name, names.get("fp32"), stats))
    return rows


def failed_job_rows(model: str, recipes: tuple[str, ...], devices: tuple[str, ...], reason: str) -> list[ZooRow]:
    """A job that stopped before measuring (nothing exported: its first failure is the reason for each)."""
    return [ZooRow(model, recipe, device, False, reason) for recipe in recipes for device in devices]


def _measured(job: Job, model: str, recipe: str, device: str, name: str, fp32: str | None,
              stats: dict) -> ZooRow:
    artifacts = job.model_artifacts(name)
    meta = _meta(Path(artifacts.pte).parent) if artifacts else {}
    export = {"export_s": meta.get("export_s"), "phases": ExportPhases.from_dict(meta["phases"]) if meta.get("phases") else None,
              "pte_bytes": Path(artifacts.pte).stat().st_size if artifacts and Path(artifacts.pte).is_file() else None}
    found = job.device(device)
    result = found.model(name) if found else None
    if result is None or not result.wall_execute_ms:
        why = (result.error if result else None) or (found.error if found else None) or "no measurement"
        return ZooRow(model, recipe, device, False, why, **export)
    base = found.model(fp32) if fp32 and found and name != fp32 else None  # fp32 is the base: no ratio of itself
    ratio, ci = ratio_with_ci(_runs(base), _runs(result)) if base is not None else (None, None)
    cover = coverage(device, name, stats.get((device, name), ()))
    accuracy = result.accuracy
    return ZooRow(model, recipe, device, True, "" if result.status == "ok" else (result.error or result.status),
                  p50_ms=p50(_runs(result)), speedup=ratio, speedup_ci=(ci.low, ci.high) if ci else None,
                  snr_db=accuracy.snr_db if accuracy else None, top1=accuracy.top1_agreement if accuracy else None,
                  outside_share=cover.outside_share if cover else None,
                  outside_ops=cover.outside_text(4) if cover else "", **export)


def _runs(model: ModelResult | None) -> list[tuple[float, ...]]:
    return [r.execute_ms for r in model.traced_runs if r.execute_ms] if model else []


def _meta(entry: Path) -> dict[str, Any]:
    try:
        return json.loads((entry / "meta.json").read_text())
    except (OSError, ValueError):
        return {}

"""JSON and CSV forms of the report, for scripts. Format only; every figure comes from the model.

JSON: the whole `model.Report` (dataclasses as objects, tuples as lists), no charts,
plus `"format": "etfarm-report/1"`. CSV: one row per (model, device), the latency table; the
per-op numbers are already in the run's stats.csv; new columns are appended. Names are written by
the `json` and `csv` modules: their own escaping, and every name reads back exactly.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from orchestrator.base.cache import finite_json
from orchestrator.profiles.stat_rows import csv_line
from orchestrator.report.model import Report

FORMAT_ID = "etfarm-report/1"
CSV_COLUMNS = (
    "model",
    "device",
    "status",
    "runs",
    "p50_ms",
    "p90_ms",
    "cv",
    "p90_over_p50",
    "untraced_p50_ms",
    "tracer_overhead",
    "load_p50_ms",
    "verification",
    "baseline",
    "ratio",
    "ratio_ci_low",
    "ratio_ci_high",
    "fastest",
    "flags",
    "within_run_spread",
    "between_run_spread",
    "tracer_overhead_low",
    "tracer_overhead_high",
    "flagged_runs",
)


def render_json(report: Report) -> str:
    data: dict[str, Any] = {"format": FORMAT_ID, **asdict(report)}
    # etfarm-report/1 has a `charts` list per model (before its `claim`) and a `chart` per LLM section: charts are
    # drawn for the pages only (render/charts.py), so the JSON, as always, has none.
    data["models"] = [{**{k: v for k, v in m.items() if k != "claim"}, "charts": [], "claim": m["claim"]}
                      for m in data["models"]]
    data["llm"] = [{**section, "chart": None} for section in data["llm"]]
    return json.dumps(finite_json(data), indent=1, allow_nan=False, default=str) + "\n"  # a NaN or infinity as null


def render_csv(report: Report) -> str:
    lines = [csv_line(CSV_COLUMNS)]
    for model in report.models:
        for d in model.latency:
            lines.append(csv_line(
                [
                    model.name,
                    d.device,
                    d.status,
                    d.runs,
                    _num(d.p50_ms),
                    _num(d.p90_ms),
                    _num(d.cv),
                    _num(d.p90_over_p50),
                    _num(d.untraced_p50_ms),
                    _num(d.tracer_overhead),
                    _num(d.load_p50_ms),
                    d.verification,
                    report.baseline or "",
                    _num(d.ratio),
                    _num(d.ratio_ci.low if d.ratio_ci else None),
                    _num(d.ratio_ci.high if d.ratio_ci else None),
                    d.fastest,
                    "; ".join(f"{f.kind}: {f.reason}" for f in d.flags),
                    _num(d.within_spread),
                    _num(d.between_spread),
                    _num(d.tracer.interval.low if d.tracer and d.tracer.interval else None),
                    _num(d.tracer.interval.high if d.tracer and d.tracer.interval else None),
                    "; ".join(f.text for f in d.flagged_runs),
                ]
            ))
    return "".join(lines)


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))

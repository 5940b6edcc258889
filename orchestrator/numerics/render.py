"""Renderers of a NumericsReport: plain text (the CLI), Markdown (reports embed it), CSV rows, JSON.

They print what `numerics.analyze` decided; they compute nothing (no thresholds, no metrics).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import asdict
from pathlib import Path

from orchestrator.base.cache import write_json_atomic, write_text_atomic
from orchestrator.base.codec import encode
from orchestrator.numerics.model import (
    AGAINST_AOT,
    Comparison,
    ModelNumerics,
    NumericsReport,
    OpGap,
)

NUMERICS_CSV = "numerics.csv"
NUMERICS_JSON = "numerics.json"
CSV_COLUMNS = ["device", "model", "against", "op_index", "aot_ops", "runtime_ops", "aot_debug_handle",
               "runtime_debug_handle", "mse", "l1", "snr", "diverges", "module_path", "module_type", "source"]
MAX_LISTED = 10  # diverging ops listed per comparison in text and Markdown


def csv_rows(model: ModelNumerics) -> list[dict[str, object]]:
    """numerics.csv rows of one device and model: every compared op of every comparison."""
    return [{k: v for k, v in asdict(row).items() if k in CSV_COLUMNS} for row in model.rows()]


def write_files(report: NumericsReport, run_dir: Path) -> list[Path]:
    """DIR/<device>/<model>/numerics.csv per device and model, and DIR/numerics.json (the whole report)."""
    written = []
    for model in report.models:
        folder = run_dir / model.device / model.model
        if not folder.is_dir():
            continue
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(csv_rows(model))
        path = folder / NUMERICS_CSV
        write_text_atomic(path, buffer.getvalue())
        written.append(path)
    write_json_atomic(run_dir / NUMERICS_JSON, encode(report))
    written.append(run_dir / NUMERICS_JSON)
    return written


def to_json(report: NumericsReport) -> str:
    return json.dumps(encode(report), indent=2)


def _against(comparison: Comparison) -> str:
    return "the AOT reference" if comparison.against == AGAINST_AOT else comparison.against.replace("device:", "device ")


def _op_label(op: OpGap) -> str:
    ops = ", ".join(op.aot_ops) or ", ".join(op.runtime_ops) or "?"
    where = op.module_path or "(top level)"
    kind = f" ({op.module_type.rsplit('.', 1)[-1]})" if op.module_type else ""
    source = f" at {op.source}" if op.source else ""
    runtime = f" [{', '.join(op.runtime_ops)}]" if op.runtime_ops and op.aot_ops else ""
    return f"op {op.index}: {ops}{runtime} in {where}{kind}{source}"


def _fmt(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4g}"


def _lines(report: NumericsReport, bullet: str, code: str) -> list[str]:
    metric = report.metric.value.upper()
    rule = "below" if report.metric.value == "snr" else "above"
    lines = []
    for model in report.models:
        verdict = model.verification or "not verified"
        status = "DIVERGES" if model.diverges else "NOT COMPARED" if model.error else "ok"
        lines.append(f"{bullet}{model.device} / {model.model}: {status}; final outputs: {verdict}"
                     + (f" ({model.verification_detail})" if model.verification_detail else ""))
        if model.error:
            lines.append(f"    {bullet}not compared: {model.error}")
            continue
        if model.runs_identical is False:
            lines.append(f"    {bullet}note: the runs logged different intermediate outputs (non-deterministic kernels?)")
        for comparison in model.comparisons:
            head = f"    {bullet}against {_against(comparison)}"
            if comparison.error:
                lines.append(f"{head}: not compared: {comparison.error}")
                continue
            diverging = comparison.diverging
            top = comparison.ops[comparison.worst_index] if comparison.worst_index is not None else None
            worst_text = f"; worst {metric} {_fmt(top.value)} at op {top.index}" if top else ""
            lines.append(f"{head}: {len(diverging)} of {len(comparison.ops)} op(s) {rule} {metric} {report.threshold:g}"
                         + worst_text)
            first = comparison.first_divergence
            if first is not None:
                lines.append(f"        {bullet}divergence starts at {_op_label(first)}")
            for op in diverging[:MAX_LISTED]:
                lines.append(f"        {bullet}{code}{metric} {_fmt(op.value)}{code} {_op_label(op)}")
            if len(diverging) > MAX_LISTED:
                lines.append(f"        {bullet}... and {len(diverging) - MAX_LISTED} more (see numerics.csv)")
    return lines


def render_text(report: NumericsReport) -> str:
    """The CLI summary: per device and model, which ops diverge, where, and the final-output verdict."""
    head = (f"numerics of run {report.run_id}: {report.metric.value.upper()}, threshold {report.threshold:g}"
            + (f", reference device {report.reference_device}" if report.reference_device else ""))
    tail = (f"diverging: {', '.join(report.diverging_devices)}" if report.diverges else "no op crosses the threshold")
    if report.incomplete:
        tail += " (some devices or models could not be compared: see above)"
    return "\n".join([head, *_lines(report, "", ""), tail])


def render_markdown(report: NumericsReport) -> str:
    """The same content as Markdown, for reports to embed."""
    head = (f"### Numerics ({report.metric.value.upper()}, threshold {report.threshold:g}"
            + (f", reference device `{report.reference_device}`" if report.reference_device else "") + ")")
    tail = (f"**Diverging devices:** {', '.join(report.diverging_devices)}" if report.diverges
            else "No op crosses the threshold.")
    return "\n".join([head, "", *_lines(report, "- ", "`"), "", tail])

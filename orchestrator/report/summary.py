"""Human-readable tables of per-event statistics, per model, devices side by side."""

from __future__ import annotations

from typing import Any

from orchestrator.profiles.analysis_core import FRAMEWORK_EVENTS, HIDDEN_WHEN_PRINTING
from orchestrator.report.text import fmt_ms, fmt_percent, format_bytes, format_table
from orchestrator.run.results import Job
from orchestrator.stats import percentile

NOT_OPERATORS = (*FRAMEWORK_EVENTS, *HIDDEN_WHEN_PRINTING)  # shown in the method summary or hidden, not among the operators

def summary(stats: Any, top: int = 12) -> str:
    """Per model: the method total and the slowest operators; one p50 column per device."""
    if stats is None or stats.empty:
        return "no statistics collected"
    out = []
    for model, frame in stats.groupby("model", sort=False):
        devices = list(dict.fromkeys(frame["device"]))
        several = len(devices) > 1
        title = f"model {model}: p50 ms per device ({', '.join(devices)})" if several else f"model {model} on {devices[0]}"
        out.append(f"{title}\n{_model_table(frame, devices, top)}")
    return "\n\n".join(out)


def _model_table(frame: Any, devices: list[str], top: int) -> str:
    keyed = frame.set_index(["event_block", "event_index"])
    first = keyed[keyed["device"] == devices[0]]
    ops = first[~first["event_name"].isin(NOT_OPERATORS)].sort_values("avg_ms", ascending=False).head(top)
    totals = first[first["event_name"] == "Method::execute"]
    chosen = list(totals.index) + list(ops.index)
    where = ["module", "source"] if "module_path" in frame else []
    if len(devices) == 1:
        headers = ["event", "block", "n", "p50 ms", "p90 ms", "avg ms", "cv", *where]
        rows = [[r.event_name, key[0], int(r.samples), r.p50_ms, r.p90_ms, r.avg_ms, _cv_percent(r), *_where(r, where)]
                for key, r in ((k, first.loc[k]) for k in chosen)]
        return format_table(headers, rows, "llrrrrr" + "l" * len(where))
    # Rows follow the first device's slowest operators; another device lacking the event shows "-".
    p50 = {device: keyed[keyed["device"] == device]["p50_ms"].to_dict() for device in devices}
    rows = [[first.loc[key].event_name, key[0], *(p50[device].get(key) for device in devices),
             *_where(first.loc[key], where)] for key in chosen]
    return format_table(["event", "block", *devices, *where], rows, "ll" + "r" * len(devices) + "l" * len(where))


def _where(row: Any, wanted: list[str]) -> list[str]:
    if not wanted:
        return []
    from orchestrator.report.tables import op_where

    text = op_where(getattr(row, "module_path", None), getattr(row, "delegate_covers", None))
    source = getattr(row, "source_line", None)
    return [text if len(text) <= 56 else text[:55] + "…", source if isinstance(source, str) else ""]


def _cv_percent(row: Any) -> str:
    cv = getattr(row, "cv", None)
    return fmt_percent(float(cv) if cv is not None else None)


def wall_clock_lines(job: Job) -> list[str]:
    """Per device and model: the runner's wall clock, the ETDump tracer's cost, and a stability flag."""
    lines = []
    for device, model in job.results():
        execute = model.wall_execute_ms
        if not execute:
            continue
        line = (f"{device.name} {model.name}: wall clock per execution p50 {fmt_ms(percentile(execute, 50))} ms, "
                f"p90 {fmt_ms(percentile(execute, 90))} ms over {len(execute)}")
        if model.warm_load_ms:
            line += f"; method load p50 {fmt_ms(percentile(model.warm_load_ms, 50))} ms"
        if model.cold_load_ms is not None:
            line += f" (cold {fmt_ms(model.cold_load_ms)} ms)"
        memory = [f"{label} {format_bytes(value)}" for label, value in (
            ("peak RSS", model.peak_rss_kb * 1024 if model.peak_rss_kb is not None else None),
            ("planned", model.planned_memory_bytes), ("program", model.program_bytes)) if value is not None]
        if memory:
            line += "; " + ", ".join(memory)
        overhead = model.tracer_overhead
        if overhead is not None:
            line += (f"; without ETDump p50 {fmt_ms(percentile(model.untraced_execute_ms, 50))} ms "
                     f"(tracer overhead {overhead * 100:+.1f}%)")
        if model.unstable and model.execute_cv is not None:
            line += f"; UNSTABLE: CV {model.execute_cv * 100:.0f}% (pin cores, cool down, or add runs)"
        flagged = model.flagged_runs
        if flagged:
            line += "; FLAGGED: " + ", ".join(
                f"{r.label} {r.flag}" + (f" (calibration {r.slowdown * 100:+.0f}%)" if r.slowdown is not None else "")
                for r in flagged)
        lines.append(line)
    return lines



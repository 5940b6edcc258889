"""Human-readable tables of per-event statistics, per model, devices side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from orchestrator.run.results import Job
from orchestrator.stats import percentile

# Framework bookkeeping events: shown in the method summary, not among the operators.
FRAMEWORK_EVENTS = ("Method::init", "Program::load_method", "Method::execute", "OPERATOR_CALL")


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """Plain fixed-width table; `align` is one 'l'/'r' per column (numbers right by default)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    align = align or "".join("r" if rows and isinstance(rows[0][i], (int, float)) else "l" for i in range(len(headers)))
    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w) for v, w, a in zip(values, widths, align)).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # NaN
            return "-"
        return f"{value:.4f}" if abs(value) < 1000 else f"{value:.1f}"
    return str(value)


def summary(stats: Any, top: int = 12) -> str:
    """Per model: the method total and the slowest operators; one p50 column per device."""
    if stats is None or stats.empty:
        return "no statistics collected"
    out = []
    for model, frame in stats.groupby("model", sort=False):
        devices = list(dict.fromkeys(frame["device"]))
        title = f"model {model}: p50 ms per device ({', '.join(devices)})" if len(devices) > 1 else f"model {model} on {devices[0]}"
        out.append(f"{title}\n{_model_table(frame, devices, top)}")
    return "\n\n".join(out)


def _model_table(frame: Any, devices: list[str], top: int) -> str:
    keyed = frame.set_index(["event_block", "event_index"])
    first = keyed[keyed["device"] == devices[0]]
    ops = first[~first["event_name"].isin(FRAMEWORK_EVENTS)].sort_values("avg_ms", ascending=False).head(top)
    totals = first[first["event_name"] == "Method::execute"]
    chosen = list(totals.index) + list(ops.index)
    where = ["module", "source"] if "module_path" in frame else []
    if len(devices) == 1:
        headers = ["event", "block", "n", "p50 ms", "p90 ms", "avg ms", "cv %", *where]
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
    return "-" if cv is None or cv != cv else f"{float(cv) * 100.0:.1f}"


def wall_clock_lines(job: Job) -> list[str]:
    """Per device and model: the runner's wall clock, the ETDump tracer's cost, and a stability flag."""
    lines = []
    for device, model in job.results():
        execute = model.wall_execute_ms
        if not execute:
            continue
        line = (f"{device.name} {model.name}: wall clock per execution p50 {percentile(execute, 50):.4f} ms, "
                f"p90 {percentile(execute, 90):.4f} ms over {len(execute)}")
        if model.load_ms:
            line += f"; method load p50 {percentile(model.load_ms, 50):.3f} ms"
        overhead = model.tracer_overhead
        if overhead is not None:
            line += (f"; without ETDump p50 {percentile(model.untraced_execute_ms, 50):.4f} ms "
                     f"(tracer overhead {overhead * 100:+.1f}%)")
        if model.unstable and model.execute_cv is not None:
            line += f"; UNSTABLE: CV {model.execute_cv * 100:.0f}% (pin cores, cool down, or add runs)"
        lines.append(line)
    return lines

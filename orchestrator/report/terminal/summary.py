"""Human-readable tables of per-event statistics, per model, devices side by side."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.base.stats import percentile
from orchestrator.profiles.op_identity import FRAMEWORK_EVENTS, HIDDEN_WHEN_PRINTING
from orchestrator.profiles.source import op_where, telling_source_lines
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.trust import tracer_overhead
from orchestrator.report.escape import terminal_text
from orchestrator.report.formats import clip, fmt_ms, fmt_percent, format_bytes, tracer_cost
from orchestrator.report.terminal.footprint import footprint_text
from orchestrator.report.terminal.table import format_table, timed
from orchestrator.results.contention import contention_text
from orchestrator.results.model import DeviceResult, Job
from orchestrator.run.calibration import flag_text

NOT_OPERATORS = (*FRAMEWORK_EVENTS, *HIDDEN_WHEN_PRINTING)  # shown in the method summary or hidden, not among the operators


def summary(rows: Sequence[StatRow], top: int = 12) -> str:
    """Per model: the method total and the slowest operators; one p50 column per device."""
    if not rows:
        return "no statistics collected"
    where = ["module", "source"] if any(r.linked for r in rows) else []  # the run has an ETRecord's columns
    by_model: dict[str, list[StatRow]] = {}
    for row in rows:
        by_model.setdefault(row.model, []).append(row)
    out = []
    for model, model_rows in by_model.items():
        devices = list(dict.fromkeys(r.device for r in model_rows))
        several = len(devices) > 1
        title = f"model {model}: p50 per device ({', '.join(devices)})" if several else f"model {model} on {devices[0]}"
        out.append(f"{terminal_text(title)}\n{_model_table(model_rows, devices, top, where)}")
    return "\n\n".join(out)


def _model_table(rows: list[StatRow], devices: list[str], top: int, where: list[str]) -> str:
    first = {r.key: r for r in rows if r.device == devices[0]}
    if where and not telling_source_lines(r.source_line for r in rows if r.event_name not in NOT_OPERATORS):
        where = where[:1]  # one line for every op (an nn.Sequential call site) tells no layer apart
    # Sorted by the statistic the table shows: the mean with one device (its avg column), p50 with several.
    shown = "avg_ms" if len(devices) == 1 else "p50_ms"
    ops = sorted((r for r in first.values() if r.event_name not in NOT_OPERATORS),
                 key=lambda r: (getattr(r, shown) is None, -(getattr(r, shown) or 0.0)))[:top]  # stable: ties keep order
    chosen = [r for r in first.values() if r.event_name == "Method::execute"] + ops
    if len(devices) == 1:
        headers, table = timed(["event", "block", "n", "p50", "p90", "avg", "cv", *where],
                               [[r.event_name, r.event_block, r.samples, r.p50_ms, r.p90_ms, r.avg_ms, fmt_percent(r.cv),
                                 *_where(r, where)] for r in chosen], (3, 4, 5))  # a unit per column: us for kernels
        return format_table(headers, table, "llrrrrr" + "l" * len(where))
    # Rows follow the first device's slowest operators, joined by op identity (not kernel name: op_identity.py);
    # another device lacking the op shows "-".
    p50 = {device: {r.op_key: r.p50_ms for r in rows if r.device == device} for device in devices}
    headers, table = timed(["event", "block", *devices, *where],
                           [[r.event_name, r.event_block, *(p50[device].get(r.op_key) for device in devices),
                             *_where(r, where)] for r in chosen], range(2, 2 + len(devices)))
    return format_table(headers, table, "ll" + "r" * len(devices) + "l" * len(where))


def _where(row: StatRow, wanted: list[str]) -> list[str]:
    if not wanted:
        return []
    text = op_where(row.module_path, row.delegate_covers)
    return [clip(text, 56), row.source_line or ""][:len(wanted)]


def device_label(device: DeviceResult) -> str:
    """A device's name as every line of text shows it: an emulation says so (its timings are qemu's on a host)."""
    return f"{device.name} (emulated)" if device.emulated else device.name


def wall_clock_lines(job: Job) -> list[str]:
    """Per device and model: the runner's wall clock, the ETDump tracer's cost, and a stability flag."""
    lines = []
    for device, model in job.results():
        every, execute = model.wall_execute_ms, model.clean_wall_execute_ms
        if not every:
            continue
        counted = f"{len(execute)} clean of {len(every)}" if len(execute) < len(every) else f"{len(every)}"
        if not execute:  # every execution waited for a CPU: the figures are the contended ones, said so
            execute, counted = every, f"{len(every)}, ALL CONTENDED"
        line = (f"{device_label(device)} {model.name}: wall clock per execution p50 {fmt_ms(percentile(execute, 50))} ms, "
                f"p90 {fmt_ms(percentile(execute, 90))} ms over {counted}")
        if model.warm_load_ms:
            line += f"; method load p50 {fmt_ms(percentile(model.warm_load_ms, 50))} ms"
        if model.cold_load_ms is not None:
            line += f" (cold {fmt_ms(model.cold_load_ms)} ms)"
        if model.first_execution_ms is not None:  # an LLM's warmups are whole generations
            call = "generation" if any(r.llm is not None for r in model.runs) else "execution"
            line += f"; first {call} in a process p50 {fmt_ms(model.first_execution_ms)} ms"
        memory = [f"{label} {format_bytes(value)}" for label, value in (
            ("peak RSS", model.peak_rss_kb * 1024 if model.peak_rss_kb is not None else None),
            ("PSS", model.pss_kb * 1024 if model.pss_kb is not None else None),
            ("planned", model.planned_memory_bytes), ("program", model.program_bytes)) if value is not None]
        if memory:
            line += "; " + ", ".join(memory)
        line += footprint_text(model)  # memory by owner, energy per inference (issue 39)
        tracer = tracer_overhead(model)
        if tracer is not None and tracer.overhead is not None:  # worded as the pages word it: formats.tracer_cost
            line += (f"; without ETDump p50 {fmt_ms(percentile(model.untraced_execute_ms, 50))} ms "
                     f"(tracer overhead {tracer_cost(tracer)})")
        if model.unstable:
            line += "; UNSTABLE: " + "; ".join(model.stability.reasons)
        contended = contention_text(model.contention_summary)
        if contended:
            line += "; contention: " + contended
        flagged = model.flagged_runs
        if flagged:
            line += "; FLAGGED: " + ", ".join(flag_text(r) for r in flagged)
        accuracy = model.accuracy
        if accuracy is not None and accuracy.max_abs_error is not None:  # a recipe's outputs against fp32 eager
            line += ("; outputs against fp32 eager: SNR " + ("exact" if accuracy.snr_db is None else
                                                             f"{accuracy.snr_db:.1f} dB")
                     + f", max abs error {accuracy.max_abs_error:.3g}"
                     + ("" if accuracy.top1_agreement is None else f", top-1 agrees {accuracy.top1_agreement:.0%}"))
        lines.append(terminal_text(line))
    return lines



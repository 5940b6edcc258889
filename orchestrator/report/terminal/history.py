"""Text of `etfarm history` and `etfarm history show`: formatting only, the store computes.

The listing is one row per (run, model, configuration), newest first: the configuration is the model's backend
and each other setting that differs among the listed rows (run/configuration.py: an xnnpack, a portable and a
`--numerics` run of one name are three series), a column per device holds its end-to-end p50 (ms, traced runs,
all samples) or, when the device did not finish, its status; `*` marks a p50 with a process run the calibration
flagged interfered or throttled. A nightly's recorded verdict of regressed (or wrong outputs) is the row's status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from device_agents.facts import DeviceFacts
from orchestrator.base.stats import percentile
from orchestrator.report.formats import fmt_ms
from orchestrator.report.terminal.footprint import footprint_history_table
from orchestrator.report.terminal.llm_history import llm_history_table
from orchestrator.report.terminal.table import format_table
from orchestrator.results.model import Job, ModelResult
from orchestrator.run.calibration import flag_text
from orchestrator.run.configuration import Settings, configuration_label, varying_settings
from orchestrator.store import HistoryPoint, StoredJob
from orchestrator.verdicts.recorded import WRONG_OUTPUTS
from orchestrator.verdicts.statistics import Verdict


def history_table(runs: Sequence[StoredJob], device: str | None = None) -> str:
    if not runs:
        return "no stored runs match (record one with `etfarm run` or `etfarm store import DIR`)"
    devices = list(dict.fromkeys(p.device for r in runs for p in r.points if device is None or p.device == device))
    shown = varying_settings(p.settings for r in runs for p in r.points)  # what tells the listed series apart
    rows = []
    for run in runs:
        for model in run.models:
            for settings, mine in _by_configuration([p for p in run.points if p.model == model]).items():
                cells: dict[str, Any] = {p.device: _point_cell(p.status, p.e2e_p50_ms) + ("*" if p.flagged else "")
                                         for p in mine}
                commit = next((p.git_commit for p in mine if p.git_commit), None)
                label = configuration_label(settings, shown) if settings else next((p.backend for p in mine), "-")
                rows.append([run.run_id, run.started, _status(run.status, mine), model, label,
                             *(cells.get(d, "") for d in devices), (commit or "-")[:12]])
    headers = ["run", "started", "status", "model", "configuration", *(f"{d} p50 ms" for d in devices), "commit"]
    table = format_table(headers, rows, "lllll" + "r" * len(devices) + "l")
    if any(p.flagged for r in runs for p in r.points):
        table += "\n* a process run was flagged interfered or throttled (`etfarm history show RUN`)"
    llm = llm_history_table(runs, devices)  # LLMs: TTFT and decode tokens/s per device
    footprint = footprint_history_table(runs, devices)  # peak RSS and energy per inference (issue 39)
    return table + (f"\n\n{llm}" if llm else "") + (f"\n\n{footprint}" if footprint else "")


def _by_configuration(points: Sequence[HistoryPoint]) -> dict[Settings, list[HistoryPoint]]:
    """A (run, model)'s points per configuration: one row per series (devices of one run may differ in runtime)."""
    out: dict[Settings, list[HistoryPoint]] = {}
    for point in points:
        out.setdefault(point.settings, []).append(point)
    return out


def _status(job_status: str, points: Sequence[HistoryPoint]) -> str:
    """The row's status: a nightly's verdict where one judged the row worse (regressed, wrong outputs) on a device,
    else the job's status."""
    bad = [f"{p.verdict} on {p.device}" for p in points if p.verdict in (Verdict.REGRESSED.value, WRONG_OUTPUTS)]
    return "; ".join(bad) if bad else job_status


def _point_cell(status: str, p50: float | None) -> str:
    if status == "ok" and p50 is not None:
        return f"{p50:.4f}"
    return status if p50 is None else f"{p50:.4f} ({status})"


def run_details(job: Job, run_dir: str | None) -> str:
    """`history show`: what ran where, how it ended, per device and model."""
    # numpy (the tracer's interval): `etfarm history` lists runs without it
    from orchestrator.report.builders.trust import tracer_overhead
    from orchestrator.report.formats import tracer_cost

    lines = [f"run {job.run_id}: {job.status.value}", f"started {job.started}, finished {job.finished or '-'}",
             f"run directory: {run_dir or '(gone; the store keeps its results)'}",
             "versions: " + ", ".join(f"{k} {v}" for k, v in job.versions.items()),
             "host: " + ", ".join(f"{k} {v}" for k, v in job.host.items()),
             (f"settings: backend {job.config.backend}, {job.config.options.runs} runs x "
              f"{job.config.options.iterations} iterations, warmup {job.config.options.warmup}"), ""]
    model_rows = [[m.name, m.backend, m.spec, (m.content_hash or "-")[:12], (m.git_commit or "-")[:12]]
                  for m in job.models]
    lines += [format_table(["model", "backend", "spec", "content", "commit"], model_rows, "lllll"), ""]
    device_rows = [[d.name, d.transport, d.target, d.status.value, (d.runner_key or "-")[:12], _facts(d.facts),
                    d.error or ""] for d in job.devices]
    lines += [format_table(["device", "transport", "target", "status", "runner", "facts", "error"], device_rows,
                           "lllllll"), ""]
    rows = []
    for device, model in job.results():
        wall = model.reported_execute_ms
        tracer = tracer_overhead(model)
        rows.append([device.name, model.name, model.status.value,
                     model.verification.status.value if model.verification else "-", percentile(wall, 50),
                     percentile(wall, 90), percentile(model.untraced_execute_ms, 50),
                     tracer_cost(tracer), _load(model),
                     _spread(model.stability.within), _spread(model.stability.between),
                     "UNSTABLE" if model.unstable else "", ", ".join(flag_text(r) for r in model.flagged_runs)])
    lines.append(format_table(["device", "model", "status", "verified", "e2e p50 ms", "e2e p90 ms", "untraced p50 ms",
                               "tracer", "load p50 ms", "within-run", "run-to-run", "", "flagged"], rows,
                              "llllrrrrrrrll") if rows
                 else "no device produced results")
    # numpy (the LLM figures' statistics): `etfarm history` lists runs without it
    from orchestrator.report.terminal.llm import llm_lines

    return "\n".join([*lines, *llm_lines(job)])  # LLMs: TTFT, tokens/s, memory


def _load(model: ModelResult) -> str:
    """The method load as the report gives it: p50 of the warm loads (every run but the cold first), the cold one
    apart."""
    return fmt_ms(percentile(model.warm_load_ms, 50)) + (
        f" (cold {fmt_ms(model.cold_load_ms)})" if model.cold_load_ms is not None else "")


def _spread(value: float | None) -> str:
    return f"{value * 100:.1f}%" if value is not None else "-"


def _facts(facts: DeviceFacts) -> str:
    named = (("abi", facts.abi), ("cores", facts.cores), ("kernel", facts.kernel))
    return ", ".join(f"{name} {value}" for name, value in named if value not in (None, ""))[:72]

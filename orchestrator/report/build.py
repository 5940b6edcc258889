"""Build the report model from a run directory: every number and verdict, computed here only.

Inputs: the results model (`load_manifest`, never manifest.json by dict paths), the run's
stats.csv (per-event statistics as `StatRow`s, read by profiles/stat_rows.py: no pandas, so
`etfarm report` stays fast) and, optionally, the store's history points. Output: a frozen `model.Report`
that the renderers only format. Charts are drawn when asked (HTML and Markdown need them,
JSON and CSV do not).

Method, stated in every report (`METHODS`): latency figures are over all measured executions
of the traced process runs; the ratio to the baseline device is a ratio of medians of
per-process-run medians, with a percentile bootstrap CI that resamples process runs (the
replication unit: samples within one process share its warm-up, placement and frequency).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from orchestrator.errors import UsageError
from orchestrator.numerics.model import NumericsReport
from orchestrator.profiles.analysis_core import FRAMEWORK_EVENTS
from orchestrator.profiles.stat_rows import StatRow, group_rows, read_stats_csv
from orchestrator.report.device_facts import device_facts
from orchestrator.report.history import HISTORY_RUNS
from orchestrator.report.model import (
    DeviceLatency,
    DeviceOps,
    Flag,
    HistoryRow,
    Interval,
    ModelSection,
    OpRatioRow,
    OpStat,
    Report,
)
from orchestrator.run.results import DeviceResult, Job, ModelResult, load_manifest
from orchestrator.run.rundir import STATS
from orchestrator.stats import (
    UNSTABLE_CV,
    coefficient_of_variation,
    is_unstable,
    median,
    percentile,
)
from orchestrator.store.history import HistoryPoint

TOP_OPS = 10  # slowest events listed per device
RATIO_ROWS = 15  # events in the op x device ratio table
GROUPS_SHOWN = 8  # op groups in the stacked chart; the rest joins "other"
CI_LEVEL = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0  # a report of the same run is the same report
NOT_OPS = frozenset({*FRAMEWORK_EVENTS, "OPERATOR_CALL"})
DELEGATE_CALL = "DELEGATE_CALL"
_INSTANCE = re.compile(r"\s*#\d+$")

METHODS = (
    (
        "End-to-end p50/p90: numpy linear percentiles over every measured execution of the traced process runs "
        "(wall clock per execution, timed by the runner)."
    ),
    (
        f"Spread: CV = std (ddof=1) / mean over the same samples, flagged unstable above {UNSTABLE_CV:.0%}; "
        "p90/p50 shows the tail."
    ),
    (
        f"Ratio to the baseline: median of per-process-run medians, device / baseline. {CI_LEVEL:.0%} CI: percentile "
        f"bootstrap ({BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}; as scipy.stats.bootstrap) resampling each "
        "device's process runs independently: the process run is the replication unit. Fewer than 2 runs on "
        "either side: no CI."
    ),
    ("Untraced: process runs without the ETDump event tracer; tracer overhead = traced p50 / untraced p50 - 1."),
    (
        "Per op: stats.csv (Inspector's statistics over all samples); share = the event's mean time / Method::execute "
        "mean time. DELEGATE_CALL is left out when its delegate's kernels are listed, so shares do not count twice."
    ),
)


def build_report(
    run_dir: str | Path,
    baseline: str | None = None,
    history: Sequence[HistoryPoint] = (),
    charts: bool = True,
    history_runs: int = HISTORY_RUNS,
    numerics: NumericsReport | None = None,
) -> Report:
    """The report of one run directory: its manifest and stats.csv, read from disk (`etfarm report DIR`)."""
    root = Path(run_dir)
    return build_job_report(load_manifest(root), root, read_stats_csv(root / STATS), baseline, history, charts,
                            history_runs, numerics)


def build_job_report(
    job: Job,
    root: Path,
    rows: Sequence[StatRow],
    baseline: str | None = None,
    history: Sequence[HistoryPoint] = (),
    charts: bool = True,
    history_runs: int = HISTORY_RUNS,
    numerics: NumericsReport | None = None,
) -> Report:
    """The report of a job and its statistics (in memory after `etfarm run`). `baseline` defaults to the job's
    first device with results; `numerics`, when the caller has analysed the run's numerics already, is used
    instead of again."""
    known = [d.name for d in job.devices]
    devices = tuple(dict.fromkeys([*(n for n in job.config.devices if n in known), *known]))  # as the user listed them
    if baseline is not None and baseline not in devices:
        raise UsageError(f"--baseline: device {baseline!r} is not in run {job.run_id} (devices: {', '.join(devices) or 'none'})")
    if baseline is None:  # the first device, in the user's order, that measured something
        by_name = {d.name: d for d in job.devices}
        measured = [n for n in devices if any(m.wall_execute_ms for m in by_name[n].models)]
        baseline = (measured or list(devices) or [None])[0]
    stats = group_rows(rows)
    sections = tuple(_model_section(job, devices, name, baseline, stats, history, history_runs) for name in _model_names(job))
    if charts:
        from orchestrator.report.charts import model_charts

        sections = tuple(replace(s, charts=model_charts(s, devices, baseline)) for s in sections)
    options = job.config.options
    settings = (
        f"{options.runs} runs x {options.iterations} iterations, {options.warmup} warmup, "
        f"{options.untraced_runs} untraced run{'s' if options.untraced_runs != 1 else ''}, backend "
        f"{job.config.backend}, {options.order.value} order"
    )
    numerics_error = None
    if options.numerics and numerics is None:
        numerics, numerics_error = _numerics(root)
    from orchestrator.report.llm_section import llm_sections
    from orchestrator.report.memory import memory_rows

    return Report(
        llm=llm_sections(job, rows, devices, charts),
        memory=memory_rows(job, devices),
        numerics=numerics,
        numerics_error=numerics_error,
        run_id=job.run_id,
        status=job.status.value,
        started=job.started,
        finished=job.finished,
        devices=devices,
        baseline=baseline,
        models=sections,
        facts=tuple(device_facts(d) for d in sorted(job.devices, key=lambda d: devices.index(d.name))),
        versions=tuple(sorted((str(k), str(v)) for k, v in job.versions.items())),
        settings=settings,
        methods=METHODS,
    )


def _numerics(root: Path) -> tuple[NumericsReport | None, str | None]:
    """The run's numerics (default metric and threshold, as `etfarm numerics RUN`), or why not."""
    from orchestrator.errors import EtfarmError
    from orchestrator.numerics import analyze_run

    try:
        return analyze_run(root), None
    except EtfarmError as exc:
        return None, str(exc)


# ---- stats.csv ------------------------------------------------------------------------------


def _ops(rows: Sequence[StatRow]) -> tuple[list[OpStat], float | None]:
    """The operator events of one device and model, and the method's mean execute time."""
    execute = next((r.avg_ms for r in rows if r.event_name == "Method::execute"), None)
    kernels_listed = any(r.is_delegated_op for r in rows)
    ops = []
    for r in rows:
        name = r.event_name
        if name in NOT_OPS or (name == DELEGATE_CALL and kernels_listed):
            continue
        avg, p50 = r.avg_ms or 0.0, r.p50_ms or 0.0
        ops.append(
            OpStat(
                block=r.event_block,
                index=r.event_index,
                name=name,
                group=_INSTANCE.sub("", name),
                p50_ms=p50,
                avg_ms=avg,
                share=avg / execute if execute else None,
                module_path=r.module_path or "",
                op_types=r.op_types or "",
                delegated=bool(r.is_delegated_op),
                backend=r.delegate_backend_name or "",
                source_line=r.source_line or "",
                covers=r.delegate_covers or "",
            )
        )
    return ops, execute


def _groups(ops: list[OpStat], execute: float | None) -> tuple[tuple[str, float], ...]:
    totals: dict[str, float] = {}
    for op in ops:
        totals[op.group] = totals.get(op.group, 0.0) + op.avg_ms
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    shown, rest = ranked[:GROUPS_SHOWN], sum(v for _, v in ranked[GROUPS_SHOWN:])
    if execute is not None:
        rest += max(execute - sum(totals.values()), 0.0)  # framework and dispatch time
    return tuple(shown) + ((("other", rest),) if rest > 0 else ())


# ---- per model ------------------------------------------------------------------------------


def _model_names(job: Job) -> list[str]:
    names = [m.name for m in job.models]
    for _, model in job.results():
        if model.name not in names:
            names.append(model.name)
    return names


def _model_section(
    job: Job,
    devices: tuple[str, ...],
    name: str,
    baseline: str | None,
    stats: Mapping[tuple[str, str], Sequence[StatRow]],
    history: Sequence[HistoryPoint],
    history_runs: int,
) -> ModelSection:
    results = [(d, d.model(name)) for d in sorted(job.devices, key=lambda d: devices.index(d.name))]
    present = [(d, m) for d, m in results if m is not None]
    base_model = next((m for d, m in present if d.name == baseline), None)
    base_medians = _run_medians(base_model) if base_model else ()
    latency = [_latency(d, m, baseline, base_medians) for d, m in present]
    candidates = [x for x in latency if x.p50_ms is not None and x.status != "failed"]
    fastest = min(candidates, key=lambda x: x.p50_ms or 0.0).device if candidates else None
    latency = [replace(x, fastest=x.device == fastest) for x in latency]
    per_device = {d.name: _ops(stats.get((d.name, name), ())) for d, _ in present}
    ops = tuple(
        DeviceOps(device=dev, top=tuple(sorted(o, key=lambda op: -op.avg_ms)[:TOP_OPS]), groups=_groups(o, ex))
        for dev, (o, ex) in per_device.items()
        if o
    )
    artifacts = job.model_artifacts(name)
    history_points = _history(history, name, {d.name for d, _ in present}, history_runs)
    return ModelSection(
        name=name,
        backend=artifacts.backend if artifacts else job.config.backend,
        latency=tuple(latency),
        ops=ops,
        op_ratios=_op_ratios([d.name for d, _ in present], baseline, per_device),
        history=history_points,
        history_rows=_history_rows(history_points, [d.name for d, _ in present]),
    )


def _run_medians(model: ModelResult) -> tuple[float, ...]:
    return tuple(m for r in model.traced_runs if (m := median(r.execute_ms)) is not None)


def _latency(device: DeviceResult, model: ModelResult, baseline: str | None, base_medians: tuple[float, ...]) -> DeviceLatency:
    samples = model.wall_execute_ms
    run_medians = _run_medians(model)
    p50, p90 = percentile(samples, 50), percentile(samples, 90)
    cv = coefficient_of_variation(samples)
    untraced = percentile(model.untraced_execute_ms, 50)
    if device.name == baseline:
        ratio, ci = (1.0 if run_medians else None), None
    else:
        ratio, ci = ratio_with_ci(run_medians, base_medians)
    verification = model.verification
    flags = []
    if model.status.value == "failed" or model.error:
        flags.append(Flag("failed", model.error or "no result"))
    elif model.status.value == "partial":
        flags.append(Flag("partial", f"only {len(model.traced_runs)} of the planned process runs produced results"))
    if is_unstable(cv):
        flags.append(Flag("unstable", f"CV {cv:.0%} is above {UNSTABLE_CV:.0%}: pin cores, cool down, or add runs"))
    if verification is not None and verification.status.value == "fail":
        flags.append(Flag("verification", f"outputs differ from the reference: {verification.detail}"))
    return DeviceLatency(
        device=device.name,
        status=model.status.value,
        runs=len(run_medians),
        samples=samples,
        run_medians=run_medians,
        p50_ms=p50,
        p90_ms=p90,
        cv=cv,
        p90_over_p50=p90 / p50 if p50 and p90 is not None else None,
        untraced_p50_ms=untraced,
        tracer_overhead=model.tracer_overhead,
        load_p50_ms=percentile(model.load_ms, 50),
        verification=verification.status.value if verification else "none",
        verification_detail=verification.detail if verification else "",
        ratio=ratio,
        ratio_ci=ci,
        fastest=False,
        flags=tuple(flags),
        error=model.error,
    )


def ratio_with_ci(runs: Sequence[float], base_runs: Sequence[float]) -> tuple[float | None, Interval | None]:
    """median(runs) / median(base_runs), with a percentile bootstrap CI over process runs."""
    if len(runs) == 0 or len(base_runs) == 0:
        return None, None
    import numpy as np

    a, b = np.asarray(runs, dtype=float), np.asarray(base_runs, dtype=float)
    if np.median(b) <= 0:
        return None, None
    ratio = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2:
        return ratio, None
    # The percentile bootstrap of scipy.stats.bootstrap(method="percentile", paired=False), in numpy:
    # importing scipy.stats alone costs 0.5-1.2 s here, a third of the report's 3 s budget. A unit test
    # holds the two to the same interval.
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    resampled = np.median(a[rng.integers(0, len(a), (BOOTSTRAP_RESAMPLES, len(a)))], axis=1) / np.median(
        b[rng.integers(0, len(b), (BOOTSTRAP_RESAMPLES, len(b)))], axis=1
    )
    tail = (1.0 - CI_LEVEL) / 2.0 * 100.0
    low, high = (float(x) for x in np.percentile(resampled, [tail, 100.0 - tail]))
    if not (math.isfinite(low) and math.isfinite(high)):
        return ratio, None
    return ratio, Interval(low, high, CI_LEVEL)


def _op_ratios(
    devices: list[str], baseline: str | None, per_device: dict[str, tuple[list[OpStat], float | None]]
) -> tuple[OpRatioRow, ...]:
    """The slowest events (by their worst share on any device), p50 per device, ratio to the baseline."""
    keyed = {dev: {(op.block, op.index, op.name): op for op in ops} for dev, (ops, _) in per_device.items()}
    weight: dict[tuple[str, int, str], float] = {}
    for ops in keyed.values():
        for key, op in ops.items():
            weight[key] = max(weight.get(key, 0.0), op.avg_ms)
    chosen = sorted(weight, key=lambda k: -weight[k])[:RATIO_ROWS]
    base = keyed.get(baseline or "", {})
    rows = []
    for key in chosen:
        ops = [keyed.get(dev, {}).get(key) for dev in devices]
        p50 = tuple(op.p50_ms if op else None for op in ops)
        ref = base.get(key)
        ratio = tuple(op.p50_ms / ref.p50_ms if op and ref and ref.p50_ms > 0 else None for op in ops)
        module = next((op.module_path for op in ops if op and op.module_path), "")
        rows.append(OpRatioRow(block=key[0], index=key[1], name=key[2], module_path=module, p50_ms=p50, ratio=ratio))
    return tuple(rows)


def _history(points: Sequence[HistoryPoint], model: str, devices: set[str], runs: int) -> tuple[HistoryPoint, ...]:
    mine = sorted((p for p in points if p.model == model and p.device in devices), key=lambda p: (p.started, p.run_id))
    kept = list(dict.fromkeys(p.run_id for p in mine))[-runs:] if runs > 0 else []
    return tuple(p for p in mine if p.run_id in set(kept))


def _history_rows(points: tuple[HistoryPoint, ...], devices: list[str]) -> tuple[HistoryRow, ...]:
    runs: dict[str, dict[str, HistoryPoint]] = {}
    for point in points:
        runs.setdefault(point.run_id, {})[point.device] = point
    rows = []
    for run_id, by_device in runs.items():
        first = next(iter(by_device.values()))
        rows.append(
            HistoryRow(
                run_id=run_id,
                started=first.started,
                git_commit=next((p.git_commit for p in by_device.values() if p.git_commit), None),
                p50_ms=tuple(by_device[d].e2e_p50_ms if d in by_device else None for d in devices),
                status=tuple(by_device[d].status if d in by_device else "" for d in devices),
            )
        )
    return tuple(reversed(rows))

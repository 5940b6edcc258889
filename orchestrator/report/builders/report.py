"""Build the report model from a run directory: every number and verdict, computed here only.

Inputs: the results model (`load_manifest`, never manifest.json by dict paths), the run's
stats.csv (per-event statistics as `StatRow`s, read by profiles/stat_rows.py: no pandas, so
`etfarm report` stays fast) and, optionally, the store's history points. Output: a frozen `model.Report`
that the pages (report/page/) and the JSON and CSV export show; the formats that show charts draw
them from it (report/render/charts.py): a builder never draws.

One statistic per claim (`METHODS`, stated on every page): latency is the p50 of every measured
execution of the traced process runs; every ratio is a ratio of those p50s with a cluster
bootstrap interval over process runs (ratios.py); "fastest" only where those intervals say so
(claims.py); stability by the robust rule of orchestrator/base/stats.py; what to trust in trust.py.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from orchestrator.base.errors import EtfarmError, UsageError
from orchestrator.base.stats import BETWEEN_RUNS_LIMIT, WITHIN_RUN_LIMIT, coefficient_of_variation, median, percentile
from orchestrator.numerics import analyze_run
from orchestrator.numerics.model import NumericsReport
from orchestrator.profiles.delegation import coverage
from orchestrator.profiles.rollups import rollup
from orchestrator.profiles.stat_rows import StatRow, group_rows
from orchestrator.report.builders.claims import CLAIM_MARGIN, speed_claim
from orchestrator.report.builders.device_facts import device_facts
from orchestrator.report.builders.history import HISTORY_RUNS
from orchestrator.report.builders.llm import llm_sections
from orchestrator.report.builders.matrix import DEFAULT_MATRIX_THRESHOLD, device_matrix
from orchestrator.report.builders.memory import memory_rows
from orchestrator.report.builders.ops import device_op_runs, device_ops, op_ratios, op_stats
from orchestrator.report.builders.quantized import recipe_groups
from orchestrator.report.builders.ratios import (
    CI_LEVEL,
    MIN_RUNS_FOR_INTERVAL,
    RESAMPLES,
    SEED,
    p50_with_ci,
    ratio_with_ci,
)
from orchestrator.report.builders.trust import tracer_overhead, trust_notes
from orchestrator.report.model import (
    DeviceLatency,
    Flag,
    FlaggedRun,
    HistoryRow,
    ModelSection,
    Report,
)
from orchestrator.results.llm_figures import generation_key
from orchestrator.results.model import DeviceResult, Job, ModelResult
from orchestrator.results.record import RunRecord
from orchestrator.run.calibration import flag_text
from orchestrator.run.configuration import Settings, configuration_label, varying_settings
from orchestrator.store.history import HistoryPoint

# One colour per device, in the report's device order, in every chart of a report (render/charts.py).
DEVICE_PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974")

METHODS = (
    "p50: numpy's linear median of every clean measured execution of the traced process runs (wall clock per "
    "execution, timed by the runner); p90 likewise. Every latency, ratio and headline on this page uses that p50.",
    "Clean: an execution whose threads waited for a CPU (run-queue wait, read by the runner) no longer than "
    "max(50 us, 2 % of its time) (results/contention.py); the others are left out of every statistic and counted under "
    "What to trust; when none was clean, all are used.",
    f"Ratios: p50 / p50. {CI_LEVEL:.0%} interval: cluster bootstrap ({RESAMPLES} resamples, seed {SEED}) that draws "
    "each side's process runs with replacement and pools their executions: the process run is the replication unit. "
    f"Fewer than {MIN_RUNS_FOR_INTERVAL} runs on a side: no interval.",
    f"Fastest: the lowest p50, claimed only when its interval against every other device lies above "
    f"1 + {CLAIM_MARGIN:.0%}; otherwise no clear difference.",
    f"Stability (orchestrator/base/stats.py): a typical process run's IQR / median of its executions (unstable above "
    f"{WITHIN_RUN_LIMIT:.0%}) and the IQR / median of the per-run medians of the runs the calibration did not flag "
    f"(unstable above {BETWEEN_RUNS_LIMIT:.0%}); limits measured in benchmarks/README.md \"Stability\".",
    "Interfered / throttled (runs made before the calibration workload was retired): the workload, timed before and "
    "after each run, more than 25 % slower than the job's fastest on that device (run/calibration.py).",
    "Untraced: process runs without the ETDump event tracer; tracer overhead = traced p50 / untraced p50 - 1, "
    "with its interval over process runs.",
    "Per op: stats.csv (Inspector's statistics over the clean executions' samples); tables sort by and show the mean, "
    "and share = "
    "mean / Method::execute mean. DELEGATE_CALL is left out when its delegate's kernels are listed, so shares do "
    "not count twice. XNNPACK kernels are named in your model from the .pte's serialized graph and the ETRecord; "
    "kernels under the timer's 1 us resolution are shown as such, without a share.",
    "Ops across devices are joined by their identity in your model (module path, ATen op, occurrence: the kernel's "
    "name differs by CPU); each ratio's interval resamples process runs as above. Time by module (self: its own ops; "
    "total: with its submodules) and by op type sum the ops' means per execution.",
)

LLM_METHOD = (
    "LLMs (results/llm_figures.py): time to first token, prefill and decode tokens/s are medians over every measured "
    "generation of the traced process runs (decode tokens/s = generated tokens / decode time; \"no ETDump\": the "
    "untraced runs'); per-phase ops from the ETDump blocks of prefill calls and decode steps (profiles/phases.py), "
    "share = mean / that phase's Method::execute mean; RSS and PSS read after prefill and after decode.")


def build_report(
    run: RunRecord,
    baseline: str | None = None,
    history: Sequence[HistoryPoint] = (),
    history_runs: int = HISTORY_RUNS,
    numerics: NumericsReport | None = None,
) -> Report:
    """The report of one run: its manifest and stats.csv, read from its record (`etfarm report DIR`)."""
    return build_job_report(run, baseline, history, history_runs, numerics)


def build_job_report(
    run: RunRecord,
    baseline: str | None = None,
    history: Sequence[HistoryPoint] = (),
    history_runs: int = HISTORY_RUNS,
    numerics: NumericsReport | None = None,
    threshold: float = DEFAULT_MATRIX_THRESHOLD,
) -> Report:
    """The report of a job and its statistics (its record's, in memory after `etfarm run`). `baseline` defaults to
    the job's first device with results; `numerics`, when the caller has analysed the run's numerics already, is
    used instead of again."""
    job, rows = run.job, run.all_rows
    known = [d.name for d in job.devices]
    devices = tuple(dict.fromkeys([*(n for n in job.config.devices if n in known), *known]))  # as the user listed them
    if baseline is not None and baseline not in devices:
        raise UsageError(f"--baseline: device {baseline!r} is not in run {job.run_id} (devices: {', '.join(devices) or 'none'})")
    if baseline is None:  # the first device, in the user's order, that measured something
        by_name = {d.name: d for d in job.devices}
        measured = [n for n in devices if any(m.wall_execute_ms for m in by_name[n].models)]
        baseline = (measured or list(devices) or [None])[0]
    stats = group_rows(rows)
    names = _model_names(job)
    sections = tuple(_model_section(job, run, devices, name, baseline, stats, history, history_runs) for name in names)
    colours = tuple((device, DEVICE_PALETTE[k % len(DEVICE_PALETTE)]) for k, device in enumerate(devices))
    options = job.config.options
    settings = (
        f"{options.runs} runs x {options.iterations} iterations, {options.warmup} warmup, "
        f"{options.untraced_runs} untraced run{'s' if options.untraced_runs != 1 else ''}, backend "
        f"{job.config.backend}, {options.order.value} order"
    )
    numerics_error = None
    if options.numerics and numerics is None:
        numerics, numerics_error = _numerics(run)

    llm = llm_sections(job, rows, devices)
    return Report(
        llm=llm,
        memory=memory_rows(job, devices),
        quantized=recipe_groups(job, rows, devices),
        delegation=tuple(c for name in names for d in devices
                         if (found := stats.get((d, name))) and (c := coverage(d, name, found)) is not None),
        left_out=tuple(lost.note for lost in job.left_out),
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
        methods=(*METHODS, LLM_METHOD) if llm else METHODS,
        trust=trust_notes(job, names),
        colours=colours,
        emulated=tuple(d.name for d in job.devices if d.emulated),
        matrix=device_matrix(devices, sections, baseline, threshold),
    )


def _numerics(run: RunRecord) -> tuple[NumericsReport | None, str | None]:
    """The run's numerics (default metric and threshold, as `etfarm numerics RUN`), or why not."""
    try:
        return analyze_run(run), None
    except EtfarmError as exc:
        return None, str(exc)


# ---- per model ------------------------------------------------------------------------------


def _model_names(job: Job) -> list[str]:
    names = [m.name for m in job.models]
    for _, model in job.results():
        if model.name not in names:
            names.append(model.name)
    return names


def _model_section(
    job: Job,
    run: RunRecord,
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
    base_runs = _runs(base_model) if base_model else []
    latency = [_latency(d, m, baseline, base_runs) for d, m in present]
    claim = speed_claim([(d.name, x.p50_ms, _runs(m)) for (d, m), x in zip(present, latency, strict=True)
                         if x.p50_ms is not None and x.status != "failed"])
    latency = [replace(x, fastest=x.device == claim.fastest) for x in latency]
    per_device = {d.name: op_stats(stats.get((d.name, name), ())) for d, _ in present}
    artifacts = job.model_artifacts(name)
    history_points = _history(history, name, {d.name for d, _ in present}, history_runs)
    return ModelSection(
        name=name,
        backend=artifacts.backend if artifacts else job.config.backend,
        latency=tuple(latency),
        ops=device_ops(per_device),
        op_ratios=op_ratios([d.name for d, _ in present], baseline, per_device,
                            _op_runs(run, present, stats, name) if len(present) > 1 else None),
        history=history_points,
        history_rows=_history_rows(history_points, [d.name for d, _ in present]),
        claim=claim,
        unit="generation" if generation_key(job, name) is not None else "execution",
        rollups=tuple(rollup(d.name, name, rows) for d, _ in present if (rows := stats.get((d.name, name)))),
    )


def _op_runs(run: RunRecord, present: Sequence[tuple[DeviceResult, ModelResult]],
             stats: Mapping[tuple[str, str], Sequence[StatRow]], name: str) -> dict[str, dict]:
    """Per device, its ops' samples per process run (for the op x device ratios' intervals)."""
    return {d.name: device_op_runs(run, d.name, m, stats.get((d.name, name), ())) for d, m in present}


def _runs(model: ModelResult) -> list[tuple[float, ...]]:
    """Each traced run's clean executions (results/contention.py); all of them when no execution of the model was clean."""
    clean = [r.clean_execute_ms for r in model.traced_runs if r.clean_execute_ms]
    return clean or [r.execute_ms for r in model.traced_runs if r.execute_ms]


def _latency(device: DeviceResult, model: ModelResult, baseline: str | None,
             base_runs: list[tuple[float, ...]]) -> DeviceLatency:
    samples = model.reported_execute_ms
    runs = _runs(model)
    (p50_ms, p50_ci), p90_ms = p50_with_ci(runs), percentile(samples, 90)
    if device.name == baseline:
        ratio, ci = (1.0 if runs else None), None
    else:
        ratio, ci = ratio_with_ci(runs, base_runs)
    verification = model.verification
    stability = model.stability

    flagged = tuple(FlaggedRun(r.label, str(r.flag), r.slowdown, flag_text(r)) for r in model.flagged_runs)
    return DeviceLatency(
        device=device.name,
        status=model.status.value,
        runs=len(runs),
        samples=samples,
        run_medians=tuple(m for r in runs if (m := median(r)) is not None),
        p50_ms=p50_ms,
        p90_ms=p90_ms,
        cv=coefficient_of_variation(samples),
        p90_over_p50=p90_ms / p50_ms if p50_ms and p90_ms is not None else None,
        untraced_p50_ms=percentile(model.untraced_execute_ms, 50),
        tracer_overhead=model.tracer_overhead,
        load_p50_ms=percentile(model.warm_load_ms, 50),
        verification=verification.status.value if verification else "none",
        verification_detail=verification.detail if verification else "",
        ratio=ratio,
        ratio_ci=ci,
        fastest=False,
        flags=_flags(model, flagged),
        error=model.error,
        within_spread=stability.within,
        between_spread=stability.between,
        tracer=tracer_overhead(model),
        flagged_runs=flagged,
        cold_load_ms=model.cold_load_ms,
        p50_ci=p50_ci,
        first_execution_ms=model.first_execution_ms,
    )


def _flags(model: ModelResult, flagged: tuple[FlaggedRun, ...]) -> tuple[Flag, ...]:
    flags = []
    if model.status.value == "failed" or model.error:
        flags.append(Flag("failed", model.error or "no result"))
    elif model.status.value == "partial":
        flags.append(Flag("partial", f"only {len(model.traced_runs)} of the planned process runs produced results"))
    reasons = model.stability.reasons
    if reasons:
        flags.append(Flag("unstable", "; ".join(reasons)))
    for kind in ("throttled", "interfered"):
        mine = [f.text for f in flagged if f.flag == kind]
        if mine:
            flags.append(Flag(kind, ", ".join(mine)))
    verification = model.verification
    if verification is not None and verification.status.value == "fail":
        flags.append(Flag("verification", f"outputs differ from the reference: {verification.detail}"))
    return tuple(flags)


def _history(points: Sequence[HistoryPoint], model: str, devices: set[str], runs: int) -> tuple[HistoryPoint, ...]:
    mine = sorted((p for p in points if p.model == model and p.device in devices), key=lambda p: (p.started, p.run_id))
    kept = list(dict.fromkeys(p.run_id for p in mine))[-runs:] if runs > 0 else []
    return tuple(p for p in mine if p.run_id in set(kept))


def _history_rows(points: tuple[HistoryPoint, ...], devices: list[str]) -> tuple[HistoryRow, ...]:
    """A row per (run, configuration), newest first: a run's points of one series side by side per device."""
    shown = varying_settings(p.settings for p in points)
    rows: dict[tuple[str, Settings], dict[str, HistoryPoint]] = {}
    for point in points:
        rows.setdefault((point.run_id, point.settings), {})[point.device] = point
    out = []
    for (run_id, settings), by_device in rows.items():
        first = next(iter(by_device.values()))
        out.append(
            HistoryRow(
                run_id=run_id,
                started=first.started,
                git_commit=next((p.git_commit for p in by_device.values() if p.git_commit), None),
                p50_ms=tuple(by_device[d].e2e_p50_ms if d in by_device else None for d in devices),
                status=tuple(by_device[d].status if d in by_device else "" for d in devices),
                configuration=configuration_label(settings, shown) if settings else first.backend,
            )
        )
    return tuple(reversed(out))

"""`etfarm run`: the options checked, the job run where it belongs, its result handed on in memory.

Four ways to run (docs/how-to/run.md): `--resume DIR` finishes a recorded job (on its farm when
it ran on one); `--ab SPEC_A SPEC_B` runs an A/B job and prints verdicts; `--scheduler` runs on a
Dask farm; otherwise the devices of this host's inventory. Then the job's typed result (`JobResult`:
the results model, the statistics and the samples) goes to the results store, the numerics, the
report and the printed summary, with no file of the run directory read back.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.app.ab import run_ab_job
from orchestrator.app.checks import check_store_place
from orchestrator.app.console import Console
from orchestrator.app.record import record_job
from orchestrator.app.request import JobRequest
from orchestrator.app.resume import resume_recorded_job
from orchestrator.artifacts import parse_model_specs
from orchestrator.base.errors import UsageError, one_line
from orchestrator.base.progress import Progress
from orchestrator.config import load_inventory
from orchestrator.numerics import analyze_job, render_text, write_files
from orchestrator.report import job_view, json_text, wall_clock_lines
from orchestrator.report.output import write_run_report
from orchestrator.report.terminal.llm import llm_lines, phase_tables
from orchestrator.report.terminal.summary import device_label, summary
from orchestrator.results.model import JobOptions
from orchestrator.run import run_job

if TYPE_CHECKING:
    from orchestrator.numerics.model import NumericsReport
    from orchestrator.run.engine.job import JobResult


def run_command(request: JobRequest, console: Console) -> int:
    """Run `etfarm run` as asked; returns its exit code (docs/how-to/run.md)."""
    options = request.run_options()
    request.check()
    if not request.no_store:
        check_store_place(request.store)
    progress = Progress(quiet=request.quiet)
    if request.ab is not None:
        return run_ab_job(request, options, progress, console)
    if request.resume is not None:
        result = resume_recorded_job(request, options, progress)
    else:
        result = _start_job(request, options, progress)
    return finish(result, request, console)


def _start_job(request: JobRequest, options: JobOptions, progress: Progress) -> JobResult:
    specs = parse_model_specs(request.model or [], request.name or ())
    if request.scheduler:  # many hosts: the devices are the workers' (docs/how-to/farm.md)
        # only a farm's commands load the farm's package (a single-host run never does)
        from orchestrator.farm.client import run_distributed

        names = [n.strip() for n in request.devices.split(",") if n.strip()]
        if not names:
            raise UsageError("no devices given; use --devices NAME[,NAME...]")
        return run_distributed(list(dict.fromkeys(names)), specs, backend=str(request.backend), options=options,
                               out=request.out, progress=progress, farm=request.farm(request.scheduler))

    inventory = load_inventory(request.config)
    selected = inventory.select(request.devices)
    return run_job(selected, specs, backend=str(request.backend), options=options, out=request.out, progress=progress,
                   config_file=inventory.path)


def finish(result: JobResult, request: JobRequest, console: Console) -> int:
    """The job's result to the store, the numerics, the report, then the summary (or --json); the exit code."""
    root = result.rundir.root
    if not request.no_store:
        record_job(result, request.store, console, quiet=request.quiet)
    numerics = None
    if result.job.config.options.numerics:
        numerics = analyze_job(result.recorded, root)
        write_files(numerics, root)
    report = None
    if not request.no_report:
        report = write_run_report(result.record, warn=console.err, store=request.store, numerics=numerics)  # analysed once
    if request.as_json:
        console.out(json_text(job_view(result.job, root, result.exit_code, report)))
    else:
        print_summary(result, report, numerics, console)
    return result.exit_code


def print_summary(result: JobResult, report: Path | None, numerics: NumericsReport | None, console: Console) -> None:
    console.out(summary(result.rows))
    console.out("")
    phases = phase_tables(result.rows)  # LLMs: their ops in prefill and in decode
    if phases:
        console.out(phases + "\n")
    for line in [*wall_clock_lines(result.job), *llm_lines(result.job)]:
        console.out(line)
    for device in result.job.devices:
        verdicts = ", ".join(f"{m.name} {m.verification.status if m.verification else 'skipped'}"
                             + ("" if m.status == "ok" else f" ({m.status}: {len(m.runs)} run(s) kept)")
                             for m in device.models)
        if device.status == "ok":
            console.out(f"{device_label(device)}: ok (verification: {verdicts})")
        elif device.status in ("wrong-results", "interrupted"):
            console.out(f"{device.name}: {device.status.upper()}: {one_line(device.error or '')}"
                        + (f" (verification: {verdicts})" if verdicts else ""))
        else:
            console.out(f"{device.name}: FAILED: {one_line(device.error or '')}"
                        + (f" (kept: {verdicts})" if verdicts else ""))
    for skipped in result.not_exported:  # an export recipe that could not lower a model: the others ran
        console.out(skipped.note)
    if numerics is not None:
        console.out(render_text(numerics))
    if report is not None:
        console.out(f"report: {report}")
    console.out(f"run directory: {result.rundir.root}")
    if result.interrupted:
        console.out(f"interrupted: resume with `etfarm run --resume {result.rundir.root}`")

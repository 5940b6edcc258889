"""`etfarm run --ab SPEC_A SPEC_B`: one A/B job (ABBA order), B's verdict against A per device and op.

The jobs (the first, and with --until-confident the further ones) are recorded in the results
store from memory, as `etfarm run` records its job; then the A/B page (the page `compare --html`
writes: verdicts first, every op) goes into the first job's directory as report-ab.html.
"""

from __future__ import annotations

from orchestrator.app.ab_run import run_ab
from orchestrator.app.console import Console
from orchestrator.app.record import record_job
from orchestrator.app.request import JobRequest
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.config import load_inventory
from orchestrator.progress import Progress
from orchestrator.report.comparison_output import RunInput, write_ab_page, write_junit
from orchestrator.report.destination import AB_PAGE
from orchestrator.report.terminal.verdicts import verdict_table
from orchestrator.results.model import JobOptions
from orchestrator.verdicts.statistics import VerdictSettings


def run_ab_job(request: JobRequest, options: JobOptions, progress: Progress, console: Console) -> int:
    """Run, print the verdict table and each job's directory, record the jobs; returns the exit code."""
    assert request.ab is not None
    inventory = load_inventory(request.config)
    devices = inventory.select(request.devices)
    a, b = (parse_model_spec(text) for text in request.ab)
    settings = VerdictSettings(threshold=request.threshold / 100.0, op_threshold=request.op_threshold / 100.0,
                               center=request.center)
    outcome = run_ab(list(devices), a, b, backend=str(request.backend), options=options, out=request.out,
                     progress=progress, settings=settings, config_file=inventory.path,
                     until_confident=request.until_confident, max_runs=request.max_runs)
    console.out(verdict_table(outcome.comparison))
    for job in outcome.jobs:
        for device in job.job.devices:
            if device.status != "ok":
                console.out(f"{device.name}: FAILED: {device.error}")
        console.out(f"run directory: {job.rundir.root}")
        if not request.no_store:
            record_job(job, request.store, console)
    # after recording: a page that cannot be written loses nothing measured
    page = write_ab_page(outcome.comparison, outcome.jobs[0].rundir.root / AB_PAGE, request.store,
                         runs=[RunInput(j.rundir.root, j.job) for j in outcome.jobs])
    console.out(f"A/B page: {page}")
    if request.junit is not None:
        console.out(f"JUnit: {write_junit(outcome.comparison, request.junit)}")
    return outcome.exit_code

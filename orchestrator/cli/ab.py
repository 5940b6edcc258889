"""`etfarm run --ab SPEC_A SPEC_B`: one A/B job (ABBA order), B's verdict against A per device and op."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer

from device_agents import DeviceSpec
from orchestrator.progress import Progress
from orchestrator.run.results import RunOptions


def run_ab_job(devices: Sequence[DeviceSpec], specs: tuple[str, str], backend: str, options: RunOptions, out: Path | None,
               progress: Progress, config_file: Path | None, *, threshold: float, op_threshold: float, center: str,
               until_confident: bool, max_runs: int, store: Path | None, record: bool) -> int:
    """Run, print the verdict table and each job's directory, record the jobs; returns the exit code."""
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.report.verdicts import verdict_table
    from orchestrator.verdicts.ab import run_ab
    from orchestrator.verdicts.statistics import VerdictSettings

    a, b = (parse_model_spec(text) for text in specs)
    settings = VerdictSettings(threshold=threshold / 100.0, op_threshold=op_threshold / 100.0, center=center)
    outcome = run_ab(list(devices), a, b, backend=backend, options=options, out=out, progress=progress,
                     settings=settings, config_file=config_file, until_confident=until_confident, max_runs=max_runs)
    typer.echo(verdict_table(outcome.comparison))
    for job in outcome.jobs:
        for device in job.job.devices:
            if device.status != "ok":
                typer.echo(f"{device.name}: FAILED: {device.error}")
        typer.echo(f"run directory: {job.rundir.root}")
        if record:
            from orchestrator.cli.store import record_after_run

            record_after_run(job.rundir.root, store)
    return outcome.exit_code

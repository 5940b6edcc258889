"""`etfarm nightly --plan FILE`: run a plan, store it, compare with the baseline, write reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.options import SchedulerOption, TlsCaOption, TlsCertOption, TlsKeyOption


def register(app: typer.Typer) -> None:
    app.command("nightly")(nightly)


def nightly(
    plan: Annotated[
        Path,
        typer.Option("--plan", help="Nightly plan YAML: devices, models, runs, iterations, warmup, threshold, center, "
                     "noise_floor (auto, the default: per device and model from stored good runs; or a percentage), "
                     "baseline, report."),
    ],
    config: Annotated[
        Path | None, typer.Option(help="Device inventory YAML when the plan names none (default $ETFARM_CONFIG).")
    ] = None,
    store: Annotated[
        Path | None, typer.Option("--store", help="Results store (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    scheduler: SchedulerOption = None,
    tls_ca_file: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
) -> None:
    """Run the plan's models on its devices, record the runs, compare each (device, model) with its
    baseline (last-good or a run id), write Markdown and JSON verdicts into the plan's report
    directory and print the verdict table. With `noise_floor: auto` (the default) a regression
    must also exceed the device's job-to-job noise estimated from its stored good runs (none
    until 6 exist); the table's `noise floor` column says which floor each pair used.

    Exit 0 no regression; 1 a regression or wrong outputs; 3 nothing regressed but some device or
    model could not be measured; 2 usage or plan error. The first night has no baseline: it passes
    (verdict `new`) and becomes the baseline. With `--scheduler` (or the plan's `scheduler:`) the
    jobs run on the Dask farm (see `etfarm run --scheduler`).
    """
    from orchestrator.progress import Progress
    from orchestrator.report.verdicts import verdict_table, write_verdict_report
    from orchestrator.store import open_store
    from orchestrator.verdicts.nightly import pair_baselines, run_nightly
    from orchestrator.verdicts.nightly_plan import load_plan

    loaded = load_plan(plan)
    farm = None
    if scheduler or loaded.scheduler:
        from orchestrator.farm.client import FarmOptions
        from orchestrator.farm.security import make_security

        farm = FarmOptions(scheduler=scheduler or loaded.scheduler or "",
                            security=make_security(tls_ca_file, tls_cert, tls_key))
    with open_store(store) as opened:
        outcome = run_nightly(loaded, opened, Progress(quiet=quiet), config=config, farm=farm)
    if outcome.interrupted:  # no verdict, no report from partial data; the job is stored as `interrupted`
        for job in outcome.jobs:
            typer.echo(f"run directory: {job.rundir.root}" + (" (interrupted)" if job.interrupted else ""))
        typer.echo("interrupted: no verdicts written; the interrupted run is never a baseline")
        raise typer.Exit(outcome.exit_code)
    comparison = outcome.comparison
    written = write_verdict_report(
        comparison,
        loaded.report,
        f"nightly-{outcome.jobs[0].job.run_id}",
        f"etfarm nightly {comparison.b}",
        [*pair_baselines(comparison), *outcome.notes],
    )
    typer.echo(verdict_table(comparison))
    html = _html_reports(outcome.jobs, loaded.report, store)
    for job in outcome.jobs:
        for device in job.job.devices:
            if device.status != "ok":
                typer.echo(f"{device.name}: NOT MEASURED ({device.blame or 'unknown'}): {device.error}")
        typer.echo(f"run directory: {job.rundir.root}")
    typer.echo(f"report: {written[0]}")
    for path in html:
        typer.echo(f"report: {path}")
    raise typer.Exit(outcome.exit_code)


def _html_reports(jobs: list, report_dir: Path, store: Path | None) -> list[Path]:
    """Each night's HTML report (devices side by side, per op, history) beside the verdicts."""
    from orchestrator.report.history import history_points
    from orchestrator.report.output import ReportFormat, write_report

    written = []
    for job in jobs:
        root = job.rundir.root
        try:
            path = write_report(root, ReportFormat.HTML, report_dir / f"nightly-{job.job.run_id}.html",
                                history=history_points(job.recorded, store), job=job.recorded, rows=job.rows)
        except Exception as exc:  # noqa: BLE001 - the verdicts are written; a report failure must not change them
            typer.echo(f"warning: HTML report of {root} not written ({type(exc).__name__}: {exc})", err=True)
            continue
        if path is not None:
            written.append(path)
    return written

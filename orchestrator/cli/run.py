"""`etfarm run`: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Model spec: file.py:factory, package.module:factory or a .pte. Repeatable.")] = None,
    devices: Annotated[str, typer.Option("--devices", "-d", help="Comma-separated device names from the inventory.")] = "local",
    backend: Annotated[str, typer.Option(help="Lowering backend: xnnpack or portable.")] = "xnnpack",
    runs: Annotated[int, typer.Option(min=1, help="Separate process runs per device and model.")] = 5,
    iterations: Annotated[int, typer.Option(min=1, help="Measured executions per process run.")] = 20,
    warmup: Annotated[int, typer.Option(min=0, help="Executions before measuring, not recorded.")] = 3,
    out: Annotated[Path | None, typer.Option(help="Run directory (default ./etfarm-runs/<run id>).")] = None,
    config: Annotated[Path | None, typer.Option(help="Device inventory YAML (default $ETFARM_CONFIG).")] = None,
    name: Annotated[str | None, typer.Option(help="Model name in reports (single model only).")] = None,
    threads: Annotated[int, typer.Option(min=0, help="CPU threads for the runner (0: device default).")] = 0,
    timeout: Annotated[float, typer.Option(min=1, help="Deadline in seconds for one process run.")] = 600.0,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Fail instead of waiting when a device is locked.")] = False,
    untraced_runs: Annotated[int, typer.Option(min=0, help="Extra runs without the event tracer, for end-to-end time and tracer overhead.")] = 1,
    cooldown: Annotated[float, typer.Option(min=0, help="Seconds to pause before each process run.")] = 0.0,
    max_temp: Annotated[float | None, typer.Option(help="Before each run, wait until the device's hottest zone is at most this many °C.")] = None,
    intermediate_outputs: Annotated[bool, typer.Option("--intermediate-outputs", help="Also dump intermediate outputs (debug buffer).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    ab: Annotated[tuple[str, str] | None, typer.Option("--ab", metavar="SPEC_A SPEC_B", help="A/B comparison: run two model specs interleaved A B B A on each device, then print B's verdict against A per device and op (exit 1 on a regression).")] = None,
    threshold: Annotated[float, typer.Option(min=0, help="With --ab: practical size of an end-to-end regression, in percent.")] = 5.0,
    op_threshold: Annotated[float, typer.Option(min=0, help="With --ab: practical size of a per-op regression, in percent.")] = 10.0,
    center: Annotated[str, typer.Option(help="With --ab: a side's statistic over its per-run medians, 'mean' or 'fast' (their minimum).")] = "mean",
    until_confident: Annotated[bool, typer.Option("--until-confident", help="With --ab: while a device's verdict is inconclusive, run --runs more process runs per side (a further job, pooled) until decided or --max-runs is reached.")] = False,
    max_runs: Annotated[int, typer.Option(min=1, help="With --until-confident: most process runs per side.")] = 40,
    store: Annotated[Path | None, typer.Option("--store", help="Results store to record the run in (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")] = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not record the run in the results store.")] = False,
) -> None:
    """Export, build, stage and profile MODEL on DEVICES; write a run directory and print per-op latency."""
    from orchestrator.artifacts.lowering import BACKENDS
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.config import load_inventory
    from orchestrator.progress import Progress
    from orchestrator.report.summary import summary, wall_clock_lines
    from orchestrator.run.job import run_job
    from orchestrator.run.results import RunOptions

    if ab is not None:
        if model:
            raise UsageError("--ab SPEC_A SPEC_B replaces --model; give one or the other")
        model = list(ab)
    elif until_confident:
        raise UsageError("--until-confident applies to --ab")
    if not model:
        raise UsageError("give a model with --model SPEC (or two with --ab SPEC_A SPEC_B)")
    if backend not in BACKENDS:
        raise UsageError(f"--backend: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if name and len(model) > 1:
        raise UsageError("--name applies to a single --model")
    inventory = load_inventory(config)
    selected = inventory.select(devices)
    specs = [parse_model_spec(text, name) for text in model]
    options = RunOptions(runs=runs, iterations=iterations, warmup=warmup, run_timeout_s=timeout,
                         wait_for_lock=not no_wait, intermediate_outputs=intermediate_outputs, cpu_threads=threads,
                         untraced_runs=untraced_runs, cooldown_s=cooldown, max_temp_c=max_temp)
    if ab is not None:
        if center not in ("mean", "fast"):
            raise UsageError(f"--center: {center!r}; choose mean or fast")
        _run_ab(selected, specs, backend, options, out, Progress(quiet=quiet), inventory.path, threshold, op_threshold,
                until_confident, max_runs, not no_store, store, center)
    result = run_job(selected, specs, backend=backend, options=options, out=out, progress=Progress(quiet=quiet),
                     config_file=inventory.path)
    typer.echo(summary(result.stats))
    typer.echo("")
    for line in wall_clock_lines(result.job):
        typer.echo(line)
    for device in result.job.devices:
        if device.status == "ok":
            verdicts = ", ".join(f"{m.name} {m.verification.status if m.verification else 'skipped'}" for m in device.models)
            typer.echo(f"{device.name}: ok (verification: {verdicts})")
        else:
            typer.echo(f"{device.name}: FAILED: {device.error}")
    typer.echo(f"run directory: {result.rundir.root}")
    if not no_store:
        from orchestrator.cli.store import record_after_run

        record_after_run(result.rundir.root, store)
    raise typer.Exit(result.exit_code)


def _run_ab(selected: list, specs: list, backend: str, options: object, out: Path | None, progress: object,
            config_file: Path | None, threshold: float, op_threshold: float, until_confident: bool,
            max_runs: int, record: bool, store: Path | None, center: str) -> None:
    from orchestrator.report.verdicts import verdict_table
    from orchestrator.verdicts.ab import run_ab
    from orchestrator.verdicts.statistics import VerdictSettings

    settings = VerdictSettings(threshold=threshold / 100.0, op_threshold=op_threshold / 100.0, center=center)
    outcome = run_ab(selected, specs[0], specs[1], backend=backend, options=options, out=out,  # type: ignore[arg-type]
                     progress=progress, settings=settings, config_file=config_file,  # type: ignore[arg-type]
                     until_confident=until_confident, max_runs=max_runs)
    typer.echo(verdict_table(outcome.comparison))
    for job in outcome.jobs:
        for device in job.job.devices:
            if device.status != "ok":
                typer.echo(f"{device.name}: FAILED: {device.error}")
        typer.echo(f"run directory: {job.rundir.root}")
        if record:
            from orchestrator.cli.store import record_after_run

            record_after_run(job.rundir.root, store)
    raise typer.Exit(outcome.exit_code)

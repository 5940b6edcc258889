"""`etfarm run`: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    model: Annotated[list[str], typer.Option("--model", "-m", help="Model spec: file.py:factory, package.module:factory or a .pte. Repeatable.")],
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
    order: Annotated[str, typer.Option(help="How the models' process runs follow each other on a device: interleaved (seeded shuffle of rounds) or sequential.")] = "interleaved",
    seed: Annotated[int, typer.Option(help="Seed of the interleaved order.")] = 0,
    intermediate_outputs: Annotated[bool, typer.Option("--intermediate-outputs", help="Also dump intermediate outputs (debug buffer).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Export, build, stage and profile MODEL on DEVICES; write a run directory and print per-op latency."""
    from orchestrator.artifacts.lowering import BACKENDS
    from orchestrator.artifacts.modelspec import parse_model_spec
    from orchestrator.config import load_inventory
    from orchestrator.progress import Progress
    from orchestrator.report.summary import summary, wall_clock_lines
    from orchestrator.run.job import run_job
    from orchestrator.run.results import RunOptions
    from orchestrator.run.schedule import RunOrder

    if backend not in BACKENDS:
        raise UsageError(f"--backend: unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    choices = (RunOrder.INTERLEAVED.value, RunOrder.SEQUENTIAL.value)
    if order not in choices:
        raise UsageError(f"--order: expected {' or '.join(choices)}, got {order!r}")
    if name and len(model) > 1:
        raise UsageError("--name applies to a single --model")
    inventory = load_inventory(config)
    selected = inventory.select(devices)
    specs = [parse_model_spec(text, name) for text in model]
    options = RunOptions(runs=runs, iterations=iterations, warmup=warmup, run_timeout_s=timeout,
                         wait_for_lock=not no_wait, intermediate_outputs=intermediate_outputs, cpu_threads=threads,
                         untraced_runs=untraced_runs, cooldown_s=cooldown, max_temp_c=max_temp,
                         order=RunOrder(order), seed=seed)
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
    raise typer.Exit(result.exit_code)

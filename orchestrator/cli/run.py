"""`etfarm run`: the main job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.cli.options import (
    Backend,
    ConfigOption,
    JsonOption,
    SchedulerOption,
    TlsCaOption,
    TlsCertOption,
    TlsKeyOption,
)
from orchestrator.errors import UsageError


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(
    ctx: typer.Context,
    model: Annotated[list[str] | None, typer.Option(
        "--model", "-m", help="Model spec: file.py:factory, package.module:factory or a .pte. Repeatable; "
                              "required unless --resume.")] = None,
    devices: Annotated[str, typer.Option("--devices", "-d", help="Comma-separated device names from the inventory.")] = "local",
    backend: Annotated[Backend, typer.Option(help="Lowering backend.")] = Backend.xnnpack,
    runs: Annotated[int, typer.Option(min=1, help="Separate process runs per device and model.")] = 5,
    iterations: Annotated[int, typer.Option(min=1, help="Measured executions per process run.")] = 20,
    warmup: Annotated[int, typer.Option(min=0, help="Executions before measuring, not recorded.")] = 3,
    out: Annotated[Path | None, typer.Option(help="Run directory (default ./etfarm-runs/<run id>).")] = None,
    config: ConfigOption = None,
    name: Annotated[list[str] | None, typer.Option(
        help="Model name in reports; repeatable, one per --model, in order (default: the file's name; "
             "factories of one file: <file>-<factory>).")] = None,
    threads: Annotated[int, typer.Option(min=0, help="CPU threads for the runner (0: device default).")] = 0,
    timeout: Annotated[float, typer.Option(min=1, help="Deadline in seconds for one process run.")] = 600.0,
    no_wait: Annotated[bool, typer.Option("--no-wait", help="Fail instead of waiting when a device is locked.")] = False,
    lock_timeout: Annotated[float | None, typer.Option(
        min=0, help="Give up on a device still locked by another job after this many seconds (default: wait).")] = None,
    untraced_runs: Annotated[int, typer.Option(
        min=0, help="Extra runs without the event tracer, for end-to-end time and tracer overhead.")] = 1,
    cooldown: Annotated[float, typer.Option(min=0, help="Seconds to pause before each process run.")] = 0.0,
    max_temp: Annotated[float | None, typer.Option(
        help="Before each run, wait until the device's hottest zone is at most this many °C.")] = None,
    order: Annotated[str, typer.Option(
        help="How the models' process runs follow each other on a device: interleaved (seeded shuffle of rounds) "
             "or sequential.")] = "interleaved",
    seed: Annotated[int, typer.Option(help="Seed of the interleaved order.")] = 0,
    intermediate_outputs: Annotated[bool, typer.Option(
        "--intermediate-outputs", help="Also dump intermediate outputs (debug buffer sized from the model).")] = False,
    numerics: Annotated[bool, typer.Option(
        "--numerics", help="Dump intermediate outputs and report which ops diverge from the AOT reference and "
                           "between devices (see `etfarm numerics`).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    ab: Annotated[tuple[str, str] | None, typer.Option(
        "--ab", metavar="SPEC_A SPEC_B",
        help="A/B comparison: run two model specs interleaved A B B A on each device, then print B's verdict "
             "against A per device and op (exit 1 on a regression).")] = None,
    threshold: Annotated[float, typer.Option(
        min=0, help="With --ab: practical size of an end-to-end regression, in percent.")] = 5.0,
    op_threshold: Annotated[float, typer.Option(
        min=0, help="With --ab: practical size of a per-op regression, in percent.")] = 10.0,
    center: Annotated[str, typer.Option(
        help="With --ab: a side's statistic over its per-run medians, 'mean' or 'fast' (their minimum).")] = "mean",
    until_confident: Annotated[bool, typer.Option(
        "--until-confident", help="With --ab: while a device's verdict is inconclusive, run --runs more process runs "
                                  "per side (a further job, pooled) until decided or --max-runs is reached.")] = False,
    max_runs: Annotated[int, typer.Option(min=1, help="With --until-confident: most process runs per side.")] = 40,
    store: Annotated[Path | None, typer.Option(
        "--store", envvar="ETFARM_STORE",
        help="Results store to record the run in (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")] = None,
    no_store: Annotated[bool, typer.Option("--no-store", help="Do not record the run in the results store.")] = False,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Also log device commands on stderr (always in DIR/etfarm.log).")] = False,
    as_json: JsonOption = False,
    no_report: Annotated[bool, typer.Option("--no-report", help="Do not write DIR/report.html.")] = False,
    scheduler: SchedulerOption = None,
    device_deadline: Annotated[float, typer.Option(
        min=1, help="With --scheduler: fail a device's tasks after this many seconds with no worker offering it.")] = 600.0,
    tls_ca_file: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    resume: Annotated[Path | None, typer.Option(
        "--resume", help="Finish an interrupted or failed run DIR: run only the missing (device, model, run) "
                         "with its recorded settings, in DIR, under the same run id. Options that differ from "
                         "the recorded ones are refused. A run made with --scheduler resumes on its farm "
                         "(the recorded scheduler, or --scheduler if it moved).")] = None,
) -> None:
    """Export, build, stage and profile MODEL on DEVICES; write a run directory and print per-op latency.

    Ctrl-C or SIGTERM stops every runner (host and devices), keeps what finished (manifest status
    `interrupted`, exit 130); `--resume DIR` then completes the run."""
    from orchestrator.artifacts import parse_model_specs
    from orchestrator.config import load_inventory
    from orchestrator.errors import one_line
    from orchestrator.progress import Progress
    from orchestrator.report import job_view, json_text, wall_clock_lines
    from orchestrator.report.summary import summary
    from orchestrator.run import RunOptions, run_job
    from orchestrator.run.schedule import RunOrder

    if verbose:
        from orchestrator.cli.logs import log_to_stderr

        log_to_stderr()
    choices = (RunOrder.INTERLEAVED.value, RunOrder.SEQUENTIAL.value)
    if order not in choices:
        raise UsageError(f"--order: expected {' or '.join(choices)}, got {order!r}")
    if ab is not None:
        if model:
            raise UsageError("--ab SPEC_A SPEC_B replaces --model; give one or the other")
        if center not in ("mean", "fast"):
            raise UsageError(f"--center: {center!r}; choose mean or fast")
        if scheduler or resume is not None:
            from_env = getattr(ctx.get_parameter_source("scheduler"), "name", "") == "ENVIRONMENT"
            raise UsageError("--ab runs a new job on one host; drop --scheduler and --resume"
                             + (" (ETFARM_SCHEDULER is set: unset it for this command)" if from_env else ""))
    elif until_confident:
        raise UsageError("--until-confident applies to --ab")
    elif not model and resume is None:
        raise UsageError("--model is required (or --resume DIR to finish a recorded run, or --ab SPEC_A SPEC_B)")
    options = RunOptions(runs=runs, iterations=iterations, warmup=warmup, run_timeout_s=timeout,
                         wait_for_lock=not no_wait, lock_timeout_s=lock_timeout,
                         intermediate_outputs=intermediate_outputs or numerics,
                         debug_buffer_size=0, numerics=numerics, cpu_threads=threads,
                         untraced_runs=untraced_runs, cooldown_s=cooldown, max_temp_c=max_temp,
                         order=RunOrder(order), seed=seed)
    if resume is not None:
        from orchestrator.cli.resume import resume_run

        result = resume_run(ctx, resume, config, out=out, models=model, names=name, devices=devices,
                            backend=backend.value, options=options, progress=Progress(quiet=quiet),
                            scheduler=scheduler,
                            farm=lambda address: _scale(address, tls_ca_file, tls_cert, tls_key, device_deadline))
        numerics = result.job.config.options.numerics
    elif ab is not None:
        from orchestrator.cli.ab import run_ab_job

        inventory = load_inventory(config)
        raise typer.Exit(run_ab_job(inventory.select(devices), ab, backend.value, options, out, Progress(quiet=quiet),
                                    inventory.path, threshold=threshold, op_threshold=op_threshold, center=center,
                                    until_confident=until_confident, max_runs=max_runs,
                                    store=None if no_store else store, record=not no_store))
    elif scheduler:  # many hosts: the devices are the workers' (README "Many hosts (Dask)")
        from orchestrator.scale.client import run_distributed

        scale = _scale(scheduler, tls_ca_file, tls_cert, tls_key, device_deadline)
        names = [n.strip() for n in devices.split(",") if n.strip()]
        if not names:
            raise UsageError("no devices given; use --devices NAME[,NAME...]")
        specs = parse_model_specs(model or [], name or ())
        result = run_distributed(list(dict.fromkeys(names)), specs, backend=backend.value, options=options, out=out,
                                 progress=Progress(quiet=quiet), scale=scale)
    else:
        inventory = load_inventory(config)
        selected = inventory.select(devices)
        specs = parse_model_specs(model or [], name or ())
        result = run_job(selected, specs, backend=backend.value, options=options, out=out,
                         progress=Progress(quiet=quiet), config_file=inventory.path)
    if not no_store:
        from orchestrator.cli.store import record_after_run

        record_after_run(result.rundir.root, store, quiet=quiet)
    numerics_report = None
    if numerics:
        from orchestrator.numerics import analyze_run, write_files

        numerics_report = analyze_run(result.rundir.root)
        write_files(numerics_report, result.rundir.root)
    report_path = None
    if not no_report:
        from orchestrator.report.output import write_run_report

        report_path = write_run_report(result.rundir.root, warn=lambda text: typer.echo(text, err=True), store=store,
                                       numerics=numerics_report)  # analysed once, above
    if as_json:
        typer.echo(json_text(job_view(result.job, result.rundir.root, result.exit_code, report_path)))
        raise typer.Exit(result.exit_code)
    typer.echo(summary(result.rows))
    typer.echo("")
    for line in wall_clock_lines(result.job):
        typer.echo(line)
    for device in result.job.devices:
        verdicts = ", ".join(f"{m.name} {m.verification.status if m.verification else 'skipped'}"
                             + ("" if m.status == "ok" else f" ({m.status}: {len(m.runs)} run(s) kept)")
                             for m in device.models)
        if device.status == "ok":
            typer.echo(f"{device.name}: ok (verification: {verdicts})")
        elif device.status in ("wrong-results", "interrupted"):
            typer.echo(f"{device.name}: {device.status.upper()}: {one_line(device.error or '')}"
                       + (f" (verification: {verdicts})" if verdicts else ""))
        else:
            typer.echo(f"{device.name}: FAILED: {one_line(device.error or '')}"
                       + (f" (kept: {verdicts})" if verdicts else ""))
    if numerics_report is not None:
        from orchestrator.numerics import render_text

        typer.echo(render_text(numerics_report))
    if report_path is not None:
        typer.echo(f"report: {report_path}")
    typer.echo(f"run directory: {result.rundir.root}")
    if result.interrupted:
        typer.echo(f"interrupted: resume with `etfarm run --resume {result.rundir.root}`")
    raise typer.Exit(result.exit_code)




def _scale(scheduler: str, ca: Path | None, cert: Path | None, key: Path | None, deadline: float) -> Any:
    """The client's farm options (imports dask's side only when a run is distributed)."""
    from orchestrator.scale.client import ScaleOptions
    from orchestrator.scale.security import make_security

    return ScaleOptions(scheduler=scheduler, security=make_security(ca, cert, key), device_deadline_s=deadline)

"""`etfarm numerics RUN`: which op diverges, on which device, for a run made with `--numerics`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.app.checks import check_writable_dir
from orchestrator.base.errors import UsageError

METRICS = ("mse", "l1", "snr")
EXIT_NOT_COMPARED = 3  # as `nightly`: nothing regressed, but something could not be measured


def register(app: typer.Typer) -> None:
    app.command("numerics")(numerics)


def numerics(
    run: Annotated[Path, typer.Argument(help="Run directory made by `etfarm run --numerics`.")],
    metric: Annotated[str, typer.Option(help="Gap metric: mse, l1 or snr (Inspector's MSE, L1, SNR).")] = "mse",
    threshold: Annotated[float | None, typer.Option(
        help="An op diverges above this MSE/L1, or below this SNR in dB (default: mse 1e-4, l1 1e-2, snr 40).")] = None,
    reference_device: Annotated[str | None, typer.Option(
        "--reference-device", help="Compare every device with this one too (default: the run's first device).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Per device and model: each op's gap to the AOT reference and to a reference device.

    Writes DIR/<device>/<model>/numerics.csv and DIR/numerics.json. Exit codes: 0 nothing diverges, 1 an op
    crosses the threshold, 2 usage error, 3 nothing diverges but something could not be compared.
    """
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.numerics import (
        Metric,
        analyze_run,
        render_text,
        to_json,
        write_files,
    )
    from orchestrator.results.record import RunRecord

    if metric.lower() not in METRICS:
        raise UsageError(f"--metric: unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if not run.is_dir():
        raise UsageError(f"{run}: not a run directory")

    check_writable_dir(run, "etfarm numerics")  # it writes numerics.json and numerics.csv there
    report = analyze_run(RunRecord(run), Metric(metric.lower()), threshold, reference_device)
    write_files(report, run)
    typer.echo(to_json(report) if as_json else render_text(report))
    raise typer.Exit(1 if report.diverges else EXIT_NOT_COMPARED if report.incomplete else 0)

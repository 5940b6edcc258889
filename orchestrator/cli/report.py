"""`etfarm report`: a per-device comparison report of a run directory (HTML, Markdown, JSON, CSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.base.errors import UsageError
from orchestrator.report.builders.history import history_points
from orchestrator.report.destination import AB_PREFIX, ReportFormat
from orchestrator.results.record import RunRecord
from orchestrator.store import resolve_run


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    run: Annotated[
        str, typer.Argument(metavar="RUN_DIR|RUN_ID", help="A run directory, or the id of a run in the results store.")
    ],
    format: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="html (one offline file), md (CI job summary), json or csv; for CI "
                             "dashboards: bmf (Bencher), github-benchmark (github-action-benchmark's "
                             "customSmallerIsBetter) or hud (PyTorch OSS benchmark database v3).")
    ] = ReportFormat.HTML,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="File, or directory (gets report.<ext>; for md also charts/*.svg). "
            "Default: html to RUN_DIR/report.html, others to stdout.",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(help="Device the others are compared with (default: the run's first device that measured something)."),
    ] = None,
    threshold: Annotated[float, typer.Option(
        min=0, help="The device x model matrix badges a cell whose ratio to the baseline lies wholly beyond this many "
                    "percent.")] = 5.0,
    store: Annotated[
        Path | None, typer.Option(help="Results store for the history section (default $ETFARM_STORE or the standard one).")
    ] = None,
    against: Annotated[
        str | None,
        typer.Option(metavar="RUN_DIR|RUN_ID", help="Compare the run with this baseline run and write the A/B page "
                     "(verdicts first; the page `etfarm compare BASELINE RUN --html` writes). html or md; default "
                     "output RUN_DIR/report-vs-<baseline run id>.<ext>."),
    ] = None,
) -> None:
    """Which device is fast enough, where each spends its time, and how that changed over time."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.report.output import write_report

    if against is not None:
        _against(run, against, format, output, store)
        return
    record = RunRecord(resolve_run(run, store))  # read once: for the history and the report
    written = write_report(record, format, output, baseline=baseline, history=history_points(record.job, store),
                           threshold=threshold / 100.0)
    if written is not None:
        typer.echo(f"report: {written}")


def _against(run: str, against: str, fmt: ReportFormat, output: str | None, store: Path | None) -> None:
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.app.baseline import compare_refs
    from orchestrator.report.comparison_output import write_ab_page
    from orchestrator.verdicts.statistics import VerdictSettings
    from orchestrator.verdicts.trust import JOB_SHIFT_SD

    if fmt not in (ReportFormat.HTML, ReportFormat.MD):
        raise UsageError(f"--against writes the A/B page as html or md, not {fmt.value} (for JSON: etfarm compare --json)")
    # compare's settings (two separate jobs carry the job shift): the same page as `compare A B --html`
    comparison = compare_refs(against, run, VerdictSettings(job_shift=JOB_SHIFT_SD), store=store)
    if output is None:
        target = resolve_run(run, store) / f"{AB_PREFIX}{comparison.a}.{fmt.value}"
    else:
        target = Path(output) / f"{AB_PREFIX}{comparison.a}.{fmt.value}" if Path(output).is_dir() else Path(output)
    typer.echo(f"report: {write_ab_page(comparison, target, store, fmt.value)}")

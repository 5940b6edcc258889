"""Where a report goes: `write_report` for `etfarm report`, `write_run_report` for `etfarm run`.

A report from its run directory (or the job in memory) through the stages: built (builders/), its
charts drawn for the formats that show them (render/charts.py), made a page (page/) and written out
(render/), to the target destination.py checked. Without `--output`, HTML goes to
`RUN_DIR/report.html` and the other formats to stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.report.builders.ci import ci_points
from orchestrator.report.builders.history import history_points
from orchestrator.report.builders.matrix import DEFAULT_MATRIX_THRESHOLD
from orchestrator.report.builders.report import build_job_report
from orchestrator.report.destination import (
    REPORT_HTML,
    ReportFormat,
    guard_output,
    is_dir_target,
    target_file,
    write_text,
)
from orchestrator.report.page.blocks import Chart, Page
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.charts import report_charts
from orchestrator.report.render.ci import RENDERERS as CI_RENDERERS
from orchestrator.report.render.export import render_csv, render_json
from orchestrator.report.render.html import render_html
from orchestrator.report.render.markdown import CHART_DIR, render_markdown
from orchestrator.report.render.memory_chart import with_memory_chart
from orchestrator.results.model import Job, JobStatus
from orchestrator.results.record import RunRecord
from orchestrator.store.history import HistoryPoint

if TYPE_CHECKING:
    from orchestrator.numerics.model import NumericsReport

DATA_RENDERERS = {ReportFormat.JSON: render_json, ReportFormat.CSV: render_csv}


def write_report(
    run: RunRecord,
    fmt: ReportFormat,
    output: str | Path | None,
    baseline: str | None = None,
    history: Sequence[HistoryPoint] = (),
    numerics: NumericsReport | None = None,
    threshold: float = DEFAULT_MATRIX_THRESHOLD,
) -> Path | None:
    """Build and write the report of a run (its job and statistics from its record: in memory after `etfarm run`);
    returns the file written, or None when it went to stdout.

    `output` as the user typed it: a trailing '/' means a directory even before it exists."""
    as_dir = output is not None and is_dir_target(output)
    output = Path(output) if output is not None else None
    run_dir = run.root
    report = build_job_report(run, baseline=baseline, history=history, numerics=numerics, threshold=threshold)
    if output is None and fmt is ReportFormat.HTML:
        output = run_dir / REPORT_HTML
    target = target_file(output, fmt, as_dir) if output is not None else None
    if target is not None:
        guard_output(target, [run_dir])
    if fmt in (ReportFormat.HTML, ReportFormat.MD):
        charts = with_memory_chart(report_charts(report), report)
        text = write_page(run_page(report, charts), fmt, target, as_dir, charts.all)
    elif fmt in CI_RENDERERS:
        text = CI_RENDERERS[fmt](ci_points(report), report.run_id)
    else:
        text = DATA_RENDERERS[fmt](report)
    if target is None:
        sys.stdout.write(text)
        return None
    write_text(target, text)
    return target


def write_run_report(run: RunRecord, warn: Callable[[str], None], store: Path | None = None,
                     numerics: NumericsReport | None = None) -> Path | None:
    """The `etfarm run` hook: DIR/report.html (history from `store`), or a warning. Never raises:
    the results are already safe in the run directory. `run`: the job in memory."""
    job: Job | None = None
    try:
        job = run.job
        return write_report(run, ReportFormat.HTML, None, history=history_points(job, store), numerics=numerics)
    except Exception as exc:  # noqa: BLE001 - any failure here must leave the finished run alone
        warn(f"warning: report not written ({type(exc).__name__}: {exc}); the results in {run.root} are "
             f"{_what_is_kept(job)}, run `etfarm report {run.root}` to retry")
        return None


def _what_is_kept(job: Job | None) -> str:
    """The results a run directory holds, in words that never call a failed job's results complete."""
    if job is None:
        return "kept"
    return "complete" if job.status is JobStatus.OK else f"partial (the job is {job.status.value})"


def write_page(page: Page, fmt: ReportFormat, target: Path | None, as_dir: bool, charts: Sequence[Chart]) -> str:
    """The page as HTML or Markdown; for Markdown into a directory, its charts as charts/<stem>.svg beside it."""
    if fmt is ReportFormat.HTML:
        return render_html(page)
    if as_dir and target is not None:
        folder = target.parent / CHART_DIR
        folder.mkdir(parents=True, exist_ok=True)
        for chart in charts:
            write_text(folder / f"{chart.stem}.svg", chart.svg)
    return render_markdown(page, CHART_DIR if as_dir else None)

"""Where a report goes: `write_report` for `etfarm report`, `write_run_report` for `etfarm run`.

`--output` may name a file, or a directory (existing, or ending in '/'), which then gets
`report.<ext>` and, for Markdown, the charts as `charts/<stem>.svg` beside it. Without
`--output`, HTML goes to `RUN_DIR/report.html` and the other formats to stdout. Files are
written atomically (temp file + rename), so a reader never sees half a report. A report never
writes over a run's own files (`guard_output`): inside a run directory it may only write its
own report files (`report.*`, `charts/`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import UsageError
from orchestrator.run.results import Job, JobStatus, load_manifest
from orchestrator.store.history import HistoryPoint

if TYPE_CHECKING:  # numerics and stat rows import numpy; a type name must not cost that
    from orchestrator.numerics.model import NumericsReport
    from orchestrator.profiles.stat_rows import StatRow
    from orchestrator.report.page.blocks import Chart, Page

REPORT_HTML = "report.html"
REPORT_FILES = frozenset(f"report.{ext}" for ext in ("html", "md", "json", "csv"))
AB_PREFIX = "report-vs-"  # `report B --against A` writes B/report-vs-<A's run id>.<ext>


class ReportFormat(StrEnum):
    HTML = "html"
    MD = "md"
    JSON = "json"
    CSV = "csv"


def write_report(
    run_dir: Path,
    fmt: ReportFormat,
    output: str | Path | None,
    baseline: str | None = None,
    history: Sequence[HistoryPoint] = (),
    numerics: NumericsReport | None = None,
    job: Job | None = None,
    rows: Sequence[StatRow] | None = None,
) -> Path | None:
    """Build and write the report; returns the file written, or None when it went to stdout.

    `output` as the user typed it: a trailing '/' means a directory even before it exists. `job` and
    `rows`: the job and its statistics when the caller has them (else read from `run_dir`)."""
    from orchestrator.report.builders.report import build_job_report

    as_dir = output is not None and _is_dir(output)
    output = Path(output) if output is not None else None
    if job is None:
        job = load_manifest(run_dir)
    if rows is None:
        from orchestrator.profiles.stat_rows import read_stats_csv
        from orchestrator.run.rundir import STATS

        rows = read_stats_csv(run_dir / STATS)
    report = build_job_report(job, run_dir, rows, baseline=baseline, history=history, numerics=numerics)
    if output is None and fmt is ReportFormat.HTML:
        output = run_dir / REPORT_HTML
    target = _target(output, fmt, as_dir) if output is not None else None
    if target is not None:
        guard_output(target, [run_dir])
    if fmt in (ReportFormat.HTML, ReportFormat.MD):
        from orchestrator.report.page.sections import run_page
        from orchestrator.report.render.charts import report_charts

        charts = report_charts(report)
        text = write_page(run_page(report, charts), fmt, target, as_dir, charts.all)
    elif fmt is ReportFormat.JSON:
        from orchestrator.report.render.export import render_json

        text = render_json(report)
    else:
        from orchestrator.report.render.export import render_csv

        text = render_csv(report)
    if target is None:
        sys.stdout.write(text)
        return None
    write_text(target, text)
    return target


def write_run_report(run_dir: Path, warn: Callable[[str], None], store: Path | None = None,
                     numerics: NumericsReport | None = None, job: Job | None = None,
                     rows: Sequence[StatRow] | None = None) -> Path | None:
    """The `etfarm run` hook: DIR/report.html (history from `store`), or a warning. Never raises:
    the results are already safe in the run directory. `job`, `rows`: the job in memory."""
    try:
        from orchestrator.report.builders.history import history_points

        if job is None:
            job = load_manifest(run_dir)
        return write_report(run_dir, ReportFormat.HTML, None, history=history_points(job, store), numerics=numerics,
                            job=job, rows=rows)
    except Exception as exc:  # noqa: BLE001 - any failure here must leave the finished run alone
        warn(f"warning: report not written ({type(exc).__name__}: {exc}); the results in {run_dir} are "
             f"{_what_is_kept(job)}, run `etfarm report {run_dir}` to retry")
        return None


def _what_is_kept(job: Job | None) -> str:
    """The results a run directory holds, in words that never call a failed job's results complete."""
    if job is None:
        return "kept"
    return "complete" if job.status is JobStatus.OK else f"partial (the job is {job.status.value})"


def write_page(page: Page, fmt: ReportFormat, target: Path | None, as_dir: bool, charts: Sequence[Chart]) -> str:
    """The page as HTML or Markdown; for Markdown into a directory, its charts as charts/<stem>.svg beside it."""
    if fmt is ReportFormat.HTML:
        from orchestrator.report.render.html import render_html

        return render_html(page)
    from orchestrator.report.render.markdown import CHART_DIR, render_markdown

    if as_dir and target is not None:
        folder = target.parent / CHART_DIR
        folder.mkdir(parents=True, exist_ok=True)
        for chart in charts:
            write_text(folder / f"{chart.stem}.svg", chart.svg)
    return render_markdown(page, CHART_DIR if as_dir else None)


def check_target(target: Path, option: str = "--output") -> None:
    """Refuse, before the work that fills it, a report file whose folder cannot take it: a folder that does not
    exist, is a file, or is not ours to write in (read-only). One line naming `option`, the flag that named
    the file, and what is wrong."""
    folder = target.parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise UsageError(f"{option} {target}: {existing} is a file, not a directory")
    if existing != folder:
        raise UsageError(f"{option} {target}: directory {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {target}: cannot write in {folder} (read-only, or not ours)")


def guard_output(target: Path, run_dirs: Sequence[Path], option: str = "--output") -> None:
    """Refuse a target that would write over a run's own files (its manifest, stats.csv, ETDumps, ...): inside
    a run directory only the report's own files (report.*, charts/) may be written."""
    resolved = target.resolve()
    for run_dir in run_dirs:
        root = run_dir.resolve()
        if resolved == root or root not in resolved.parents:
            continue
        inside = resolved.relative_to(root)
        if len(inside.parts) == 1 and (inside.name in REPORT_FILES or inside.name.startswith(AB_PREFIX)):
            continue
        if len(inside.parts) == 2 and inside.parts[0] == "charts":
            continue
        raise UsageError(f"{option}: {target} is inside run directory {run_dir}, and a report never writes over a "
                         f"run's own files; write elsewhere, or to {root / 'report.<ext>'}")


def _is_dir(output: str | Path) -> bool:
    return Path(output).is_dir() or str(output).endswith(("/", "\\"))


def _target(output: Path, fmt: ReportFormat, as_dir: bool) -> Path:
    if as_dir:
        output.mkdir(parents=True, exist_ok=True)
        return output / f"report.{fmt.value}"
    check_target(output)
    return output


def write_text(path: Path, text: str, option: str = "--output") -> None:
    from orchestrator.cache import write_text_atomic

    try:
        write_text_atomic(path, text)  # temp file, fsync, rename: a crash never leaves a torn report
    except OSError as exc:
        raise UsageError(f"{option}: cannot write {path}: {exc.strerror or exc}") from None

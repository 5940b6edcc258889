"""Writing the A/B page: `compare A B --html FILE`, `report B --against A`, and a night's one HTML and Markdown;
and the verdicts as JUnit XML for CI test reporters (`--junit FILE`).

All three build the same `ComparisonView` (builders/comparison.py) and page (page/comparison.py) from
a `Comparison` and B's run(s), with each run's charts drawn (render/charts.py), so `compare A B --html F`
and `report B --against A --output F` write the same file, and a night's HTML and Markdown say the
same thing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.base.cache import write_json_atomic
from orchestrator.base.codec import encode
from orchestrator.base.errors import UsageError
from orchestrator.report.builders.comparison import comparison_view
from orchestrator.report.builders.history import history_points
from orchestrator.report.builders.junit import junit_report
from orchestrator.report.builders.report import build_job_report
from orchestrator.report.destination import ReportFormat, check_target, guard_output, write_text
from orchestrator.report.output import write_page
from orchestrator.report.page.comparison import comparison_page
from orchestrator.report.render.charts import report_charts
from orchestrator.report.render.junit import render_junit
from orchestrator.report.render.memory_chart import with_memory_chart
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.compare import Comparison

if TYPE_CHECKING:
    from orchestrator.report.model import Report
    from orchestrator.report.page.blocks import Chart, Charts, Page
    from orchestrator.verdicts.confirmation import Confirmation

LATEST_MD = "latest.md"


def run_reports(runs: Sequence[RunRecord], store: Path | None) -> list[Report]:
    """A report of each of B's runs (their job and statistics in memory when the caller has them)."""
    return [build_job_report(run, history=history_points(run.job, store)) for run in runs]


def comparison_page_of(comparison: Comparison, reports: Sequence[Report], charts: Mapping[str, Charts], title: str,
                       out_dir: Path, confirmations: Sequence[Confirmation] = (), notes: Sequence[str] = ()) -> Page:

    return comparison_page(comparison_view(comparison, reports, title, out_dir, confirmations, notes), charts)


def _charts(reports: Sequence[Report]) -> dict[str, Charts]:
    """Each of B's runs' charts, by run id (the models' and the LLMs')."""
    return {r.run_id: with_memory_chart(report_charts(r), r) for r in reports}


def _all(charts: Mapping[str, Charts]) -> list[Chart]:
    return [c for drawn in charts.values() for c in drawn.all]


def write_comparison(comparison: Comparison, runs: Sequence[RunRecord], fmt: ReportFormat, target: Path, title: str,
                     store: Path | None, run_dirs: Sequence[Path] = (), option: str = "--output") -> Path:
    """One A/B page into `target` (never over a run's own files: output.guard_output); `option` is the flag
    that named it, for the one line a target that cannot be written gets."""
    if fmt not in (ReportFormat.HTML, ReportFormat.MD):
        raise ValueError(f"an A/B page is HTML or Markdown, not {fmt}")
    check_target(target, option)
    guard_output(target, [*run_dirs, *(r.root for r in runs)], option)
    reports = run_reports(runs, store)
    charts = _charts(reports)
    page = comparison_page_of(comparison, reports, charts, title, target.parent)
    write_text(target, write_page(page, fmt, target, False, _all(charts)), option)
    return target


def write_ab_page(comparison: Comparison, target: Path, store: Path | None, fmt: str = "html",
                  option: str = "--output", runs: Sequence[RunRecord] | None = None) -> Path:
    """The A/B page of a comparison (what `compare --html`, `report --against` and `run --ab` write). B's runs are
    `runs` (`run --ab`: its jobs, in memory), else the one run directory every pair's B came from; `option` is the
    flag that named `target`."""
    if runs is None:
        roots = list(dict.fromkeys(p.dir_b for p in comparison.pairs if p.dir_b is not None))
        if len(roots) != 1:
            raise UsageError(f"{option}: the comparison has no single run B to report on")
        runs = [RunRecord(roots[0])]
    bases = [p.dir_a for p in comparison.pairs if p.dir_a is not None]
    return write_comparison(comparison, runs, ReportFormat(fmt), target,
                            f"etfarm comparison: {comparison.b} against {comparison.a}", store, run_dirs=bases,
                            option=option)


def write_night(comparison: Comparison, runs: Sequence[RunRecord], directory: Path, name: str, title: str,
                store: Path | None, confirmations: Sequence[Confirmation], notes: Sequence[str],
                extra: Mapping[str, Any] | None = None) -> list[Path]:
    """A night's one HTML (`<name>.html`), the same page in Markdown (`<name>.md` and `latest.md`, charts in
    charts/) and the verdicts as JSON (`<name>.json`, with the confirmations and `extra`: its bisects)."""
    directory.mkdir(parents=True, exist_ok=True)
    write_json_atomic(directory / f"{name}.json", {**json.loads(json.dumps(encode(comparison))),
                                                   "confirmations": [encode(c) for c in confirmations],
                                                   "notes": list(notes), **(extra or {})})
    reports = run_reports(runs, store)
    charts = _charts(reports)
    page = comparison_page_of(comparison, reports, charts, title, directory, confirmations, notes)
    html, markdown = directory / f"{name}.html", directory / f"{name}.md"
    write_text(html, write_page(page, ReportFormat.HTML, html, False, _all(charts)))
    text = write_page(page, ReportFormat.MD, markdown, True, _all(charts))
    for target in (markdown, directory / LATEST_MD):
        write_text(target, text)
    return [html, markdown, directory / LATEST_MD, directory / f"{name}.json"]


def write_junit(comparison: Comparison, target: Path, option: str = "--junit") -> Path:
    """The verdicts as JUnit XML (`--junit FILE`, plan key `junit:`): a suite per device, a case per (device, model)
    and per op that regressed."""
    write_text(target, render_junit(junit_report(comparison, f"etfarm: {comparison.b} against {comparison.a}")),
               option)
    return target

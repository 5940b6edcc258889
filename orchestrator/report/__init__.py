"""What people and scripts read: run reports and A/B pages, text tables and summaries, JSON views.

A report flows through four stages, one sub-package each, each importing only the ones before it
(the `report:` contract in pyproject.toml; docs/architecture.md, "Reports"):
    model/     the data: a `Report` (and an A/B page's `ComparisonView`), frozen, every number decided
    builders/  a job, its stats.csv rows and the store's history -> a Report (ratios.py: the one
               statistic; claims.py: what may be called fastest; trust.py: what to believe)
    page/      the page model (blocks.py) and what a page says, built once for HTML and Markdown alike;
               sections.py is the one list of a run's sections, which the page and its navigation both read
    render/    HTML, Markdown, the charts (matplotlib, drawn for the formats that show them), JSON and CSV
and, beside them, terminal/ (what commands print: text tables, the run summary, verdict tables, `--json`
views, from the results model directly), formats.py (how a number is written, everywhere) and escape.py
(one escaping rule per format). output.py and comparison_output.py take a report from its run directory
(or the job in memory) through the stages to a file or stdout.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    terminal.table: format_table                         the one text-table formatter
    formats: fmt_ms, fmt_percent                         number formats
    terminal.events: format_report                       per-event tables (`analyze`)
    terminal.summary: wall_clock_lines (and summary, reached by its module: a name the package cannot re-export)
    terminal.views: job_view, json_text                  `--json` documents
    output: write_report, write_run_report               `etfarm report` and `etfarm run`'s hook (never raises)
"""

from __future__ import annotations

from orchestrator.base.lazy import lazy_api

_API = {
    "format_table": "terminal.table",
    "fmt_ms": "formats",
    "fmt_percent": "formats",
    "format_report": "terminal.events",
    "wall_clock_lines": "terminal.summary",
    "job_view": "terminal.views",
    "json_text": "terminal.views",
    "write_report": "output",
    "write_run_report": "output",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)

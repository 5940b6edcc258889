"""What people and scripts read: text tables, the run summary, JSON views, and the comparison report.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    text: format_table, fmt_ms, fmt_percent          the one text-table formatter and number formats
    tables: format_report                            per-event tables (`analyze`)
    summary: wall_clock_lines (and summary.summary, reached by its module: a name the package cannot re-export)
    views: job_view, json_text                       `--json` documents
    output: write_report, write_run_report           `etfarm report` and `etfarm run`'s hook (never raises)

The comparison report: build.build_report(run_dir, baseline, history) -> model.Report computes every
number once (ratios.py: the one statistic and its intervals; claims.py: what may be called fastest;
trust.py: flagged and excluded runs, the tracer's cost); run_page.py turns it into a page.Page, and
comparison.py + comparison_page.py an A/B comparison (a night, `compare --html`, `report --against`);
html / markdown only write a Page out (escape.py: one escaping rule per format), export writes JSON
and CSV. LLMs: llm_section.py computes TTFT, tokens/s, memory and per-phase ops, llm_render.py makes
them page sections (and the per-step decode chart), memory.py the memory table; llm_text.py and
llm_history.py print them in the terminal. history.history_points(job, store) reads the store's
earlier runs.
"""

from __future__ import annotations

from orchestrator.lazy import lazy_api

_API = {
    "format_table": "text",
    "fmt_ms": "text",
    "fmt_percent": "text",
    "format_report": "tables",
    "wall_clock_lines": "summary",
    "job_view": "views",
    "json_text": "views",
    "write_report": "output",
    "write_run_report": "output",
}
__all__ = sorted(_API)

__getattr__ = lazy_api(__name__, _API)

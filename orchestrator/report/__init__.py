"""What people and scripts read: the one text-table formatter, per-event tables and CSV, the run summary, JSON views.

Public API, imported lazily on first use (PEP 562) so that importing the package stays light:
    text: format_table, fmt_ms, fmt_percent
    tables: format_report, write_stats_csv
    summary: wall_clock_lines (and summary.summary, reached by its module: a name the package cannot re-export)
    views: job_view, json_text
"""

from __future__ import annotations

import importlib
from typing import Any

_API = {
    "format_table": "text",
    "fmt_ms": "text",
    "fmt_percent": "text",
    "format_report": "tables",
    "write_stats_csv": "tables",
    "wall_clock_lines": "summary",
    "job_view": "views",
    "json_text": "views",
}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)

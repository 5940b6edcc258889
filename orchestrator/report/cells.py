"""How the report formats a number, in one place for the HTML, Markdown and chart labels.

Milliseconds follow the printed tables' one rule (`text.fmt_ms`: 4 decimals under 10 ms, 2 above);
text is clipped by the one `text.clip`.
"""

from __future__ import annotations

import math

from orchestrator.report.model import Interval
from orchestrator.report.text import clip, fmt_ms

__all__ = ["LATENCY_HEADERS", "clip", "interval", "ms", "pct", "ratio"]

# The latency table's columns before the comparison with the baseline device, for HTML and Markdown.
LATENCY_HEADERS = ("device", "runs", "p50 ms", "p90 ms", "CV", "p90/p50", "untraced p50 ms", "tracer overhead",
                   "load p50 ms", "verification")


def ms(value: float | None) -> str:
    return fmt_ms(value)


def pct(value: float | None, signed: bool = False) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def ratio(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{_ratio_digits(value)}x"


def interval(ci: Interval | None) -> str:
    return "-" if ci is None else f"[{_ratio_digits(ci.low)}, {_ratio_digits(ci.high)}]"


def _ratio_digits(value: float) -> str:
    """2 decimals from 0.1 up (1.02, 15.37); 3 significant digits below, so 1000x faster is not 0.00."""
    return f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}"

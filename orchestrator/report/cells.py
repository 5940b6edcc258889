"""How the report formats a number, in one place for the HTML, Markdown and chart labels.

Same precision rule as the printed tables (`tables._ms`): 4 decimals under 10 ms, 2 above.
"""

from __future__ import annotations

import math

from orchestrator.report.model import Interval


def ms(value: float | None) -> str:
    if value is None or math.isnan(value):
        return "-"
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


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


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"

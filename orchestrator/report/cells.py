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
    return "-" if value is None or math.isnan(value) else f"{value:.2f}x"


def interval(ci: Interval | None) -> str:
    return "-" if ci is None else f"[{ci.low:.2f}, {ci.high:.2f}]"


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"

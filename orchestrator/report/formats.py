"""How the report formats a number, in one place for the HTML, Markdown and chart labels.

Milliseconds follow the printed tables' one rule (`text.fmt_ms`: 4 decimals under 10 ms, 2 above);
text is clipped by the one `text.clip`.
"""

from __future__ import annotations

import math

from orchestrator.report.model import Interval
from orchestrator.report.terminal.table import clip, fmt_ms

__all__ = ["DEVICE_PALETTE", "KERNEL_RESOLUTION_MS", "below_resolution", "clip", "interval", "ms", "op_ms", "pct", "ratio",
           "signed_interval"]

# One colour per device, in the report's device order, in every chart of a report.
DEVICE_PALETTE = ("#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860", "#DA8BC3", "#8C8C8C", "#CCB974")
BELOW_RESOLUTION = "< 1 us"
KERNEL_RESOLUTION_MS = 0.001  # XNNPACK's kernel events are timed in whole microseconds


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


def signed_interval(ci: Interval | None) -> str:
    """An interval of a relative change: [+2.0%, +8.3%]."""
    return "-" if ci is None else f"[{ci.low:+.1%}, {ci.high:+.1%}]"


def below_resolution(value_ms: float, delegated: bool) -> bool:
    """An op's time under the timer's resolution: a delegate kernel's under 1 us, another op's zero."""
    return value_ms < KERNEL_RESOLUTION_MS if delegated else value_ms <= 0.0


def op_ms(value: float | None, below_resolution: bool, delegated: bool = True) -> str:
    """An op's time: `< 1 us` under the kernel timer's resolution, never 0.0000."""
    if below_resolution:
        return BELOW_RESOLUTION if delegated else "0"
    return ms(value)


def _ratio_digits(value: float) -> str:
    """2 decimals from 0.1 up (1.02, 15.37); 3 significant digits below, so 1000x faster is not 0.00."""
    return f"{value:.2f}" if abs(value) >= 0.1 or value == 0 else f"{value:.3g}"

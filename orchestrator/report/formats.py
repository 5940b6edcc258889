"""How etfarm writes a number, in one place for the terminal, the pages and the charts' labels.

Renderers compute nothing: they receive the numbers and format them here, so a millisecond, a
percentage, a rate or a size looks the same in `run`, `analyze`, `history`, the HTML page and the
Markdown summary. Missing values (None, NaN, infinities) are '-'.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type name only: `devices` prints tables without loading the report's model (numerics, store)
    from orchestrator.report.model import Interval, TracerOverhead

MISSING = "-"
BELOW_RESOLUTION = "< 1 us"


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def fmt_ms(value: Any) -> str:
    """Milliseconds, for printed tables and reports alike: 4 decimals under 10 ms (XNNPACK kernels are
    microseconds), 2 from 10 ms (10 µs resolution is plenty there); '-' when missing."""
    if not is_number(value):
        return MISSING
    return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"


MICROSECONDS_BELOW_MS = 1.0  # a column whose every time is under 1 ms is printed in microseconds


@dataclass(frozen=True)
class TimeColumn:
    """A column of times in one unit chosen for the column: its unit (`us` or `ms`) and its cells."""

    unit: str
    cells: tuple[str, ...]


def time_column(values_ms: Sequence[Any]) -> TimeColumn:
    """Times (ms) as one table column, scaled for the column: microseconds when every time in it is under 1 ms
    (XNNPACK kernels: `12.4` us where 4 decimals of ms said `0.0124`, and `0.0000` for a kernel of 40 ns; the unit
    benchmark_model's users read), else milliseconds (fmt_ms). The one home of this rule: every table of kernel
    times (events, the device x model matrix) takes its cells and its header's unit from here."""
    numbers = [abs(v) for v in values_ms if is_number(v)]
    if not numbers or max(numbers) >= MICROSECONDS_BELOW_MS:
        return TimeColumn("ms", tuple(fmt_ms(v) for v in values_ms))
    return TimeColumn("us", tuple(_fmt_us(v * 1000.0) if is_number(v) else MISSING for v in values_ms))


def _fmt_us(value: float) -> str:
    """Microseconds: 2 decimals under 10 us (a kernel of 40 ns is 0.04, not 0), 1 from 10 to 1000."""
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.1f}"


def fmt_percent(value: Any, signed: bool = False) -> str:
    """A fraction as a percentage with one decimal: 0.052 -> '5.2%' (signed: '+5.2%'); '-' when missing."""
    if not is_number(value):
        return MISSING
    return f"{value:+.1%}" if signed else f"{value:.1%}"


def fmt_rate(value: float | None) -> str:
    """Tokens per second: whole numbers from 100 up, 2 decimals below; '-' when missing."""
    if value is None:
        return MISSING
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}"


def format_bytes(value: float) -> str:
    """1536 -> '1.5 KiB'; binary units, as VmHWM and buffer sizes are."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def fmt_kib(value: int | None) -> str:
    """A size the device reports in KiB (RSS, PSS) in binary units; '-' when it could not tell."""
    return MISSING if value is None else format_bytes(value * 1024)


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def ratio(value: float | None) -> str:
    return MISSING if value is None or math.isnan(value) else f"{_ratio_digits(value)}x"


def interval(ci: Interval | None) -> str:
    return MISSING if ci is None else f"[{_ratio_digits(ci.low)}, {_ratio_digits(ci.high)}]"


def signed_interval(ci: Interval | None) -> str:
    """An interval of a relative change: [+2.0%, +8.3%]."""
    return MISSING if ci is None else f"[{ci.low:+.1%}, {ci.high:+.1%}]"


def op_ms(value: float | None, below_resolution: bool, delegated: bool = True) -> str:
    """An op's time: `< 1 us` under the kernel timer's resolution (builders/ops.py), never 0.0000."""
    if below_resolution:
        return BELOW_RESOLUTION if delegated else "0"
    return fmt_ms(value)


def _ratio_digits(value: float) -> str:
    """2 decimals from 0.1 up (1.02, 15.37); 3 significant digits below, so 1000x faster is not 0.00, written out
    (0.0000514, never 5.14e-05: a ratio is read, and matched, as a plain number)."""
    if abs(value) >= 0.1 or value == 0 or not math.isfinite(value):
        return f"{value:.2f}"
    return f"{value:.{2 - math.floor(math.log10(abs(value)))}f}".rstrip("0")  # as :.3g, without its exponent


def tracer_cost(tracer: TracerOverhead | None) -> str:
    """The tracer's overhead as every page and table says it: "+5.2% [+2.0%, +8.3%]", "+73.3% (unreliable)", or
    "within noise" when the figure cannot be told from noise (builders/trust.py `within_noise`): never a
    negative cost as a fact."""
    if tracer is None or tracer.overhead is None:
        return MISSING
    if tracer.within_noise:
        return "within noise"
    return (f"{fmt_percent(tracer.overhead, signed=True)} {signed_interval(tracer.interval)}" if tracer.reliable
            else f"{fmt_percent(tracer.overhead, signed=True)} (unreliable)")


def column_unit(values_ms: Any) -> tuple[str, float]:
    """One unit for a column of milliseconds, so a column reads at a glance: (unit, factor from ms). Microseconds
    when every value is under 1 ms, seconds when one reaches 10 s, else milliseconds. (issue 40: the smallest local
    version of the per-column rule helper h35 is writing; one home once both are merged.)"""
    numbers = [abs(v) for v in values_ms if is_number(v)]
    if numbers and max(numbers) < 1.0:
        return "us", 1000.0
    if numbers and max(numbers) >= 10_000.0:
        return "s", 0.001
    return "ms", 1.0


def fmt_scaled(value_ms: Any, factor: float) -> str:
    """A millisecond value in a column's unit (column_unit), with fmt_ms's digits; '-' when missing."""
    return fmt_ms(value_ms * factor) if is_number(value_ms) else MISSING

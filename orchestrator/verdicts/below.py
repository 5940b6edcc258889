"""Say what was seen below the threshold (issue 32, item 4): a confident change that is not a regression.

A change measured with confidence (p < alpha, the interval excluding 1) behind an `unchanged` or
`inconclusive` verdict is reported, "4.7 % slower [3.9, 5.9], below the 5 % threshold", in the verdict table,
the legend, the night's page and the JSON (`below_threshold`), and never fails a run; a series that keeps
creeping is the series verdict's (series.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from orchestrator.base.codec import Layout
from orchestrator.verdicts.statistics import DEFAULT_ALPHA, Estimate, Verdict, beyond_threshold


@dataclass(frozen=True)
class BelowThreshold:
    """A change measured with confidence that is not a regression or an improvement (module docstring)."""

    direction: str  # "slower" or "faster"
    ratio: float
    ci_low: float
    ci_high: float
    threshold: float  # the bar it did not clear (noise floor included)

    def describe(self) -> str:
        pct = lambda r: abs(r - 1.0) * 100  # noqa: E731
        bounds = sorted((pct(self.ci_low), pct(self.ci_high)))
        where = "below" if pct(self.ratio) <= self.threshold * 100 else "not clearly beyond"
        return (f"{pct(self.ratio):.1f} % {self.direction} [{bounds[0]:.1f}, {bounds[1]:.1f}], {where} the "
                f"{self.threshold:.0%} threshold")

    LAYOUT: ClassVar[Layout] = Layout(derived=(("text", "describe"),), raw_floats=True)


def below_threshold(est: Estimate | None, p_value: float, verdict: Verdict, threshold: float,
                    alpha: float = DEFAULT_ALPHA) -> BelowThreshold | None:
    """The confident change under the threshold behind an `unchanged` or `inconclusive` verdict, if there is one.
    A change whose whole interval clears the threshold is none: its verdict was held back for another reason (load,
    speed states: the pair's `could_not_judge`), and "below the threshold" would say the opposite of what was seen."""
    if (est is None or verdict not in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE) or not p_value < alpha
            or beyond_threshold(est, threshold) is not None):
        return None
    if est.ci_low > 1.0:
        return BelowThreshold("slower", est.ratio, est.ci_low, est.ci_high, threshold)
    if est.ci_high < 1.0:
        return BelowThreshold("faster", est.ratio, est.ci_low, est.ci_high, threshold)
    return None

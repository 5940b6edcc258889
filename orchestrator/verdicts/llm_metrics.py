"""Verdicts on an LLM's time to first token and decode tokens/s, beside the end-to-end one.

`compare`, `run --ab` and `nightly` compare each (device, model) whose two sides generated on
these two metrics too (verdicts/compare.py calls `metric_verdicts`), with the method of every
verdict (statistics.py: the process run as replication unit, a hierarchical bootstrap interval
of the ratio B / A, the rank test on per-run centers, the threshold and noise floor of the end-to-end
verdict). Each is computed on times, where lower is faster: TTFT in ms per generation, and the
decode rate's reciprocal, decode ms per generated token. A rate's ratio is then turned back:
rate B / rate A = 1 / (time B / time A), its interval [1 / high, 1 / low]. So the verdict reads
as people expect for a rate, higher is better: `regressed` when B decodes fewer tokens per
second beyond the threshold (rate ratio below 1 / (1 + threshold)), `improved` when more.
A regressed metric makes the pair regressed (exit 1), as a regressed op does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from orchestrator.artifacts.generation import LlmRunFigures
from orchestrator.base.codec import SKIP, Layout
from orchestrator.results.llm_figures import DECODE_RATE, TTFT, metric_samples
from orchestrator.verdicts.statistics import Estimate, Verdict, VerdictSettings, decide, estimate

# metric -> (label, higher is better)
METRICS = {TTFT: ("time to first token", False), DECODE_RATE: ("decode tokens/s", True)}


@dataclass(frozen=True)
class MetricVerdict:
    """B against A on one LLM metric. `ratio`, `ci_low`, `ci_high`, `value_a`, `value_b` are the metric's
    own (ms for TTFT, tokens/s for the decode rate); `estimate` is the comparison of times behind them."""

    metric: str
    label: str
    higher_is_better: bool
    verdict: Verdict
    ratio: float  # metric B / metric A
    ci_low: float
    ci_high: float
    value_a: float
    value_b: float
    estimate: Estimate = field(metadata=SKIP)  # of times: only its p-value and run counts are written

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True, derived=(
        "unit", ("p_value", "estimate.p_value"), ("runs_a", "estimate.runs_a"), ("runs_b", "estimate.runs_b")))

    @property
    def unit(self) -> str:
        return "tokens/s" if self.higher_is_better else "ms"


def metric_verdicts(a: Sequence[LlmRunFigures | None], b: Sequence[LlmRunFigures | None], settings: VerdictSettings,
                    threshold: float) -> tuple[MetricVerdict, ...]:
    """TTFT and decode tokens/s of B against A (each side: its traced runs' `llm` figures); () unless both
    sides generated. `threshold` is the end-to-end one, noise floor included."""
    out = []
    for metric, (label, higher) in METRICS.items():
        est = estimate(metric_samples(a, metric), metric_samples(b, metric), confidence=settings.confidence,
                       resamples=settings.resamples, seed=settings.seed, center=settings.center)
        if est is None or est.median_b_ms <= 0:
            continue
        verdict = decide(est, est.p_value, threshold, settings.alpha, settings.threshold)
        if higher:  # a rate: the reciprocal of the time per token
            out.append(MetricVerdict(metric, label, True, verdict, 1.0 / est.ratio, 1.0 / est.ci_high,
                                     1.0 / est.ci_low, 1000.0 / est.median_a_ms, 1000.0 / est.median_b_ms, est))
        else:
            out.append(MetricVerdict(metric, label, False, verdict, est.ratio, est.ci_low, est.ci_high,
                                     est.median_a_ms, est.median_b_ms, est))
    return tuple(out)

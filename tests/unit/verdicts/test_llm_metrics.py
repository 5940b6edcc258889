"""verdicts/llm_metrics.py: TTFT and decode tokens/s verdicts, a rate's direction (higher is better)."""

from __future__ import annotations

import random

from orchestrator.base.codec import encode
from orchestrator.verdicts.compare import Side, compare_sides
from orchestrator.verdicts.llm_metrics import metric_verdicts
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.helpers.llm_figures import llm_run

SETTINGS = VerdictSettings(resamples=500)


def runs(step_ms: float, ttft: float, n: int = 8, seed: int = 0) -> list:
    rng = random.Random(seed)
    return [llm_run([ttft * rng.uniform(0.98, 1.02) for _ in range(5)],
                    [step_ms * rng.uniform(0.98, 1.02) for _ in range(5)]) for _ in range(n)]


def test_a_slower_decode_is_a_lower_rate_and_a_regression() -> None:
    found = {m.metric: m for m in metric_verdicts(runs(0.5, 2.0), runs(0.75, 2.0, seed=1), SETTINGS, 0.05)}
    decode, ttft = found["decode_tokens_per_s"], found["ttft"]
    assert decode.higher_is_better and decode.verdict is Verdict.REGRESSED and decode.unit == "tokens/s"
    assert 0.64 < decode.ratio < 0.69 and decode.ci_low <= decode.ratio <= decode.ci_high < 0.95
    assert decode.value_a > decode.value_b and 1900 < decode.value_a < 2100  # tokens/s, not ms
    assert decode.estimate.ratio > 1.0  # the time per token behind it grew
    assert not ttft.higher_is_better and ttft.verdict is Verdict.UNCHANGED and ttft.unit == "ms"


def test_a_faster_decode_is_an_improvement_and_the_same_is_unchanged() -> None:
    faster = {m.metric: m for m in metric_verdicts(runs(0.5, 2.0), runs(0.3, 1.0, seed=2), SETTINGS, 0.05)}
    assert faster["decode_tokens_per_s"].verdict is Verdict.IMPROVED and faster["decode_tokens_per_s"].ratio > 1.5
    assert faster["ttft"].verdict is Verdict.IMPROVED and faster["ttft"].ratio < 0.55
    same = metric_verdicts(runs(0.5, 2.0), runs(0.5, 2.0, seed=3), SETTINGS, 0.05)
    assert {m.verdict for m in same} == {Verdict.UNCHANGED}
    assert metric_verdicts([None], runs(0.5, 2.0), SETTINGS, 0.05) == ()  # A did not generate: no metric


def test_a_regressed_metric_makes_the_pair_regressed() -> None:
    def side(step: float, ttft: float, seed: int) -> Side:
        return Side("r", "dev", "llm", tuple(SideRun(f"run-{k}", (ttft + 4 * step,) * 5, None, figures)
                                             for k, figures in enumerate(runs(step, ttft, seed=seed))))

    pair = compare_sides(side(0.5, 2.0, 0), side(0.6, 1.0, 1), SETTINGS, per_op=False)
    assert pair.verdict is Verdict.IMPROVED  # end to end: ttft + decode fell
    assert {m.metric: m.verdict for m in pair.metrics} == {"ttft": Verdict.IMPROVED,
                                                          "decode_tokens_per_s": Verdict.REGRESSED}
    assert pair.regressed and encode(pair)["metrics"][1]["label"] == "decode tokens/s"

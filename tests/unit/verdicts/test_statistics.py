"""The verdict statistics on synthetic process runs shaped like the testbed's noise (docs/architecture.md, "Measurement")."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.verdicts.statistics import (
    Estimate,
    Verdict,
    adjust_p_values,
    decide,
    estimate,
    rank_p_value,
)


def two_state_runs(rng: np.random.Generator, runs: int, scale: float = 1.0, iterations: int = 20) -> list[list[float]]:
    """Process runs that each settle in a fast (0.069 ms) or slow (0.088 ms) state, 2 % jitter inside."""
    out = []
    for _ in range(runs):
        centre = 0.069 if rng.random() < 0.5 else 0.088
        out.append(list(centre * scale * (1 + 0.02 * rng.standard_normal(iterations))))
    return out


def verdict_of(a: list[list[float]], b: list[list[float]], threshold: float = 0.05, resamples: int = 500,
               center: str = "auto") -> Verdict:
    est = estimate(a, b, resamples=resamples, center=center)
    assert est is not None
    return decide(est, est.p_value, threshold)


def test_identical_two_state_processes_rarely_regress() -> None:
    rng = np.random.default_rng(1)
    sides = [(two_state_runs(rng, 5), two_state_runs(rng, 5)) for _ in range(200)]
    for center in ("auto", "mean"):
        verdicts = [verdict_of(a, b, center=center) for a, b in sides]
        assert sum(v is Verdict.REGRESSED for v in verdicts) / len(verdicts) <= 0.05, center
    # Under the mean the mixture makes five runs too few to call them the same; the default reads the states and can.
    mean = [verdict_of(a, b, center="mean") for a, b in sides]
    auto = [verdict_of(a, b) for a, b in sides]
    assert sum(v is Verdict.UNCHANGED for v in mean) / len(mean) < 0.5 < sum(v is Verdict.UNCHANGED for v in auto) / len(auto)


def test_iterations_are_not_the_replication_unit() -> None:
    """One fast-state process against one slow-state process: 20 % apart, hundreds of iterations,
    but two processes: never a regression."""
    rng = np.random.default_rng(2)
    fast = [list(0.069 * (1 + 0.01 * rng.standard_normal(500)))]
    slow = [list(0.088 * (1 + 0.01 * rng.standard_normal(500)))]
    assert verdict_of(fast, slow) is Verdict.INCONCLUSIVE


def test_twice_as_slow_is_regressed_and_twice_as_fast_improved() -> None:
    rng = np.random.default_rng(3)
    a, b = two_state_runs(rng, 5), two_state_runs(rng, 5, scale=2.0)
    assert verdict_of(a, b) is Verdict.REGRESSED
    assert verdict_of(b, a) is Verdict.IMPROVED


def test_many_steady_runs_of_the_same_speed_are_unchanged() -> None:
    rng = np.random.default_rng(4)
    def steady():
        return [list(0.07 * (1 + 0.01 * rng.standard_normal(20))) for _ in range(10)]
    assert verdict_of(steady(), steady()) is Verdict.UNCHANGED


def test_estimate_reports_ratio_of_run_averaged_medians_with_an_interval_around_it() -> None:
    a = [[1.0, 1.0, 1.1], [1.0, 0.9, 1.0], [1.2, 1.2, 1.2]]
    b = [[2.0, 2.0, 2.2], [2.0, 1.8, 2.0], [2.4, 2.4, 2.4]]
    est = estimate(a, b, resamples=300)
    assert est is not None
    assert est.ratio == pytest.approx(2.0) and est.median_a_ms == pytest.approx((1.0 + 1.0 + 1.2) / 3)
    assert est.ci_low <= est.ratio <= est.ci_high
    assert (est.runs_a, est.runs_b) == (3, 3)


def test_no_samples_is_no_data_never_a_regression() -> None:
    assert estimate([], [[1.0]]) is None
    assert estimate([[]], [[1.0]]) is None
    assert estimate([[0.0, 0.0]], [[1.0]]) is None  # nothing to divide by
    assert decide(None, 0.0, 0.05) is Verdict.NO_DATA


def test_rank_test_counts_processes() -> None:
    assert rank_p_value([[1.0] * 100], [[2.0] * 100]) == 1.0  # one run a side: no test
    p = rank_p_value([[1.0], [1.1], [1.2], [1.05]], [[2.0], [2.1], [2.2], [2.05]])
    assert p == pytest.approx(2 / 70)  # exact two-sided, 4 vs 4, complete separation


def test_decision_needs_significance_and_size() -> None:
    def est(low: float, high: float) -> Estimate:
        return Estimate((low + high) / 2, low, high, 0.0, 5, 5, 1.0, 1.0)

    assert decide(est(1.06, 1.2), 0.01, 0.05) is Verdict.REGRESSED
    assert decide(est(1.06, 1.2), 0.2, 0.05) is Verdict.INCONCLUSIVE  # not significant
    assert decide(est(1.02, 1.2), 0.01, 0.05) is Verdict.INCONCLUSIVE  # could be below the threshold
    assert decide(est(0.97, 1.04), 0.01, 0.05) is Verdict.UNCHANGED  # significant but small
    assert decide(est(0.8, 0.9), 0.01, 0.05) is Verdict.IMPROVED
    # a noise floor of 20 % raises the bar for regressed/improved, but unchanged stays within the threshold
    assert decide(est(1.06, 1.2), 0.01, 0.20, same_within=0.05) is Verdict.INCONCLUSIVE
    assert decide(est(1.25, 1.4), 0.01, 0.20, same_within=0.05) is Verdict.REGRESSED
    assert decide(est(0.97, 1.04), 0.01, 0.20, same_within=0.05) is Verdict.UNCHANGED
    assert decide(est(0.9, 1.1), 0.01, 0.20, same_within=0.05) is Verdict.INCONCLUSIVE


def test_benjamini_hochberg_adjustment() -> None:
    assert adjust_p_values([0.01, 0.04, 0.03, 0.5]) == pytest.approx([0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.5])
    assert adjust_p_values([]) == []


def test_fast_center_sees_a_ten_percent_slowdown_through_the_two_states() -> None:
    rng = np.random.default_rng(5)
    trials = 40
    mean_hits = fast_hits = fast_false = 0
    for _ in range(trials):
        a, b = two_state_runs(rng, 10), two_state_runs(rng, 10, scale=1.10)
        same = two_state_runs(rng, 10)
        for center in ("mean", "fast"):
            est = estimate(a, b, resamples=300, center=center)
            hit = decide(est, est.p_value, 0.05) is Verdict.REGRESSED
            mean_hits += hit and center == "mean"
            fast_hits += hit and center == "fast"
        est = estimate(a, same, resamples=300, center="fast")
        fast_false += decide(est, est.p_value, 0.05) is Verdict.REGRESSED
    assert fast_hits > mean_hits and fast_hits >= trials // 2
    assert fast_false <= 2


def test_the_fewest_runs_that_can_be_significant_follow_the_exact_rank_test() -> None:
    from scipy.stats import mannwhitneyu

    from orchestrator.verdicts.statistics import Center, rank_p_value, runs_for_significance

    assert runs_for_significance(Center.MEAN) == 4 and runs_for_significance(Center.FAST) == 7
    for center in (Center.MEAN, Center.FAST):
        n = runs_for_significance(center)
        for k, separable in ((n - 1, False), (n, True)):  # B's runs all slower than A's: the strongest evidence
            a = [[1.0 + 0.01 * i] * 5 for i in range(k)]
            b = [[2.0 + 0.01 * i] * 5 for i in range(k)]
            assert (rank_p_value(a, b, center) < 0.05) is separable, (center, k)
    assert mannwhitneyu([1, 2, 3], [4, 5, 6]).pvalue == 0.1  # the 3-against-3 floor quoted in the docstring

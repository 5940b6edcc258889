"""The `fast-state` statistic (verdicts/states.py) on recorded real jobs and on seeded two-state jobs.

fixtures/two_state_jobs.npz: 25 real jobs of the 40-layer MLP (configs/models/deep_mlp.py) on this project's
testbed (`local` pinned to core 1, 10 process runs x 50 iterations, the example plan's shape), recorded once
for issue 32: `base_k` (40 layers), `p5_k` (42: ~5 % slower), `p10_k` (44) and `x2_k` (80). `base_0` is a job
that landed wholly in the slow state (no run under 33.8 us; the others' fast state is ~24.5 us). Arrays
are (runs, iterations) in ms. Everything here is deterministic: recorded samples, fixed seeds.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from orchestrator.verdicts.states import compare_states, states_of
from orchestrator.verdicts.statistics import Verdict, decide, estimate
from tests.helpers.two_state import two_state_job

FIXTURE = Path(__file__).with_name("fixtures") / "two_state_jobs.npz"


def jobs(kind: str) -> list[list[np.ndarray]]:
    data = np.load(FIXTURE)
    return [[np.asarray(run, dtype=np.float64) for run in data[name]]
            for name in sorted((n for n in data.files if n.startswith(f"{kind}_")), key=lambda n: int(n.split("_")[1]))]


def verdict(a: list[np.ndarray], b: list[np.ndarray], center: str = "fast-state", threshold: float = 0.05) -> Verdict:
    est = estimate(a, b, center=center)
    return decide(est, est.p_value, threshold)


def test_identical_real_jobs_are_never_called_regressed_or_improved() -> None:
    base = jobs("base")
    verdicts = [verdict(a, b) for a, b in itertools.permutations(base, 2)]
    assert Verdict.REGRESSED not in verdicts and Verdict.IMPROVED not in verdicts
    assert verdicts.count(Verdict.UNCHANGED) > len(verdicts) // 2


def test_a_job_wholly_in_the_slow_state_is_inconclusive_with_the_reason_where_fast_said_regressed() -> None:
    slow, mixed = jobs("base")[0], jobs("base")[3]
    old = estimate(mixed, slow, center="fast")
    assert decide(old, old.p_value, 0.05) is Verdict.REGRESSED and old.ratio > 1.3  # the false alarm
    est = estimate(mixed, slow, center="fast-state")
    assert est is not None and decide(est, est.p_value, 0.05) is Verdict.INCONCLUSIVE
    assert est.ci_low < 1.0 < 1.3 < est.ci_high  # both readings: B in A's slow state (1.0), or B 1.4x slower
    assert est.state_note is not None and "B may have had no run in the fast state" in est.state_note
    assert est.states_b is not None and est.states_b.startswith("7 fast")
    back = estimate(slow, mixed, center="fast-state")  # and the other way round: not an improvement
    assert back is not None and decide(back, back.p_value, 0.05) is Verdict.INCONCLUSIVE and "A may have" in back.state_note


def test_twice_the_depth_is_always_regressed_and_ten_percent_more_layers_nearly_always() -> None:
    base = jobs("base")[1:]  # base_0 has no run in the fast state: tested above
    for a, b in itertools.product(base, jobs("x2")):
        est = estimate(a, b, center="fast-state")
        assert decide(est, est.p_value, 0.05) is Verdict.REGRESSED and est.ci_low > 1.3, est
    ten = [verdict(a, b) for a, b in itertools.product(base, jobs("p10"))]
    assert set(ten) <= {Verdict.REGRESSED, Verdict.INCONCLUSIVE} and ten.count(Verdict.REGRESSED) >= 0.9 * len(ten)


def test_five_percent_more_layers_is_slower_but_not_beyond_five_percent() -> None:
    for a, b in itertools.product(jobs("base")[1:], jobs("p5")):
        est = estimate(a, b, center="fast-state")
        assert est is not None and 1.02 < est.ratio < 1.09
        assert decide(est, est.p_value, 0.05) is Verdict.INCONCLUSIVE


@pytest.mark.parametrize("runs", [8, 10])
def test_the_interval_covers_the_true_ratio_in_at_least_ninety_percent_of_synthetic_two_state_trials(runs: int) -> None:
    rng = np.random.default_rng(32)
    covered = trials = 0
    for scale in (1.0, 1.05, 1.1, 2.0):
        for _ in range(100):
            est = estimate(two_state_job(rng, 1.0, runs), two_state_job(rng, scale, runs), center="fast-state")
            assert est is not None
            covered += est.ci_low <= scale <= est.ci_high
            trials += 1
    assert covered / trials >= 0.90, covered / trials


def test_states_split_where_neighbouring_runs_are_more_than_eight_percent_apart() -> None:
    found = states_of([0.0245, 0.0243, 0.0251, 0.0340, 0.0345, 0.0338, 0.049])
    assert found is not None and found.counts == (3, 3, 1)
    assert found.describe().startswith("3 fast + 3 at 1.38x + 1 at 1.99x")
    assert states_of([0.0, -1.0]) is None


def test_a_large_regression_that_repeats_the_step_to_the_slow_state_is_not_ambiguous() -> None:
    """B 1.4x slower, showing its own slow state 1.4x above its fast one: read as a 1.4x regression."""
    a = states_of([0.0245] * 3 + [0.0343] * 5)
    b = states_of([0.0343, 0.0344, 0.0342] + [0.048] * 5)
    assert a is not None and b is not None
    found = compare_states(a, b, 0.95)
    assert found.note is None and found.ci_low > 1.3


def test_a_pool_of_many_jobs_keeps_its_states_apart_though_runs_lie_between_them() -> None:
    # a series' reference: 20 jobs' runs of a model with states 1.48x apart (the second VM's 40-layer MLP), and
    # 5 % of the runs between the states (processes that changed state mid-run), which close every 8 % gap
    rng = np.random.default_rng(1)
    fast, slow, between = rng.normal(34.5, 0.4, 150), rng.normal(51.0, 1.2, 230), rng.uniform(36.0, 48.0, 20)
    pooled = states_of([*fast, *slow, *between])
    assert pooled is not None and pooled.counts[0] == 150 and abs(np.exp(pooled.levels[0]) - 34.5) < 0.2
    assert 1.45 < np.exp(pooled.levels[-1] - pooled.levels[0]) < 1.5  # the slow state is a state of its own
    # one job's runs (fewer than 100) are read as before: every run in, each in-between run a state of its own
    one_job = [*fast[:8], *slow[:10], *between[:2]]
    assert states_of(one_job).runs == 20

"""The paired estimator of interleaved jobs (verdicts/paired.py), on the noise corpus's recorded A/B jobs (A B B A,
tiny_cnn against a byte-identical copy) and on small hand-made rounds. Recorded samples: nothing here times the
live machine."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from orchestrator.base.codec import encode
from orchestrator.verdicts import paired
from orchestrator.verdicts.compare import Comparison, compare_sides
from orchestrator.verdicts.paired import PAIRED, by_round, paired_estimates, round_ratios
from orchestrator.verdicts.statistics import Verdict, VerdictSettings, estimate, estimate_many
from tests.helpers.noise_corpus import load, slowed

AB = [r for r in load() if r.kind == "ab"]
PAIRED_SETTINGS = VerdictSettings(center=PAIRED, resamples=500)


def _runs(side) -> list[tuple[float, ...]]:
    return side.e2e


def test_each_round_gives_the_log_ratio_of_its_two_run_medians() -> None:
    a = [(1.0, 2.0, 3.0), (4.0,), (), (2.0, 2.0)]
    b = [(2.0, 4.0, 6.0), (5.0,), (1.0,), (1.0, 1.0)]
    assert round_ratios(a, b) == pytest.approx([math.log(2.0), math.log(5 / 4), math.log(0.5)])  # round 3: no A
    assert round_ratios(a, b[:3]) is None  # unequal counts: no pairing
    assert round_ratios([(1.0,), ()], [(2.0,), (1.0,)]) is None  # one usable round: no spread to measure


@pytest.mark.parametrize("job", AB, ids=lambda r: f"{r.env}-{r.index}")
def test_on_recorded_ab_jobs_the_interval_and_p_are_students_paired_t_on_the_rounds(job) -> None:
    a, b = _runs(job.sides["cnn-a"]), _runs(job.sides["cnn-b"])
    est = paired_estimates([(a, b)], 0.95, 500, 0)[0]
    d = np.log([np.median(r) for r in b]) - np.log([np.median(r) for r in a])
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert est is not None and est.runs_a == est.runs_b == 10
    assert est.ratio == pytest.approx(math.exp(d.mean()))
    assert (est.ci_low, est.ci_high) == pytest.approx((math.exp(low), math.exp(high)))
    assert est.p_value == pytest.approx(stats.ttest_rel(np.log([np.median(r) for r in b]),
                                                        np.log([np.median(r) for r in a])).pvalue)
    back = paired_estimates([(b, a)], 0.95, 500, 0)[0]  # the other way round: the reciprocal, the same p
    assert back is not None and back.ratio == pytest.approx(1 / est.ratio) and back.p_value == pytest.approx(est.p_value)
    assert (back.ci_low, back.ci_high) == pytest.approx((1 / est.ci_high, 1 / est.ci_low))


def test_a_drift_both_sides_share_cancels_round_by_round_where_the_unpaired_interval_cannot_see_through_it() -> None:
    rng = np.random.default_rng(3)
    drift = np.exp(np.linspace(0.0, 0.4, 10))  # the host slows 50 % over the job, both programs alike
    a = [tuple(rng.normal(1.0, 0.01, 20) * level) for level in drift]
    b = [tuple(rng.normal(1.1, 0.011, 20) * level) for level in drift]  # B 10 % slower in every round
    paired = paired_estimates([(a, b)], 0.95, 500, 0)[0]
    unpaired = estimate(a, b, resamples=500)
    assert paired is not None and unpaired is not None
    assert paired.ci_low > 1.08 and paired.ci_high < 1.12 and paired.p_value < 1e-6
    assert unpaired.ci_low < 1.05  # the drift's spread swamps the change without pairing


def test_runs_that_cannot_be_paired_fall_back_to_the_unpaired_estimate() -> None:
    a, b = _runs(AB[0].sides["cnn-a"]), _runs(AB[0].sides["cnn-b"])[:9]
    assert paired_estimates([(a, b)], 0.95, 500, 0) == estimate_many([(a, b)], resamples=500, center="mean")
    assert paired.estimate_many([(a, b)], resamples=500, center=PAIRED) == estimate_many([(a, b)], resamples=500)


def test_by_round_pairs_run_k_with_run_k_and_leaves_out_rounds_a_side_missed() -> None:
    a, b = AB[0].sides["cnn-a"], AB[0].sides["cnn-b"]
    assert by_round(a, b) == (a, b)  # the corpus's A/B jobs are aligned already
    shuffled = replace(b, runs=tuple(reversed(b.runs[2:])))  # B lost runs 1-2 and lists the rest backwards
    pa, pb = by_round(a, shuffled)
    assert [r.label for r in pa.runs] == [r.label for r in pb.runs] == [f"run-{k}" for k in range(3, 11)]
    key = next(iter(a.op_samples.ops))
    assert len(pa.op_samples.ops[key][1]) == 8  # the per-op samples follow their runs
    assert pa.op_samples.ops[key][1][0] is a.op_samples.ops[key][1][2]
    # A's run 1 left an ETDump and B's did not: per-op samples (one array per traced run) would shift by one
    traced = replace(a, runs=(replace(a.runs[0], etdump=Path("run-1/etdump.etdp")), *a.runs[1:]), op_samples=None)
    assert [r.label for r in by_round(traced, b)[1].runs] == [f"run-{k}" for k in range(2, 11)]


def test_through_compare_sides_the_statistic_is_named_and_a_slowed_copy_is_regressed_end_to_end() -> None:
    job = next(r for r in AB if r.env == "blas")
    a, b = by_round(job.sides["cnn-a"], job.sides["cnn-b"])
    same = compare_sides(a, b, PAIRED_SETTINGS)
    assert not same.regressed
    doubled = compare_sides(a, slowed(b, 2.0), PAIRED_SETTINGS)
    assert doubled.verdict is Verdict.REGRESSED and doubled.estimate.ratio == pytest.approx(2 * same.estimate.ratio)
    assert encode(Comparison("a", "b", PAIRED_SETTINGS, (doubled,)))["statistic"] == (
        "mean run median; ratio paired by ABBA round")


def test_every_round_alike_is_certain_unless_it_is_no_change() -> None:
    a = [(1.0,), (2.0,), (3.0,)]
    est = paired_estimates([(a, [(1.2,), (2.4,), (3.6,)])], 0.95, 500, 0)[0]
    assert est is not None and est.ci_low == pytest.approx(1.2) == pytest.approx(est.ci_high) and est.p_value == 0.0
    same = paired_estimates([(a, a)], 0.95, 500, 0)[0]
    assert same is not None and same.ratio == 1.0 and same.p_value == 1.0

"""What a verdict could see, and when it must not judge (verdicts/trust.py), on constructed sides."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from orchestrator.base.codec import encode
from orchestrator.profiles.op_identity import OpIdentity
from orchestrator.report.terminal.verdicts import verdict_markdown, verdict_table
from orchestrator.results.contention import Contention
from orchestrator.results.model import ProcessRun
from orchestrator.verdicts.compare import Comparison, PairVerdict, Side, compare_sides
from orchestrator.verdicts.figures import side_figures
from orchestrator.verdicts.noise import NoiseFloor
from orchestrator.verdicts.op_samples import OpSamples
from orchestrator.verdicts.sides import SideRun, _side_run, clean_ops
from orchestrator.verdicts.statistics import Estimate, Verdict, VerdictSettings
from orchestrator.verdicts.trust import Load, detectable_change, judged, loads_differ, settle_command

SETTINGS = VerdictSettings(resamples=300, center="mean")


def est(low: float, high: float, ratio: float = 1.0) -> Estimate:
    return Estimate(ratio, low, high, 0.5, 10, 10, 1.0, ratio)


def side(level: float, spread: float = 0.01, runs: int = 10, seed: int = 0, contended: float | None = None,
         source: str = "run-a") -> Side:
    """Runs of 30 executions; with `contended`, that share of each run's executions is marked as having waited."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(runs):
        times = tuple(level * (1 + spread * rng.standard_normal(30)))
        mask = None if contended is None else tuple(i >= round(30 * contended) for i in range(30))
        out.append(SideRun(f"run-{k}", times, None, clean=mask))
    return Side(source, "pixel8", "cnn", tuple(out), program=f"/runs/{source}/cnn.pte")


def test_the_detectable_change_is_the_80_percent_power_change_of_the_interval() -> None:
    # a 95 % interval of +-10 % in log space is a standard error of log(1.1) / 1.96; at alpha 5 % and 80 % power
    # a test finds a change of (1.96 + 0.8416) standard errors: 1.1 ** (2.8016 / 1.96) - 1 = 14.6 %
    found = detectable_change(est(1 / 1.1, 1.1), alpha=0.05, confidence=0.95)
    assert math.isclose(found, 1.1 ** (2.8016 / 1.95996) - 1, rel_tol=1e-3)
    assert detectable_change(est(0.99, 1.01), 0.05, 0.95) < found  # narrower: can see less
    assert math.isnan(detectable_change(est(math.nan, math.nan), 0.05, 0.95))
    assert math.isnan(detectable_change(None, 0.05, 0.95))


def test_loads_differ_only_when_materially_different() -> None:
    assert loads_differ(Load(3, 100), Load(41, 100))  # the example
    assert not loads_differ(Load(40, 100), Load(48, 100))  # both busy, alike
    assert not loads_differ(Load(0, 100), Load(5, 100))  # a few points
    assert not loads_differ(None, Load(41, 100))  # an old manifest: nothing measured, judged as before
    assert not loads_differ(Load(0, 0), Load(41, 100))


def test_a_pass_too_noisy_to_see_the_threshold_is_inconclusive_with_the_reason() -> None:
    found = judged(Verdict.UNCHANGED, est(0.93, 1.07), threshold=0.05, alpha=0.05, confidence=0.95)
    assert found.verdict is Verdict.INCONCLUSIVE and found.blind == "too noisy: could see >= 11%"
    tight = judged(Verdict.UNCHANGED, est(0.99, 1.01), threshold=0.05, alpha=0.05, confidence=0.95)
    assert tight.verdict is Verdict.UNCHANGED and tight.blind is None and tight.detectable < 0.05


def test_different_load_makes_any_verdict_inconclusive_and_a_clear_regression_stands_otherwise() -> None:
    loads = (Load(3, 100), Load(41, 100))
    found = judged(Verdict.REGRESSED, est(1.3, 1.5, 1.4), 0.05, 0.05, 0.95, loads)
    assert found.verdict is Verdict.INCONCLUSIVE
    assert found.blind == "measured under different load: A 3% of executions contended, B 41%"
    noisy = judged(Verdict.REGRESSED, est(1.3, 2.5, 1.8), 0.05, 0.05, 0.95)  # seen despite the noise: it stands
    assert noisy.verdict is Verdict.REGRESSED and noisy.detectable > 0.05
    assert judged(Verdict.NO_DATA, None, 0.05, 0.05, 0.95, loads).verdict is Verdict.NO_DATA


def test_sides_of_one_interleaved_job_are_judged_whatever_their_contended_shares() -> None:
    # A B B A in one job: both saw the same load; a longer program is preempted more often (a night's confirmation
    # met A 0 %, B 18 % at 6.8x), and run --ab, the way to settle a different load, must be able to judge
    quiet, busy = side(1.0, seed=1, contended=0.0, source="ab-run"), side(1.4, seed=2, contended=0.4, source="ab-run")
    pair = compare_sides(quiet, busy, SETTINGS)
    assert pair.verdict is Verdict.REGRESSED and pair.blind is None
    assert pair.loads[1] is not None and pair.loads[1].share > 0.3  # still reported
    separate = compare_sides(quiet, replace(busy, source="run-b"), SETTINGS)
    assert separate.verdict is Verdict.INCONCLUSIVE  # the same samples from two jobs: the load may be why


def test_a_compare_under_different_load_exits_3_names_run_ab_and_never_says_no_regression() -> None:
    quiet, busy = side(1.0, seed=1, contended=0.0), side(1.4, seed=2, contended=0.4, source="run-b")
    pair = compare_sides(quiet, busy, SETTINGS)
    assert pair.verdict is Verdict.INCONCLUSIVE and not pair.regressed
    assert pair.blind is not None and pair.blind.startswith("measured under different load")
    assert pair.settle == settle_command("/runs/run-a/cnn.pte", "/runs/run-b/cnn.pte", "pixel8")
    assert pair.settle.startswith("etfarm run --ab /runs/run-a/cnn.pte /runs/run-b/cnn.pte --devices pixel8")
    comparison = Comparison("run-a", "run-b", SETTINGS, (pair,))
    assert comparison.exit_code == 3 and comparison.headline == "could not judge 1 of 1 pair(s)"
    table = verdict_table(comparison)
    assert "verdict: could not judge 1 of 1 pair(s)" in table and "to settle: etfarm run --ab" in table
    assert "no regression" not in table and "could not judge" in verdict_markdown(comparison)
    as_json = encode(comparison)
    assert as_json["exit_code"] == 3 and as_json["pairs"][0]["contention"]["b"]["share"] == 0.4


def test_sides_alike_in_load_are_judged() -> None:
    a, b = side(1.0, seed=1, contended=0.4), side(1.0, seed=2, contended=0.5, source="run-b")
    pair = compare_sides(a, b, SETTINGS)
    assert pair.loads == (Load(120, 300), Load(150, 300)) and pair.verdict is Verdict.UNCHANGED


def test_a_measured_run_keeps_its_clean_executions_and_counts_the_dropped(tmp_path: Path) -> None:
    measured = ProcessRun("run-1", True, (1.0, 9.0, 1.1, 1.0), contention=Contention(wait_ms=(0.0, 8.0, 0.01, 0.0)))
    found = _side_run(tmp_path, measured)
    assert found.execute_ms == (1.0, 1.1, 1.0) and found.dropped == 1 and found.clean == (True, False, True, True)
    old = _side_run(tmp_path, ProcessRun("run-1", True, (1.0, 9.0)))  # an old manifest: nothing measured
    assert old.execute_ms == (1.0, 9.0) and old.clean is None and old.dropped == 0
    per_op = OpSamples({("Execute", OpIdentity("features.0", "aten.convolution.default")):
                        (0, [np.array([0.1, 0.9, 0.1, 0.1])])})
    kept = clean_ops(per_op, [found.clean])
    assert next(iter(kept.ops.values()))[1][0].tolist() == [0.1, 0.1, 0.1]


def test_one_pair_regressed_and_another_unjudged_exits_1() -> None:
    regressed = compare_sides(side(1.0, seed=1), side(1.5, seed=2, source="run-b"), SETTINGS)
    unjudged = compare_sides(side(1.0, seed=3), side(1.0, spread=0.3, runs=3, seed=4, source="run-b"), SETTINGS)
    assert regressed.verdict is Verdict.REGRESSED and unjudged.verdict is Verdict.INCONCLUSIVE
    comparison = Comparison("a", "b", SETTINGS, (regressed, unjudged))
    assert comparison.exit_code == 1 and comparison.headline == "1 regressed; could not judge 1 of 2 pair(s)"


def test_an_old_manifest_without_contention_is_judged_as_before() -> None:
    a, b = side(1.0, seed=1), side(1.0, seed=2, source="run-b")
    pair = compare_sides(a, b, SETTINGS)
    assert pair.loads == (None, None) and pair.dropped == (0, 0)
    assert pair.verdict is Verdict.UNCHANGED and pair.detectable < 0.05 and pair.settle is None
    assert Comparison("a", "b", SETTINGS, (pair,)).exit_code == 0


def test_the_numbers_users_know_are_the_p50_and_trimmed_mean_of_clean_executions() -> None:
    found = side_figures([(1.0, 2.0, 3.0, 4.0, 100.0), (5.0, 6.0, 7.0, 8.0, 9.0)])
    assert found is not None and found.p50_ms == 5.5 and found.executions == 10
    assert found.trimmed_mean_ms == sum([2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]) / 8  # 1.0 and 100.0 trimmed
    assert side_figures([]) is None
    pair = compare_sides(side(1.0, seed=1), side(1.2, seed=2, source="run-b"), SETTINGS)
    assert pair.figures[1] is not None and abs(pair.figures[1].p50_ms - 1.2) < 0.02
    table = verdict_table(Comparison("a", "b", SETTINGS, (pair,)))
    assert f"p50 A {pair.figures[0].p50_ms:.4g} ms, B {pair.figures[1].p50_ms:.4g} ms" in table
    assert encode(pair)["figures"]["b"]["executions"] == 300


def test_separate_jobs_carry_the_job_shift_and_one_interleaved_job_does_not() -> None:
    shifted = VerdictSettings(resamples=300, center="mean", job_shift=0.05)
    a, b = side(1.0, seed=1), side(1.12, seed=2, source="run-b")
    separate = compare_sides(a, b, shifted)
    assert separate.verdict is Verdict.INCONCLUSIVE and separate.blind is not None
    assert separate.blind.startswith("too noisy: could see >= ") and separate.detectable > 0.12
    one_job = compare_sides(a, side(1.12, seed=2), shifted)  # both sides from run-a: interleaved
    assert one_job.verdict is Verdict.REGRESSED and one_job.detectable < 0.05
    assert compare_sides(a, side(2.0, seed=2, source="run-b"), shifted).verdict is Verdict.REGRESSED  # 2x is seen


def test_an_a_a_of_one_program_names_no_command_and_the_lines_stay_lines() -> None:
    a = side(1.0, spread=0.3, runs=3, seed=1)
    b = replace(side(1.0, spread=0.3, runs=3, seed=2, source="run-b"), program=a.program)  # the same .pte
    pair = compare_sides(a, b, SETTINGS)
    assert pair.verdict is Verdict.INCONCLUSIVE and pair.settle is None  # run --ab refuses one program twice
    table = verdict_table(Comparison("a", "b", SETTINGS, (pair,)))
    assert "\\x0a" not in table and "\n  pixel8 cnn: could not judge (too noisy" in table


def test_a_noise_floor_of_half_again_is_said_to_be_blind_never_a_pass() -> None:
    a, b = side(1.0, seed=1), side(1.0, seed=2, source="run-b")
    pair = compare_sides(a, b, SETTINGS, noise=NoiseFloor(0.8, auto=False))
    assert pair.verdict is Verdict.INCONCLUSIVE and pair.blind is not None
    assert pair.blind.startswith("replicate jobs differ by up to 80% (the noise floor)")
    assert compare_sides(a, b, SETTINGS, noise=NoiseFloor(0.3, auto=False)).verdict is Verdict.UNCHANGED
    assert compare_sides(a, side(2.5, seed=2, source="run-b"), SETTINGS,
                         noise=NoiseFloor(0.8, auto=False)).verdict is Verdict.REGRESSED  # beyond the floor: seen


def test_tables_show_each_sides_p50_and_the_judging_statistics_ratio() -> None:
    """Issue 37 item 6: the A and B columns, end to end and per op, are the p50 of each side's clean executions,
    never the judging statistic's level; the ratio beside them is the verdict's, and the legend names both."""
    from orchestrator.report.terminal.verdicts import headers, verdict_rows

    def skewed(level: float, seed: int, source: str) -> Side:
        # 7 runs at `level`, 3 at twice it: the mean of the run medians (1.3x level) is not the p50 (level)
        rng = np.random.default_rng(seed)
        runs, ops = [], []
        for k in range(10):
            times = level * (1 if k < 7 else 2) * (1 + 0.01 * rng.standard_normal(30))
            runs.append(SideRun(f"run-{k}", tuple(times), None))
            ops.append(times / 2)
        key = ("Execute", OpIdentity("features.0", "aten.convolution.default"))
        return replace(side(level, source=source), runs=tuple(runs), op_samples=OpSamples({key: (0, ops)}))

    settings = VerdictSettings(resamples=300, center="mean")  # the judging statistic: the mean of the run medians
    pair = compare_sides(skewed(1.0, 1, "run-a"), skewed(1.5, 2, "run-b"), settings)
    assert pair.verdict is Verdict.REGRESSED and pair.ops[0].verdict is Verdict.REGRESSED
    comparison = Comparison("run-a", "run-b", settings, (pair,))
    assert headers(comparison)[4:6] == ["A p50 ms", "B p50 ms"]
    rows = verdict_rows(comparison)
    end_to_end, op = rows[0], next(r for r in rows if "features.0" in str(r[2]))
    a, b = pair.figures
    assert a is not None and b is not None and end_to_end[4:6] == [a.p50_ms, b.p50_ms]
    assert abs(a.p50_ms - 1.0) < 0.02 and abs(pair.estimate.median_a_ms - 1.3) < 0.02  # the two differ here
    assert end_to_end[6] == f"{pair.estimate.ratio:.3f}x"  # the verdict's ratio
    op_a, op_b = pair.ops[0].figures
    assert op_a is not None and op_b is not None and op[4:6] == [op_a.p50_ms, op_b.p50_ms]
    assert abs(op_a.p50_ms - 0.5) < 0.01
    assert encode(pair)["ops"][0]["figures"]["a"]["p50_ms"] == op_a.p50_ms  # the JSON gives both, per op too
    table = verdict_table(comparison)
    assert "A and B: the p50 of each side's clean executions" in table and "ratio B/A of the mean" in table


def test_a_first_night_says_it_had_no_baseline_not_no_regression() -> None:
    """A plan's first night (every pair `new`) compared nothing: its headline says so and it exits 0; a later night
    with one model added names the new pair beside what it found for the rest."""
    new = PairVerdict("pixel8", "cnn", "cnn", Verdict.NEW, None, 0.05, 0.1, reason="no baseline yet")
    first = Comparison("last-good", "night-1", SETTINGS, (new, replace(new, model_a="mlp", model_b="mlp")))
    assert first.headline == "no baseline yet for 2 pair(s): this run becomes it" and first.exit_code == 0
    judged = compare_sides(side(1.0, seed=1), side(1.0, seed=2), SETTINGS)  # one job: interleaved, judged
    assert judged.verdict is Verdict.UNCHANGED
    later = Comparison("last-good", "night-2", SETTINGS, (judged, new))
    assert later.headline == "no regression; no baseline yet for 1 of 2 pair(s)" and later.exit_code == 0
    assert Comparison("a", "b", SETTINGS, (judged,)).headline == "no regression"

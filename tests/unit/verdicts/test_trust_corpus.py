"""The verdict logic on the noise corpus: real tiny_cnn jobs recorded under five environments (tests/helpers/
noise_corpus.py; benchmarks/noise_corpus.py made them). Recorded samples, so nothing here times the live machine."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from orchestrator.verdicts.compare import Comparison, compare_sides
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from orchestrator.verdicts.trust import JOB_SHIFT_SD, Load, loads_differ
from tests.helpers.noise_corpus import CORPUS_AB, CORPUS_STATES, envs, load, slowed

# compare's: mean of per-run medians, 5 % end to end, 10 % per op, separate jobs' shift
SETTINGS = VerdictSettings(resamples=500, job_shift=JOB_SHIFT_SD)
CORPUS = load()


def jobs(env: str) -> list:
    return [r.sides["cnn"] for r in CORPUS if r.env == env and r.kind == "job"]


def test_the_corpus_holds_five_environments_with_contention_measured() -> None:
    assert envs(CORPUS) == ["quiet", "blas", "bursty", "quota", "slow"]
    for env in envs(CORPUS):
        assert len(jobs(env)) == 6 and sum(r.kind == "ab" for r in CORPUS if r.env == env) == 4
        assert all(s.load is not None for s in jobs(env))  # every run measured its run-queue wait


@pytest.mark.parametrize("env", ["quiet", "blas", "bursty", "quota", "slow"])
def test_identical_jobs_are_never_regressed_end_to_end_or_per_op(env: str) -> None:
    for a, b in itertools.combinations(jobs(env), 2):
        pair = compare_sides(a, b, SETTINGS)
        assert not pair.regressed, (env, a.source, b.source, pair.verdict, [o.op for o in pair.regressed_ops])
        assert pair.verdict in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE, Verdict.IMPROVED)
        if pair.verdict is Verdict.INCONCLUSIVE:  # it says why, and how to settle it
            assert pair.blind and pair.settle and pair.settle.startswith("etfarm run --ab ")
            assert Comparison(a.source, b.source, SETTINGS, (pair,)).exit_code == 3


@pytest.mark.parametrize("env", ["quiet", "blas", "bursty", "quota", "slow"])
def test_a_twofold_slowdown_is_regressed_in_every_environment(env: str) -> None:
    for a, b in itertools.combinations(jobs(env), 2):
        pair = compare_sides(a, slowed(b, 2.0), SETTINGS, per_op=False)
        assert pair.verdict is Verdict.REGRESSED and pair.estimate is not None
        assert pair.estimate.ci_low <= 2.0 * 1.15 and pair.estimate.ci_high >= 2.0 * 0.85


def test_contended_executions_are_left_out_and_counted() -> None:
    busy = [s for env in ("blas", "bursty", "quota") for s in jobs(env)]
    assert sum(s.dropped for s in busy) > 0
    for side in busy:
        assert side.dropped == side.load.contended  # what is dropped is what waited for a CPU
    raw = load(clean=False)
    assert sum(len(r.execute_ms) for r in raw[0].sides["cnn"].runs) == 300  # 10 runs x 30 executions, all kept


def test_the_corpus_jobs_ran_under_alike_load_and_a_side_marked_otherwise_is_not_judged() -> None:
    every = [s for env in envs(CORPUS) for s in jobs(env)]
    assert not any(loads_differ(a.load, b.load) for a, b in itertools.combinations(every, 2))  # 42-57 % each
    a, b = jobs("quiet")[0], jobs("blas")[0]
    pair = compare_sides(a, slowed(b, 2.0), SETTINGS, per_op=False)
    assert pair.verdict is Verdict.REGRESSED
    quiet = replace(a, runs=tuple(replace(r, clean=(True,) * len(r.clean or ())) for r in a.runs))
    assert quiet.load == Load(0, 300) and loads_differ(quiet.load, b.load)
    pair = compare_sides(quiet, slowed(b, 2.0), SETTINGS)
    assert pair.verdict is Verdict.INCONCLUSIVE and not pair.regressed
    assert pair.blind is not None and pair.blind.startswith("measured under different load: A 0% of executions")


@pytest.mark.parametrize("env", ["quiet", "blas", "bursty", "quota", "slow"])
def test_run_ab_against_a_byte_identical_copy_is_never_regressed(env: str) -> None:
    # the fixture's 4 A/B jobs an environment and the 8 more of its extension (recorded on another day)
    for job in [r for r in (*CORPUS, *load(CORPUS_AB)) if r.env == env and r.kind == "ab"]:
        a, b = job.sides["cnn-a"], job.sides["cnn-b"]
        for first, second in ((a, b), (b, a)):
            pair = compare_sides(first, second, SETTINGS)
            assert not pair.regressed, (env, job.index, pair.verdict, [o.op for o in pair.regressed_ops])


# The second recording: another VM, whose runner processes land in a fast state or one ~1.9x slower (luck per process)
STATES = load(CORPUS_STATES)


def states_jobs(env: str) -> list:
    return [r.sides["cnn"] for r in STATES if r.env == env and r.kind == "job"]


@pytest.mark.parametrize("env", ["quiet", "blas", "bursty", "quota", "slow"])
def test_on_a_machine_of_speed_states_identical_jobs_and_copies_are_never_regressed(env: str) -> None:
    for a, b in itertools.permutations(states_jobs(env), 2):
        pair = compare_sides(a, b, SETTINGS)
        assert not pair.regressed, (env, a.source, b.source, pair.verdict, [o.op for o in pair.regressed_ops])
    for job in [r for r in STATES if r.env == env and r.kind == "ab"]:
        a, b = job.sides["cnn-a"], job.sides["cnn-b"]
        for first, second in ((a, b), (b, a)):
            pair = compare_sides(first, second, replace(SETTINGS, job_shift=0.0))  # one job: run --ab's settings
            assert not pair.regressed, (env, job.index, pair.verdict, [o.op for o in pair.regressed_ops])


def test_an_op_of_separate_jobs_that_could_not_be_judged_end_to_end_is_held_back() -> None:
    # beside BLAS, job 22 ran in its fast state and job 20 wholly in the slow one: 1.66x apart end to end, and their
    # max-pool 2.3x apart with runs that agree (an interval of its own of [1.99, 2.71])
    a, b = (next(r.sides["cnn"] for r in STATES if r.index == k) for k in (22, 20))
    pair = compare_sides(a, b, SETTINGS)
    assert pair.verdict is Verdict.INCONCLUSIVE and pair.blind and not pair.regressed
    held = [o for o in pair.ops if o.held is not None]
    assert [o.op for o in held] == ["features.2 max_pool2d", "features.5 max_pool2d"]
    for op in held:
        assert op.verdict is Verdict.INCONCLUSIVE and op.held is Verdict.REGRESSED and op.estimate.ci_low > 1.3
        assert op.blind.startswith(f"regressed {op.estimate.ratio:.3f}x on its own, but the jobs could not be judged "
                                   f"end to end ({pair.blind})")
    assert Comparison(a.source, b.source, SETTINGS, (pair,)).exit_code == 3


def test_an_op_twice_as_slow_in_one_interleaved_job_is_regressed_and_never_held_back() -> None:
    # the first max-pool is ~4 % of the model's time: a change only its per-op verdict can find
    from tests.helpers.noise_corpus import op_slowed

    found = 0
    jobs = [r for r in STATES if r.env == "blas" and r.kind == "ab"]
    for job in jobs:
        a, b = job.sides["cnn-a"], op_slowed(job.sides["cnn-b"], "features.2 max_pool2d", 2.0)
        pair = compare_sides(a, b, replace(SETTINGS, job_shift=0.0))
        ops = {o.op: o for o in pair.ops}
        found += ops["features.2 max_pool2d"].verdict is Verdict.REGRESSED
        assert all(o.held is None for o in pair.ops)  # one job: nothing between its sides to hold an op back
    assert found >= len(jobs) - 1


def test_the_terminal_lists_a_held_back_op_with_what_its_samples_said() -> None:
    from orchestrator.report.terminal.verdicts import verdict_rows

    a, b = (next(r.sides["cnn"] for r in STATES if r.index == k) for k in (22, 20))
    pair = compare_sides(a, b, SETTINGS)
    rows = verdict_rows(Comparison(a.source, b.source, SETTINGS, (pair,)))
    held = [row for row in rows if "max_pool2d" in str(row[2])]
    assert len(held) == 2 and all(row[3] == "inconclusive (alone: regressed; the jobs not judged end to end)"
                                  for row in held), held
    assert not any(row[3] == "REGRESSED" for row in rows)

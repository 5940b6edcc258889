"""`auto`, the default statistic (verdicts/centers/auto.py): the mean where runs do not split into speed states (the
noise corpus of busy hosts), the fast state's level where they do (the testbed's recorded two-state jobs). Recorded
samples only: nothing here times the live machine."""

from __future__ import annotations

import itertools

import numpy as np

from orchestrator.verdicts.states import splits
from orchestrator.verdicts.statistics import DEFAULT_CENTER, estimate, estimate_many, run_median
from tests.helpers.noise_corpus import load
from tests.unit.verdicts.test_states import jobs

CORPUS = load()


def medians(runs: list) -> list[float]:
    return [float(np.median(r)) for r in runs if len(r)]


def corpus_sides() -> list[list]:
    return [[np.asarray(run.execute_ms) for run in side.runs] for r in CORPUS for side in r.sides.values()]


def test_auto_is_the_default() -> None:
    assert DEFAULT_CENTER == "auto"


def test_no_end_to_end_side_of_the_noise_corpus_splits_and_most_two_state_jobs_do() -> None:
    assert not any(splits(medians(side)) for side in corpus_sides())  # contention spreads runs, it makes no states
    base = jobs("base")
    split = [splits(medians(job)) for job in base]
    assert sum(split) >= len(base) * 2 // 3  # each process fast with probability ~0.37, else 1.4x or 2x


def test_one_slow_run_is_an_outlier_and_two_are_a_state() -> None:
    assert not splits([1.0, 1.01, 0.99, 1.02, 1.5])
    assert splits([1.0, 1.01, 0.99, 1.4, 1.42])
    assert not splits([1.0, 1.1, 1.12, 1.15])  # spread within 20 % of the fastest: no state to model


def test_runs_each_in_a_state_of_their_own_are_spread_and_judged_by_the_mean_with_an_interval() -> None:
    spread = [1.0, 1.12, 1.3, 1.5]  # every neighbour more than 8 % apart: four one-run "states", no spread within
    assert not splits(spread)
    assert splits([1.0, 1.02, 1.3, 1.32])  # two runs share each state: states with a spread to measure
    assert not splits([1.0, 1.12, 1.3, 1.32])  # a fastest "state" of one run is no level to judge by
    # a 5 us op at the timer's 1 us ticks, beside a BLAS neighbour (the second noise corpus): its run medians in
    # eight "states", five of one run; fast-state's t read it 2.4x [2.22, 2.60] against an identical program
    ticks = [5.0, 5.0, 6.0, 8.0, 11.5, 15.0, 21.0, 21.0, 30.0, 34.75]
    assert not splits(ticks)
    a = [list(np.full(5, m) + np.linspace(0, 0.001, 5)) for m in spread]
    b = [list(np.full(5, m * 1.3) + np.linspace(0, 0.001, 5)) for m in reversed(spread)]
    found = estimate(a, b, center="auto", resamples=300)
    assert found is not None and found.ci_low <= found.ratio <= found.ci_high  # fast-state's t had [nan, nan] here
    assert found == estimate(a, b, center="mean", resamples=300)


def test_on_the_corpus_auto_is_the_mean_to_the_last_bit() -> None:
    sides = corpus_sides()
    pairs = list(itertools.pairwise(sides[:8]))
    assert estimate_many(pairs, center="auto", resamples=300) == estimate_many(pairs, center="mean", resamples=300)
    assert [run_median(s, "auto") for s in sides[:8]] == [run_median(s, "mean") for s in sides[:8]]


def test_where_runs_split_auto_is_the_fast_state_and_a_mixed_batch_is_each_pair_alone() -> None:
    base = jobs("base")
    split = [j for j in base if splits(medians(j))]
    assert split
    job = split[0]
    assert run_median(job, "auto") == run_median(job, "fast-state") < run_median(job, "mean")
    quiet = corpus_sides()[0]
    pairs = [(split[0], split[1]), (quiet, quiet), (quiet, split[0])]  # states on both, neither, one side
    batched = estimate_many(pairs, center="auto", resamples=300)
    assert batched[0] == estimate(*pairs[0], center="fast-state", resamples=300)
    assert batched[1] == estimate(*pairs[1], center="mean", resamples=300)
    assert batched[2] == estimate(*pairs[2], center="fast-state", resamples=300)  # one side's states decide
    assert batched == [estimate(a, b, center="auto", resamples=300) for a, b in pairs]

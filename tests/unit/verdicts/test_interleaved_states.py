"""A side that may have missed the fast state, when the sides took turns in the same jobs (verdicts/states.py
`missed_together`): recorded jobs of the second VM (runner processes in a fast state or one ~1.8x slower, luck per
process; tests/helpers/noise_corpus.py) and seeded runs. Deterministic: recorded samples, fixed seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from orchestrator.verdicts.compare import compare_sides
from orchestrator.verdicts.estimates import run_medians
from orchestrator.verdicts.states import compare_states, missed_together, states_of
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.helpers.noise_corpus import CORPUS_STATES, load, pooled, slowed, taking_turns

SETTINGS = VerdictSettings(resamples=500)  # run --ab's: one (pooled) interleaved job, no job shift
QUIET_ABS = [r for r in load(CORPUS_STATES) if r.env == "quiet" and r.kind == "ab"]


@pytest.mark.parametrize(("side", "other", "faster"), [(10, 10, 9), (80, 80, 3), (80, 80, 72), (30, 50, 0), (7, 12, 5)])
def test_the_chance_of_missing_every_faster_run_is_the_hypergeometric_draw(side: int, other: int, faster: int) -> None:
    from scipy.stats import hypergeom

    # of side + other runs, `faster` in the fast states; the side draws its runs: none of the faster ones
    expected = hypergeom(side + other, faster, side).pmf(0)
    assert math.exp(missed_together(side, other, faster)) == pytest.approx(expected, rel=1e-9)


def pooled_pair(jobs: list, factor: float) -> tuple:
    """A's and B's sides of interleaved A/B jobs pooled (as run --ab --until-confident and a night's confirmation
    pool them: one source for both sides), B's samples slowed by `factor`."""
    a = pooled([j.sides["cnn-a"] for j in jobs])
    b = pooled([j.sides["cnn-b"] for j in jobs])
    b = slowed(b, factor) if factor != 1.0 else b
    return a, b


def test_ten_percent_slower_over_eight_pooled_interleaved_jobs_is_regressed_not_a_missed_fast_state() -> None:
    # jobs 2-9 of the second VM's quiet A/B jobs: A 72 runs fast + 8 at 1.78x, B (slowed 1.1x) 75 at 1.09x A's fast
    # level + 5 above. Weighed as a whole job missing the fast state (1 in 30), B "may have missed" a state 72 of A's
    # runs were in, and the night read inconclusive 1.09x [0.58, 1.12]; taking turns, that is a 2^-72 draw.
    a, b = pooled_pair(QUIET_ABS[1:9], 1.10)
    states_a, states_b = states_of(run_medians(a.e2e)), states_of(run_medians(b.e2e))
    assert states_a.counts[0] >= 60 and len(states_a.counts) >= 2  # A's runs split: the fast state and a slower one
    separate = compare_states(states_a, states_b, 0.95, interleaved=False)
    assert separate.note is not None and separate.ci_low < 0.7  # the missed-state reading spans down to ~0.58
    together = compare_states(states_a, states_b, 0.95, interleaved=True)
    assert together.note is None and together.ci_low <= 1.10 <= together.ci_high and together.ci_low > 1.05
    pair = compare_sides(a, b, SETTINGS, per_op=False)
    assert pair.verdict is Verdict.REGRESSED and pair.estimate.ci_low <= 1.10 <= pair.estimate.ci_high


@pytest.mark.parametrize("used", [1, 2, 4, 8, 12])
def test_pooled_interleaved_copies_are_never_regressed(used: int) -> None:
    for start in range(len(QUIET_ABS)):
        jobs = (QUIET_ABS[start:] + QUIET_ABS[:start])[:used]
        for swap in (False, True):
            a, b = pooled_pair(jobs, 1.0)
            a, b = (b, a) if swap else (a, b)
            pair = compare_sides(a, b, SETTINGS)
            assert not pair.regressed, (used, start, swap, pair.verdict, pair.estimate)


def test_a_side_that_missed_a_state_the_other_reached_in_few_runs_stays_inconclusive() -> None:
    # taking turns, a fast state of 3 runs of 160 misses one side with chance 0.12: the reading stays, as it did
    rng = np.random.default_rng(7)
    a = np.concatenate([1.0 + 0.01 * rng.standard_normal(3), 1.4 + 0.014 * rng.standard_normal(77)])
    b = 1.4 + 0.014 * rng.standard_normal(80)
    found = compare_states(states_of(a.tolist()), states_of(b.tolist()), 0.95, interleaved=True)
    assert found.note is not None and found.ci_low < 1.0 < found.ci_high  # "B may have had no run in the fast state"
    # while a fast state of most of A's runs, missed by all of B's, is no chance at all: B is 1.4x
    a = np.concatenate([1.0 + 0.01 * rng.standard_normal(70), 1.4 + 0.014 * rng.standard_normal(10)])
    found = compare_states(states_of(a.tolist()), states_of(b.tolist()), 0.95, interleaved=True)
    assert found.note is None and found.ci_low > 1.3


def test_an_op_keeps_the_whole_job_prior_since_its_clusters_are_not_speed_states() -> None:
    # beside a slow job on the second VM, 7 pooled interleaved A/A jobs (taking turns to start, as run --ab pools
    # them): A's max-pool runs 47 fast + 22 at 1.59x, B's 70 all at 1.22x. A draw that rare is no process state
    # shared by both sides; the op's verdict keeps MISSED_FAST (compare.py) and is not `regressed`.
    slow = [r for r in load(CORPUS_STATES) if r.env == "slow" and r.kind == "ab"]
    a, b = (pooled(sides) for sides in taking_turns((slow[8:] + slow[:8])[:7], "cnn-a", "cnn-b"))
    pair = compare_sides(a, b, SETTINGS)
    op = next(o for o in pair.ops if o.op == "features.2 max_pool2d")
    assert op.estimate.ratio > 1.15 and op.estimate.state_note is not None  # B "may have missed" A's fast state
    assert not pair.regressed and op.verdict is not Verdict.REGRESSED

"""The verdicts are the same as before the vectorised bootstrap, case by case (issue 21, item 7).

The reference is the old implementation, kept verbatim in tests/helpers/verdicts_reference.py.
The point estimate, both sides' statistics and the rank test's p-value are deterministic: they
must be equal to the last bit. The interval is a bootstrap: the new one samples the same
resampling distribution with another random stream, so its endpoints move by Monte Carlo noise
only. So the verdict must be the reference's (both seeded 0), except in a borderline case: one
where the interval the bootstrap converges to (200 000 replicates) has an endpoint within three
Monte Carlo standard deviations (of a 2000-replicate endpoint, over 20 seeds) of the threshold
the two verdicts fall on either side of. Such cases must be rare.

Stored cases: real per-run samples of two jobs of the same 80-op portable MLP on this project's
loaded VM (fixtures/deep_mlp_two_jobs.npz: end to end and 8 ops, 6 runs x 200 iterations a side,
B also scaled by 1.05, 1.1 and 2), and seeded synthetic cases shaped like the testbed's noise
(process runs in a fast or a slow state, 2 % jitter): A/A, +5 %, +10 %, 2x, -10 %, half, few and many runs,
odd and even iterations, partial runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from orchestrator.verdicts.statistics import Verdict, adjust_p_values, decide, estimate, estimate_many
from tests.helpers import verdicts_reference as reference

FIXTURE = Path(__file__).with_name("fixtures") / "deep_mlp_two_jobs.npz"
Case = tuple[str, list[np.ndarray], list[np.ndarray]]


def stored_cases() -> list[Case]:
    data = np.load(FIXTURE)
    cases: list[Case] = []
    for what in ["e2e", *(f"op{j}" for j in range(8))]:
        a, b = [r / 1e6 for r in data[f"a_{what}"]], [r / 1e6 for r in data[f"b_{what}"]]
        scales = (1.0, 1.05, 1.1, 2.0) if what == "e2e" else (1.0, 1.1)
        cases += [(f"real {what} x{s}", a, [s * r for r in b]) for s in scales]
    return cases


def synthetic_cases() -> list[Case]:
    rng = np.random.default_rng(2026)

    def side(runs: int, iterations: int, scale: float) -> list[np.ndarray]:
        return [scale * (0.069 if rng.random() < 0.5 else 0.088) * (1 + 0.02 * rng.standard_normal(iterations))
                for _ in range(runs)]

    cases: list[Case] = []
    for runs, iterations in ((3, 20), (5, 21), (8, 50), (10, 20), (12, 7)):
        for scale in (0.5, 0.9, 1.0, 1.05, 1.1, 2.0):
            cases.append((f"synthetic {runs}x{iterations} x{scale}", side(runs, iterations, 1.0),
                          side(runs, iterations, scale)))
    partial = side(6, 30, 1.0)
    cases.append(("synthetic partial run", partial[:5] + [partial[5][:9]], side(6, 30, 1.1)))
    return cases


CASES = stored_cases() + synthetic_cases()


@pytest.mark.parametrize("center", ["mean", "fast"])
def test_verdicts_equal_the_old_implementation_case_by_case(center: str) -> None:
    same = borderline = 0
    for name, a, b in CASES:
        new, old = estimate(a, b, center=center), reference.estimate(a, b, center=center)
        assert new is not None and old is not None, name
        assert (new.ratio, new.median_a_ms, new.median_b_ms, new.p_value, new.runs_a, new.runs_b) == (
            old.ratio, old.median_a_ms, old.median_b_ms, old.p_value, old.runs_a, old.runs_b), name
        for threshold in (0.05, 0.10):
            if decide(new, new.p_value, threshold) == decide(old, old.p_value, threshold):
                same += 1
                continue
            assert near_a_threshold(a, b, center, threshold), (name, threshold, new, old)
            borderline += 1
    assert borderline <= same // 20, (same, borderline)


def near_a_threshold(a: list[np.ndarray], b: list[np.ndarray], center: str, threshold: float) -> bool:
    """Whether the converged interval has an endpoint within 3 Monte Carlo SDs of 1 +- threshold."""
    limit = estimate(a, b, center=center, resamples=200_000)
    draws = np.array([(e.ci_low, e.ci_high) for e in (estimate(a, b, center=center, seed=s) for s in range(1, 21))])  # type: ignore[union-attr]
    sd = draws.std(axis=0)
    assert limit is not None
    return any(abs(end - bound) < 3 * spread for end, spread in ((limit.ci_low, sd[0]), (limit.ci_high, sd[1]))
               for bound in (1 - threshold, 1 + threshold))


def test_per_op_verdicts_of_the_stored_jobs_with_benjamini_hochberg() -> None:
    """Every op of the stored pair at once (as compare does) against the reference op by op."""
    data = np.load(FIXTURE)
    ops = [([r / 1e6 for r in data[f"a_op{j}"]], [1.1 * r / 1e6 for r in data[f"b_op{j}"]]) for j in range(8)]
    new = estimate_many(ops)
    old = [reference.estimate(a, b) for a, b in ops]
    assert [n.p_value for n in new] == [o.p_value for o in old]  # type: ignore[union-attr]
    adjusted = adjust_p_values([n.p_value for n in new])  # type: ignore[union-attr]
    new_verdicts = [decide(n, p, 0.10) for n, p in zip(new, adjusted, strict=True)]
    old_verdicts = [decide(o, p, 0.10) for o, p in zip(old, adjusted, strict=True)]
    assert new_verdicts == old_verdicts


def test_the_intervals_have_the_same_law() -> None:
    """Over seeds, the new interval's endpoints average where the old one's do: same coverage."""
    rng = np.random.default_rng(9)
    a = [0.07 * (1 + 0.05 * rng.standard_normal() + 0.02 * rng.standard_normal(40)) for _ in range(6)]
    b = [0.077 * (1 + 0.05 * rng.standard_normal() + 0.02 * rng.standard_normal(40)) for _ in range(6)]
    seeds = range(12)
    new = np.array([(e.ci_low, e.ci_high) for e in (estimate(a, b, seed=s, resamples=1000) for s in seeds)])  # type: ignore[union-attr]
    old = np.array([(e.ci_low, e.ci_high) for e in (reference.estimate(a, b, seed=s, resamples=1000) for s in seeds)])  # type: ignore[union-attr]
    spread = np.maximum(new.std(axis=0), old.std(axis=0))
    assert np.all(np.abs(new.mean(axis=0) - old.mean(axis=0)) < 3 * spread / np.sqrt(len(seeds)) + 1e-4)
    assert decide(estimate(a, b), 0.0, 0.05) in {Verdict.REGRESSED, Verdict.INCONCLUSIVE}

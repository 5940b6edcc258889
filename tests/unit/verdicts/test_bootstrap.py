"""verdicts/bootstrap.py: each drawn run's bootstrap median comes from its exact law, not from its iterations.

The law is checked against exhaustive enumeration, the sampler against brute-force resampling
(what the old implementation did), and the batch against one estimate at a time.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from orchestrator.verdicts.bootstrap import draw_resamples, median_law, resampled_medians
from orchestrator.verdicts.statistics import estimate, estimate_many


def enumerated(length: int, draws: int) -> dict[tuple[int, int], float]:
    """P(lower middle position, upper middle position) over all length**draws equally likely draws."""
    m = (draws + 1) // 2
    counts: dict[tuple[int, int], int] = {}
    for seq in itertools.product(range(length), repeat=draws):
        s = sorted(seq)
        key = (s[m - 1], s[m] if draws % 2 == 0 else s[m - 1])
        counts[key] = counts.get(key, 0) + 1
    return {k: v / length**draws for k, v in counts.items()}


def from_law(length: int, draws: int) -> dict[tuple[int, int], float]:
    law = median_law(length, draws)
    m = (draws + 1) // 2
    at = np.diff(law.cdf, prepend=0.0)
    out: dict[tuple[int, int], float] = {}
    for i in range(length):
        if law.same is None:
            out[(i, i)] = at[i]
            continue
        out[(i, i)] = at[i] * law.same[i]
        for j in range(i + 1, length):  # P(J = j | split at I = i), 1-based: ((L-j+1)^k - (L-j)^k) / (L-I)^k
            k, top = draws - m, length - (i + 1)
            out[(i, j)] = at[i] * (1 - law.same[i]) * (((length - j) / top) ** k - ((length - j - 1) / top) ** k)
    return out


@pytest.mark.parametrize(("length", "draws"), [(1, 1), (1, 4), (2, 2), (2, 7), (3, 4), (4, 4), (4, 5), (3, 6),
                                               (5, 5), (5, 6), (6, 4), (2, 3)])
def test_the_law_of_the_bootstrap_median_is_exact(length: int, draws: int) -> None:
    exact, law = enumerated(length, draws), from_law(length, draws)
    for key in set(exact) | set(law):
        assert law.get(key, 0.0) == pytest.approx(exact.get(key, 0.0), abs=1e-12), key


@pytest.mark.parametrize("lengths", [(7, 7, 7), (6, 6, 6, 6), (7, 4, 2), (6, 3, 5, 1)])
def test_draws_follow_brute_force_resampling(lengths: tuple[int, ...]) -> None:
    """The replicate medians drawn from the laws against drawing every iteration and taking np.median
    (the old method), each run getting max(lengths) draws: the same distribution."""
    rng = np.random.default_rng(11)
    width = max(lengths)
    runs = [np.sort(rng.random(n)) for n in lengths]
    values = np.full((1, len(runs), width), np.inf)
    for j, r in enumerate(runs):
        values[0, j, : len(r)] = r
    resamples = 100_000
    new = resampled_medians(values, draw_resamples(lengths, np.random.default_rng(1), resamples)).mean(axis=1)[0]  # mean's
    brute_rng = np.random.default_rng(2)
    picked = brute_rng.integers(0, len(runs), (resamples, len(runs)))
    n_of = np.array(lengths)[picked]
    padded = values[0]
    within = (brute_rng.random((resamples, len(runs), width)) * n_of[..., None]).astype(np.int64)
    old = np.median(padded[picked[..., None], within], axis=2).mean(axis=1)
    quantiles = np.linspace(0.01, 0.99, 25)
    assert np.quantile(new, quantiles) == pytest.approx(np.quantile(old, quantiles), abs=0.01)
    assert new.mean() == pytest.approx(old.mean(), abs=0.002) and new.std() == pytest.approx(old.std(), rel=0.02)


def two_state(rng: np.random.Generator, runs: int, iterations: int, scale: float = 1.0) -> list[np.ndarray]:
    return [scale * (0.069 if rng.random() < 0.5 else 0.088) * (1 + 0.02 * rng.standard_normal(iterations))
            for _ in range(runs)]


def test_a_batch_gives_each_estimate_what_it_gets_alone() -> None:
    rng = np.random.default_rng(4)
    pairs = [(two_state(rng, 5, 30), two_state(rng, 6, 30, 1.1)) for _ in range(6)]
    pairs += [(two_state(rng, 4, 31), two_state(rng, 4, 31)), ([[]], two_state(rng, 3, 5)),
              ([np.zeros(4)], two_state(rng, 3, 4)), (two_state(rng, 3, 8)[:2] + [np.ones(3)], two_state(rng, 3, 8))]
    for center in ("mean", "fast"):
        alone = [estimate(a, b, center=center, seed=3) for a, b in pairs]
        together = estimate_many(pairs, center=center, seed=3)
        assert together == alone
        assert estimate_many(pairs[::-1], center=center, seed=3) == alone[::-1]
    assert alone[7] is None and alone[8] is None  # no samples; nothing to divide by


def test_huge_samples_cost_their_runs_not_their_iterations() -> None:
    """2000 replicates of 6 runs x 100 000 iterations: the old method drew 1.2 G values per side."""
    rng = np.random.default_rng(5)
    a, b = two_state(rng, 6, 100_000), two_state(rng, 6, 100_000, 2.0)
    est = estimate(a, b)
    assert est is not None and est.ci_low > 1.2 and est.ratio == pytest.approx(est.median_b_ms / est.median_a_ms)

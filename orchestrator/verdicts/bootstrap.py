"""The hierarchical bootstrap behind every ratio interval, for many estimates at once.

One replicate of a side: draw its process runs with replacement, then, within each drawn run,
`draws` iterations with replacement (`draws` = the side's longest run, as statistics.py has
always done), take each drawn run's median, and the side's center of those medians (the statistic's:
centers/). The ratio B/A of the two sides' centers, over
`resamples` replicates, gives the percentile interval.

Drawing `draws` iterations and taking their median costs `draws` random numbers and a partition
per drawn run: 2000 replicates x 6 runs x 1000 iterations is 12 M values per side and op, 89 s
for an 80-op model. It need not: the median of `draws` values drawn with replacement
from a run's sorted values `v_1 <= ... <= v_L` has a known law. With `m = (draws + 1) // 2` and
`N_i ~ Binomial(draws, i / L)` the number of draws at positions <= i, the lower middle draw sits
at position `I` with `P(I <= i) = P(N_i >= m)`; for an even `draws` the median is the mean of
`v_I` and the next draw `v_J`, where `J = I` unless exactly `m` draws are <= I, and then `J` is
the lowest of the other `draws - m` draws, uniform above I: `P(J > j) = ((L - j) / (L - I))^(draws - m)`.
So each drawn run's bootstrap median is drawn from its exact law with one to three uniforms (by
inverse CDF), never by drawing its iterations. Same resampling distribution, so the same
coverage; only the random stream differs (benchmarks/README.md "Compare at scale" measures both
against the old implementation). The laws depend only on (L, draws): computed once and cached.

Many estimates share the random draws of one seed (as every per-op estimate was seeded alike
before), so a batch of ops with the same run lengths is one set of gathers over a
(ops, runs, L) array. Side B is drawn before side A. A side whose runs have one value each
(per-run medians, as the report passes) draws runs only: exactly a percentile bootstrap over
process runs. numpy and scipy.special are imported inside functions (scipy only when a run has
more than one value).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any


@dataclass(frozen=True, eq=False)
class MedianLaw:
    """Where the median of `draws` values drawn with replacement from `length` sorted values lies."""

    length: int
    draws: int
    cdf: Any  # float64[length]: P(I <= i), 0-based positions; cdf[-1] == 1
    same: Any  # float64[length], even draws only: P(J == I | I == i); None for odd draws

    @property
    def upper_power(self) -> float:
        return 1.0 / (self.draws - (self.draws + 1) // 2)


@lru_cache(maxsize=256)
def median_law(length: int, draws: int) -> MedianLaw:
    """The law of the bootstrap median of a run of `length` values resampled with `draws` draws."""
    import numpy as np

    if length < 1 or draws < 1:
        raise ValueError(f"a run of {length} values drawn {draws} times has no median")
    even = draws % 2 == 0
    if length == 1:  # every draw is the one value
        return MedianLaw(1, draws, np.ones(1), np.ones(1) if even else None)
    from scipy.special import betainc, gammaln

    m = (draws + 1) // 2
    i = np.arange(1, length + 1, dtype=np.float64)
    cdf = betainc(m, draws - m + 1, i / length)  # P(Binomial(draws, i/L) >= m)
    cdf[-1] = 1.0
    if not even:
        return MedianLaw(length, draws, cdf, None)
    at_i = np.diff(cdf, prepend=0.0)  # P(I == i)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_choose = gammaln(draws + 1) - gammaln(m + 1) - gammaln(draws - m + 1)
        below = np.log1p(-np.exp(m * np.log((i - 1) / i)))  # log(1 - ((i-1)/i)^m)
        exactly_m = np.exp(log_choose + (draws - m) * np.log((length - i) / length) + m * np.log(i / length) + below)
        split = np.where(at_i > 0, exactly_m / at_i, 0.0)  # P(N_I == m | I == i): J lies above I
    return MedianLaw(length, draws, cdf, 1.0 - np.clip(np.nan_to_num(split), 0.0, 1.0))


@dataclass(frozen=True, eq=False)
class Draws:
    """One side's replicates: where each drawn run's median lies, as flat indices into a
    (runs * width) row of values; the median is the mean of the two for an even `width`.
    Laid out (runs, resamples), so that a center over the runs adds whole rows."""

    lower: Any  # int64 (runs, resamples)
    upper: Any  # int64 (runs, resamples), or None: the median is the lower draw itself


def draw_resamples(lengths: tuple[int, ...], rng: Any, resamples: int) -> Draws:
    """Draw `resamples` replicates of a side whose runs hold `lengths` values (width = max(lengths)
    draws per run): the runs, then each drawn run's median position from its law."""
    runs, width = len(lengths), max(lengths)
    picked = rng.integers(0, runs, size=(resamples, runs))
    base = picked * width
    if width == 1:
        return Draws(base.T.copy(), None)
    lower, upper = _middle_positions(picked, lengths, width, rng)
    return Draws((base + lower).T.copy(), None if upper is None else (base + upper).T.copy())


def resampled_medians(values: Any, draws: Draws) -> Any:
    """(ops, runs, resamples): each op's per-run bootstrap medians in each replicate (a statistic of centers/ reduces
    them over runs: its `resampled`).

    `values` is (ops, runs, width) with each run's values sorted ascending in its first
    `lengths[j]` places; every op takes the same draws."""
    import numpy as np

    flat = values.reshape(values.shape[0], -1)
    medians = np.take(flat, draws.lower, axis=1)  # (ops, runs, resamples)
    if draws.upper is not None:
        medians += np.take(flat, draws.upper, axis=1)
        medians /= 2.0
    return medians


def _middle_positions(picked: Any, lengths: tuple[int, ...], draws: int, rng: Any) -> tuple[Any, Any]:
    """Positions (within each drawn run) of the lower and, for an even `draws`, upper middle draw."""
    import numpy as np

    laws = [median_law(n, draws) for n in lengths]
    n_of = np.asarray(lengths, dtype=np.int64)[picked]
    lower = _search([law.cdf for law in laws], picked, rng.random(picked.shape))
    np.minimum(lower, n_of - 1, out=lower)
    if draws % 2:
        return lower, None
    same = _lookup([law.same for law in laws], picked, lower)
    stays, u = rng.random(picked.shape) < same, rng.random(picked.shape)
    above = np.floor(n_of - (n_of - lower - 1) * (1.0 - u) ** laws[0].upper_power).astype(np.int64)
    upper = np.minimum(np.maximum(above, lower + 1), n_of - 1)
    return lower, np.where(stays, lower, upper)


def _search(cdfs: list[Any], picked: Any, u: Any) -> Any:
    """Inverse-CDF positions: for each draw, the first position of its run's CDF above u."""
    import numpy as np

    if all(c is cdfs[0] for c in cdfs):  # runs of one length: one table
        return np.searchsorted(cdfs[0], u, side="right").astype(np.int64)
    # Tables end to end, run j's shifted up by j: one search finds the position within the run.
    starts = np.cumsum([0] + [len(c) for c in cdfs[:-1]])
    table = np.concatenate([c + j for j, c in enumerate(cdfs)])
    return np.searchsorted(table, u + picked, side="right") - starts[picked]


def _lookup(tables: list[Any], picked: Any, position: Any) -> Any:
    import numpy as np

    if all(t is tables[0] for t in tables):
        return tables[0][position]
    starts = np.cumsum([0] + [len(t) for t in tables[:-1]])
    return np.concatenate(tables)[starts[picked] + position]

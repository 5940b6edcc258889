"""The rank test and the multiplicity correction of the verdicts, without importing scipy.stats.

`mannwhitneyu_two_sided` is `scipy.stats.mannwhitneyu(x, y, alternative="two-sided")` and
`benjamini_hochberg` is `scipy.stats.false_discovery_control(ps, method="bh")`, computed with the
same operations in the same order (scipy 1.17, BSD-licensed: the exact null distribution of U
is its `_MWU` recursion), so every p-value is scipy's to the last bit
(tests/unit/verdicts/test_ranks.py holds them to it). Importing scipy.stats costs 0.5-1 s on the
2-vCPU testbed, a third of `etfarm compare`'s budget; scipy.special, which
the bootstrap imports anyway, is enough here.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

_state = threading.local()  # the exact null distribution of the last (n1, n2), as scipy caches it


def mannwhitneyu_two_sided(x: Any, y: Any, method: str = "auto") -> Any:
    """Two-sided p-values of Mann-Whitney U for rows of `x` (k, n1) against rows of `y` (k, n2);
    `method` "auto" chooses as scipy does, for all rows together (exact: 8 or fewer values on a side
    and no ties anywhere; else asymptotic, with the tie correction and continuity correction)."""
    import numpy as np
    from scipy import special

    x, y = np.atleast_2d(np.asarray(x, dtype=np.float64)), np.atleast_2d(np.asarray(y, dtype=np.float64))
    n1, n2 = x.shape[-1], y.shape[-1]
    ranks, t = _average_ranks(np.concatenate([x, y], axis=-1))
    r1 = np.sum(ranks[..., :n1], axis=-1)
    u1 = r1 - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    u = np.maximum(u1, u2)
    if method == "auto":
        method = "asymptotic" if (n1 > 8 and n2 > 8) or np.any(t > 1) else "exact"
    if method == "exact":
        null = getattr(_state, "null", None)
        if null is None:
            null = _state.null = _NullU()
        null.set_shapes(n1, n2)
        p = np.asarray(null.sf(np.asarray(u, np.int64)), dtype=np.float64)
    else:
        n = n1 + n2
        tie_term = np.sum(t**3 - t, axis=-1)
        s = np.sqrt(n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1))))
        numerator = u - n1 * n2 / 2
        numerator -= 0.5
        with np.errstate(divide="ignore", invalid="ignore"):
            z = numerator / s
        p = special.ndtr(-z)
    p *= 2
    return np.clip(p, 0.0, 1.0)


def benjamini_hochberg(ps: Sequence[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values, in the order given."""
    import numpy as np

    values = np.asarray(ps, dtype=np.float64)
    if values.size <= 1:
        return [float(p) for p in values]
    order = np.argsort(values)
    adjusted = np.take_along_axis(values, order, axis=-1)
    m = adjusted.shape[-1]
    adjusted *= m / np.arange(1, m + 1, dtype=np.float64)
    np.minimum.accumulate(adjusted[::-1], out=adjusted[::-1])
    np.put_along_axis(adjusted, order, values=adjusted.copy(), axis=-1)
    return [float(p) for p in np.clip(adjusted, 0.0, 1.0)]


def _average_ranks(values: Any) -> tuple[Any, Any]:
    """Average ranks along the last axis, and each tie group's size at its first sorted place."""
    import numpy as np

    shape = values.shape
    j = np.argsort(values, axis=-1, kind="stable")
    ordinal = np.broadcast_to(np.arange(1, shape[-1] + 1, dtype=np.float64), shape)
    y = np.take_along_axis(values, j, axis=-1)
    starts = np.concatenate([np.ones(shape[:-1] + (1,), dtype=bool), y[..., :-1] != y[..., 1:]], axis=-1)
    indices = np.arange(y.size)[starts.reshape(-1)]
    counts = np.diff(indices, append=np.asarray([y.size], dtype=indices.dtype))
    ranks = ordinal[starts] + (counts.astype(np.float64) - 1) / 2
    ranks = np.repeat(ranks, counts).reshape(shape)
    out = np.empty_like(ranks)
    np.put_along_axis(out, j, ranks, axis=-1)
    t = np.zeros(shape, dtype=np.float64)
    t[starts] = counts.astype(np.float64)
    return out, t


class _NullU:
    """The exact null distribution of U for sample sizes (n1, n2): scipy's `_MWU`, verbatim in method."""

    def __init__(self) -> None:
        self.n1: int | None = None
        self.n2: int | None = None

    def set_shapes(self, n1: int, n2: int) -> None:
        import numpy as np

        n1, n2 = min(n1, n2), max(n1, n2)
        if (n1, n2) == (self.n1, self.n2):
            return
        self.n1, self.n2 = n1, n2
        self.s_array = np.zeros(0, dtype=int)
        self.configurations = np.zeros(0, dtype=np.uint64)

    def pmf(self, k: Any) -> Any:
        import numpy as np

        return self._freqs(np.max(k))[k]

    def cdf(self, k: Any) -> Any:
        import numpy as np

        return np.cumsum(self._freqs(np.max(k)))[k]

    def sf(self, k: Any) -> Any:
        import numpy as np

        kc = np.asarray(self.n1 * self.n2 - k)  # type: ignore[operator]
        i = k < kc
        if np.any(i):
            kc[i] = k[i]
            cdfs = np.asarray(self.cdf(kc))
            cdfs[i] = 1.0 - cdfs[i] + self.pmf(kc[i])
        else:
            cdfs = np.asarray(self.cdf(kc))
        return cdfs[()]

    def _sigma(self, a: int) -> Any:
        import numpy as np

        n1, n2 = self.n1, self.n2
        if a + 1 <= self.s_array.size:
            return self.s_array[1 : a + 1]
        s_array = np.zeros(a + 1, dtype=int)
        for d in np.arange(1, n1 + 1):  # type: ignore[operator]
            s_array[np.arange(d, a + 1, d)] += d
        for d in np.arange(n2 + 1, n2 + n1 + 1):  # type: ignore[operator]
            s_array[np.arange(d, a + 1, d)] -= d
        self.s_array = s_array
        return s_array[1:]

    def _freqs(self, maxu: int) -> Any:
        import numpy as np
        from scipy import special

        total = special.binom(self.n1 + self.n2, self.n1)  # type: ignore[operator]
        if maxu + 1 <= self.configurations.size:
            return self.configurations[: maxu + 1] / total
        s_array = self._sigma(maxu)
        configurations = np.zeros(maxu + 1, dtype=np.uint64)
        is_uint = True
        uint_max = np.iinfo(np.uint64).max
        configurations[0] = 1
        for u in np.arange(1, maxu + 1):
            coeffs = s_array[u - 1 :: -1]
            new_val = np.dot(configurations[:u], coeffs) / u
            if new_val > uint_max and is_uint:
                configurations = configurations.astype(float)
                is_uint = False
            configurations[u] = new_val
        self.configurations = configurations
        return configurations / total

"""statistics.ratio_with_ci: the report's ratio to the baseline device, from the one statistics home.

Its definition is the report's (median of per-process-run medians, a percentile bootstrap over
process runs, seeded): the numbers of every report stay what they were, to the last bit, and
`etfarm report` still never imports scipy.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from orchestrator.verdicts.statistics import Interval, ratio_with_ci
from tests.helpers.verdicts_reference import report_ratio_with_ci


def test_the_same_numbers_as_the_report_computed_before() -> None:
    rng = np.random.default_rng(1)
    for case in range(500):
        n, m = rng.integers(1, 12, 2)
        runs, base = rng.lognormal(0, 0.2, n) * (1 + rng.random()), rng.lognormal(0, 0.2, m)
        if case % 7 == 0:
            runs[: n // 2] = runs[0]  # ties
        ratio, ci = ratio_with_ci(runs, base)
        assert (ratio, None if ci is None else (ci.low, ci.high)) == report_ratio_with_ci(runs, base), case


def test_edges() -> None:
    assert ratio_with_ci([2.1], [1.0, 1.1]) == (pytest.approx(2.0), None)
    assert ratio_with_ci([], [1.0]) == (None, None)
    assert ratio_with_ci([1.0, 2.0], [0.0, 0.0]) == (None, None)
    ratio, ci = ratio_with_ci([2.0, 2.2, 2.1], [1.0, 1.05, 1.1])
    assert ratio == pytest.approx(2.1 / 1.05) and isinstance(ci, Interval) and ci.level == 0.95
    assert ci.low <= ratio <= ci.high


def test_scipy_percentile_bootstrap_gives_the_same_interval() -> None:
    from scipy.stats import bootstrap

    rng = np.random.default_rng(3)
    a, b = 1.2 + rng.normal(0, 0.05, 8), 1.0 + rng.normal(0, 0.05, 6)
    _, ci = ratio_with_ci(a, b)
    ref = bootstrap((a, b), lambda x, y, axis=-1: np.median(x, axis=axis) / np.median(y, axis=axis), paired=False,
                    vectorized=True, n_resamples=20000, method="percentile", rng=np.random.default_rng(0))
    assert ci is not None
    assert ci.low == pytest.approx(ref.confidence_interval.low, abs=0.01)
    assert ci.high == pytest.approx(ref.confidence_interval.high, abs=0.01)


def test_importing_and_calling_it_loads_no_scipy() -> None:
    code = ("import sys; from orchestrator.verdicts.statistics import ratio_with_ci; "
            "ratio_with_ci([1.0, 1.1, 1.2], [2.0, 2.1]); print(any(m.startswith('scipy') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

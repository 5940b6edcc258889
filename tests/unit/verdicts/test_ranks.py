"""verdicts/ranks.py gives scipy.stats' p-values to the last bit, without importing scipy.stats."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.stats import false_discovery_control, mannwhitneyu

from orchestrator.verdicts.ranks import benjamini_hochberg, mannwhitneyu_two_sided


def samples(rng: np.random.Generator, n: int, ties: bool) -> np.ndarray:
    values = rng.lognormal(0, 0.2, n)
    return np.round(values, 1) if ties else values


@pytest.mark.parametrize("ties", [False, True])
def test_mann_whitney_is_scipys_bit_for_bit(ties: bool) -> None:
    rng = np.random.default_rng(7)
    for _ in range(400):
        n1, n2 = (int(v) for v in rng.integers(2, 14, 2))
        x, y = samples(rng, n1, ties), samples(rng, n2, ties) * rng.choice([1.0, 1.3])
        ours = mannwhitneyu_two_sided(x[None], y[None])[0]
        assert ours == mannwhitneyu(x, y, alternative="two-sided").pvalue, (x, y)


def test_rows_at_once_with_the_method_given() -> None:
    rng = np.random.default_rng(8)
    for method in ("exact", "asymptotic"):
        x, y = rng.random((30, 5)), rng.random((30, 7)) + 0.2
        ours = mannwhitneyu_two_sided(x, y, method=method)
        theirs = [mannwhitneyu(a, b, alternative="two-sided", method=method).pvalue for a, b in zip(x, y, strict=True)]
        assert ours.tolist() == theirs


def test_large_exact_sides() -> None:
    rng = np.random.default_rng(9)
    x, y = rng.random(8), rng.random(60)  # one side small: exact, large counts
    assert mannwhitneyu_two_sided(x[None], y[None])[0] == mannwhitneyu(x, y, alternative="two-sided").pvalue


def test_benjamini_hochberg_is_scipys() -> None:
    rng = np.random.default_rng(10)
    for m in (1, 2, 5, 40, 241):
        ps = rng.random(m) ** 3
        ps[: m // 4] = ps[0]  # ties
        assert benjamini_hochberg(ps.tolist()) == false_discovery_control(ps, method="bh").tolist()
    assert benjamini_hochberg([]) == []


def test_no_scipy_stats_import() -> None:
    code = ("import sys; from orchestrator.verdicts.ranks import mannwhitneyu_two_sided, benjamini_hochberg; "
            "mannwhitneyu_two_sided([[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]); benjamini_hochberg([0.1, 0.2]); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

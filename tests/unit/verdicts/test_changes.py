"""Change points over a stored series (ruptures PELT, penalty from the series' noise)."""

from __future__ import annotations

import numpy as np

from orchestrator.store.history import HistoryPoint
from orchestrator.verdicts.changes import find_changes, noise_sigma


def series(values: list[float], device: str = "pixel8", model: str = "mlp") -> list[HistoryPoint]:
    return [HistoryPoint(run_id=f"run-{i:02d}", started=f"2026-11-{i + 1:02d}T03:00:00+0000", device=device, model=model,
                         status="ok", e2e_p50_ms=v, e2e_p90_ms=v * 1.1, git_commit=f"c{i:02d}")
            for i, v in enumerate(values)]


def noisy(rng: np.random.Generator, level: float, n: int, noise: float = 0.03) -> list[float]:
    return list(level * np.exp(noise * rng.standard_normal(n)))


def test_a_step_is_found_at_the_run_where_it_began() -> None:
    rng = np.random.default_rng(0)
    found = find_changes(series(noisy(rng, 1.0, 12) + noisy(rng, 1.3, 10)))
    assert len(found) == 1 and len(found[0].changes) == 1
    change = found[0].changes[0]
    assert (change.run_id, change.git_commit, change.index) == ("run-12", "c12", 12)
    assert 1.2 < change.ratio < 1.4


def test_a_flat_noisy_series_has_no_change() -> None:
    false = 0
    for seed in range(30):
        rng = np.random.default_rng(seed)
        false += bool(find_changes(series(noisy(rng, 1.0, 25)))[0].changes)
    assert false <= 1  # 0.5 % measured over 200 such series


def test_shifts_smaller_than_the_threshold_are_not_reported() -> None:
    values = [1.0] * 10 + [1.02] * 10  # a clean 2 % step: real, but below 5 %
    assert find_changes(series(values))[0].changes == ()


def test_series_are_per_device_and_model_and_failed_runs_are_left_out() -> None:
    points = series([1.0] * 6 + [2.0] * 6) + series([1.0] * 12, device="rpi5")
    failed = HistoryPoint("run-99", "2026-12-30T00:00:00+0000", "rpi5", "mlp", "failed", None, None, None)
    found = {s.device: s for s in find_changes([*points, failed])}
    assert len(found["pixel8"].changes) == 1 and found["rpi5"].changes == ()
    assert found["rpi5"].points == 12


def test_noise_is_estimated_from_differences_so_a_step_barely_inflates_it() -> None:
    rng = np.random.default_rng(1)
    flat = list(np.log(noisy(rng, 1.0, 40)))
    stepped = flat[:20] + [v + np.log(1.5) for v in flat[20:]]
    assert abs(noise_sigma(stepped) - noise_sigma(flat)) < 0.01


def test_pelt_ends_are_ruptures_own_on_many_series() -> None:
    """changes.pelt_ends is ruptures' PELT (l2, jump 1) step for step: the same ends on noisy series with and without
    steps, short and long, at the penalties change detection uses."""
    import ruptures

    from orchestrator.verdicts.changes import PENALTY_FACTOR, pelt_ends

    rng = np.random.default_rng(3)
    for _ in range(40):  # 4-120 points, 0-3 steps, two minimum sizes: 80 fits; ruptures itself is most of the time
        n = int(rng.integers(4, 120))
        logs = np.log(10 + rng.normal(0, 0.3, n))
        for _ in range(int(rng.integers(0, 4))):
            logs[int(rng.integers(0, n)):] += rng.normal(0, 0.2)
        penalty = PENALTY_FACTOR * noise_sigma(list(logs)) ** 2 * float(np.log(n))
        for min_size in (2, 3):
            expected = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(logs.reshape(-1, 1)).predict(pen=penalty)
            assert pelt_ends(list(logs), penalty, min_size) == expected

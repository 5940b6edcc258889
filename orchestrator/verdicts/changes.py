"""Change points over stored history: where a (device, model, configuration)'s end-to-end latency shifted.

As Apache Otava and MongoDB do with E-Divisive means, but with `ruptures`' PELT (their packages pin
numpy versions this environment cannot take; `pelt_ends` is ruptures' algorithm step for step, with running
sums for the cost, checked equal to it in tests/unit/verdicts/test_changes.py): PELT over the series of per-run end-to-end p50s,
oldest first, in log space (so a shift is relative: +10 % is the same step at 1 ms as at 100 ms),
with the l2 cost (a change in mean). The penalty comes from the series' own noise: sigma is
estimated robustly from the first differences (MAD / 0.6745 / sqrt 2, so the shifts themselves
barely inflate it; floored at 1 %), and each change point costs 5 sigma^2 ln(n), a BIC-style
penalty made stricter. Measured on synthetic series with 3 % log-normal noise (200 / 100 trials):
a flat 25-run series gets a (false) change 0.5 % of the time with factor 5 (5 % with factor 3),
and a 10 % step after run 12 of 22 is found within one run 97 % of the time (99 % with 3). A segment
needs `min_size` points (default 2), and a change
smaller than `min_shift` (default 5 %, the end-to-end verdict threshold) is not reported.

Each change names the first run of the new level, its start time and git commit (the user's
commit of the model file, as the store recorded it), and the medians before and after.
Failed runs (no p50) are left out of the series, and so are runs with a traced process run the
calibration flagged interfered or throttled (something else shared the core, or the clocks
dropped: a two-device job sharing the cores once showed as a 1.77x "shift"); each series says
how many it left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from orchestrator.base.codec import PAIRS, Layout, named
from orchestrator.run.configuration import Settings
from orchestrator.verdicts.statistics import DEFAULT_THRESHOLD

if TYPE_CHECKING:  # the store's rows are read by the caller (history --changes): verdicts open no store
    from orchestrator.store.history import HistoryPoint

MIN_SIGMA = 0.01  # log units: below ~1 % noise the series is treated as 1 % noisy
PENALTY_FACTOR = 5.0


@dataclass(frozen=True)
class ChangePoint:
    device: str
    model: str
    run_id: str  # the first run at the new level
    started: str
    git_commit: str | None
    before_ms: float  # median of the segment before
    after_ms: float  # median of the segment from this run on
    index: int  # position in the series, oldest = 0

    @property
    def ratio(self) -> float:
        return self.after_ms / self.before_ms

    LAYOUT: ClassVar[Layout] = Layout(derived=("ratio",), raw_floats=True, order=(
        "device", "model", "run_id", "started", "git_commit", "before_ms", "after_ms", "ratio", "index"))


@dataclass(frozen=True)
class SeriesChanges:
    device: str
    model: str
    points: int  # runs in the series
    sigma: float  # estimated noise, log units (~ relative)
    penalty: float
    changes: tuple[ChangePoint, ...]
    # run ids left out: a process run was flagged interfered or throttled
    left_out: tuple[str, ...] = field(default=(), metadata=named("left_out_flagged"))
    settings: Settings = field(default=(), metadata=PAIRS)  # the series' configuration (run/configuration.py), () when not known

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True, order=(
        "device", "model", "settings", "points", "sigma", "penalty", "changes", "left_out_flagged"))


def find_changes(points: Sequence[HistoryPoint], min_size: int = 2, min_shift: float = DEFAULT_THRESHOLD,
                 ) -> list[SeriesChanges]:
    """Change points per series of `points` (any order; sorted oldest first here): per (device, model, configuration),
    each point's settings as the store read them (run/configuration.py): a series never mixes configurations."""
    series: dict[tuple[str, str, Settings], list[HistoryPoint]] = {}
    flagged: dict[tuple[str, str, Settings], list[str]] = {}
    for point in points:
        if point.e2e_p50_ms is None or point.e2e_p50_ms <= 0:
            continue
        key = (point.device, point.model, point.settings)
        if point.flagged:
            flagged.setdefault(key, []).append(point.run_id)
            continue
        series.setdefault(key, []).append(point)
    for key in flagged:
        series.setdefault(key, [])
    return [replace(_one_series(device, model, sorted(pts, key=lambda p: (p.started, p.run_id)), min_size, min_shift),
                    left_out=tuple(flagged.get((device, model, settings), ())), settings=settings)
            for (device, model, settings), pts in series.items()]


def noise_sigma(values: Sequence[float]) -> float:
    """Robust noise of a series from its first differences (log units), floored at MIN_SIGMA."""
    import numpy as np

    if len(values) < 3:
        return MIN_SIGMA
    diffs = np.diff(np.asarray(values, dtype=float))
    mad = float(np.median(np.abs(diffs - np.median(diffs))))
    return max(mad / 0.6745 / np.sqrt(2.0), MIN_SIGMA)


def segments(values: Sequence[float], min_size: int = 2) -> tuple[list[int], float, float]:
    """Where a series of log values changes level (PELT, the penalty above): the segment bounds
    [0, ..., len(values)], the noise sigma and the penalty."""
    import numpy as np

    logs = np.asarray(values, dtype=float)
    sigma = noise_sigma(list(logs))
    penalty = PENALTY_FACTOR * sigma**2 * float(np.log(max(len(logs), 2)))
    if len(logs) < 2 * min_size:
        return [0, len(logs)], sigma, penalty
    return [0, *pelt_ends(logs.tolist(), penalty, min_size)], sigma, penalty


def pelt_ends(values: Sequence[float], penalty: float, min_size: int = 2) -> list[int]:
    """ruptures' `Pelt(model="l2", jump=1).fit(values).predict(pen=penalty)`, step for step (its pruning included),
    with every candidate's segment cost at once from running sums instead of a numpy call each: the same ends
    ~100x faster (a 1,000-night series in milliseconds, not seconds: `etfarm publish` finds them for every series
    of a store). Checked equal to ruptures in tests/unit/verdicts/test_changes.py."""
    import numpy as np

    n = len(values)
    x = np.asarray(values, dtype=float)
    s1 = np.concatenate(([0.0], np.cumsum(x)))
    s2 = np.concatenate(([0.0], np.cumsum(x * x)))
    cost_to = np.zeros(n + 1)  # cost of the best partition of values[:t]
    last_start = np.zeros(n + 1, dtype=np.int64)  # where its last segment starts
    admissible = np.zeros(0, dtype=np.int64)
    for end in [*range(min_size, n), n]:
        start = end - min_size
        if start == 0 or start >= min_size:  # values[:start] has a partition (ruptures skips and drops the others)
            admissible = np.append(admissible, start)
        total = s1[end] - s1[admissible]
        cost = (s2[end] - s2[admissible]) - total * total / (end - admissible)  # squares about each segment's mean
        totals = cost_to[admissible] + np.maximum(cost, 0.0) + penalty
        k = int(np.argmin(totals))  # the first of equal totals, as ruptures' min
        cost_to[end], last_start[end] = totals[k], admissible[k]
        admissible = admissible[totals <= totals[k] + penalty]
    ends, end = [], n
    while end > 0:
        ends.append(end)
        end = int(last_start[end])
    return ends[::-1]


def _one_series(device: str, model: str, pts: list[HistoryPoint], min_size: int, min_shift: float) -> SeriesChanges:
    import numpy as np

    if not pts:
        return SeriesChanges(device, model, 0, MIN_SIGMA, 0.0, ())
    values = np.log(np.array([p.e2e_p50_ms for p in pts], dtype=float))
    bounds, sigma, penalty = segments(list(values), min_size)
    changes = []
    for k in range(1, len(bounds) - 1):
        before = float(np.exp(np.median(values[bounds[k - 1]:bounds[k]])))
        after = float(np.exp(np.median(values[bounds[k]:bounds[k + 1]])))
        if abs(after / before - 1.0) < min_shift:
            continue
        first = pts[bounds[k]]
        changes.append(ChangePoint(device, model, first.run_id, first.started, first.git_commit, before, after, bounds[k]))
    return SeriesChanges(device, model, len(values), sigma, penalty, tuple(changes))

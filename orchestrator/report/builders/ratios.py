"""The report's one statistic and its intervals: p50 over every execution, compared with a cluster bootstrap.

A run's report shows `p50`: numpy's linear median of every measured execution of the traced
process runs (what `etfarm run` prints, what the store keeps as `e2e_p50_ms`). Every ratio the
report states is a ratio of those p50s, so a table's p50 columns and its ratio column agree:
device / baseline device, the fastest device against each other, traced / untraced (the
tracer's overhead).

Its interval resamples PROCESS RUNS (the replication unit: executions inside one process share
its placement, warm-up and clocks), each side independently, 2000 times with a fixed seed: each
replicate pools the drawn runs' executions (a run drawn twice counts twice) and takes their p50
exactly as numpy would; the 2.5 and 97.5 % points of the replicate ratios bound the interval.
With fewer than MIN_RUNS_FOR_INTERVAL runs on a side there is no interval (two runs give the
bootstrap three distinct samples: no interval worth stating).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from orchestrator.report.model import Interval

MIN_RUNS_FOR_INTERVAL = 3
CI_LEVEL = 0.95
RESAMPLES = 2000
SEED = 0  # a report of the same run is the same report
_CELLS = 4_000_000  # replicates x executions per chunk: bounds memory at ~32 MB

Runs = Sequence[Sequence[float]]


def p50(runs: Runs) -> float | None:
    import numpy as np

    values = [x for run in runs for x in run]
    return float(np.percentile(values, 50)) if values else None


def p50_with_ci(runs: Runs) -> tuple[float | None, Interval | None]:
    """p50(runs), with its cluster-bootstrap interval (the replicates' 2.5 and 97.5 % points) when there are enough
    runs: the p50's own uncertainty, as CI dashboards (Bencher's lower and upper values) plot it."""
    runs = [r for r in runs if len(r)]
    value = p50(runs)
    if value is None or len(runs) < MIN_RUNS_FOR_INTERVAL:
        return value, None
    import numpy as np

    replicates = _pooled_p50s(runs, np.random.default_rng(SEED))
    tail = (1.0 - CI_LEVEL) / 2.0 * 100.0
    low, high = (float(x) for x in np.percentile(replicates, [tail, 100.0 - tail]))
    return value, Interval(low, high, CI_LEVEL)


def ratio_with_ci(runs: Runs, base_runs: Runs) -> tuple[float | None, Interval | None]:
    """p50(runs) / p50(base_runs), with the cluster-bootstrap interval when both sides have enough runs."""
    runs, base_runs = [r for r in runs if len(r)], [r for r in base_runs if len(r)]
    top, bottom = p50(runs), p50(base_runs)
    if top is None or bottom is None or bottom <= 0:
        return None, None
    ratio = top / bottom
    if min(len(runs), len(base_runs)) < MIN_RUNS_FOR_INTERVAL:
        return ratio, None
    import numpy as np

    rng = np.random.default_rng(SEED)
    with np.errstate(divide="ignore", invalid="ignore"):
        replicates = _pooled_p50s(runs, rng) / _pooled_p50s(base_runs, rng)
    tail = (1.0 - CI_LEVEL) / 2.0 * 100.0
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return ratio, None
    low, high = (float(x) for x in np.percentile(finite, [tail, 100.0 - tail]))
    return ratio, Interval(low, high, CI_LEVEL) if math.isfinite(low) and math.isfinite(high) else None


def _pooled_p50s(runs: Runs, rng: Any) -> Any:
    """RESAMPLES replicate p50s: runs drawn with replacement, their executions pooled (numpy's linear median)."""
    import numpy as np

    values = np.concatenate([np.asarray(r, dtype=np.float64) for r in runs])
    owner = np.repeat(np.arange(len(runs)), [len(r) for r in runs])
    order = np.argsort(values, kind="stable")
    values, owner = values[order], owner[order]
    draws = rng.integers(0, len(runs), (RESAMPLES, len(runs)))
    counts = np.zeros((RESAMPLES, len(runs)), dtype=np.int64)
    np.add.at(counts, (np.arange(RESAMPLES)[:, None], draws), 1)  # times each run was drawn, per replicate
    lengths = np.asarray([len(r) for r in runs], dtype=np.int64)
    total = counts @ lengths  # executions per replicate
    low_pos, high_pos = (total - 1) // 2, total // 2  # the two middle positions (equal when odd)
    out = np.empty(RESAMPLES)
    step = max(1, _CELLS // max(values.size, 1))
    for start in range(0, RESAMPLES, step):
        rows = slice(start, start + step)
        cumulative = np.cumsum(counts[rows][:, owner], axis=1)  # pooled, sorted: the rank each value reaches
        low = values[(cumulative <= low_pos[rows, None]).sum(axis=1)]
        high = values[(cumulative <= high_pos[rows, None]).sum(axis=1)]
        out[rows] = (low + high) / 2.0
    return out

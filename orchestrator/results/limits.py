"""The bounds of every count and duration a job takes, from any source: the command line, a nightly
plan, a manifest resumed (`runs: 1e12` must not plan a trillion process runs), a farm task.

One table, `LIMITS` (JobOptions field -> (least, most)), read by `JobOptions` itself (a value out of
bounds or of the wrong type cannot be built: ValueError naming the field), by the command line's
options (typer's min/max, so `--timeout inf` is a usage error naming the option) and by the plan
reader. The upper bounds are far beyond any real job and small enough that nothing sized from them
(the plan of process runs, the runner's sample arrays, deadlines given to `time`) can overflow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from orchestrator.base.codec import FieldError

DAY_S = 86_400.0
WEEK_S = 7 * DAY_S

LIMITS: Mapping[str, tuple[float, float]] = MappingProxyType({
    "runs": (1, 10_000),  # traced process runs per device and model
    "iterations": (1, 1_000_000),  # measured executions per process run
    "warmup": (0, 1_000_000),
    "untraced_runs": (0, 10_000),
    "cpu_threads": (0, 1024),
    "debug_buffer_size": (0, 1 << 40),
    "seed": (0, (1 << 63) - 1),
    "run_timeout_s": (1.0, DAY_S),  # the runner's own times are capped at a day too (runner_contract)
    "lock_timeout_s": (0.0, WEEK_S),
    "cooldown_s": (0.0, 3_600.0),
    "max_temp_c": (1.0, 150.0),
    "energy_s": (0.1, DAY_S),  # the energy phase's executions (run/energy/phase.py)
    "energy_phases": (1, 100),  # a hottest-zone limit in °C: beyond it no device runs, below it none cools
})
# Not JobOptions' but bounded alike: the farm's wait for a device, the A/B job's growth.
DEVICE_DEADLINE_S = (1.0, WEEK_S)
MAX_RUNS_PER_SIDE = (1, 10_000)
# `run --ab`'s and bisect's default --max-runs: how far --until-confident pools while a pair is inconclusive. On the
# second noise corpus (a VM of speed states), quiet, +10 % was found in 79 % of pairs at 40 runs a side and 92 % at
# 80; false `regressed` 0 at both (benchmarks/README.md "Pooling up to 80 runs a side").
UNTIL_CONFIDENT_MAX_RUNS = 80


def check_bounds(values: Mapping[str, object], limits: Mapping[str, tuple[float, float]] = LIMITS) -> None:
    """FieldError (a ValueError) naming the first field of `values` that is of the wrong type, not finite or
    out of its bounds (None is left alone: an option not set). Integral bounds want an int, never a bool."""
    for name, (least, most) in limits.items():
        value = values.get(name)
        if value is None:
            continue
        whole = isinstance(least, int) and isinstance(most, int)
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            raise FieldError((name,), f"expected {'a whole number' if whole else 'a number'}, got {value!r}")
        if not (math.isfinite(value) and least <= value <= most):
            raise FieldError((name,), f"{value!r} is outside [{least:g}, {most:g}]")

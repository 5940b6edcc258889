"""Synthetic jobs of the testbed's process model (docs/architecture.md, "Measurement"), fitted to real jobs.

Fitted to 58 recorded jobs of the 40-layer MLP (configs/models/deep_mlp.py, `local` pinned to core 1, 10
process runs x 50 iterations; tests/unit/verdicts/fixtures/two_state_jobs.npz holds 25 of them): each process
settles in the fast state with probability 0.37 (the jobs' fast shares have exactly the binomial variance of
that: no job-level share), else in a state 1.4x slower, or (5 % of processes) 2x; one job in 30 has no process
in the fast state at all; the process's level spreads 1.5 % around its state's; its iterations 2 % above that.
Used by the unit tests of the statistics (seeded) and by benchmarks/bench_series.py.
"""

from __future__ import annotations

import numpy as np

FAST_MS = 0.0245  # the 40-layer MLP's fast state on the testbed
FAST_SHARE = 0.37
SLOW, SLOWER = 1.4, 2.0
SLOWER_SHARE = 0.05
WHOLE_JOB_SLOW = 1 / 30
PROCESS_SPREAD = 0.015
ITERATION_JITTER = 0.02


def two_state_job(rng: np.random.Generator, scale: float = 1.0, runs: int = 10, iterations: int = 50) -> list[np.ndarray]:
    """One job's per-run samples (ms) of a model `scale` times the base model's time."""
    fast_share = 0.0 if rng.random() < WHOLE_JOB_SLOW else FAST_SHARE
    out = []
    for _ in range(runs):
        state = SLOWER if rng.random() < SLOWER_SHARE else (1.0 if rng.random() < fast_share else SLOW)
        level = FAST_MS * scale * state * np.exp(PROCESS_SPREAD * rng.standard_normal())
        out.append(level * (1 + np.abs(ITERATION_JITTER * rng.standard_normal(iterations))))
    return out

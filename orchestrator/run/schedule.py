"""The order of process runs on a device: which model's run k comes when.

Drift and heat over a job should hit every model alike, so by default rounds are interleaved
(each round runs every model once, in a seeded shuffle, as TFLite's benchmark does with
`random_shuffle_benchmark_runs`); `sequential` keeps one model's runs together; `abba`
alternates two models A B B A A B ... for an A/B comparison. Untraced runs follow the traced
ones in the same order. Pure and deterministic: the same inputs give the same schedule.
`Order` is what a device has done of it: (model, process run) in the order they ran, the loop's
record (run/loop/process_loop.py) and what the finisher flags and analyses (run/finisher.py).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from orchestrator.results.job_config import RunOrder

if TYPE_CHECKING:
    from orchestrator.results.model import ProcessRun

Order: TypeAlias = "list[tuple[str, ProcessRun]]"  # (model name, process run), in the order they ran

__all__ = ["Order", "RunOrder", "ScheduledRun", "schedule_runs"]


@dataclass(frozen=True)
class ScheduledRun:
    model: str
    label: str  # run-<k> (traced) or e2e-<k> (untraced)
    traced: bool


def schedule_runs(models: Sequence[str], runs: int, untraced_runs: int, order: RunOrder = RunOrder.INTERLEAVED,
                  seed: int = 0) -> list[ScheduledRun]:
    """Every (model, run) of a device's job, in the order they should run."""
    traced = _rounds(models, runs, order, seed)
    untraced = _rounds(models, untraced_runs, order, seed + 1)
    return ([ScheduledRun(m, f"run-{k}", True) for m, k in traced]
            + [ScheduledRun(m, f"e2e-{k}", False) for m, k in untraced])


def _rounds(models: Sequence[str], runs: int, order: RunOrder, seed: int) -> list[tuple[str, int]]:
    if order is RunOrder.SEQUENTIAL or len(models) < 2:
        return [(m, k) for m in models for k in range(1, runs + 1)]
    if order is RunOrder.ABBA:
        out = []
        for k in range(1, runs + 1):
            pair = list(models) if k % 2 else list(reversed(models))
            out += [(m, k) for m in pair]
        return out
    rng = random.Random(seed)
    out = []
    for k in range(1, runs + 1):
        shuffled = list(models)
        rng.shuffle(shuffled)
        out += [(m, k) for m in shuffled]
    return out

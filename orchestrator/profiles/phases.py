"""An LLM's per-op statistics split by phase: which ops dominate prefill, which decode.

In generation mode every forward call is one ETDump block (`Execute`), in call order: per
measured generation `prefill_calls` prefill calls, then `decode_steps` decode steps (the runner's
warmup generations and metadata methods leave no block; runners/etfarm_result.h). Inspector merges
the calls into one event block whose samples keep call order, so the k-th sample of an event in
a process run belongs to call k, and call k is in phase `prefill` when k mod (prefill_calls +
decode_steps) < prefill_calls. `with_phases` fills each event's PHASE_COLUMNS of stats.csv
(`prefill_samples`, `prefill_p50_ms`, `prefill_avg_ms`, `decode_...`) with Inspector's
statistics over that phase's samples (analysis_core.group_stats), beside the unchanged statistics
over every call. A block is split only when each of its runs holds exactly one instance per call
of every generation; otherwise (a program whose calls do not share one event block) its rows keep
no phase figures rather than wrong ones. numpy only; the samples are the ones already read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from orchestrator.profiles.analysis_core import SampleSet, group_stats
from orchestrator.profiles.stat_rows import ModelStats

PREFILL, DECODE = 0, 1
PHASES = {PREFILL: "prefill", DECODE: "decode"}
EXECUTE_EVENT = "Method::execute"  # an instance of a block holding it is one forward call


@dataclass(frozen=True)
class RunCalls:
    """How one process run called forward: per generation `prefill_calls` then `decode_steps` calls."""

    prefill_calls: int
    decode_steps: int
    generations: int

    @property
    def per_generation(self) -> int:
        return self.prefill_calls + self.decode_steps


def with_phases(stats: ModelStats, calls: Mapping[str, RunCalls]) -> ModelStats:
    """`stats` with each forward-call event's phase columns filled, when its process runs (by label) generated;
    unchanged for a model that did not, or whose samples are not in memory."""
    if not calls or stats.samples is None or stats.samples.duration_ms.size == 0:
        return stats
    samples = stats.samples
    phase = phase_of_samples(samples, calls)
    if not (phase >= 0).any():
        return stats
    figures = _phase_figures(samples, phase)
    rows = tuple(replace(row, **figures[row.key]) if row.key in figures else row for row in stats.rows)
    return replace(stats, rows=rows)


def phase_of_samples(samples: SampleSet, calls: Mapping[str, RunCalls]) -> np.ndarray:
    """Per sample: PREFILL, DECODE, or -1 (not a forward call, or a block that cannot be split)."""
    out = np.full(samples.duration_ms.size, -1, dtype=np.int8)
    call_blocks = [b for b, events in enumerate(samples.block_events) if any(e.name == EXECUTE_EVENT for e in events)]
    for block in call_blocks:
        in_block = samples.block == block
        split = np.full(samples.duration_ms.size, -1, dtype=np.int8)
        for run, label in enumerate(samples.run_labels):
            run_calls = calls.get(str(label))
            chosen = in_block & (samples.run == run)
            if not chosen.any():
                continue
            iteration = samples.iteration[chosen]
            if run_calls is None or int(iteration.max()) + 1 != run_calls.generations * run_calls.per_generation:
                split = None  # one instance per call of every generation, or no split for this block
                break
            split[chosen] = np.where(iteration % run_calls.per_generation < run_calls.prefill_calls, PREFILL, DECODE)
        if split is not None:
            out = np.where(in_block, split, out)
    return out


def _phase_figures(samples: SampleSet, phase: np.ndarray) -> dict[tuple[str, int], dict[str, Any]]:
    """(event_block, event_index) -> its PHASE_COLUMNS values, for the events of split blocks."""
    width = max(len(events) for events in samples.block_events) + 1
    raw = samples.block.astype(np.int64) * width + samples.event_index
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for code, name in PHASES.items():
        chosen = phase == code
        keys, gid = np.unique(raw[chosen], return_inverse=True)
        if keys.size == 0:
            continue
        stats = group_stats(samples.duration_ms[chosen], gid, keys.size)
        for g, key in enumerate(keys.tolist()):
            figures = out.setdefault((samples.block_keys[key // width], key % width), {})
            figures[f"{name}_samples"] = int(stats["samples"][g])
            figures[f"{name}_p50_ms"] = float(stats["p50_ms"][g])
            figures[f"{name}_avg_ms"] = float(stats["avg_ms"][g])
    return out

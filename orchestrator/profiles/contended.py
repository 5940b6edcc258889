"""Per-op statistics over clean executions only: the samples of contended executions left out, and counted.

results/contention.py says which measured executions of a process run waited for a CPU (`ProcessRun.clean`).
Execution k of a run is the k-th instance of its forward-call block in the run's ETDump (warmup is not
traced; the method-load block is not a call): with `calls` forward calls per execution (1, or an LLM's
prefill calls + decode steps per generation), instance i belongs to execution i // calls. `drop_contended`
removes those samples and recomputes the rows; each row's `contended_samples` says how many of its samples
were left out. When no execution at all was clean, nothing is left out (`contended_samples` 0), as the
end-to-end figures then use every execution (`ModelResult.reported_execute_ms`) and the contention summary says
all were contended. An event all of whose samples were contended while others' were not (an op some executions
skip) keeps its row with no statistics (samples 0).

A run whose ETDump does not hold exactly one call block instance per call of every execution (a program
whose calls do not share one block) keeps all its samples: the mapping cannot be trusted there. An LLM's
prefill / decode columns (profiles/phases.py, computed first, over every call) are kept as they were: splitting
calls by phase needs every call of a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np

from orchestrator.profiles.analysis_core import SampleSet
from orchestrator.profiles.phases import EXECUTE_EVENT
from orchestrator.profiles.stat_rows import PHASE_COLUMNS, ModelStats, StatRow, rows_of, subset


def contended_mask(samples: SampleSet, clean: Mapping[str, Sequence[bool]], calls: Mapping[str, int]) -> np.ndarray:
    """Per sample: True when it belongs to an execution that `clean` (per run label, per execution) says was
    contended. `calls`: forward calls per execution by run label (absent: 1)."""
    out = np.zeros(samples.duration_ms.size, dtype=bool)
    call_blocks = [b for b, events in enumerate(samples.block_events) if any(e.name == EXECUTE_EVENT for e in events)]
    for run, label in enumerate(samples.run_labels):
        mask = clean.get(str(label))
        if mask is None or all(mask):
            continue
        per = max(1, calls.get(str(label), 1))
        bad = np.flatnonzero(~np.asarray(mask, dtype=bool))
        for block in call_blocks:
            chosen = (samples.block == block) & (samples.run == run)
            if not chosen.any() or int(samples.iteration[chosen].max()) + 1 != len(mask) * per:
                continue  # not one instance per call of every execution: keep the run's samples
            out |= chosen & np.isin(samples.iteration // per, bad)
    return out


def drop_contended(stats: ModelStats, clean: Mapping[str, Sequence[bool]], calls: Mapping[str, int]) -> ModelStats:
    """`stats` recomputed without the samples of contended executions, each row counting what it left out (0
    when nothing was). `clean` holds the runs whose contention was measured: without any, or without the samples
    in memory (a resumed job's rows), `stats` is returned unchanged."""
    samples = stats.samples
    if not clean or samples is None or samples.duration_ms.size == 0:
        return stats
    drop = left_out(samples, clean, calls)
    if drop is None:
        return replace(stats, rows=tuple(replace(row, contended_samples=0) for row in stats.rows))
    kept = subset(samples, ~drop)
    width = max(len(events) for events in samples.block_events) + 1
    raw = samples.block.astype(np.int64) * width + samples.event_index
    dropped = np.bincount(raw[drop], minlength=len(samples.block_events) * width)
    new = {row.key: row for row in rows_of(kept, stats.device, stats.model)}
    block_of = {key: b for b, key in enumerate(samples.block_keys)}
    rows = []
    for row in stats.rows:  # every event keeps its row, in the order the whole samples gave, and its phase figures
        count = int(dropped[block_of[row.event_block] * width + row.event_index])
        phases = {column: getattr(row, column) for column in PHASE_COLUMNS}
        rows.append(replace(new.get(row.key, _emptied(row)), **phases, contended_samples=count))
    return replace(stats, rows=tuple(rows), contended=drop)  # every sample kept, those left out marked


def left_out(samples: SampleSet, clean: Mapping[str, Sequence[bool]], calls: Mapping[str, int]) -> np.ndarray | None:
    """The samples statistics leave out (`contended_mask`), or None when none is: nothing was contended, or nothing
    at all was clean (every execution then counts, as the end-to-end figures count them)."""
    drop = contended_mask(samples, clean, calls)
    return None if not drop.any() or not (_in_calls(samples) & ~drop).any() else drop


def _in_calls(samples: SampleSet) -> np.ndarray:
    blocks = [b for b, events in enumerate(samples.block_events) if any(e.name == EXECUTE_EVENT for e in events)]
    return np.isin(samples.block, blocks)


def _emptied(row: StatRow) -> StatRow:
    """The row of an event none of whose samples was clean: its identity, no statistics."""
    return replace(row, samples=0, min_ms=None, p10_ms=None, p50_ms=None, p90_ms=None, avg_ms=None, max_ms=None,
                   std_ms=None, cv=None, trimmed_mean_ms=None)

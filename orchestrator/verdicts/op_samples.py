"""A side's per-op samples: read from its runs' ETDumps (numpy only) or given in memory.

Per op, events are keyed by block, name and occurrence of that name in the block, so the same layer
lines up even when B has more layers than A (compare.py matches the keys); framework events
(Method::init / load / execute) are left out: they are the end-to-end verdict's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.profiles.analysis_core import collect_samples

if TYPE_CHECKING:
    from orchestrator.profiles.analysis_core import SampleSet

_FRAMEWORK = ("Method::execute", "Method::init", "Program::load_method")
OpKey = tuple[str, str, int]  # (event_block, event_name, occurrence of that name in the block)


class OpSamples:
    """Per-op samples of a side's runs, in memory: op -> (event_index, one array of samples per run),
    ops in (block, index) order. Compared by identity (it keys the per-side cache)."""

    def __init__(self, ops: dict[OpKey, tuple[int, list[Any]]]) -> None:
        self.ops = ops


def read_op_samples(etdumps: Sequence[Path]) -> OpSamples:
    """The per-op samples of process runs from their ETDumps, one run per file, in order."""
    return op_samples_of(collect_samples(etdumps, run_labels=list(range(len(etdumps)))))


def op_samples_of(samples: SampleSet) -> OpSamples:
    """Per-op samples from samples already read (one run per file of the set): every event but the
    framework's, keyed by block, name and occurrence, in (block, index) order; a run in which an
    event has no sample has no array for it."""
    import numpy as np

    if samples.duration_ms.size == 0:
        return OpSamples({})
    offsets = np.cumsum([0] + [len(events) for events in samples.block_events])
    event = offsets[samples.block.astype(np.int64)] + samples.event_index  # unique per (block, index)
    key = event * len(samples.run_labels) + samples.run
    if key.max() < 1 << 16:
        key = key.astype(np.uint16)  # numpy sorts 16-bit keys by radix: 3-4x faster
    order = np.argsort(key, kind="stable")  # stable: samples keep their order within a run
    key, event, duration = key[order], event[order], samples.duration_ms[order]
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(key) != 0) + 1, [key.size]]).tolist()
    names = [(samples.block_keys[b], e.index, e.name) for b, events in enumerate(samples.block_events) for e in events]
    out: dict[OpKey, tuple[int, list[Any]]] = {}
    seen: dict[tuple[str, str], int] = {}
    current = -1
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        block, index, name = names[int(event[start])]
        if name in _FRAMEWORK:
            continue
        if event[start] != current:  # a new event: the next occurrence of its name in the block
            current = int(event[start])
            occurrence = seen[(block, name)] = seen.get((block, name), -1) + 1
            runs: list[Any] = []
            out[(block, name, occurrence)] = (index, runs)
        runs.append(duration[start:end])
    return OpSamples(out)

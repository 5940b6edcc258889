"""A side's per-op samples: from its run directories' samples files (results/samples.py, written by the job), read
from its runs' ETDumps where a run directory has none (numpy only), or given in memory.

Per op, events are keyed by block and op identity (profiles/op_identity.py: module path, ATen op and
occurrence, from the side's stats.csv where the run had an ETRecord; else from the event's name, a
kernel by its XNNPACK family), so the same layer lines up even when B has more layers than A, or when B's
CPU names its kernels otherwise (compare.py matches the keys); framework events (Method::init / load /
execute) are left out: they are the end-to-end verdict's.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.profiles.analysis_core import collect_samples
from orchestrator.profiles.op_identity import EVENT, OpIdentity
from orchestrator.results.samples import PairSamples, joined_runs

if TYPE_CHECKING:
    from orchestrator.profiles.analysis_core import SampleSet
    from orchestrator.results.record import RunRecord

_FRAMEWORK = ("Method::execute", "Method::init", "Program::load_method")
OpKey = tuple[str, OpIdentity]  # (event_block, the op's identity)
Identities = Mapping[tuple[str, int], OpIdentity]  # (event_block, event_index) -> identity, from a stats.csv


class OpSamples:
    """Per-op samples of a side's runs, in memory: op -> (event_index, one array of samples per run),
    ops in (block, index) order, and each op's event name (its kernel's, on this side). Compared by
    identity (it keys the per-side cache)."""

    def __init__(self, ops: dict[OpKey, tuple[int, list[Any]]], names: Mapping[OpKey, str] | None = None) -> None:
        self.ops = ops
        self.names = dict(names or {})

    def name(self, key: OpKey) -> str:
        return self.names.get(key, key[1].label)

    def by_name(self) -> OpSamples:
        """The same ops keyed by block, event name and occurrence of that name (how runs were joined before
        identities), for a side whose identities cannot line up with the other's."""
        seen: Counter[tuple[str, str]] = Counter()
        ops, names = {}, {}
        for key, value in self.ops.items():
            name = self.name(key)
            renamed = (key[0], OpIdentity("", name, seen[(key[0], name)], EVENT))
            seen[(key[0], name)] += 1
            ops[renamed], names[renamed] = value, name
        return OpSamples(ops, names)


def joined(a: OpSamples, b: OpSamples) -> tuple[OpSamples, OpSamples]:
    """Both sides keyed alike: by op identity, unless names join more of their ops (a side recorded before
    identities has a kernel's XNNPACK family where a new one has its ATen op: one device, two etfarm versions)."""
    by_identity = len(a.ops.keys() & b.ops.keys())
    named_a, named_b = a.by_name(), b.by_name()
    if len(named_a.ops.keys() & named_b.ops.keys()) > by_identity:
        return named_a, named_b
    return a, b


def read_op_samples(etdumps: Sequence[Path], identities: Identities | None = None) -> OpSamples:
    """The per-op samples of process runs from their ETDumps, one run per file, in order."""
    return op_samples_of(collect_samples(etdumps, run_labels=list(range(len(etdumps)))), identities)


def recorded_op_samples(runs: Sequence[tuple[RunRecord, str]], device: str, model: str,
                        identities: Identities | None = None) -> OpSamples | None:
    """The per-op samples of process runs of (device, model), each named by its run's record and its label, in
    order, as `read_op_samples` of their ETDumps gives them; None when some run is not in its samples file."""
    files: dict[Path, PairSamples | None] = {}
    pieces = []
    for record, label in runs:
        if record.root not in files:
            files[record.root] = record.samples(device, model)
        found = files[record.root]
        if found is None or label not in found.samples.run_labels:
            return None
        pieces.append((found.samples, label))
    return op_samples_of(joined_runs(pieces), identities)


def op_samples_of(samples: SampleSet, identities: Identities | None = None) -> OpSamples:
    """Per-op samples from samples already read (one run per file of the set): every event but the
    framework's, keyed by block and identity (`identities` where it has the event, else from its name),
    in (block, index) order; a run in which an event has no sample has no array for it."""
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
    keys = _keys(samples, identities or {})
    out: dict[OpKey, tuple[int, list[Any]]] = {}
    names: dict[OpKey, str] = {}
    current = -1
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        key, index, name = keys[int(event[start])]
        if name in _FRAMEWORK:
            continue
        if event[start] != current:  # a new event
            current = int(event[start])
            runs: list[Any] = []
            out[key], names[key] = (index, runs), name
        runs.append(duration[start:end])
    return OpSamples(out, names)


def _keys(samples: SampleSet, identities: Identities) -> list[tuple[OpKey, int, str]]:
    """Per event of the set (blocks in order): its key, index and name. An identity the stats.csv gives wins, else
    the event's own (from its name); a block where that would key two events alike is keyed by names alone."""
    out = []
    for b, events in enumerate(samples.block_events):
        block = samples.block_keys[b]
        by_name = samples.block_identities[b]
        given = [identities.get((block, e.index)) or by_name[i] for i, e in enumerate(events)]
        if len(set(given)) < len(given):
            given = list(by_name)
        out.extend(((block, identity), e.index, e.name) for e, identity in zip(events, given, strict=True))
    return out

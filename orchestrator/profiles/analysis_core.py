"""The numpy-only core of ETDump analysis: samples across files, Inspector's statistics.

Kept free of pandas so that `etfarm analyze` starts in a fraction of a second (pandas
alone costs ~0.3 s to import); `orchestrator.profiles.analysis` wraps this in DataFrames.

Files are merged by Inspector's RunSignature: a block of one file joins the same block
of another only if their event signatures agree; otherwise it stays a separate block,
keyed `name#2`, `name#3`... in order of first appearance.

With an ETRecord, events are linked as Inspector links them (op types, module path, source
line); with the program's .pte as well, every XNNPACK kernel event is named in the user's model
(profiles/kernel_map.py): a mapped kernel gets its own module path, source line and covered
modules, and the columns `kernel_mapping` (mapped / unmapped) and `kernel_note` (how it maps,
or why not) say which. op_types stay Inspector's. `strict=True` (a user naming an ETRecord and a
.pte by hand) refuses files that are not of the ETDump's program (profiles/belongs.py).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.belongs import check_belongs
from orchestrator.profiles.etdump import read_etdump
from orchestrator.profiles.etdump_events import EventInfo, Signature, block_key, durations_ms, group_blocks
from orchestrator.profiles.etrecord import EventLink, load_etrecord
from orchestrator.profiles.kernel_map import KernelLink, load_kernel_program
from orchestrator.profiles.op_identity import OpIdentity, block_identities, handles_text
from orchestrator.profiles.source import MODULES_SEPARATOR, OP_TYPES_SEPARATOR, module_path, source_line

PathLike = str | os.PathLike[str]

# stats.csv's columns after `device, model` (docs/architecture.md, "Contracts: the run directory").
STATS_COLUMNS = [
    "event_block",
    "event_index",
    "event_name",
    "samples",
    "min_ms",
    "p10_ms",
    "p50_ms",
    "p90_ms",
    "avg_ms",
    "max_ms",
    "std_ms",
]
SPREAD_COLUMNS = ["cv", "trimmed_mean_ms"]
EVENT_COLUMNS = ["is_delegated_op", "delegate_debug_identifier"]
# With an ETRecord. New columns go at the end: stats.csv readers rely on the order.
LINK_COLUMNS = ["op_types", "delegate_backend_name", "module_path", "source_line", "delegate_covers"]
# With an ETRecord, after LINK_COLUMNS: a delegate kernel's mapping to the user's model ('' for other events).
KERNEL_COLUMNS = ["kernel_mapping", "kernel_note"]
MAPPED, UNMAPPED = "mapped", "unmapped"
# Every event, last: its OpIdentity (profiles/op_identity.py), the key that joins an op across devices, runs and
# programs; debug_handles are the edge nodes it came from.
IDENTITY_COLUMNS = ["op_module", "op_kind", "op_occurrence", "op_basis", "debug_handles"]
NO_PTE = "no .pte given: the ETRecord does not hold the delegate's serialized graph, so kernels are not mapped"


@dataclass(frozen=True, eq=False)
class SampleSet:
    """Every timing sample of some ETDump files, columnar, plus what each event is."""

    run: np.ndarray  # int32: index into run_labels
    block: np.ndarray  # int32: index into block_keys
    event_index: np.ndarray  # int32: Inspector's position of the event in its block
    iteration: np.ndarray  # int32: instance of the block within its file (0 = first)
    duration_ms: np.ndarray  # float64: Inspector's perf_data.raw values
    run_labels: tuple[Any, ...]
    block_keys: tuple[str, ...]
    block_events: tuple[tuple[EventInfo, ...], ...]
    block_links: tuple[tuple[EventLink, ...], ...] | None  # None without an ETRecord
    # Per event: its XNNPACK kernel mapping (None: not a delegate kernel); None without a program (.pte + ETRecord)
    block_kernels: tuple[tuple[KernelLink | None, ...], ...] | None = None
    kernel_error: str | None = None  # why kernels are not mapped at all (no .pte, or an unreadable one)
    # Per block: Inspector's RunSignature; per run: its blocks in the file's order. What joining the runs of two sets
    # needs to key their blocks as one read of all their files would (results/samples.py); None: not known.
    block_signatures: tuple[Signature, ...] | None = None
    block_order: tuple[tuple[int, ...], ...] | None = None

    def event_row(self, block: int, index: int) -> dict[str, Any]:
        """The event's identity and metadata columns (no statistics)."""
        info = self.block_events[block][index]
        row: dict[str, Any] = {
            "event_block": self.block_keys[block],
            "event_index": index,
            "event_name": info.name,
            "is_delegated_op": info.is_delegated_op,
            "delegate_debug_identifier": info.delegate_debug_identifier,
        }
        if self.block_links is not None:
            link = self.block_links[block][index]
            row["op_types"] = OP_TYPES_SEPARATOR.join(link.op_types)
            row["delegate_backend_name"] = link.delegate_backend_name
            row["module_path"] = module_path(link.module_hierarchy)
            row["source_line"] = source_line(link.stack_traces)
            row["delegate_covers"] = MODULES_SEPARATOR.join(link.delegate_covers)
            row.update(self._kernel_columns(block, index, info))
        identity = self.identity(block, index)
        row.update({"op_module": identity.module_path, "op_kind": identity.op, "op_occurrence": identity.occurrence,
                    "op_basis": identity.basis, "debug_handles": handles_text(identity.debug_handles)})
        return row

    def identity(self, block: int, index: int) -> OpIdentity:
        """The event's op identity: from the model where the ETRecord (and for kernels the .pte) tell, else its name."""
        return self.block_identities[block][index]

    @cached_property
    def block_identities(self) -> tuple[tuple[OpIdentity, ...], ...]:
        links, kernels = self.block_links, self.block_kernels
        return tuple(block_identities(events, links[b] if links is not None else None,
                                      kernels[b] if kernels is not None else None)
                     for b, events in enumerate(self.block_events))

    def _kernel_columns(self, block: int, index: int, info: EventInfo) -> dict[str, str]:
        """kernel_mapping, kernel_note and, for a mapped kernel, its own module path, source line and coverage."""
        if not is_kernel_event(info):
            return {"kernel_mapping": "", "kernel_note": ""}
        kernel = self.block_kernels[block][index] if self.block_kernels is not None else None
        if kernel is None:
            return {"kernel_mapping": UNMAPPED, "kernel_note": self.kernel_error or NO_PTE}
        if not kernel.mapped:
            return {"kernel_mapping": UNMAPPED, "kernel_note": kernel.reason}
        return {"module_path": kernel.module_path, "source_line": kernel.source_line,
                "delegate_covers": MODULES_SEPARATOR.join(kernel.covers), "kernel_mapping": MAPPED,
                "kernel_note": kernel.note}


def is_kernel_event(info: EventInfo) -> bool:
    """A delegate's own kernel event (XNNPACK names them, `Convolution (NHWC, F32) IGEMM #2`)."""
    return bool(info.is_delegated_op) and isinstance(info.delegate_debug_identifier, str)


def collect_samples(
    etdump_paths: Sequence[PathLike], etrecord: PathLike | None = None, run_labels: Sequence[Any] | None = None,
    pte: PathLike | None = None, strict: bool = False,
) -> SampleSet:
    """Read, group (Inspector's way) and time every file; link events to the ETRecord and, given the
    program's .pte too, every XNNPACK kernel to the user's model. `strict`: an ETRecord or .pte that is
    not of the ETDumps' program is an AnalysisError (else its kernels are only left unmapped)."""
    paths = [Path(p) for p in etdump_paths]
    if not paths:
        raise AnalysisError("no ETDump files given")
    if run_labels is not None and len(run_labels) != len(paths):
        raise AnalysisError(f"{len(run_labels)} run labels for {len(paths)} ETDump files")
    record = load_etrecord(etrecord) if etrecord is not None else None

    codes: dict[Any, int] = {}  # RunSignature -> block code
    keys: list[str] = []
    name_uses: dict[str, int] = {}
    block_events: list[tuple[EventInfo, ...]] = []
    order: list[tuple[int, ...]] = []
    parts: list[tuple[np.ndarray, ...]] = []
    for run, path in enumerate(paths):
        dump = read_etdump(path)
        seen: list[int] = []
        for group in group_blocks(dump):
            code = codes.get(group.signature)
            if code is None:
                code = codes[group.signature] = len(keys)
                uses = name_uses[group.name] = name_uses.get(group.name, 0) + 1
                keys.append(block_key(group.name, uses))
                block_events.append(group.events)
            seen.append(code)
            matrix = durations_ms(dump, group)  # instances x perf events
            instances, width = matrix.shape
            parts.append(
                (
                    np.full(instances * width, run, dtype=np.int32),
                    np.full(instances * width, code, dtype=np.int32),
                    np.tile(group.perf_events.astype(np.int32), instances),
                    np.repeat(np.arange(instances, dtype=np.int32), width),
                    matrix.reshape(-1),
                )
            )
        order.append(tuple(seen))
    columns = [np.concatenate(c) for c in zip(*parts, strict=True)] if parts else [np.zeros(0, np.int32)] * 4 + [np.zeros(0)]
    links = kernels = kernel_error = None
    if record is not None:
        links = tuple(
            tuple(record.link(e.name, e.instruction_id, e.delegate_debug_identifier) for e in events)
            for events in block_events
        )
        kernels, kernel_error = _kernels(block_events, etrecord, pte)
        if strict:
            check_belongs(record, block_events, kernels, paths, pte)
    labels = tuple(run_labels) if run_labels is not None else tuple(range(len(paths)))
    return SampleSet(*columns, run_labels=labels, block_keys=tuple(keys), block_events=tuple(block_events), block_links=links,
                     block_kernels=kernels, kernel_error=kernel_error, block_signatures=tuple(codes),
                     block_order=tuple(order))


def _kernels(block_events: Sequence[tuple[EventInfo, ...]], etrecord: PathLike | None,
             pte: PathLike | None) -> tuple[tuple[tuple[KernelLink | None, ...], ...] | None, str | None]:
    """Each block's kernel mapping (only when some event is a delegate kernel), or why there is none."""
    if not any(is_kernel_event(e) for events in block_events for e in events):
        return None, None
    if pte is None or etrecord is None:
        return None, NO_PTE
    try:
        program = load_kernel_program(pte, etrecord)
        return tuple(program.link_block(events) for events in block_events), None
    except AnalysisError as exc:
        return None, f"kernels not mapped: {exc}"


def group_stats(values: np.ndarray, gid: np.ndarray, ngroups: int) -> dict[str, np.ndarray]:
    """Inspector's statistics per group (every group must have samples), vectorised.

    Percentiles reproduce numpy's 'linear' method step by step (virtual index, floor,
    `_lerp`), so they equal `np.percentile(raw, q)`; std is the sample std (ddof=1, 0.0 for
    one sample); trimmed_mean_ms is the mean of the samples within [p10, p90].
    """
    counts = np.bincount(gid, minlength=ngroups).astype(np.int64)
    starts = np.cumsum(counts) - counts
    v = _sorted_within_groups(values, gid, counts, starts)
    means = np.bincount(gid, weights=values, minlength=ngroups) / counts

    def percentile(q: float) -> np.ndarray:
        virtual = (counts - 1) * (q / 100)
        prev = np.floor(virtual)
        above = virtual >= counts - 1
        lo = np.where(above, counts - 1, prev).astype(np.int64)
        hi = np.where(above, counts - 1, prev + 1).astype(np.int64)
        a, b = v[starts + lo], v[starts + hi]
        t = virtual - prev
        diff = b - a
        return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)

    p10, p50, p90 = percentile(10), percentile(50), percentile(90)
    squares = np.bincount(gid, weights=(values - means[gid]) ** 2, minlength=ngroups)
    std = np.sqrt(np.divide(squares, counts - 1, out=np.zeros(ngroups), where=counts > 1))
    inside = (values >= p10[gid]) & (values <= p90[gid])
    n_in = np.bincount(gid, weights=inside, minlength=ngroups)
    s_in = np.bincount(gid, weights=np.where(inside, values, 0.0), minlength=ngroups)
    trimmed = np.where(n_in > 0, s_in / np.maximum(n_in, 1), means)  # 2 distinct samples: none inside
    with np.errstate(invalid="ignore", divide="ignore"):
        cv = np.where(means != 0, std / means, np.nan)
    return {
        "samples": counts,
        "min_ms": v[starts],
        "p10_ms": p10,
        "p50_ms": p50,
        "p90_ms": p90,
        "avg_ms": means,
        "max_ms": v[starts + counts - 1],
        "std_ms": std,
        "cv": cv,
        "trimmed_mean_ms": trimmed,
    }


def _sorted_within_groups(values: np.ndarray, gid: np.ndarray, counts: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Values ordered by group, ascending within each group (= lexsort((values, gid)), faster).

    A stable argsort on 16-bit group ids is a radix sort; groups of equal size (every event
    of a block has one sample per instance) are then sorted together as the rows of a matrix.
    """
    if gid.size == 0 or len(counts) >= 1 << 16 or len(np.unique(counts)) > 64:
        return values[np.lexsort((values, gid))]
    v = values[np.argsort(gid.astype(np.uint16), kind="stable")]
    for size in np.unique(counts):
        if size < 2:
            continue
        rows = starts[counts == size][:, None] + np.arange(size)
        v[rows] = np.sort(v[rows], axis=1)
    return v


def summary_records(samples: SampleSet) -> list[dict[str, Any]]:
    """One record per (event_block, event_index) with samples, in block then Inspector order."""
    if samples.duration_ms.size == 0:
        return []
    width = max(len(events) for events in samples.block_events) + 1
    raw = samples.block.astype(np.int64) * width + samples.event_index
    seen = np.zeros(len(samples.block_events) * width, dtype=bool)
    seen[raw] = True
    groups = np.flatnonzero(seen)  # (block, event) pairs with samples, in block then event order
    dense = np.cumsum(seen) - 1
    stats = group_stats(samples.duration_ms, dense[raw], len(groups))
    records = []
    for g, key in enumerate(groups.tolist()):
        row = samples.event_row(key // width, key % width)
        row.update({name: column[g].item() for name, column in stats.items()})
        records.append(row)
    return records


def record_columns(samples: SampleSet) -> list[str]:
    """Column order of summary records: STATS_COLUMNS, spread, then event metadata."""
    link = [*LINK_COLUMNS, *KERNEL_COLUMNS] if samples.block_links is not None else []
    return [*STATS_COLUMNS, *SPREAD_COLUMNS, *EVENT_COLUMNS, *link]

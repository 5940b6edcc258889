"""Group an ETDump's run_data blocks and events exactly as ExecuTorch's Inspector does.

Inspector (`devtools/inspector/_inspector.py`) keys a run_data block by its RunSignature
(name, tuple of EventSignatures, bundled_input_index) and merges blocks with equal
signatures into one EventBlock; inside a block, events are collated by
InstructionEventSignature (instruction id, chain, raw delegate ids) in order of first
appearance, then split into one EventSignature per profile event. We reproduce that order,
so `event_index` here is the position of the event in Inspector's `EventBlock.events`.

The Python work runs once per distinct block *shape* (byte-identical event key rows), not
once per block: 500 iterations of one method cost one layout plus numpy gathers.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etdump import KIND_DEBUG, KIND_PROFILE, ETDump

MAX_UINT32 = 2**32 - 1  # Inspector's wrap-around bound (`Event._calculate_elapsed_time`)
NS_PER_MS = 1_000_000.0  # Inspector's scale factor for TimeScale.NS -> TimeScale.MS

# Hashable stand-ins for Inspector's signature dataclasses (same fields, same equality):
# ProfileEventSignature / DebugEventSignature = (name, instruction_id, delegate_id, delegate_id_str)
# EventSignature = (instruction_id, profile_signature | None, debug_signature | None)
# RunSignature = (name, tuple[EventSignature, ...], bundled_input_index)
Signature = tuple[Any, ...]


@dataclass(frozen=True)
class EventInfo:
    """One Inspector Event of a block: identity and the fields Inspector derives from ETDump."""

    index: int
    name: str
    instruction_id: int  # raw, like Inspector's Event._instruction_id (-1 default)
    delegate_debug_identifier: int | str | None
    is_delegated_op: bool
    has_perf: bool  # False for events made only of debug events (no timing)


@dataclass(frozen=True, eq=False)
class BlockGroup:
    """One Inspector EventBlock of one file: every run_data block with the same RunSignature."""

    signature: Signature
    name: str
    bundled_input_index: int
    blocks: np.ndarray  # run_data indices of the instances, in file order
    events: tuple[EventInfo, ...]
    sample_pos: np.ndarray  # per event: index of its profile event inside a block, -1 if none
    delegated_timing: np.ndarray  # per event: Inspector times it with the delegate converter

    @property
    def perf_events(self) -> np.ndarray:
        """Indices (event_index) of the events that carry timing samples."""
        return np.flatnonzero(self.sample_pos >= 0)


def block_key(name: str, occurrence: int) -> str:
    """The key of the `occurrence`-th (1-based) distinct block named `name`, as Inspector names
    them: "forward", then "forward#2", "forward#3"... Event rows are keyed by (block key, event index)."""
    return name if occurrence == 1 else f"{name}#{occurrence}"


def group_blocks(dump: ETDump) -> list[BlockGroup]:
    """Inspector's EventBlocks for one file, in Inspector's order."""
    ev = dump.events
    keys = np.stack(
        [
            ev.kind.astype(np.int64),
            ev.name,
            ev.chain_index,
            ev.instruction_id,
            ev.delegate_id_int,
            ev.delegate_id_str,
            ev.debug_is_output,
        ],
        axis=1,
    ).astype(np.int64)
    by_shape: dict[tuple[int, int, bytes], list[int]] = {}
    for block in np.flatnonzero(dump.block_has_events):  # Inspector skips blocks without events
        rows = keys[dump.block_slice(int(block))]
        shape = (int(dump.block_name[block]), int(dump.block_bundled_input_index[block]), rows.tobytes())
        by_shape.setdefault(shape, []).append(int(block))

    # Different shapes can still share a RunSignature: merge them, first appearance first.
    merged: OrderedDict[Signature, tuple[list[int], tuple[EventInfo, ...], np.ndarray, np.ndarray]] = OrderedDict()
    first_block = {}
    for blocks in by_shape.values():
        rep = blocks[0]
        signature, infos, pos, delegated = _layout(dump, rep)
        first_block[signature] = min(first_block.get(signature, rep), rep)
        if signature in merged:
            merged[signature][0].extend(blocks)
        else:
            merged[signature] = (list(blocks), infos, pos, delegated)
    groups = []
    for signature in sorted(merged, key=first_block.__getitem__):
        blocks, infos, pos, delegated = merged[signature]
        groups.append(
            BlockGroup(
                signature=signature,
                name=signature[0] or "",
                bundled_input_index=signature[2],
                blocks=np.array(sorted(blocks), dtype=np.int64),
                events=infos,
                sample_pos=pos,
                delegated_timing=delegated,
            )
        )
    return groups


def _event_signature_part(dump: ETDump, i: int) -> Signature:
    """ProfileEventSignature/DebugEventSignature._gen_from_event: defaults become None."""
    ev = dump.events
    name = dump.string(int(ev.name[i])) or ""
    instr = int(ev.instruction_id[i])
    dd_int = int(ev.delegate_id_int[i])
    dd_str = dump.string(int(ev.delegate_id_str[i]))
    return (name, instr if instr != -1 else None, dd_int if dd_int != -1 else None, dd_str if dd_str != "" else None)


def _signature_fields(sig: Signature | None) -> tuple[str, int | str | None, bool] | None:
    """Event._populate_event_signature_fields: (name or "", delegate identifier, is_delegated_op)."""
    if sig is None:
        return None
    name, _, dd_int, dd_str = sig
    ident = dd_int if dd_int is not None else (dd_str or None)
    delegated = ident is not None
    return (name if not delegated else str(ident)), ident, delegated


def _layout(dump: ETDump, block: int) -> tuple[Signature, tuple[EventInfo, ...], np.ndarray, np.ndarray]:
    """Run Inspector's collation on one block: its RunSignature and per-event layout."""
    ev = dump.events
    lo = int(dump.block_event_start[block])
    hi = int(dump.block_event_start[block + 1])
    # InstructionEvent.gen_from_events: group by raw (instruction, chain, delegate ids).
    instructions: OrderedDict[tuple[Any, ...], tuple[list[int], list[int]]] = OrderedDict()
    for i in range(lo, hi):
        kind = int(ev.kind[i])
        if kind not in (KIND_PROFILE, KIND_DEBUG):
            continue  # allocation events: Inspector cannot read them (find_populated_event raises)
        isig = (
            int(ev.instruction_id[i]),
            int(ev.chain_index[i]),
            int(ev.delegate_id_int[i]),
            dump.string(int(ev.delegate_id_str[i])),
        )
        profiles, debugs = instructions.setdefault(isig, ([], []))
        if kind == KIND_PROFILE:
            profiles.append(i)
        elif not ev.debug_is_output[i]:  # run outputs are not events
            debugs.append(i)

    # EventSignature.gen_from_instruction_event; a repeated signature keeps its first
    # position and its last profile event (dict assignment, as in _gen_from_etdump).
    event_sigs: OrderedDict[Signature, int] = OrderedDict()
    for isig, (profiles, debugs) in instructions.items():
        if not profiles and not debugs:
            continue
        debug_sig = _event_signature_part(dump, debugs[0]) if debugs else None
        if not profiles:
            event_sigs[(isig[0], None, debug_sig)] = -1
        for p in profiles:
            event_sigs[(isig[0], _event_signature_part(dump, p), debug_sig)] = p - lo

    infos = []
    positions = np.full(len(event_sigs), -1, dtype=np.int64)
    delegated_timing = np.zeros(len(event_sigs), dtype=bool)
    for index, (sig, pos) in enumerate(event_sigs.items()):
        instr, profile_sig, debug_sig = sig
        name, ident, delegated = "", None, False
        profile_fields = _signature_fields(profile_sig)
        if profile_fields is not None:
            name, ident, delegated = profile_fields
            delegated_timing[index] = delegated
        debug_fields = _signature_fields(debug_sig)
        if debug_fields is not None:  # debug signature overrides, but never with an empty name
            name = debug_fields[0] or name
            ident, delegated = debug_fields[1], debug_fields[2]
        positions[index] = pos
        infos.append(EventInfo(index, name, instr, ident, delegated, pos >= 0))
    name_code = int(dump.block_name[block])
    signature = (dump.string(name_code), tuple(event_sigs), int(dump.block_bundled_input_index[block]))
    return signature, tuple(infos), positions, delegated_timing


def _gather(dump: ETDump, group: BlockGroup) -> np.ndarray:
    """Absolute event rows (instances x perf events) of a group's profile events."""
    starts = dump.block_event_start[group.blocks]
    return starts[:, None] + group.sample_pos[group.perf_events][None, :]


def durations_ms(dump: ETDump, group: BlockGroup) -> np.ndarray:
    """Inspector's perf_data.raw, as a matrix: instances x perf events, in milliseconds.

    Non-delegated events: elapsed ns (with 32-bit wrap-around) / 1e6. Delegated events:
    Inspector converts start and end to ms first and subtracts the floats; we do the same
    so that our numbers agree with it bit for bit, not just approximately.
    """
    rows = _gather(dump, group)
    start = dump.events.start_time[rows]
    end = dump.events.end_time[rows]
    delegated = np.broadcast_to(group.delegated_timing[group.perf_events][None, :], rows.shape)

    wrapped = start > end
    with np.errstate(over="ignore"):
        elapsed = np.where(wrapped, (np.uint64(MAX_UINT32) - start) + end, end - start)
    out = elapsed.astype(np.float64) / NS_PER_MS
    bad = wrapped & ((start > MAX_UINT32) | (end > MAX_UINT32)) & ~delegated

    if delegated.any():
        s = start.astype(np.float64) / NS_PER_MS
        e = end.astype(np.float64) / NS_PER_MS
        d_wrapped = s > e
        d_out = np.where(d_wrapped, (float(MAX_UINT32) - s) + e, e - s)
        out = np.where(delegated, d_out, out)
        bad |= delegated & d_wrapped & ((s > MAX_UINT32) | (e > MAX_UINT32))
    if bad.any():
        inst, col = (int(x[0]) for x in np.nonzero(bad))
        event = group.events[int(group.perf_events[col])]
        raise AnalysisError(
            f"{dump.path}: block {int(group.blocks[inst])} event {event.name!r} ends before it starts "
            f"({int(start[inst, col])} > {int(end[inst, col])}) and the times are too large to be a 32-bit wrap"
        )
    return out


def start_times(dump: ETDump, group: BlockGroup) -> np.ndarray:
    """Raw start timestamps (instances x perf events), as Inspector's Event.start_time."""
    return dump.events.start_time[_gather(dump, group)]


def event_debug_rows(dump: ETDump, group: BlockGroup) -> list[list[int]]:
    """Per event of `group`, the rows of the debug events Inspector reads its `debug_data` from.

    Inspector takes an Event's debug data from the first instance of its block (later
    instances must hold equal values), and a repeated EventSignature keeps its first position
    but the InstructionEvent of its last occurrence; the same collation as `_layout`.
    """
    ev = dump.events
    block = int(group.blocks[0])
    lo, hi = int(dump.block_event_start[block]), int(dump.block_event_start[block + 1])
    instructions: OrderedDict[tuple[Any, ...], tuple[list[int], list[int]]] = OrderedDict()
    for i in range(lo, hi):
        kind = int(ev.kind[i])
        if kind not in (KIND_PROFILE, KIND_DEBUG):
            continue
        isig = (int(ev.instruction_id[i]), int(ev.chain_index[i]), int(ev.delegate_id_int[i]),
                dump.string(int(ev.delegate_id_str[i])))
        profiles, debugs = instructions.setdefault(isig, ([], []))
        if kind == KIND_PROFILE:
            profiles.append(i)
        elif not ev.debug_is_output[i]:
            debugs.append(i)
    rows: OrderedDict[Signature, list[int]] = OrderedDict()
    for isig, (profiles, debugs) in instructions.items():
        if not profiles and not debugs:
            continue
        debug_sig = _event_signature_part(dump, debugs[0]) if debugs else None
        if not profiles:
            rows[(isig[0], None, debug_sig)] = debugs
        for p in profiles:
            rows[(isig[0], _event_signature_part(dump, p), debug_sig)] = debugs
    if len(rows) != len(group.events):  # the group's layout came from this very collation
        raise AnalysisError(f"{dump.path}: block {block} does not match its event group")
    return list(rows.values())

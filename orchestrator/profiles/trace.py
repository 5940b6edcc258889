"""Chrome / Perfetto trace of one ETDump (one process run): every profiled event as a slice.

Trace Event Format, JSON object form: complete events (`ph: "X"`) with `ts`/`dur` in
microseconds relative to the first event, one thread track per event block (delegate
kernels get a track of their own so they nest cleanly under DELEGATE_CALL). Loads in
ui.perfetto.dev and chrome://tracing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.cache import write_text_atomic
from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etdump import read_etdump
from orchestrator.profiles.etdump_events import block_key, durations_ms, group_blocks, start_times
from orchestrator.profiles.etrecord import load_etrecord

PathLike = str | os.PathLike[str]
_PID = 1


def build_trace(etdump: PathLike, run_block: int | None = None, etrecord: PathLike | None = None) -> dict[str, Any]:
    """The trace as a dict. `run_block` keeps only that run_data block (0-based, file order)."""
    dump = read_etdump(etdump)
    if run_block is not None and not 0 <= run_block < dump.num_blocks:
        raise AnalysisError(f"{etdump}: --run-block {run_block} out of range (the file has {dump.num_blocks} blocks)")
    record = load_etrecord(etrecord) if etrecord is not None else None

    slices: list[tuple[int, float, int, str, dict[str, Any]]] = []  # (start ns, dur us, tid, name, args)
    tracks: dict[str, int] = {}
    name_uses: dict[str, int] = {}
    for group in group_blocks(dump):
        uses = name_uses[group.name] = name_uses.get(group.name, 0) + 1
        key = block_key(group.name, uses)
        keep = np.ones(len(group.blocks), dtype=bool) if run_block is None else group.blocks == run_block
        if not keep.any() or group.perf_events.size == 0:
            continue
        durations = durations_ms(dump, group)[keep] * 1000.0
        starts = start_times(dump, group)[keep]
        blocks = group.blocks[keep]
        for col, index in enumerate(group.perf_events):
            event = group.events[int(index)]
            track = f"{key} · delegate" if event.is_delegated_op else key
            tid = tracks.setdefault(track, len(tracks) + 1)
            args: dict[str, Any] = {"event_block": key, "event_index": int(index), "instruction_id": event.instruction_id}
            if event.delegate_debug_identifier is not None:
                args["delegate_debug_identifier"] = event.delegate_debug_identifier
            if record is not None:
                link = record.link(event.name, event.instruction_id, event.delegate_debug_identifier)
                if link.op_types:
                    args["op_types"] = list(link.op_types)
                if link.delegate_backend_name:
                    args["delegate_backend_name"] = link.delegate_backend_name
            for row in range(starts.shape[0]):
                slices.append(
                    (int(starts[row, col]), float(durations[row, col]), tid, event.name, {**args, "run_block": int(blocks[row])})
                )

    slices.sort(key=lambda s: (s[0], -s[1]))  # parents (longer) before children at equal start
    t0 = slices[0][0] if slices else 0
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "name": "process_name", "args": {"name": Path(str(etdump)).name}},
    ]
    for track, tid in tracks.items():
        events.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_name", "args": {"name": track}})
        events.append({"ph": "M", "pid": _PID, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}})
    for start, dur_us, tid, name, args in slices:
        events.append(
            {"ph": "X", "pid": _PID, "tid": tid, "name": name, "cat": args["event_block"],
             "ts": (start - t0) / 1000.0, "dur": dur_us, "args": args}
        )
    return {"traceEvents": events, "displayTimeUnit": "ns", "otherData": {"etdump": str(etdump), "version": dump.version}}


def write_trace(
    etdump: PathLike, out: PathLike, run_block: int | None = None, etrecord: PathLike | None = None
) -> int:
    """Write the trace JSON to `out` (atomically); returns the number of slices."""
    trace = build_trace(etdump, run_block, etrecord)
    out_path = Path(out)
    try:
        write_text_atomic(out_path, json.dumps(trace, separators=(",", ":")))
    except OSError as exc:
        raise AnalysisError(f"{out_path}: cannot write trace: {exc.strerror or exc}") from None
    return sum(1 for e in trace["traceEvents"] if e["ph"] == "X")

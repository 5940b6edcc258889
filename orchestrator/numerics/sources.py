"""The two sides of a numerical comparison, loaded without torch.

- `load_reference`: the AOT intermediate outputs captured at export time
  (`artifacts/numerics_reference.py` writes them; the format is described there).
- `runtime_outputs`: one process run's intermediate outputs, from its ETDump and debug buffer,
  keyed by debug handle exactly as Inspector's `_get_runtime_intermediate_outputs_and_op_names`
  does (events without op types and OPERATOR_CALL skipped; a DELEGATE_CALL skipped when inner
  delegated events of its backend already carry data; on equal handles the highest instruction
  id wins; overlapping handles merged).
"""

from __future__ import annotations

import json
import zipfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from orchestrator.base.errors import AnalysisError
from orchestrator.numerics.mapping import (
    DebugHandle,
    merge_runtime_overlapping_debug_handles,
)
from orchestrator.profiles.etdump import read_etdump
from orchestrator.profiles.etdump_events import event_debug_rows, group_blocks
from orchestrator.profiles.etdump_values import debug_value
from orchestrator.profiles.etrecord import ETRecordInfo

EXCLUDED_EVENTS = frozenset({"OPERATOR_CALL"})  # Inspector's EXCLUDED_EVENTS_FOR_INTERMEDIATE_OUTPUT


@dataclass(frozen=True, eq=False)
class AotReference:
    """The reference graph's intermediate outputs and what names each op."""

    path: str
    graph: str  # "exported_program" (ATen) or "edge_dialect_exported_program"
    outputs: dict[DebugHandle, Any]  # in graph execution order
    op_names: dict[DebugHandle, list[str]]
    stack_traces: dict[str, str | None]  # op name -> stack trace
    module_stacks: dict[str, tuple[tuple[str, str], ...]]  # op name -> ((module path, module type), ...)


@dataclass(frozen=True, eq=False)
class RuntimeOutputs:
    """One run's intermediate outputs: runtime handle -> (value, num_outputs), and the op names."""

    outputs: dict[DebugHandle, tuple[Any, int]]
    op_names: dict[DebugHandle, list[str]]


def load_reference(path: str | Path) -> AotReference:
    name = str(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            index = json.loads(bytes(npz["index"]).decode())
            arrays = {key: npz[key] for key in npz.files if key != "index"}
    except FileNotFoundError:
        raise AnalysisError(f"{name}: no such numerics reference") from None
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{name}: not a numerics reference: {exc}") from None

    def decode(value: Any) -> Any:
        if value is None:
            return None
        if "t" in value:
            return arrays[value["t"]]
        if "l" in value:
            return [decode(v) for v in value["l"]]
        return value.get("s")

    try:
        outputs = {tuple(e["handle"]): decode(e["value"]) for e in index["entries"]}
        op_names = {tuple(h): list(names) for h, names in index["op_names"]}
        traces: dict[str, str | None] = {}
        for _, by_op in index["stack_traces"]:
            for op, trace in by_op.items():
                traces.setdefault(op, trace)
        stacks = {op: tuple((str(p), str(t)) for p, t in frames) for op, frames in index["module_stacks"].items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise AnalysisError(f"{name}: malformed numerics reference: {exc!r}") from None
    return AotReference(name, str(index.get("graph", "")), outputs, op_names, traces, stacks)


def runtime_outputs(etdump: str | Path, debug_buffer: str | Path, etrecord: ETRecordInfo,
                    written: int | None = None) -> RuntimeOutputs:
    """Inspector's runtime intermediate outputs for one ETDump and its debug buffer. `written`: the bytes the
    runner wrote to the buffer (its result's `debug_buffer_used`): a file of another length is not whole."""
    dump = read_etdump(etdump)
    try:  # mapped, not read: only the first execution's tensors are ever touched
        size = Path(debug_buffer).stat().st_size
        buffer: Any = np.memmap(debug_buffer, dtype=np.uint8, mode="r") if size else b""
    except OSError as exc:
        raise AnalysisError(f"{debug_buffer}: cannot read the debug buffer: {exc.strerror or exc}") from None
    if written is not None and size != written:  # only the first execution is read: a cut would go unseen
        guess = "cut short?" if size < written else "another run's buffer?"
        raise AnalysisError(f"{debug_buffer}: not a whole debug buffer: {size} bytes, the runner wrote {written} "
                            f"({guess})")
    events = []  # (name, instruction id, handles, op types, num outputs, delegated, backend, data)
    for group in group_blocks(dump):
        rows = event_debug_rows(dump, group)
        for info, debug_rows in zip(group.events, rows, strict=False):
            instruction = info.instruction_id
            link = etrecord.link(info.name, instruction, info.delegate_debug_identifier)
            if not link.op_types:
                continue
            data = [debug_value(dump, r, buffer, str(debug_buffer)) for r in debug_rows]
            num_outputs = etrecord.num_outs.get(str(instruction), 1) if str(instruction) in etrecord.handle_map else 1
            handles = link.debug_handles
            handle = (handles,) if isinstance(handles, int) else tuple(handles or ())
            events.append((info.name, instruction, handle, num_outputs, info.is_delegated_op,
                           link.delegate_backend_name, data))

    inner: dict[str | None, set[int]] = defaultdict(set)
    for _name, _, handle, _, delegated, backend, data in events:
        if delegated and data:
            inner[backend].update(handle)
    found: dict[DebugHandle, tuple[int, Any, int]] = {}
    op_names: dict[DebugHandle, list[str]] = {}
    for name, instruction, handle, num_outputs, _, backend, data in events:
        if name in EXCLUDED_EVENTS:
            continue
        if name == "DELEGATE_CALL" and inner.get(backend) and not set(handle).isdisjoint(inner[backend]):
            continue
        current = found.get(handle, (-1, None, num_outputs))
        if instruction > current[0]:
            found[handle] = (instruction, data, num_outputs)
            op_names[handle] = [name]
    merged = merge_runtime_overlapping_debug_handles(found)
    return RuntimeOutputs({k: (v[1], v[2]) for k, v in merged.items()}, op_names)


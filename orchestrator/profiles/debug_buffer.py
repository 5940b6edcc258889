"""How big the runner's debug buffer must be to hold every intermediate output, from the ETRecord.

With `--dump_intermediate_outputs` the ExecuTorch runtime copies, per measured execution, the
output of every kernel call, every argument (inputs and outputs) of every delegate call, and at
the end the program outputs, each aligned to 64 bytes in the buffer. A buffer that is too small
is fatal in ExecuTorch's own runtimes (ETDumpGen aborts); our runner refuses the tensor and says
so, and `etfarm` turns that into an error. So the size is computed from the ETRecord, never guessed:

    per execution = outputs of the ops no delegate took
                  + per delegate call: the tensors crossing its boundary (activation inputs, outputs)
                  + program outputs,              each tensor plus 64 bytes of alignment
    buffer        = executions * per execution * MARGIN + SLACK_BYTES

The ops a delegate took are those whose debug handles the ETRecord's `debug_handle_map` lists
for a `delegate_map` instruction. MARGIN and SLACK_BYTES cover copies that `to_executorch`
passes add after the ETRecord's graph (dim-order conversions). Read from the ETRecord's JSON
members: no torch.
"""

from __future__ import annotations

import json
import math
import os
import zipfile
from typing import Any

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etrecord import (
    DEBUG_HANDLE_MAP,
    DELEGATE_MAP,
    FORWARD,
    _edge_program_member,
    read_member,
)

ALIGNMENT_BYTES = 64  # ETDumpGen's BufferDataSink aligns every tensor to 64 bytes
MARGIN = 1.25
SLACK_BYTES = 1 << 20
# torch.export serde ScalarType -> bytes per element; unknown types count as 8 (an upper bound
# for every type the runtime can log).
_ITEM_BYTES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 2, 7: 4, 8: 8, 9: 4, 10: 8, 11: 16, 12: 1, 13: 2, 28: 2, 29: 4, 30: 8}


def intermediate_bytes_per_execution(etrecord: str | os.PathLike[str]) -> int:
    """Upper bound of the debug-buffer bytes one execution of the forward method logs."""
    name = str(etrecord)
    try:
        with zipfile.ZipFile(etrecord) as zf:
            member = _edge_program_member(set(zf.namelist()))
            if member is None:
                raise AnalysisError(f"{name}: ETRecord has no edge program to size the debug buffer from")
            program = json.loads(read_member(zf, member, name))
            members = set(zf.namelist())
            handles = json.loads(read_member(zf, DEBUG_HANDLE_MAP, name)) if DEBUG_HANDLE_MAP in members else {}
            delegates = json.loads(read_member(zf, DELEGATE_MAP, name)) if DELEGATE_MAP in members else {}
    except FileNotFoundError:
        raise AnalysisError(f"{name}: no such ETRecord file") from None
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise AnalysisError(f"{name}: cannot read ETRecord: {exc}") from None
    try:
        return _per_execution(program["graph_module"], _delegated_handles(handles, delegates))
    except (KeyError, TypeError, AttributeError) as exc:
        raise AnalysisError(f"{name}: unexpected edge program layout in ETRecord: {exc!r}") from None


def debug_buffer_size(etrecord: str | os.PathLike[str], executions: int) -> int:
    """The debug buffer for `executions` measured executions (warmup logs nothing)."""
    per_execution = intermediate_bytes_per_execution(etrecord)
    return math.ceil(max(1, executions) * per_execution * MARGIN) + SLACK_BYTES


def _delegated_handles(handle_maps: Any, delegate_maps: Any) -> dict[int, str]:
    """Debug handle -> the delegate instruction that runs it."""
    handle_map = (handle_maps or {}).get(FORWARD) or {}
    delegate_map = (delegate_maps or {}).get(FORWARD) or {}
    out: dict[int, str] = {}
    for iid in delegate_map:
        found = handle_map.get(str(iid)) or []
        for handle in [found] if isinstance(found, int) else found:
            out[int(handle)] = str(iid)
    return out


def _per_execution(graph_module: dict[str, Any], delegated: dict[int, str]) -> int:
    graph = graph_module["graph"]
    values = graph.get("tensor_values") or {}
    constants = _constant_names(graph_module.get("signature") or {})

    def nbytes(tensor_name: str) -> int:
        meta = values.get(tensor_name)
        if meta is None:
            return 0
        elements = math.prod(_dim(d, tensor_name) for d in meta.get("sizes", []))
        return elements * _ITEM_BYTES.get(int(meta.get("dtype", 0)), 8) + ALIGNMENT_BYTES

    graph_outputs = _tensor_names(graph.get("outputs"))
    total = sum(nbytes(n) for n in graph_outputs)  # logged once more as program outputs
    groups: dict[str, tuple[set[str], set[str]]] = {}  # delegate instruction -> (produced, consumed)
    owner: dict[str, str | None] = {}  # tensor -> delegate instruction producing it (None: a kernel)
    consumers: dict[str, set[str | None]] = {}
    for node in graph.get("nodes", []):
        if node.get("target") == "_operator.getitem":
            continue
        handle = (node.get("metadata") or {}).get("debug_handle")
        group = delegated.get(int(handle)) if handle else None
        outputs = _tensor_names(node.get("outputs"))
        inputs = [n for n in _tensor_names([a.get("arg") for a in node.get("inputs", [])]) if n not in constants]
        for name in outputs:
            owner[name] = group
        for name in inputs:
            consumers.setdefault(name, set()).add(group)
        if group is None:
            total += sum(nbytes(n) for n in outputs)  # a kernel call logs its outputs
        else:
            produced, consumed = groups.setdefault(group, (set(), set()))
            produced.update(outputs)
            consumed.update(inputs)
    for group, (produced, consumed) in groups.items():  # a delegate call logs all its arguments
        crossing_in = consumed - produced
        crossing_out = {n for n in produced if n in graph_outputs or consumers.get(n, set()) - {group}}
        total += sum(nbytes(n) for n in crossing_in | crossing_out)
    return total + ALIGNMENT_BYTES


def _dim(size: dict[str, Any], tensor_name: str) -> int:
    if "as_int" in size:
        return int(size["as_int"])
    hint = (size.get("as_expr") or {}).get("hint")
    if isinstance(hint, dict) and "as_int" in hint:
        return int(hint["as_int"])
    if isinstance(hint, int):
        return hint
    raise AnalysisError(f"tensor {tensor_name} has a dynamic size without a hint; the debug buffer cannot be sized")


def _tensor_names(args: Any) -> list[str]:
    """Names of the tensors in serialized arguments (as_tensor / as_tensors / optional tensors)."""
    out: list[str] = []
    for arg in args or []:
        if not isinstance(arg, dict):
            continue
        if "as_tensor" in arg:
            out.append(arg["as_tensor"]["name"])
        elif "as_tensors" in arg:
            out.extend(t["name"] for t in arg["as_tensors"])
        elif "as_optional_tensors" in arg:
            out.extend(t["as_tensor"]["name"] for t in arg["as_optional_tensors"] if isinstance(t, dict) and "as_tensor" in t)
    return out


def _constant_names(signature: dict[str, Any]) -> set[str]:
    """Parameters, buffers and constants: they live in the program, not in the debug buffer."""
    names = set()
    for spec in signature.get("input_specs", []):
        for kind, body in spec.items():
            if kind == "user_input":
                continue
            arg = body.get("arg") or {}
            name = arg.get("name") or (arg.get("as_tensor") or {}).get("name")
            if name:
                names.add(name)
    return names

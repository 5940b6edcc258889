"""Link ETDump events to the ops of the model, from the ETRecord, without importing torch.

An ETRecord is a zip: `debug_handle_map` and `delegate_map` (JSON: method -> instruction
id -> debug handles / delegate metadata) and the edge program in torch.export's JSON serde
form (`edge_dialect_exported_program/forward`). Opening it through executorch costs the
torch import (~5 s); reading the JSON members costs milliseconds. We reproduce what
Inspector puts in an Event (`_gen_resolve_debug_handles`, `_associate_with_op_graph_nodes`,
`FXOperatorGraph`): debug handles, op types, stack traces, module hierarchy, backend name.

Parsed records are cached per (path, mtime, size): one parse per model, reused for every
run and device of a session.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.file_memo import FileMemo, file_key

ETRECORD_IDENTIFIER = "ETRECORD_V0"
DEBUG_HANDLE_MAP = "debug_handle_map"
DELEGATE_MAP = "delegate_map"
NUM_OUTS_MAP = "instruction_id_to_num_outs_map"
EDGE_PROGRAM = "edge_dialect_exported_program"
FORWARD = "forward"  # Inspector links every block against the forward method
# One ETRecord member may inflate to at most this (the edge program of a large model is ~100 MB of JSON).
ETRECORD_MEMBER_MAX_BYTES = 512 << 20
# torch.export's serialized ScalarType (torch/_export/serde/schema.py) -> the dtype names of pte_info and numpy.
SERDE_DTYPES = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64", 6: "float16", 7: "float32", 8: "float64",
                12: "bool", 13: "bfloat16"}
RESERVED_FRAMEWORK_EVENT_NAMES = frozenset({"Method::init", "Program::load_method", "Method::execute"})
_SKIPPED_TARGETS = frozenset({"_operator.getitem", "memory.alloc"})  # FXOperatorGraph drops them
_MODULE_STACK_DELIMITER = ";"


@dataclass(frozen=True)
class OpNode:
    """An op of the edge graph, as Inspector's OperatorNode (name carries FX's trailing '_')."""

    name: str
    op: str
    stack_trace: str | None
    nn_module_stack: dict[str, tuple[str, str]] | None


@dataclass(frozen=True)
class EventLink:
    """What Inspector attaches to an Event from the ETRecord."""

    debug_handles: int | tuple[int, ...] | None = None
    op_types: tuple[str, ...] = ()
    stack_traces: dict[str, str | None] = field(default_factory=dict)
    module_hierarchy: dict[str, dict[str, tuple[str, str]] | None] = field(default_factory=dict)
    delegate_backend_name: str | None = None
    # Not in Inspector: for a delegate call or one of its kernels, the modules of every op the
    # delegate runs (each op's innermost module, in graph order, once each).
    delegate_covers: tuple[str, ...] = ()


@dataclass(frozen=True)
class TensorMeta:
    """A program input or output as the edge program declares it: dtype (`float32`, ...; None when not a tensor
    or of a type etfarm does not name) and sizes (None for a symbolic one)."""

    dtype: str | None
    sizes: tuple[int | None, ...] = ()


@dataclass(frozen=True, eq=False)
class ETRecordInfo:
    path: str
    handle_map: dict[str, Any]  # instruction id (str) -> debug handle(s), for FORWARD
    delegate_map: dict[str, Any] | None  # instruction id (str) -> {"name", "delegate_map"}
    nodes_by_handle: dict[int, tuple[OpNode, ...]]
    num_outs: dict[str, int] = field(default_factory=dict)  # instruction id (str) -> outputs of a delegate call
    inputs: tuple[TensorMeta, ...] | None = None  # the edge program's user inputs and outputs (None: not read)
    outputs: tuple[TensorMeta, ...] | None = None
    _links: dict[tuple[str, int, Any], EventLink] = field(default_factory=dict)

    def link(self, name: str, instruction_id: int | None, delegate_debug_identifier: int | str | None) -> EventLink:
        """The ETRecord data Inspector would attach to an event with these fields."""
        key = (name, -2 if instruction_id is None else instruction_id, delegate_debug_identifier)
        found = self._links.get(key)
        if found is None:
            found = self._links[key] = self._link(name, instruction_id, delegate_debug_identifier)
        return found

    def _link(self, name: str, instruction_id: int | None, ident: int | str | None) -> EventLink:
        handles, backend = self._resolve_handles(name, instruction_id, ident)
        covers = self._delegate_covers(instruction_id) if backend is not None else ()
        if name in RESERVED_FRAMEWORK_EVENT_NAMES or handles is None:
            return EventLink(_freeze(handles), (), {}, {}, backend, covers)
        op_types: list[str] = []
        stack_traces: dict[str, str | None] = {}
        hierarchy: dict[str, Any] = {}
        for handle in [handles] if isinstance(handles, int) else handles:
            for node in self.nodes_by_handle.get(handle, ()) if _hashable(handle) else ():
                if node.name not in stack_traces:
                    stack_traces[node.name] = node.stack_trace
                    hierarchy[node.name] = node.nn_module_stack
                if node.op:
                    op_types.append(node.op)
        return EventLink(_freeze(handles), tuple(op_types), stack_traces, hierarchy, backend, covers)

    def _delegate_covers(self, instruction_id: int | None) -> tuple[str, ...]:
        """Innermost module of every op behind the delegate instruction's debug handles."""
        handles = self.handle_map.get(str(instruction_id)) if instruction_id is not None else None
        modules: dict[str, None] = {}
        for handle in [handles] if isinstance(handles, int) else handles or ():
            for node in self.nodes_by_handle.get(handle, ()) if _hashable(handle) else ():
                path = innermost_module(node.nn_module_stack)
                if path:
                    modules[path] = None
        return tuple(modules)

    def _resolve_handles(self, name: str, instruction_id: int | None, ident: int | str | None) -> tuple[Any, str | None]:
        # Mirrors EventBlock._gen_resolve_debug_handles, including its substring fallback.
        if instruction_id is None or (iid := str(instruction_id)) not in self.handle_map:
            return None, None
        delegate_map = self.delegate_map
        if ident is None:
            backend = None
            if name == "DELEGATE_CALL" and delegate_map is not None and (meta := delegate_map.get(iid)) is not None:
                backend = meta.get("name", "")
            return self.handle_map[iid], backend
        if delegate_map is None or (meta := delegate_map.get(iid)) is None:
            return self.handle_map[iid], None
        backend = meta.get("name", "")
        kernels = meta.get("delegate_map") or {}
        handles = kernels.get(ident)  # type: ignore[call-overload]
        if handles is None:
            handles = kernels.get(str(ident))
            for key, value in kernels.items():
                if key in str(ident):
                    handles = value
        return handles, backend


def innermost_module(stack: dict[str, tuple[str, str]] | None) -> str:
    """The deepest module path of an op's nn_module_stack ('' for the model itself or none)."""
    if not stack:
        return ""
    return str(list(stack.values())[-1][0])


def _hashable(value: Any) -> bool:
    return isinstance(value, (int, str))


def _freeze(handles: Any) -> int | tuple[int, ...] | None:
    return tuple(handles) if isinstance(handles, list) else handles


_RECORDS: FileMemo[ETRecordInfo] = FileMemo()


def clear_cache() -> None:
    """Forget parsed ETRecords (benchmarks measure the cold path with it)."""
    _RECORDS.clear()


def load_etrecord(path: str | os.PathLike[str]) -> ETRecordInfo:
    """Parse an ETRecord (kept while the file is unchanged). Raises AnalysisError."""
    return _RECORDS.get([file_key(path, "ETRecord file")], lambda: _parse(Path(path), str(path)))


def _parse(path: Path, name: str) -> ETRecordInfo:
    try:
        with zipfile.ZipFile(path) as zf:
            members = set(zf.namelist())
            if ETRECORD_IDENTIFIER not in members:
                raise AnalysisError(f"{name}: not an ETRecord (no {ETRECORD_IDENTIFIER} member)")
            handle_maps = _json_member(zf, DEBUG_HANDLE_MAP, name) if DEBUG_HANDLE_MAP in members else None
            delegate_maps = _json_member(zf, DELEGATE_MAP, name) if DELEGATE_MAP in members else None
            num_outs_maps = _json_member(zf, NUM_OUTS_MAP, name) if NUM_OUTS_MAP in members else None
            program_member = _edge_program_member(members)
            program = _json_member(zf, program_member, name) if program_member else None
    except zipfile.BadZipFile:
        raise AnalysisError(f"{name}: not an ETRecord (not a zip file)") from None
    except (OSError, EOFError, zipfile.LargeZipFile, NotImplementedError) as exc:
        raise AnalysisError(f"{name}: cannot read ETRecord: {exc}") from None
    if not isinstance(handle_maps, dict):
        raise AnalysisError(f"{name}: ETRecord has no {DEBUG_HANDLE_MAP}")
    method = _pick_method(handle_maps)
    handle_map = handle_maps.get(method) or {}
    delegate_map = delegate_maps.get(method) if isinstance(delegate_maps, dict) else None
    try:
        nodes = _nodes_by_handle(program) if program is not None else {}
        inputs, outputs = _signature(program) if program is not None else (None, None)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnalysisError(f"{name}: unexpected edge program layout in ETRecord: {exc}") from None
    num_outs = num_outs_maps.get(FORWARD) if isinstance(num_outs_maps, dict) else None
    return ETRecordInfo(
        name, handle_map if isinstance(handle_map, dict) else {}, delegate_map if isinstance(delegate_map, dict) else None, nodes,
        num_outs={str(k): int(v) for k, v in num_outs.items()} if isinstance(num_outs, dict) else {},
        inputs=inputs, outputs=outputs,
    )


def read_edge_program(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The ETRecord's edge program, torch.export's JSON serde form (None when it holds none). Raises AnalysisError."""
    name = str(path)
    try:
        with zipfile.ZipFile(path) as zf:
            member = _edge_program_member(set(zf.namelist()))
            program = _json_member(zf, member, name) if member else None
    except zipfile.BadZipFile:
        raise AnalysisError(f"{name}: not an ETRecord (not a zip file)") from None
    except (OSError, EOFError, zipfile.LargeZipFile, NotImplementedError) as exc:
        raise AnalysisError(f"{name}: cannot read ETRecord: {exc}") from None
    return program if isinstance(program, dict) else None


def read_member(zf: zipfile.ZipFile, member: str, name: str) -> bytes:
    """A member's bytes, refused past ETRECORD_MEMBER_MAX_BYTES: a zip bomb (a few KB that inflate
    to gigabytes) fails as an AnalysisError instead of exhausting memory. The declared size is
    checked first; zipfile never inflates past it (a lying header ends in a CRC error), and the
    read stops at the cap regardless."""
    cap = ETRECORD_MEMBER_MAX_BYTES
    declared = zf.getinfo(member).file_size
    if declared > cap:
        raise AnalysisError(f"{name}: ETRecord member {member} inflates to {declared} bytes, over the {cap}-byte cap")
    with zf.open(member) as fh:
        data = fh.read(cap + 1)
    if len(data) > cap:
        raise AnalysisError(f"{name}: ETRecord member {member} inflates past the {cap}-byte cap")
    return data


def _json_member(zf: zipfile.ZipFile, member: str, name: str) -> Any:
    try:
        return json.loads(read_member(zf, member, name))
    except (ValueError, UnicodeDecodeError) as exc:
        raise AnalysisError(f"{name}: ETRecord member {member} is not valid JSON: {exc}") from None


def _pick_method(maps: dict[str, Any]) -> str:
    # Inspector always uses "forward"; a single-method program under another name still links.
    if FORWARD in maps or len(maps) != 1:
        return FORWARD
    return next(iter(maps))


def _edge_program_member(members: set[str]) -> str | None:
    preferred = f"{EDGE_PROGRAM}/{FORWARD}"
    if preferred in members:
        return preferred
    if EDGE_PROGRAM in members:  # older single-program layout
        return EDGE_PROGRAM
    extras = ("_state_dict", "_constants", "_example_inputs")
    candidates = sorted(m for m in members if m.startswith(f"{EDGE_PROGRAM}/") and not m.endswith(extras))
    return candidates[0] if len(candidates) == 1 else None


def _nodes_by_handle(program: dict[str, Any]) -> dict[int, tuple[OpNode, ...]]:
    """create_debug_handle_to_op_node_mapping over FXOperatorGraph's call_function nodes."""
    graph = program["graph_module"]["graph"]
    out: dict[int, list[OpNode]] = {}
    for node in graph.get("nodes", []):
        target = node.get("target", "")
        if target in _SKIPPED_TARGETS:
            continue
        meta = node.get("metadata") or {}
        handle_text = meta.get("debug_handle")
        if not handle_text:
            continue
        handle = int(handle_text)
        op_node = OpNode(
            name=_fx_name(node) + "_",
            op=op_name(target),
            stack_trace=meta.get("stack_trace") or None,
            nn_module_stack=module_stack(meta.get("nn_module_stack")),
        )
        out.setdefault(handle, []).append(op_node)
    return {h: tuple(v) for h, v in out.items()}


def _signature(program: dict[str, Any]) -> tuple[tuple[TensorMeta, ...] | None, tuple[TensorMeta, ...] | None]:
    """The user inputs and outputs of the edge program (parameters, buffers and mutations left out); None
    for an edge program serialised without its signature."""
    module = program["graph_module"]
    tensors = module["graph"].get("tensor_values") or {}
    specs = module.get("signature")
    if not isinstance(specs, dict):
        return None, None

    def meta(spec: dict[str, Any]) -> TensorMeta:
        return tensor_meta(tensors, (spec.get("arg") or {}).get("as_tensor", {}).get("name"))

    return (tuple(meta(s["user_input"]) for s in specs.get("input_specs") or () if "user_input" in s),
            tuple(meta(s["user_output"]) for s in specs.get("output_specs") or () if "user_output" in s))


def tensor_meta(tensors: dict[str, Any], name: str | None) -> TensorMeta:
    """A tensor of the edge graph (its `tensor_values` entry `name`): dtype and sizes (None for a symbolic size)."""
    value = tensors.get(name) if name is not None else None
    if not isinstance(value, dict):
        return TensorMeta(None)
    sizes = tuple(s["as_int"] if isinstance(s, dict) and isinstance(s.get("as_int"), int) else None
                  for s in value.get("sizes") or ())
    return TensorMeta(SERDE_DTYPES.get(value.get("dtype")), sizes)


def _fx_name(node: dict[str, Any]) -> str:
    # The deserializer names a single-tensor op after its output; otherwise the node name.
    outputs = node.get("outputs") or []
    if len(outputs) == 1 and isinstance(outputs[0], dict) and "as_tensor" in outputs[0]:
        return str(outputs[0]["as_tensor"]["name"])
    return str(node.get("name", ""))


def op_name(target: str) -> str:
    """`node.target.__name__` of the deserialized target, from its serialized path."""
    for prefix in ("executorch.exir.dialects.edge.ops.", "executorch.exir.dialects.backend.ops.", "torch.ops.higher_order."):
        if target.startswith(prefix):
            return target[len(prefix) :]
    if target.startswith("torch.ops."):  # OpOverload.__name__ is "op.overload"
        return ".".join(target.split(".")[3:])
    return target.rsplit(".", 1)[-1]


def module_stack(text: str | None) -> dict[str, tuple[str, str]] | None:
    """torch.export's nn_module_stack deserialization: 'key,path,type;...'."""
    if not text:
        return None
    stack: dict[str, tuple[str, str]] = {}
    for item in text.split(_MODULE_STACK_DELIMITER):
        parts = _split_top_level(item)
        if len(parts) != 3:
            return None
        stack[parts[0]] = (parts[1], parts[2])
    return stack


def _split_top_level(item: str) -> list[str]:
    if "(" not in item and "[" not in item:  # the common case: no nesting to respect
        return item.split(",")
    out, start, depth = [], 0, 0
    for end, ch in enumerate(item):
        if ch in "[(":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(item[start:end])
            start = end + 1
    out.append(item[start:])
    return out

"""What a model is, layer by layer, and what changed between two of them: ops, shapes, parameters, dtypes.

Read from the ETRecord's edge program (torch.export's JSON, no torch import): every op node with its
identity (profiles/op_identity.py: module path, ATen op, occurrence in graph order), its output
shape(s) and dtype; every parameter with its module, name and shape. `structure_diff` of two models
says which ops were added or removed, how each op's count moved, which layers' output shapes and
parameter shapes changed (a layer made 8x wider names its module, `weight [32, 3, 3, 3] -> [256, 3, 3, 3]`),
the total parameter count, the dtypes, and (given) the program sizes.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from orchestrator.profiles.etrecord import innermost_module, module_stack, op_name, read_edge_program, tensor_meta
from orchestrator.profiles.file_memo import FileMemo, file_key
from orchestrator.profiles.op_identity import MODEL, OpIdentity, numbered

Shape = tuple[int | None, ...]
CHANGES_LISTED = 12  # shape changes named per pair; the rest counted
_NOT_OPS = frozenset({"_operator.getitem", "memory.alloc"})


@dataclass(frozen=True)
class LayerOp:
    """One op node of the edge graph: what it is in the model, and what it makes."""

    key: OpIdentity
    outputs: tuple[Shape, ...]
    dtype: str | None


@dataclass(frozen=True)
class Parameter:
    module: str  # `features.0`
    name: str  # `weight`
    shape: Shape
    dtype: str | None

    @property
    def count(self) -> int:
        total = 1
        for size in self.shape:
            total *= size or 0
        return total


@dataclass(frozen=True)
class ModelStructure:
    ops: tuple[LayerOp, ...]
    parameters: tuple[Parameter, ...]

    @property
    def parameter_count(self) -> int:
        return sum(p.count for p in self.parameters)

    @property
    def dtypes(self) -> tuple[str, ...]:
        return tuple(sorted({d for d in (*(p.dtype for p in self.parameters), *(o.dtype for o in self.ops)) if d}))


@dataclass(frozen=True)
class ShapeChange:
    """A layer whose shapes differ: `features.0 weight` [32, 3, 3, 3] -> [256, 3, 3, 3], or an op's output."""

    what: str
    a: str
    b: str


@dataclass(frozen=True)
class StructureDiff:
    ops_added: tuple[str, ...]  # identities in B only, as people read them
    ops_removed: tuple[str, ...]
    op_counts: tuple[tuple[str, int, int], ...]  # (op, count in A, in B) where they differ
    shapes: tuple[ShapeChange, ...]  # parameters first, then op outputs; the first CHANGES_LISTED
    shapes_more: int  # changes not listed
    parameters: tuple[int, int]
    dtypes: tuple[tuple[str, ...], tuple[str, ...]]
    program_bytes: tuple[int | None, int | None] = (None, None)

    @property
    def same(self) -> bool:
        return not (self.ops_added or self.ops_removed or self.op_counts or self.shapes
                    or self.parameters[0] != self.parameters[1] or self.dtypes[0] != self.dtypes[1])


_STRUCTURES: FileMemo[ModelStructure | None] = FileMemo()


def read_structure(etrecord: str | os.PathLike[str]) -> ModelStructure | None:
    """The model's structure from its ETRecord (kept while the file is unchanged); None when it holds no edge
    program. Raises AnalysisError for a file that is no ETRecord."""
    return _STRUCTURES.get([file_key(etrecord, "ETRecord file")], lambda: _structure(read_edge_program(etrecord)))


def _structure(program: dict[str, Any] | None) -> ModelStructure | None:
    if program is None:
        return None
    graph = program["graph_module"]["graph"]
    tensors = graph.get("tensor_values") or {}
    nodes = [n for n in graph.get("nodes", []) if n.get("target") and n["target"] not in _NOT_OPS]
    bases = [(innermost_module(module_stack((n.get("metadata") or {}).get("nn_module_stack"))),
              op_name(n["target"]), MODEL, ()) for n in nodes]
    ops = []
    for node, key in zip(nodes, numbered(bases), strict=True):
        outputs = [_tensor(tensors, o["as_tensor"]["name"]) for o in node.get("outputs") or ()
                   if isinstance(o, dict) and isinstance(o.get("as_tensor"), dict)]
        if key is not None:
            ops.append(LayerOp(key, tuple(s for s, _ in outputs), outputs[0][1] if outputs else None))
    parameters = []
    for spec in (program["graph_module"].get("signature") or {}).get("input_specs") or ():
        found = spec.get("parameter") if isinstance(spec, dict) else None
        if isinstance(found, dict):
            module, _, name = str(found.get("parameter_name", "")).rpartition(".")
            shape, dtype = _tensor(tensors, (found.get("arg") or {}).get("name"))
            parameters.append(Parameter(module, name, shape, dtype))
    return ModelStructure(tuple(ops), tuple(parameters))


def _tensor(tensors: dict[str, Any], name: str | None) -> tuple[Shape, str | None]:
    found = tensor_meta(tensors, name)
    return found.sizes, found.dtype


def structure_diff(a: ModelStructure, b: ModelStructure,
                   program_bytes: tuple[int | None, int | None] = (None, None)) -> StructureDiff:
    """What changed from A to B: ops (by identity), op counts, parameter and output shapes, totals, dtypes."""
    ops_a, ops_b = {o.key: o for o in a.ops}, {o.key: o for o in b.ops}
    count_a, count_b = Counter(k.op_name for k in ops_a), Counter(k.op_name for k in ops_b)
    counts = tuple((op, count_a.get(op, 0), count_b.get(op, 0)) for op in dict.fromkeys([*count_a, *count_b])
                   if count_a.get(op, 0) != count_b.get(op, 0))
    params_a = {(p.module, p.name): p for p in a.parameters}
    shapes = [ShapeChange(f"{module or '(model)'} {name}", _shape(p.shape), _shape(q.shape))
              for (module, name), q in {(p.module, p.name): p for p in b.parameters}.items()
              if (p := params_a.get((module, name))) is not None and p.shape != q.shape]
    shapes += [ShapeChange(f"{key.label} output", _shapes(ops_a[key].outputs), _shapes(o.outputs))
               for key, o in ops_b.items() if key in ops_a and ops_a[key].outputs != o.outputs]
    return StructureDiff(
        ops_added=tuple(k.label for k in ops_b if k not in ops_a),
        ops_removed=tuple(k.label for k in ops_a if k not in ops_b),
        op_counts=counts, shapes=tuple(shapes[:CHANGES_LISTED]), shapes_more=max(len(shapes) - CHANGES_LISTED, 0),
        parameters=(a.parameter_count, b.parameter_count), dtypes=(a.dtypes, b.dtypes), program_bytes=program_bytes)


def _shape(shape: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if s is None else str(s) for s in shape) + "]"


def _shapes(shapes: Sequence[Shape]) -> str:
    return ", ".join(_shape(s) for s in shapes) or "-"

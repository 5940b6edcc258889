"""AOT intermediate outputs, captured once per model at export time, for torch-free numerics later.

ExecuTorch's `Inspector.calculate_numeric_gap` compares the runtime's intermediate outputs with
the outputs of the ETRecord's reference graph run on its representative inputs. Recomputing those
needs torch (~5 s to import) for every device and run; we compute them once, while the export has
torch loaded anyway, and store them beside the export, so `orchestrator.numerics` only reads
numpy arrays. The steps are Inspector's own (`_resolve_reference_graph(None)`,
`_get_aot_intermediate_outputs_and_op_names`, `_get_aot_debug_handle_to_stack_traces`), made
with its public helpers on the ETRecord as saved, so the reference is exactly what it would use:

- the ATen `exported_program`, when debug handles propagate back to it, else the edge program;
- `IntermediateOutputCapturer` over that graph with the ETRecord's representative inputs;
- op names and stack traces per debug handle; plus each op's `nn_module_stack` (module paths).

File (`numerics_reference.npz`, numpy only, no pickles): array `index` holds UTF-8 JSON
{format, graph, entries: [{handle, value}], op_names: [[handle, names]], stack_traces:
[[handle, {op: trace}]], module_stacks: {op: [[path, type], ...]}}; tensors are arrays `t<N>`
that values name as {"t": "t<N>"}; lists are {"l": [...]}, scalars {"s": x}, anything else null.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1
INDEX_KEY = "index"


def write_numerics_reference(etrecord_path: Path, out: Path) -> None:
    """Capture the reference intermediate outputs of the ETRecord at `etrecord_path` into `out` (npz)."""
    from executorch.devtools import parse_etrecord
    from executorch.devtools.inspector._inspector_utils import propagate_back_debug_handle

    etrecord = parse_etrecord(str(etrecord_path))
    if etrecord.exported_program and propagate_back_debug_handle(
        etrecord.exported_program, etrecord.export_graph_id, etrecord.edge_dialect_program, False
    ):
        graph_name, program = "exported_program", etrecord.exported_program
    else:
        graph_name, program = "edge_dialect_exported_program", etrecord.edge_dialect_program
    _write_capture(program.module(), (etrecord._representative_inputs,), graph_name, out)  # as Inspector runs it


def write_eager_reference(model: Any, inputs: tuple[Any, ...], out: Path) -> None:
    """The fp32 eager model's intermediate outputs on `inputs`, in the same file format (graph `eager`): its ATen
    graph as torch.export gives it, with debug handles numbered as ExecuTorch numbers missing ones. What a
    quantized program's layers are compared with (numerics/layer_accuracy.py)."""
    import torch
    from executorch.exir.passes.debug_handle_generator_pass import generate_missing_debug_handles

    program = torch.export.export(model, inputs)
    generate_missing_debug_handles(program)
    _write_capture(program.module(), inputs, "eager", out)


def _write_capture(module: Any, run_args: tuple[Any, ...], graph_name: str, out: Path) -> None:
    """Run `module(*run_args)`, capturing every debug-handled op's output, into `out`."""
    from executorch.devtools.inspector._inspector_utils import NodeFilter, get_aot_debug_handle_to_op_name_mapping
    from executorch.devtools.inspector._intermediate_output_capturer import IntermediateOutputCapturer

    op_names = get_aot_debug_handle_to_op_name_mapping(module)
    outputs = IntermediateOutputCapturer(module).run_and_capture(*run_args)

    node_filter = NodeFilter("debug_handle", "call_function", exclude_ops=["getitem"])
    stack_traces: dict[tuple[int, ...], dict[str, str | None]] = {}
    module_stacks: dict[str, list[list[str]]] = {}
    for node in module.graph.nodes:
        if not node_filter.matches(node):
            continue
        handle = node.meta["debug_handle"]
        key = (handle,) if isinstance(handle, int) else tuple(handle)
        stack_traces.setdefault(key, {})[node.name] = node.meta.get("stack_trace")
        stack = node.meta.get("nn_module_stack") or {}
        module_stacks[node.name] = [[str(path), _type_name(kind)] for path, kind in stack.values()]

    arrays: dict[str, np.ndarray] = {}
    index = {
        "format": FORMAT,
        "graph": graph_name,
        "entries": [{"handle": list(k), "value": _encode(v, arrays)} for k, v in outputs.items()],
        "op_names": [[list(k), list(v)] for k, v in op_names.items()],
        "stack_traces": [[list(k), v] for k, v in stack_traces.items()],
        "module_stacks": module_stacks,
    }
    arrays[INDEX_KEY] = np.frombuffer(json.dumps(index).encode(), dtype=np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    out.write_bytes(buffer.getvalue())


def _type_name(kind: Any) -> str:
    if isinstance(kind, str):
        return kind
    return f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', repr(kind))}".lstrip(".")


def _encode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        if tensor.dtype in (torch.bfloat16,) or tensor.dtype.is_floating_point and tensor.element_size() < 2:
            tensor = tensor.to(torch.float32)  # numpy has no bfloat16/float8; the comparison is in float64 anyway
        key = f"t{len(arrays)}"
        arrays[key] = tensor.contiguous().numpy()
        return {"t": key}
    if isinstance(value, (list, tuple)):
        return {"l": [_encode(v, arrays) for v in value]}
    if isinstance(value, (bool, int, float)):
        return {"s": value}
    return None

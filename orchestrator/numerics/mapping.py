"""Match runtime intermediate outputs to AOT ones by debug handle, exactly as ExecuTorch's Inspector.

A port, with numpy arrays in place of torch tensors, of `executorch.devtools.inspector.
_inspector_utils` (ExecuTorch 1.5.1, BSD licence): `merge_runtime_overlapping_debug_handles`,
`map_runtime_aot_intermediate_outputs` and the helpers they call, and `find_op_names`. The
behaviour, including its quirks (the last output of a multi-output runtime value, shape-then-
dtype matching for ops like layer_norm, ties kept by the first entry), is Inspector's, because
`etfarm numerics` promises Inspector's numbers; only the overlap graph is built through an index
of handles instead of comparing every pair (same components, same order).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

DebugHandle = tuple[int, ...]
# (aot handle, aot output) -> (runtime handle, runtime output)
Mapping = dict[tuple[DebugHandle, Any], tuple[DebugHandle, Any]]


def merge_runtime_debug_handles(first: DebugHandle, second: DebugHandle) -> DebugHandle:
    """`_merge_runtime_debug_handles`: first's items not in second, then second's, without duplicates."""
    seen = set(second)
    ordered = [item for item in first if item not in seen]
    seen = set(ordered)
    for item in second:
        if item not in seen:
            ordered.append(item)
            seen.add(item)
    return tuple(ordered)


def merge_runtime_overlapping_debug_handles(
    outputs: dict[DebugHandle, tuple[int, Any, int]],
) -> dict[DebugHandle, tuple[int, Any, int]]:
    """Merge entries whose handles overlap; the value of the highest instruction id wins (ties: the earlier)."""
    merged: dict[DebugHandle, tuple[int, Any, int]] = {}
    for handle, value in outputs.items():
        current, last = handle, value
        overlapping = []
        for existing, existing_value in merged.items():
            if set(handle) & set(existing):
                if existing_value[0] < value[0]:
                    current = merge_runtime_debug_handles(existing, current)
                else:
                    current = merge_runtime_debug_handles(current, existing)
                    last = existing_value
                overlapping.append(existing)
        for existing in overlapping:
            merged.pop(existing)
        merged[current] = last
    return merged


def _components(aot: dict[DebugHandle, Any], runtime: dict[DebugHandle, tuple[Any, int]]) -> list[list[int]]:
    """Connected components of the AOT/runtime overlap graph, in Inspector's order.

    Nodes are the AOT entries then the runtime entries; two nodes of different sources are
    joined when their handles share an item. Components come out ordered by their first node
    (Inspector's DFS from each unvisited node in order); the order inside one does not matter.
    """
    handles = [h for h in aot] + [h for h in runtime]
    n_aot = len(aot)
    by_item: dict[int, tuple[list[int], list[int]]] = {}
    for node, handle in enumerate(handles):
        for item in set(handle):
            by_item.setdefault(item, ([], []))[0 if node < n_aot else 1].append(node)
    parent = list(range(len(handles)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for aot_nodes, runtime_nodes in by_item.values():
        if aot_nodes and runtime_nodes:
            root = find(aot_nodes[0])
            for other in aot_nodes[1:] + runtime_nodes:
                other_root = find(other)
                if other_root != root:
                    parent[other_root] = root
    components: dict[int, list[int]] = {}
    for node in range(len(handles)):
        components.setdefault(find(node), []).append(node)
    return sorted(components.values(), key=lambda c: c[0])


def map_runtime_aot_intermediate_outputs(
    aot: dict[DebugHandle, Any], runtime: dict[DebugHandle, tuple[Any, int]]
) -> Mapping:
    """`map_runtime_aot_intermediate_outputs`: pair each runtime output with its AOT counterpart."""
    aot_items = list(aot.items())
    runtime_items = list(runtime.items())
    n_aot = len(aot_items)
    mapping: Mapping = {}
    for component in _components(aot, runtime):
        aot_list = [aot_items[i] for i in component if i < n_aot]
        runtime_list = [(runtime_items[i - n_aot][0], *runtime_items[i - n_aot][1]) for i in component if i >= n_aot]
        if not aot_list or not runtime_list:
            continue
        if len(runtime_list) != 1:
            raise ValueError(f"Expected only one runtime debug handle, but found {len(runtime_list)}")
        runtime_handle, runtime_output, num_outputs = runtime_list[0]
        for index in range(num_outputs):
            result = _process_single_runtime_output(aot_list, runtime_handle, runtime_output, num_outputs, index)
            if result is not None:
                mapping[result[0]] = result[1]
    return mapping


def _process_single_runtime_output(
    aot_list: list[tuple[DebugHandle, Any]], runtime_handle: DebugHandle, runtime_output: Any, num_outputs: int,
    output_index: int,
) -> tuple[tuple[DebugHandle, Any], tuple[DebugHandle, Any]] | None:
    negative_index = -1 * (output_index + 1)
    aot_handle, aot_output = _combine_aot_overlapped(aot_list, runtime_handle, negative_index)
    if aot_handle == (-1,):
        return None
    if isinstance(aot_output, Sequence):
        aot_output, mapped = _map_sequence_aot_output(aot_output, runtime_output, negative_index)
    else:
        mapped = _map_non_sequence_aot_output(aot_output, runtime_output, num_outputs, negative_index)
    return (aot_handle, _hashable(aot_output)), (runtime_handle, mapped)


class _Keyed:
    """Wraps an AOT output so it can be part of a dict key (Inspector keys by the tensor object)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return _Keyed(value)


def unwrap(value: Any) -> Any:
    return value.value if isinstance(value, _Keyed) else value


def _combine_aot_overlapped(
    aot_nodes: list[tuple[DebugHandle, Any]], runtime_handle: DebugHandle, negative_index: int
) -> tuple[DebugHandle, Any]:
    aot_map = dict(aot_nodes)
    combined = [key[0] for key in aot_map]
    if not set(combined).issubset(set(runtime_handle)):
        return (-1,), None
    key = (runtime_handle[negative_index],)
    if key not in aot_map:
        return (-1,), None
    return runtime_handle, aot_map[key]


def _map_sequence_aot_output(aot_output: Sequence, runtime_output: Any, negative_index: int) -> tuple[tuple, tuple]:
    if not isinstance(runtime_output, Sequence):
        raise TypeError("runtime intermediate output should be a sequence when aot intermediate output is a sequence")
    last = runtime_output[negative_index]
    if isinstance(last, list) and all(isinstance(t, np.ndarray) for t in last):
        mapped = last
    elif isinstance(last, np.ndarray):
        mapped = runtime_output
    else:
        raise ValueError("The last element of runtime argument list must be a tensor or a list of tensors")
    return tuple(aot_output), tuple(mapped)


def _find_matching_by_shape_and_dtype(aot_output: np.ndarray, runtime_output: Sequence) -> Any:
    shape_matches = [i for i, out in enumerate(runtime_output) if isinstance(out, np.ndarray) and out.shape == aot_output.shape]
    if len(shape_matches) == 1:
        return runtime_output[shape_matches[0]]
    if len(shape_matches) > 1:
        dtype_matches = [i for i in shape_matches if runtime_output[i].dtype == aot_output.dtype]
        if len(dtype_matches) == 1:
            return runtime_output[dtype_matches[0]]
    return runtime_output[-1]


def _map_non_sequence_aot_output(aot_output: Any, runtime_output: Any, num_outputs: int, negative_index: int) -> Any:
    if not isinstance(runtime_output, Sequence):
        return runtime_output
    mapped = runtime_output[negative_index]
    if num_outputs == 1 and len(runtime_output) > 1 and isinstance(aot_output, np.ndarray):
        mapped = _find_matching_by_shape_and_dtype(aot_output, runtime_output)
    return mapped


def find_op_names(target: DebugHandle, handle_to_names: dict[DebugHandle, list[str]]) -> list[str]:
    """Names of the ops whose handles all lie inside `target` (Inspector's `find_op_names`)."""
    wanted = set(target)
    return [name for key, names in handle_to_names.items() if set(key).issubset(wanted) for name in names]

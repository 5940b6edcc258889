"""Credit every node of an XNNPACK delegate to the kernel that ran it (see kernel_map).

After the alignment (kernel_align) each kernel has the XNode it ran. Three kinds of nodes are
left, each credited along the data flow to a neighbour's kernel:

- XNodes that ran no kernel: XNNPACK fused them at load time. A zero pad goes into the
  convolution that reads it (`xnn_subgraph_fusion`), anything else (clamps, copies, merged
  reshapes) into the kernel that produced its input, else into the one that reads its output.
- Debug handles of the delegate on no XNode: the lowering folded those edge ops into another
  node (ReLU or batch norm into a convolution, a weight's dequantize into its consumer).
  A dequantize goes to its consumer first, anything else to its producer first.
- XNodes without a handle of the delegate (65535): the lowering inserted them (NCHW<->NHWC
  transposes, output converts); their kernel serves the nearest node with a handle, the one
  whose output it reads, or for a delegate input the one it feeds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from orchestrator.profiles.edge_flow import EdgeFlow
from orchestrator.profiles.etrecord import OpNode
from orchestrator.profiles.kernel_align import Alignment
from orchestrator.profiles.xnnpack_graph import XnnGraph

ROLE_RAN, ROLE_FUSED, ROLE_SERVES = "ran", "fused", "serves"
_FUSED_INTO_CONSUMER = frozenset({"XNNStaticConstantPad"})
MAX_HOPS = 4  # credit a node only to a kernel this close in the data flow: fusions are local
PLUMBING = ("quantize_per_", "dequantize_per_", "choose_qparams")  # quantization around an op, not the op
K = TypeVar("K")


@dataclass(frozen=True)
class Attribution:
    """Per kernel (operator position): its XNodes, its (handle, role) pairs, a note, or why not mapped."""

    xnodes: tuple[tuple[int, ...], ...]
    handles: tuple[tuple[tuple[int, str], ...], ...]
    notes: tuple[str, ...]
    reasons: tuple[str, ...]
    unplaced: tuple[int, ...]  # handles of the delegate credited to no kernel


def attribute(
    graph: XnnGraph,
    alignment: Alignment,
    delegate_handles: Sequence[int],
    flow: EdgeFlow,
    nodes_by_handle: Mapping[int, tuple[OpNode, ...]],
) -> Attribution:
    in_delegate = frozenset(delegate_handles)
    origin = [n.debug_handle if n.debug_handle in in_delegate else None for n in graph.nodes]
    reasons = list(alignment.unmatched_reason)
    for i, candidates in enumerate(alignment.candidates):
        origins = {origin[j] if origin[j] is not None else graph.nodes[j].kind for j in candidates}
        if alignment.node_of[i] is not None and len(origins) > 1:
            reasons[i] = (f"ambiguous: XNNPACK ran fewer kernels than nodes and this one fits {len(candidates)} "
                          f"nodes (debug handles {sorted(map(str, origins))}); cannot tell which")
    kernel_of_node = {j: i for i, j in enumerate(alignment.node_of) if j is not None and not reasons[i]}
    producers, consumers = graph.producers(), graph.consumers()

    def up(j: int) -> list[int]:
        return [producers[v] for v in graph.nodes[j].inputs if v in producers]

    def down(j: int) -> list[int]:
        return [c for v in graph.nodes[j].outputs for c in consumers.get(v, ())]

    def node_kernel(j: int) -> int | None:  # the kernel an XNode ran or was fused into
        directions = (down, up) if graph.nodes[j].kind in _FUSED_INTO_CONSUMER else (up, down)
        return _nearest(j, kernel_of_node.get, directions)

    m = len(alignment.node_of)
    xnodes: list[list[int]] = [[] if j is None else [j] for j in alignment.node_of]
    handles: list[dict[int, str]] = [{} for _ in range(m)]
    kernel_of_handle: dict[int, int] = {}
    for j in range(len(graph.nodes)):
        i = kernel_of_node.get(j)
        role = ROLE_RAN if i is not None else ROLE_FUSED
        if i is None and (i := node_kernel(j)) is not None:
            xnodes[i].append(j)
        if i is not None and origin[j] is not None:
            handles[i].setdefault(origin[j], role)
            kernel_of_handle.setdefault(origin[j], i)

    notes = [""] * m
    def model_op(k: int) -> int | None:  # the handle of a node of the model, not only quantization around one
        h = origin[k]
        return None if h is None or _only_quantization(nodes_by_handle.get(h, ())) else h

    for i, j in enumerate(alignment.node_of):
        if j is None or reasons[i] or origin[j] is not None:
            continue
        served = _nearest(j, model_op, (up, down))
        if served is not None:  # the op whose kernel that node belongs to (a pad fused into a conv: the conv)
            owner = kernel_of_handle.get(served)
            ran = alignment.node_of[owner] if owner is not None else None
            served = model_op(ran) if ran is not None and model_op(ran) is not None else served
        if served is None:
            reasons[i] = f"{graph.nodes[j].kind} inserted by the XNNPACK lowering, next to no op of the model"
            continue
        handles[i].setdefault(served, ROLE_SERVES)
        notes[i] = f"{graph.nodes[j].kind} inserted by the XNNPACK lowering"

    unplaced = []
    for h in sorted(in_delegate.difference(kernel_of_handle).intersection(nodes_by_handle)):
        dequantize = all("dequantize" in op.op for op in nodes_by_handle[h])
        maps = (flow.consumers, flow.producers) if dequantize else (flow.producers, flow.consumers)
        i = _nearest(h, kernel_of_handle.get, [_within(edges, in_delegate) for edges in maps])
        if i is None:
            unplaced.append(h)
        else:
            handles[i].setdefault(h, ROLE_FUSED)
    rank = {ROLE_SERVES: 0, ROLE_RAN: 1, ROLE_FUSED: 2}  # what it is for first, then in graph order
    return Attribution(
        tuple(tuple(x) for x in xnodes), tuple(tuple(sorted(h.items(), key=lambda item: rank[item[1]])) for h in handles),
        tuple(notes), tuple(reasons),
        tuple(sorted(unplaced)),
    )


def _only_quantization(ops: Sequence[OpNode]) -> bool:
    return bool(ops) and all(any(p in op.op for p in PLUMBING) for op in ops)


def _within(edges: Mapping[int, tuple[int, ...]], allowed: frozenset[int]) -> Callable[[int], list[int]]:
    return lambda k: [x for x in edges.get(k, ()) if x in allowed]


def _nearest(start: K, found: Callable[[K], int | None], directions: Sequence[Callable[[K], Iterable[K]]]) -> int | None:
    """The first `found` value that is not None, breadth-first from `start` (excluded) along the first
    direction, then along the next, at most MAX_HOPS away: fusions are local."""
    for neighbours in directions:
        seen = {start}
        frontier = list(neighbours(start))
        for _ in range(MAX_HOPS):
            following: list[K] = []
            for k in frontier:
                if k in seen:
                    continue
                seen.add(k)
                value = found(k)
                if value is not None:
                    return value
                following.extend(neighbours(k))
            frontier = following
    return None

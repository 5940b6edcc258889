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
    """Credit every XNode and every debug handle of one delegate to one of its kernels."""
    credit = _Credit(graph, alignment, frozenset(delegate_handles), nodes_by_handle)
    credit.xnodes_to_kernels()
    credit.inserted_kernels()
    unplaced = credit.folded_handles(flow)
    rank = {ROLE_SERVES: 0, ROLE_RAN: 1, ROLE_FUSED: 2}  # what it is for first, then in graph order
    return Attribution(
        tuple(tuple(x) for x in credit.xnodes),
        tuple(tuple(sorted(h.items(), key=lambda item: rank[item[1]])) for h in credit.handles),
        tuple(credit.notes), tuple(credit.reasons), tuple(unplaced),
    )


class _Credit:
    """The attribution of one delegate, built in three passes (see the module's docstring)."""

    def __init__(self, graph: XnnGraph, alignment: Alignment, in_delegate: frozenset[int],
                 nodes_by_handle: Mapping[int, tuple[OpNode, ...]]) -> None:
        self.graph, self.alignment, self.in_delegate, self.ops = graph, alignment, in_delegate, nodes_by_handle
        self.origin = [n.debug_handle if n.debug_handle in in_delegate else None for n in graph.nodes]
        self.reasons = [self._ambiguity(i) or why for i, why in enumerate(alignment.unmatched_reason)]
        self.kernel_of_node = {j: i for i, j in enumerate(alignment.node_of) if j is not None and not self.reasons[i]}
        self.producers, self.consumers = graph.producers(), graph.consumers()
        m = len(alignment.node_of)
        self.xnodes: list[list[int]] = [[] if j is None else [j] for j in alignment.node_of]
        self.handles: list[dict[int, str]] = [{} for _ in range(m)]
        self.notes = [""] * m
        self.kernel_of_handle: dict[int, int] = {}

    def _ambiguity(self, i: int) -> str:
        candidates = self.alignment.candidates[i]
        origins = {self.origin[j] if self.origin[j] is not None else self.graph.nodes[j].kind for j in candidates}
        if self.alignment.node_of[i] is None or len(origins) < 2:
            return ""
        return (f"ambiguous: XNNPACK ran fewer kernels than nodes and this one fits {len(candidates)} nodes "
                f"(debug handles {sorted(map(str, origins))}); cannot tell which")

    def up(self, j: int) -> list[int]:
        return [self.producers[v] for v in self.graph.nodes[j].inputs if v in self.producers]

    def down(self, j: int) -> list[int]:
        return [c for v in self.graph.nodes[j].outputs for c in self.consumers.get(v, ())]

    def model_op(self, j: int) -> int | None:
        """The handle of XNode j when it is an op of the model, not only quantization around one."""
        h = self.origin[j]
        return None if h is None or _only_quantization(self.ops.get(h, ())) else h

    def xnodes_to_kernels(self) -> None:
        """Each XNode to the kernel it ran, or (fused by XNNPACK) to the nearest kernel along the data flow."""
        for j, node in enumerate(self.graph.nodes):
            i = self.kernel_of_node.get(j)
            role = ROLE_RAN if i is not None else ROLE_FUSED
            if i is None:
                directions = (self.down, self.up) if node.kind in _FUSED_INTO_CONSUMER else (self.up, self.down)
                if (i := _nearest(j, self.kernel_of_node.get, directions)) is not None:
                    self.xnodes[i].append(j)
            handle = self.origin[j]
            if i is not None and handle is not None:
                self.handles[i].setdefault(handle, role)
                self.kernel_of_handle.setdefault(handle, i)

    def inserted_kernels(self) -> None:
        """A kernel of an XNode the lowering inserted serves the op whose kernel it feeds or reads."""
        for i, j in enumerate(self.alignment.node_of):
            if j is None or self.reasons[i] or self.origin[j] is not None:
                continue
            kind = self.graph.nodes[j].kind
            served = _nearest(j, self.model_op, (self.up, self.down))
            owner = self.kernel_of_handle.get(served) if served is not None else None
            ran = self.alignment.node_of[owner] if owner is not None else None
            if ran is not None and self.model_op(ran) is not None:  # a pad fused into a conv: the conv
                served = self.model_op(ran)
            if served is None:
                self.reasons[i] = f"{kind} inserted by the XNNPACK lowering, next to no op of the model"
            else:
                self.handles[i].setdefault(served, ROLE_SERVES)
                self.notes[i] = f"{kind} inserted by the XNNPACK lowering"

    def folded_handles(self, flow: EdgeFlow) -> list[int]:
        """Handles on no XNode (folded by the lowering) to the kernel of the nearest op along the edge
        graph: a dequantize towards its consumer first, anything else towards its producer. Returns
        the handles credited to no kernel."""
        unplaced = []
        for h in sorted(self.in_delegate.difference(self.kernel_of_handle).intersection(self.ops)):
            dequantize = all("dequantize" in op.op for op in self.ops[h])
            maps = (flow.consumers, flow.producers) if dequantize else (flow.producers, flow.consumers)
            i = _nearest(h, self.kernel_of_handle.get, [_within(edges, self.in_delegate) for edges in maps])
            if i is None:
                unplaced.append(h)
            else:
                self.handles[i].setdefault(h, ROLE_FUSED)
        return unplaced


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

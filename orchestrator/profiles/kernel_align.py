"""Align the kernels an XNNPACK delegate ran with the nodes it was serialized with.

The XNNPACK backend's profiler (`backends/xnnpack/runtime/profiling/XNNProfiler.cpp`) logs one
event per runtime operator, in the runtime's operator order, named `{operator} #{count}`
(`Convolution (NHWC, F32) IGEMM #2`: the second operator of that name in the delegate) and with
no debug handle. XNNPACK builds those operators from the serialized XNodes, in their order,
after optimizing the subgraph (`xnn_subgraph_optimize`): it fuses some nodes into others (a
clamp into the convolution before it, a zero pad into the convolution after it, copies),
removes some, rewrites some (a 1x1 convolution runs as a fully-connected GEMM, a global
average pooling as a mean) and may add a few of its own (packing, converts). Neither side
names the other, so we align the two sequences: an operator matches a node only when the
operator's name is one the node's kind can become (`FAMILIES`), in order, with as few
unmatched operators and nodes as possible (an edit distance). Where several alignments are
equally good and give an operator different origins, the operator is ambiguous and left
unmapped rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Align at most this many (operators x nodes) cells per delegate: 8M cells are 32 MB of int32.
MAX_CELLS = 8_000_000
_COUNT = re.compile(r" #\d+$")

_UNARY = {
    "XNNClamp": ("Clamp",), "XNNSigmoid": ("Sigmoid",), "XNNTanh": ("TanH",), "XNNFloor": ("Floor",),
    "XNNCeiling": ("Ceiling",), "XNNSquareRoot": ("Square Root",), "XNNHardswish": ("HardSwish",),
    "XNNLeakyReLU": ("LeakyReLU",), "XNNELU": ("ELU",), "XNNAbs": ("Abs",), "XNNNegate": ("Negate",),
    "XNNSquare": ("Square",), "XNNLog": ("Log",), "XNNExp": ("Exp",), "XNNGelu": ("GELU", "ApproxGELU"),
    "XNNSin": ("Sine",), "XNNCos": ("Cosine",), "XNNReciprocalSquareRoot": ("Reciprocal Square Root",),
    "XNNConvert": ("Convert",), "XNNSoftmax": ("Softmax",),
}
_BINARY = {
    "XNNAdd": ("Add",), "XNNSubtract": ("Subtract",), "XNNMultiply": ("Multiply", "Square"), "XNNDiv": ("Divide",),
    "XNNMinimum": ("Minimum", "Clamp"), "XNNMaximum": ("Maximum", "Clamp"), "XNNPReLU": ("PReLU",),
}
# Serialized node kind -> operator families (an operator's name up to " (") it may run as.
FAMILIES: dict[str, tuple[str, ...]] = {
    **{kind: (*names, "Unary Elementwise") for kind, names in _UNARY.items()},
    **{kind: (*names, "Binary Elementwise") for kind, names in _BINARY.items()},
    "XNNConv2d": ("Convolution", "Fully Connected"),  # a 1x1 convolution runs as a GEMM
    "XNNDepthwiseConv2d": ("Convolution",),
    "XNNConvTranspose2d": ("Deconvolution",),
    "XNNFullyConnected": ("Fully Connected", "Dynamic Fully Connected"),
    "XNNBatchMatrixMultiply": ("Batch Matrix Multiply", "Fully Connected"),
    "XNNMaxPooling2d": ("Max Pooling",),
    "XNNAvgPooling2d": ("Average Pooling",),
    "XNNArgMaxPooling2d": ("ArgMax Pooling",),
    "XNNGlobalAvgPooling2d": ("Mean", "Global Average Pooling", "Average Pooling"),
    "XNNStaticTranspose": ("Transpose",),
    "XNNStaticReshape": ("Static Reshape", "Copy", "Fuse Dims", "Split Dims", "Static Expand Dims"),
    "XNNCopy": ("Copy",),
    "XNNStaticSlice": ("Slice",),
    "XNNStaticConstantPad": ("Constant Pad",),
    "XNNStaticResizeBilinear2D": ("Resize Bilinear",),
    **dict.fromkeys(("XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNConcatenate5"), ("Copy", "Concatenate")),
}

# Nodes that do real work: XNNPACK never fuses them away, so each one runs a kernel. One left
# without a kernel means the ETDump and the .pte are of different programs.
ALWAYS_RUN = frozenset({
    "XNNConv2d", "XNNDepthwiseConv2d", "XNNConvTranspose2d", "XNNFullyConnected", "XNNBatchMatrixMultiply",
    "XNNMaxPooling2d", "XNNAvgPooling2d", "XNNArgMaxPooling2d", "XNNGlobalAvgPooling2d", "XNNSoftmax",
})


def operator_family(event_name: str) -> str:
    """`Convolution (NHWC, F32) IGEMM #2` -> `Convolution`."""
    return _COUNT.sub("", event_name).split(" (", 1)[0].strip()


@dataclass(frozen=True)
class Alignment:
    """Per operator: the index of the node it ran (None: none), and per node: the operator."""

    node_of: tuple[int | None, ...]  # operator position -> node index
    candidates: tuple[tuple[int, ...], ...]  # operator position -> every node some best alignment gives it
    operator_of: tuple[int | None, ...]  # node index -> operator position
    unmatched_reason: tuple[str, ...]  # operator position -> why it matches no node ("" when it does)


class AlignmentTooLarge(Exception):
    """More operators x nodes than MAX_CELLS."""


def align(event_names: Sequence[str], node_kinds: Sequence[str]) -> Alignment:
    """Align one delegate execution's operator events with its serialized node kinds."""
    m, n = len(event_names), len(node_kinds)
    if (m + 1) * (n + 1) > MAX_CELLS:
        raise AlignmentTooLarge(f"{m} operators x {n} nodes is over {MAX_CELLS} cells")
    families = [operator_family(name) for name in event_names]
    family_ids = {f: i for i, f in enumerate(dict.fromkeys(families))}
    kind_ids = {k: i for i, k in enumerate(dict.fromkeys(node_kinds))}
    fits = np.array([[f in FAMILIES.get(k, ()) for k in kind_ids] for f in family_ids], dtype=bool)
    fits = fits.reshape(len(family_ids), len(kind_ids))
    rows = np.array([family_ids[f] for f in families], dtype=np.int64)
    cols = np.array([kind_ids[k] for k in node_kinds], dtype=np.int64)
    ok = fits[rows[:, None], cols[None, :]] if m and n else np.zeros((m, n), dtype=bool)
    forward = _costs(ok)
    backward = _costs(ok[::-1, ::-1])[::-1, ::-1]
    best = int(forward[m, n])
    # (i, j) is on some best alignment when the cost before it plus the cost after it is the best.
    on_best = ok & (forward[:m, :n] + backward[1:, 1:] == best)
    node_of = _trace(forward, ok)
    candidates = tuple(tuple(int(j) for j in np.flatnonzero(on_best[i])) for i in range(m))
    operator_of: list[int | None] = [None] * n
    for i, j in enumerate(node_of):
        if j is not None:
            operator_of[j] = i
    reasons = tuple(_unmatched(families[i], node_kinds) if node_of[i] is None else "" for i in range(m))
    return Alignment(tuple(node_of), candidates, tuple(operator_of), reasons)


def _costs(ok: np.ndarray) -> np.ndarray:
    """cost[i, j]: fewest unmatched operators + nodes aligning the first i operators with the
    first j nodes. Each row in a few numpy passes: skipping nodes along a row is a running min."""
    m, n = ok.shape
    cost = np.empty((m + 1, n + 1), dtype=np.int32)
    cols = np.arange(n + 1, dtype=np.int32)
    cost[0] = cols
    big = np.int32(1 << 29)
    for i in range(1, m + 1):
        prev = cost[i - 1]
        step = prev + 1  # operator i-1 matches no node
        step[1:] = np.minimum(step[1:], np.where(ok[i - 1], prev[:-1], big))
        step[0] = i
        cost[i] = np.minimum.accumulate(step - cols) + cols  # then skip nodes: +1 each
    return cost


def _trace(cost: np.ndarray, ok: np.ndarray) -> list[int | None]:
    """One best alignment, preferring to match an operator with the latest node it can."""
    i, j = ok.shape
    node_of: list[int | None] = [None] * i
    while i > 0:
        here = cost[i, j]
        if j > 0 and ok[i - 1, j - 1] and cost[i - 1, j - 1] == here:
            node_of[i - 1] = j - 1
            i, j = i - 1, j - 1
        elif j > 0 and cost[i, j - 1] + 1 == here:
            j -= 1
        else:
            i -= 1
    return node_of


def _unmatched(family: str, node_kinds: Sequence[str]) -> str:
    if not any(family in FAMILIES.get(kind, ()) for kind in node_kinds):
        return f"no serialized node can run as an XNNPACK {family!r} operator: XNNPACK added it when it built its runtime"
    return f"XNNPACK added this {family!r} operator or its node could not be placed in order"

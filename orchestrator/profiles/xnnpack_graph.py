"""Read the graph an XNNPACK delegate runs: its serialized nodes, debug handles and data flow.

The payload of an `XnnpackBackend` delegate (see pte_program) is an `XNNHeader` (bytes 4-8
`XH00`, then the offset and size of a flatbuffer and of constant data) followed by an
`XNNGraph` flatbuffer (`backends/xnnpack/serialization/schema.fbs`, identifier `XN00`/`XN01`);
payloads without the header are the flatbuffer itself. Each `XNode` is one `xnn_define_*`
call of the runtime (`XNNCompiler.cpp` defines them in this order) and carries the
`debug_handle` of the edge-graph node it was serialized from; nodes the lowering inserted
itself (the NCHW<->NHWC transposes, output converts) carry 65535 (`DEFAULT_DEBUG_HANDLE` in
`xnnpack_preprocess.py`). Value ids give the data flow between nodes; the values themselves
(shapes, quantization, weights) are not read.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.flatbuf import FlatBufferError, Table, identifier, root

HEADER_MAGIC = b"XH00"
GRAPH_IDENTIFIERS = (b"XN00", b"XN01")
INSERTED_HANDLE = 65535  # the debug handle of a node the lowering inserted (DEFAULT_DEBUG_HANDLE)

# XNodeUnion members in declaration order (type code = position + 1; 0 is NONE).
NODE_KINDS = (
    "XNNAdd", "XNNFullyConnected", "XNNSoftmax", "XNNSigmoid", "XNNStaticTranspose", "XNNClamp", "XNNConv2d",
    "XNNDiv", "XNNStaticResizeBilinear2D", "XNNStaticConstantPad", "XNNAvgPooling2d", "XNNMinimum",
    "XNNDepthwiseConv2d", "XNNMaxPooling2d", "XNNMultiply", "XNNSubtract", "XNNFloor", "XNNConvert",
    "XNNGlobalAvgPooling2d", "XNNStaticReshape", "XNNArgMaxPooling2d", "XNNSquareRoot", "XNNCeiling",
    "XNNHardswish", "XNNLeakyReLU", "XNNMaximum", "XNNNegate", "XNNSquare", "XNNELU", "XNNAbs", "XNNPReLU",
    "XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNStaticSlice", "XNNScaledDotProductAttention",
    "XNNBatchMatrixMultiply", "XNNConcatenate5", "XNNConvTranspose2d", "XNNReciprocalSquareRoot", "XNNLog",
    "XNNGelu", "XNNTanh", "XNNExp", "XNNSin", "XNNCopy", "XNNCos",
)

# Field slots of each node table's value ids: (input slots, output slots).
_IO_2X1 = ((0, 1), (2,))
_IO_1X1 = ((0,), (1,))
_IO_CONV = ((15, 16, 17), (18,))
_IO_POOL = ((10,), (11,))
_IO_CAT = ((1, 2, 3, 4, 7), (5,))
_BINARY_KINDS = ("XNNAdd", "XNNDiv", "XNNMinimum", "XNNMultiply", "XNNSubtract", "XNNMaximum", "XNNPReLU",
                 "XNNBatchMatrixMultiply")
_UNARY_KINDS = ("XNNSoftmax", "XNNSigmoid", "XNNClamp", "XNNFloor", "XNNConvert", "XNNGlobalAvgPooling2d", "XNNSquareRoot",
                "XNNCeiling", "XNNHardswish", "XNNNegate", "XNNSquare", "XNNAbs", "XNNReciprocalSquareRoot", "XNNLog",
                "XNNGelu", "XNNTanh", "XNNExp", "XNNSin", "XNNCopy", "XNNCos")
_IO: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    **dict.fromkeys(_BINARY_KINDS, _IO_2X1),
    **dict.fromkeys(_UNARY_KINDS, _IO_1X1),
    **dict.fromkeys(("XNNConv2d", "XNNDepthwiseConv2d", "XNNConvTranspose2d"), _IO_CONV),
    **dict.fromkeys(("XNNAvgPooling2d", "XNNMaxPooling2d"), _IO_POOL),
    **dict.fromkeys(("XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNConcatenate5"), _IO_CAT),
    "XNNFullyConnected": ((0, 1, 2), (3,)),
    "XNNStaticTranspose": ((2,), (3,)),
    "XNNStaticResizeBilinear2D": ((2,), (3,)),
    "XNNStaticConstantPad": ((3,), (4,)),
    "XNNStaticReshape": ((2,), (3,)),
    "XNNStaticSlice": ((3,), (4,)),
    "XNNArgMaxPooling2d": ((6,), (7, 8)),
    "XNNLeakyReLU": ((1,), (2,)),
    "XNNELU": ((1,), (2,)),
    "XNNScaledDotProductAttention": ((0, 1, 2, 3, 4), (5,)),
}
_GRAPH_NODES = 1
_NODE_TYPE, _NODE_BODY, _NODE_HANDLE, _NODE_MIN_MAX = 0, 1, 2, 3
_INVALID_ID = 0xFFFFFFFF  # XNN_INVALID_VALUE_ID: an absent input (no bias)


@dataclass(frozen=True)
class XnnNode:
    """One serialized XNode: what it is, which edge node it came from, what it reads and writes."""

    index: int
    kind: str  # the XNodeUnion member, e.g. "XNNConv2d" ("XNNUnknown#N" for a newer schema's)
    debug_handle: int
    inputs: tuple[int, ...]  # value ids read (weights included; XNN_INVALID_VALUE_ID dropped)
    outputs: tuple[int, ...]
    output_min_max: tuple[float, float] | None  # a fused activation (relu: (0, inf))


@dataclass(frozen=True)
class XnnGraph:
    nodes: tuple[XnnNode, ...]

    def producers(self) -> dict[int, int]:
        """Value id -> index of the node that writes it."""
        return {value: node.index for node in self.nodes for value in node.outputs}

    def consumers(self) -> dict[int, list[int]]:
        """Value id -> indices of the nodes that read it, in node order."""
        out: dict[int, list[int]] = {}
        for node in self.nodes:
            for value in dict.fromkeys(node.inputs):
                out.setdefault(value, []).append(node.index)
        return out


def is_xnnpack_backend(backend: str) -> bool:
    return backend == "XnnpackBackend"


def parse_xnnpack_payload(payload: bytes, name: str = "<xnnpack payload>") -> XnnGraph:
    """Parse a delegate payload. Raises AnalysisError (naming `name`) for anything else or damage."""
    start = 0
    if len(payload) >= 18 and payload[4:8] == HEADER_MAGIC:
        start = int.from_bytes(payload[10:14], "little")
    if identifier(payload, start) not in GRAPH_IDENTIFIERS:
        raise AnalysisError(f"{name}: not an XNNPACK graph (no XH00 header or XN00/XN01 flatbuffer)")
    try:
        nodes = tuple(_node(i, table) for i, table in enumerate(root(payload, start).tables(_GRAPH_NODES)))
    except FlatBufferError as exc:
        raise AnalysisError(f"{name}: corrupt XNNPACK graph: {exc}") from None
    return XnnGraph(nodes)


def _node(index: int, table: Table) -> XnnNode:
    code = table.integer(_NODE_TYPE, "u8")
    kind = NODE_KINDS[code - 1] if 0 < code <= len(NODE_KINDS) else f"XNNUnknown#{code}"
    body = table.table(_NODE_BODY)
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    if body is not None and kind in _IO:
        in_slots, out_slots = _IO[kind]  # an absent field is the schema default 0, a valid value id
        inputs = tuple(v for v in (body.integer(s) for s in in_slots) if v != _INVALID_ID)
        outputs = tuple(v for v in (body.integer(s) for s in out_slots) if v != _INVALID_ID)
    min_max = table.table(_NODE_MIN_MAX)
    bounds = (float(min_max.scalar(0, "f32")), float(min_max.scalar(1, "f32"))) if min_max is not None else None
    return XnnNode(index, kind, table.integer(_NODE_HANDLE), inputs, outputs, bounds)

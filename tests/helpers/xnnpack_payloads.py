"""Synthetic .pte programs and XNNPACK delegate payloads, built with the flatbuffers Builder (no torch).

Field slots follow executorch/schema/program.fbs and backends/xnnpack/serialization/schema.fbs, as
the readers do; the integration tests check those readers on real exports.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import flatbuffers

from orchestrator.profiles.xnnpack_graph import _IO, NODE_KINDS


@dataclass(frozen=True)
class Node:
    kind: str  # an XNodeUnion member, e.g. "XNNConv2d"
    handle: int
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()
    min_max: tuple[float, float] | None = None


def xnn_graph(nodes: list[Node], header: bool = True, identifier: bytes = b"XN01") -> bytes:
    """An XNNGraph flatbuffer (behind an XNNHeader unless `header` is False)."""
    b = flatbuffers.Builder(256)
    offsets = [_xnode(b, node) for node in nodes]
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    xnodes = b.EndVector()
    version = b.CreateString("0")
    b.StartObject(9)
    b.PrependUOffsetTRelativeSlot(0, version, 0)
    b.PrependUOffsetTRelativeSlot(1, xnodes, 0)
    b.Finish(b.EndObject(), file_identifier=identifier)
    graph = bytes(b.Output())
    if not header:
        return graph
    head = b"\0\0\0\0XH00" + struct.pack("<HIIIQ", 30, 32, len(graph), 32 + len(graph), 0)
    return head + b"\0" * (32 - len(head)) + graph


def _xnode(b: flatbuffers.Builder, node: Node) -> int:
    in_slots, out_slots = _IO.get(node.kind, ((), ()))
    slots = dict(zip(in_slots, node.inputs, strict=False)) | dict(zip(out_slots, node.outputs, strict=False))
    b.StartObject(max(slots, default=0) + 1)
    for slot, value in slots.items():
        b.PrependUint32Slot(slot, value, 0xFFFFFFFE)  # a default no id equals: every id is written
    body = b.EndObject()
    bounds = None
    if node.min_max is not None:
        b.StartObject(2)
        b.PrependFloat32Slot(0, node.min_max[0], 1.5)
        b.PrependFloat32Slot(1, node.min_max[1], 1.5)
        bounds = b.EndObject()
    b.StartObject(4)
    b.PrependUint8Slot(0, NODE_KINDS.index(node.kind) + 1 if node.kind in NODE_KINDS else 200, 0)
    b.PrependUOffsetTRelativeSlot(1, body, 0)
    b.PrependUint32Slot(2, node.handle, 0)
    if bounds is not None:
        b.PrependUOffsetTRelativeSlot(3, bounds, 0)
    return b.EndObject()


@dataclass(frozen=True)
class Delegate:
    backend: str
    payload: bytes
    in_segment: bool = False


@dataclass(frozen=True)
class Program:
    delegates: list[Delegate]
    # per instruction of chain 0: the delegate index it calls, or None for a kernel call
    instructions: list[int | None] = field(default_factory=list)
    method: str = "forward"


def pte(program: Program) -> bytes:
    """A .pte: Program flatbuffer, `eh00` extended header, segments after it."""
    b = flatbuffers.Builder(1024)
    segment_data = [d.payload for d in program.delegates if d.in_segment]
    inline_data = [d.payload for d in program.delegates if not d.in_segment]
    refs, n_inline, n_segment = [], 0, 0
    for d in program.delegates:
        refs.append((1, n_segment) if d.in_segment else (0, n_inline))
        n_segment, n_inline = n_segment + d.in_segment, n_inline + (not d.in_segment)
    delegates = [_delegate(b, d.backend, *ref) for d, ref in zip(program.delegates, refs, strict=True)]
    instructions = [_instruction(b, target) for target in program.instructions]
    chain = _object(b, {2: _tables(b, instructions)})
    name = b.CreateString(program.method)
    plan = _object(b, {0: name, 5: _tables(b, [chain]), 7: _tables(b, delegates)})
    inline = [_object(b, {0: b.CreateByteVector(data)}) for data in inline_data]
    offsets, at = [], 0
    for data in segment_data:
        offsets.append((at, len(data)))
        at += (len(data) + 15) // 16 * 16
    segments = []
    for offset, size in offsets:
        b.StartObject(2)
        b.PrependUint64Slot(0, offset, 1)
        b.PrependUint64Slot(1, size, 1)
        segments.append(b.EndObject())
    root = _object(b, {1: _tables(b, [plan]), 3: _tables(b, inline), 4: _tables(b, segments)}, size=8)
    b.Finish(root, file_identifier=b"ET12")
    body = bytes(b.Output())
    # Like ExecuTorch: the extended header goes after the root offset and identifier (offsets move by 32).
    program_size = len(body) + 32
    base = (program_size + 15) // 16 * 16 if segment_data else 0
    header = b"eh00" + struct.pack("<IQQQ", 32, program_size, base, at)
    head = struct.pack("<I", struct.unpack_from("<I", body)[0] + 32) + body[4:8] + header
    out = bytearray(head + body[8:])
    out += b"\0" * (base - len(out)) if segment_data else b""
    for data, (offset, _) in zip(segment_data, offsets, strict=True):
        out += b"\0" * (base + offset - len(out)) + data
    return bytes(out)


def _delegate(b: flatbuffers.Builder, backend: str, location: int, index: int) -> int:
    b.StartObject(2)
    b.PrependInt8Slot(0, location, -1)
    b.PrependUint32Slot(1, index, 0xFFFFFFFF)
    ref = b.EndObject()
    return _object(b, {0: b.CreateString(backend), 1: ref})


def _instruction(b: flatbuffers.Builder, target: int | None) -> int:
    b.StartObject(2)
    b.PrependInt32Slot(0, 0 if target is None else target, -1)
    args = b.EndObject()
    b.StartObject(2)
    b.PrependUint8Slot(0, 1 if target is None else 2, 0)  # KernelCall=1, DelegateCall=2
    b.PrependUOffsetTRelativeSlot(1, args, 0)
    return b.EndObject()


def _tables(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _object(b: flatbuffers.Builder, refs: dict[int, int], size: int | None = None) -> int:
    b.StartObject(size if size is not None else max(refs) + 1)
    for slot, off in refs.items():
        b.PrependUOffsetTRelativeSlot(slot, off, 0)
    return b.EndObject()

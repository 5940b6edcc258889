"""Program flatbuffers (schema/program.fbs, file identifier ET12) built with the flatbuffers package, no
torch: the fields etfarm's .pte reader (orchestrator/artifacts/pte_info.py) reads, for unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers

LONG, INT, FLOAT = 4, 3, 6
INT_KIND, BOOL_KIND, TENSOR_KIND = 2, 3, 5


@dataclass
class Plan:
    name: str
    values: list[tuple[int, object]]  # (kind, payload): int/bool value, or (dtype, sizes, dynamic) for a tensor
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    operators: list[tuple[str, str]] = field(default_factory=list)
    delegates: list[str] = field(default_factory=list)


def constant(name: str, value: int | bool) -> Plan:
    return Plan(name, [(BOOL_KIND if isinstance(value, bool) else INT_KIND, value)], outputs=[0])


def program(plans: list[Plan]) -> bytes:
    """A Program flatbuffer (file identifier ET12) holding `plans`."""
    b = flatbuffers.Builder(1024)
    b.ForceDefaults(True)

    def offsets(items: list[int]) -> int:
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()

    def ints(items: list[int]) -> int:
        b.StartVector(4, len(items), 4)
        for item in reversed(items):
            b.PrependInt32(item)
        return b.EndVector()

    def evalue(kind: int, payload: object) -> int:
        if kind == TENSOR_KIND:
            dtype, sizes, dynamic = payload  # type: ignore[misc]
            sizes_vec = ints(list(sizes))
            b.StartObject(10)
            b.PrependInt8Slot(0, dtype, 0)
            b.PrependUOffsetTRelativeSlot(2, sizes_vec, 0)
            b.PrependInt8Slot(8, 1 if dynamic else 0, 0)
        else:
            b.StartObject(1)
            if kind == INT_KIND:
                b.PrependInt64Slot(0, int(payload), 0)  # type: ignore[call-overload]
            else:
                b.PrependBoolSlot(0, bool(payload), False)
        val = b.EndObject()
        b.StartObject(2)
        b.PrependUint8Slot(0, kind, 0)
        b.PrependUOffsetTRelativeSlot(1, val, 0)
        return b.EndObject()

    def plan(p: Plan) -> int:
        name = b.CreateString(p.name)
        values = offsets([evalue(k, v) for k, v in p.values])
        ops = []
        for op_name, overload in p.operators:
            n, o = b.CreateString(op_name), b.CreateString(overload)
            b.StartObject(2)
            b.PrependUOffsetTRelativeSlot(0, n, 0)
            b.PrependUOffsetTRelativeSlot(1, o, 0)
            ops.append(b.EndObject())
        dels = []
        for backend in p.delegates:
            i = b.CreateString(backend)
            b.StartObject(3)
            b.PrependUOffsetTRelativeSlot(0, i, 0)
            dels.append(b.EndObject())
        ops_vec, dels_vec = offsets(ops), offsets(dels)
        inputs, outputs = ints(p.inputs), ints(p.outputs)
        b.StartObject(10)
        b.PrependUOffsetTRelativeSlot(0, name, 0)
        b.PrependUOffsetTRelativeSlot(2, values, 0)
        b.PrependUOffsetTRelativeSlot(3, inputs, 0)
        b.PrependUOffsetTRelativeSlot(4, outputs, 0)
        b.PrependUOffsetTRelativeSlot(6, ops_vec, 0)
        b.PrependUOffsetTRelativeSlot(7, dels_vec, 0)
        return b.EndObject()

    plans_vec = offsets([plan(p) for p in plans])
    b.StartObject(8)
    b.PrependUint32Slot(0, 0, 0)
    b.PrependUOffsetTRelativeSlot(1, plans_vec, 0)
    b.Finish(b.EndObject(), file_identifier=b"ET12")
    return bytes(b.Output())


def with_extended_header(flat: bytes, segments: bytes) -> bytes:
    """ExecuTorch's layout: an `eh00` header inserted after the identifier (the root offset moves
    past it), then segment data the reader must not need."""
    header_len = 32
    root = int.from_bytes(flat[:4], "little") + header_len
    program_size = len(flat) + header_len
    header = (b"eh00" + header_len.to_bytes(4, "little") + program_size.to_bytes(8, "little")
              + program_size.to_bytes(8, "little") + len(segments).to_bytes(8, "little"))
    return root.to_bytes(4, "little") + flat[4:8] + header + flat[8:] + segments


def llm_plans(*, dynamic: bool = True, tokens_dtype: int = LONG, kv: bool = True, ops: tuple[tuple[str, str], ...] = ()) -> list[Plan]:
    bound = 127 if dynamic else 1
    forward = Plan("forward", [(TENSOR_KIND, (tokens_dtype, [1, bound], dynamic)), (TENSOR_KIND, (LONG, [1], False)),
                               (TENSOR_KIND, (FLOAT, [1, 512], False))],
                   inputs=[0, 1], outputs=[2], operators=[("aten::embedding", "out"), *ops], delegates=["XnnpackBackend"])
    return [forward, constant("get_max_seq_len", 128), constant("get_vocab_size", 512), constant("use_kv_cache", kv),
            constant("enable_dynamic_shape", dynamic), constant("get_n_layers", 2), constant("get_max_context_len", 256)]


def forward_program() -> bytes:
    """The least program a job accepts: one method `forward` (what the runner runs)."""
    return program([Plan("forward", [(TENSOR_KIND, (FLOAT, [1, 4], False))], inputs=[0], outputs=[0])])

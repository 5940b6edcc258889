"""The .pte reader on program flatbuffers built here with the flatbuffers package (no torch):
the fields of schema/program.fbs it reads, LLM recognition, the extended header, damaged files."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import flatbuffers
import pytest

from orchestrator.artifacts.pte_info import read_pte_info, unsupported_ops_message
from orchestrator.errors import ModelSpecError

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


def write(tmp_path: Path, data: bytes, name: str = "m.pte") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_reads_methods_inputs_operators_delegates_and_constants(tmp_path: Path) -> None:
    info = read_pte_info(write(tmp_path, program(llm_plans())))
    assert info.identifier == "ET12" and info.program_bytes == info.file_bytes and info.segments == 0
    assert info.method_names[0] == "forward" and "get_vocab_size" in info.method_names
    forward = info.method("forward")
    assert forward is not None and forward.constant is None
    assert [(v.kind, v.dtype, v.sizes, v.dynamic) for v in forward.inputs] == [
        ("tensor", "int64", (1, 127), True), ("tensor", "int64", (1,), False)]
    assert forward.outputs[0].dtype == "float32" and forward.delegates == ("XnnpackBackend",)
    assert forward.operators == ("aten::embedding.out",)
    assert info.metadata == {"get_max_seq_len": 128, "get_vocab_size": 512, "use_kv_cache": True,
                             "enable_dynamic_shape": True, "get_n_layers": 2, "get_max_context_len": 256}
    assert info.method("nope") is None


def test_a_kv_cache_program_is_an_llm(tmp_path: Path) -> None:
    shape = read_pte_info(write(tmp_path, program(llm_plans()))).llm
    assert shape is not None
    assert (shape.max_seq_len, shape.max_context_len, shape.vocab_size, shape.n_layers) == (128, 256, 512, 2)
    assert shape.dynamic_shape and shape.prefill_chunk == 127 and shape.custom_ops == ()
    static = read_pte_info(write(tmp_path, program(llm_plans(dynamic=False)))).llm
    assert static is not None and not static.dynamic_shape and static.prefill_chunk == 1


@pytest.mark.parametrize("plans", [
    llm_plans(kv=False),
    llm_plans(tokens_dtype=INT),
    [p for p in llm_plans() if p.name != "get_vocab_size"],
    [Plan("forward", [(TENSOR_KIND, (FLOAT, [1, 4], False))], inputs=[0], outputs=[0])],
])
def test_other_programs_are_not_llms(tmp_path: Path, plans: list[Plan]) -> None:
    assert read_pte_info(write(tmp_path, program(plans))).llm is None


def test_llama_custom_ops_are_named_in_one_line(tmp_path: Path) -> None:
    plans = llm_plans(ops=(("llama::update_cache", "out"), ("llama::custom_sdpa", "out")))
    info = read_pte_info(write(tmp_path, program(plans), "sdpa.pte"))
    assert info.llm is not None and info.llm.custom_ops == ("llama::update_cache.out", "llama::custom_sdpa.out")
    message = unsupported_ops_message(info)
    assert message is not None and "\n" not in message
    assert message.startswith("sdpa.pte: method 'forward' needs") and "llama::custom_sdpa.out" in message
    assert "without that flag" in message and "own runtime" in message
    assert unsupported_ops_message(read_pte_info(write(tmp_path, program(llm_plans())))) is None


def test_only_the_flatbuffer_is_read_behind_an_extended_header(tmp_path: Path) -> None:
    flat = program(llm_plans())
    info = read_pte_info(write(tmp_path, with_extended_header(flat, b"\xff" * 4096)))
    assert info.program_bytes == len(flat) + 32 and info.file_bytes == info.program_bytes + 4096
    assert info.llm is not None and info.llm.vocab_size == 512


def test_foreign_truncated_and_damaged_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="not an ExecuTorch program"):
        read_pte_info(write(tmp_path, b"PK\x03\x04 a zip, not a program"))
    with pytest.raises(ModelSpecError, match="cannot read"):
        read_pte_info(tmp_path / "missing.pte")
    whole = with_extended_header(program(llm_plans()), b"")
    with pytest.raises(ModelSpecError, match="truncated"):
        read_pte_info(write(tmp_path, whole[: len(whole) // 2]))
    flat = program(llm_plans())
    for cut in range(8, len(flat), 7):  # every truncation: parsed or refused, never another exception
        try:
            read_pte_info(write(tmp_path, flat[:cut]))
        except ModelSpecError as exc:
            assert "\n" not in str(exc)
    for pos in range(8, len(flat), 5):  # single damaged bytes
        damaged = bytearray(flat)
        damaged[pos] ^= 0xFF
        try:
            read_pte_info(write(tmp_path, bytes(damaged)))
        except ModelSpecError:
            pass

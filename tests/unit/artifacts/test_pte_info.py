"""The .pte reader on program flatbuffers built here with the flatbuffers package (no torch):
the fields of schema/program.fbs it reads, LLM recognition, the extended header, damaged files."""

from __future__ import annotations

from pathlib import Path

import flatbuffers
import pytest

from orchestrator.artifacts.pte_info import check_program, read_pte_info, unsupported_ops_message
from orchestrator.base.errors import DataError, UsageError
from tests.helpers.pte_programs import (
    FLOAT,
    INT,
    INT_KIND,
    TENSOR_KIND,
    Plan,
    llm_plans,
    program,
    with_extended_header,
)


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
    with pytest.raises(DataError, match="not an ExecuTorch program"):
        read_pte_info(write(tmp_path, b"PK\x03\x04 a zip, not a program"))
    with pytest.raises(DataError, match="cannot read"):
        read_pte_info(tmp_path / "missing.pte")
    whole = with_extended_header(program(llm_plans()), b"")
    with pytest.raises(DataError, match="truncated"):
        read_pte_info(write(tmp_path, whole[: len(whole) // 2]))
    flat = program(llm_plans())
    for cut in range(8, len(flat), 7):  # every truncation: parsed or refused, never another exception
        try:
            read_pte_info(write(tmp_path, flat[:cut]))
        except DataError as exc:
            assert "\n" not in str(exc)
    for pos in range(8, len(flat), 5):  # single damaged bytes
        damaged = bytearray(flat)
        damaged[pos] ^= 0xFF
        try:
            read_pte_info(write(tmp_path, bytes(damaged)))
        except DataError:
            pass



def segmented_program(size: int) -> bytes:
    """A Program whose segment table holds one segment of `size` bytes at offset 0."""
    b = flatbuffers.Builder(256)
    b.ForceDefaults(True)
    b.StartObject(2)
    b.PrependUint64Slot(0, 0, 0)
    b.PrependUint64Slot(1, size, 0)
    segment = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(segment)
    segments = b.EndVector()
    name = b.CreateString("forward")
    b.StartObject(10)
    b.PrependUOffsetTRelativeSlot(0, name, 0)
    plan = b.EndObject()
    b.StartVector(4, 1, 4)
    b.PrependUOffsetTRelative(plan)
    plans = b.EndVector()
    b.StartObject(8)
    b.PrependUOffsetTRelativeSlot(1, plans, 0)
    b.PrependUOffsetTRelativeSlot(4, segments, 0)
    b.Finish(b.EndObject(), file_identifier=b"ET12")
    return bytes(b.Output())


def test_a_program_cut_inside_its_segments_is_truncated(tmp_path: Path) -> None:
    whole = with_extended_header(segmented_program(4096), b"\x01" * 4096)
    info = read_pte_info(write(tmp_path, whole))
    assert info.segments == 1 and info.data_end == len(whole)
    with pytest.raises(DataError, match=r"truncated: its segments end at byte \d+, the file has \d+"):
        read_pte_info(write(tmp_path, whole[:-1]))


def test_check_program_wants_a_whole_et12_program_with_the_runner_method(tmp_path: Path) -> None:
    assert check_program(write(tmp_path, program(llm_plans()))).method("forward") is not None
    with pytest.raises(DataError, match=r"no method 'forward' to run \(methods: encode\)"):
        check_program(write(tmp_path, program([Plan("encode", [(INT_KIND, 1)], outputs=[0])])))
    old = bytearray(program(llm_plans()))
    old[4:8] = b"ET09"
    with pytest.raises(DataError, match="program format 'ET09'; this ExecuTorch loads 'ET12'"):
        check_program(write(tmp_path, bytes(old)))
    sdpa = write(tmp_path, program(llm_plans(ops=(("llama::custom_sdpa", "out"),))), "sdpa.pte")
    with pytest.raises(UsageError, match="llama::custom_sdpa.out"):
        check_program(sdpa)
    assert check_program(sdpa, custom_ops=True).llm is not None  # the user's own runtime has them


def test_signature_problem_compares_tensors_with_the_methods_signature() -> None:
    """Issue 31: files beside a given .pte are checked against `forward` (counts, dtypes, shapes) before anything runs."""
    from orchestrator.artifacts.pte_info import PteMethod, ValueSpec, signature_problem

    image = ValueSpec("tensor", "float32", (1, 3, 64, 64))
    tokens = ValueSpec("tensor", "int64", (1, 128), dynamic=True)
    forward = PteMethod("forward", (image, tokens), (ValueSpec("tensor", "float32", (1, 10)),), (), ())
    fits = [("float32", (1, 3, 64, 64)), ("int64", (1, 7))]  # a dynamic size below its bound fits, as the runner takes it
    assert signature_problem(fits, forward, "input") is None
    assert signature_problem([("float32", (1, 3, None, None)), ("int64", (1, None))], forward, "input") is None
    assert signature_problem(fits[:1], forward, "input") == "1 input(s); forward takes 2"
    assert signature_problem([("float32", (4, 64)), fits[1]], forward, "input") == (
        "input 0 is float32 [4, 64]; forward takes float32 [1, 3, 64, 64]")
    assert signature_problem([fits[0], ("int32", (1, 7))], forward, "input") == (
        "input 1 is int32 [1, 7]; forward takes at most int64 [1, 128]")
    assert signature_problem([fits[0], ("int64", (1, 129))], forward, "input") == (
        "input 1 is int64 [1, 129]; forward takes at most int64 [1, 128]")
    assert signature_problem([("float32", (4, 10))], forward, "output") == (
        "output 0 is float32 [4, 10]; forward gives float32 [1, 10]")
    scalar = PteMethod("forward", (ValueSpec("int"),), (), (), ())
    assert signature_problem([("int64", ())], scalar, "input") == "input 0 is int64 []; forward takes an int"

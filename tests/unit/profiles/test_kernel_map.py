"""Kernel mapping on synthetic programs: .pte and XNNPACK payload readers, alignment, attribution, the API.

Synthetic flatbuffers (tests/helpers/xnnpack_payloads.py) and ETRecords (JSON members in a zip)
cover the rules and the damaged-file paths; tests/integration/test_kernel_map.py checks real exports.
"""

from __future__ import annotations

import json
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.edge_flow import EdgeFlow, edge_flow
from orchestrator.profiles.etdump_events import EventInfo
from orchestrator.profiles.etrecord import OpNode
from orchestrator.profiles.kernel_align import AlignmentTooLarge, align, operator_family
from orchestrator.profiles.kernel_attribution import attribute
from orchestrator.profiles.kernel_map import load_kernel_program
from orchestrator.profiles.pte_program import parse_delegate_calls, read_delegate_calls
from orchestrator.profiles.xnnpack_graph import XnnGraph, XnnNode, parse_xnnpack_payload
from tests.helpers.xnnpack_payloads import Delegate, Node, Program, pte, xnn_graph

EDGE = "executorch.exir.dialects.edge.ops."
# input 0 -> transpose(inserted) 1 -> pad(4) 2 -> conv(1) 3 -> clamp(2) 4 -> max pool(3) 5 -> transpose(inserted) 6
CNN = [
    Node("XNNStaticTranspose", 65535, (0,), (1,)),
    Node("XNNStaticConstantPad", 4, (1,), (2,)),
    Node("XNNConv2d", 1, (2, 10, 11), (3,), (0.0, 6.0)),
    Node("XNNClamp", 2, (3,), (4,), (-1.0, 1.0)),
    Node("XNNMaxPooling2d", 3, (4,), (5,)),
    Node("XNNStaticTranspose", 65535, (5,), (6,)),
]
KERNELS = ["Transpose (ND, X32) #1", "Convolution (NHWC, F32) IGEMM #1", "Max Pooling (NHWC, F32) #1", "Transpose (ND, X32) #2"]
SEED_PTE = pte(Program([Delegate("XnnpackBackend", xnn_graph(CNN), in_segment=True), Delegate("Other", b"abc")],
                       instructions=[None, 0, 1]))
SEED_PAYLOAD = xnn_graph(CNN)


def stack(*paths: str) -> str:
    return ";".join(["L__self__,,m.Model"] + [f"L__self__{p},{p},torch.nn.Conv2d" for p in paths])


def edge_node(name: str, target: str, handle: int, inputs: list[str], module: str | None, line: int) -> dict[str, Any]:
    meta = {"debug_handle": str(handle), "stack_trace": f'File "/home/u/model.py", line {line}, in forward\n    x'}
    if module is not None:
        meta["nn_module_stack"] = stack(*module.split("|")) if module else stack()
    args = [{"name": "input", "arg": {"as_tensor": {"name": i}}} for i in inputs]
    return {"name": name, "target": EDGE + target, "inputs": args, "outputs": [{"as_tensor": {"name": name}}], "metadata": meta}


# pad(4) -> conv(1) -> relu(5, folded by the lowering into the conv) -> clamp(2) -> pool(3)
EDGE_NODES = [
    edge_node("pad", "aten.constant_pad_nd.default", 4, ["x"], "", 10),
    edge_node("conv", "aten.convolution.default", 1, ["pad"], "body", 11),
    edge_node("relu", "aten.relu.default", 5, ["conv"], "body|body.act", 12),
    edge_node("clamp", "aten.clamp.default", 2, ["relu"], "", 13),
    edge_node("pool", "aten.max_pool2d.default", 3, ["clamp"], "pool", 14),
]


def write_etrecord(path: Path, nodes: list[dict[str, Any]], handle_map: dict[str, Any]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("ETRECORD_V0", "")
        zf.writestr("edge_dialect_exported_program/forward", json.dumps({"graph_module": {"graph": {"nodes": nodes}}}))
        zf.writestr("debug_handle_map", json.dumps({"forward": handle_map}))
        zf.writestr("delegate_map", json.dumps({"forward": {"1": {"name": "XnnpackBackend", "delegate_map": {}}}}))
    return path


def events(names: list[str], instruction_id: int = 1) -> list[EventInfo]:
    kernels = [EventInfo(i, n, instruction_id, n, True, True) for i, n in enumerate(names)]
    return [*kernels, EventInfo(len(names), "DELEGATE_CALL", instruction_id, None, False, True)]


@pytest.fixture
def program_files(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "m.pte").write_bytes(SEED_PTE)
    return tmp_path / "m.pte", write_etrecord(tmp_path / "m.etrecord", EDGE_NODES, {"1": [1, 2, 3, 4, 5], "2": [6]})


# --- readers -------------------------------------------------------------------------------------


def test_pte_delegate_calls_inline_and_in_segments() -> None:
    calls = parse_delegate_calls(SEED_PTE, "m.pte").calls
    assert [(c.method, c.chain, c.instruction_id, c.delegate_index, c.backend) for c in calls] == [
        ("forward", 0, 1, 0, "XnnpackBackend"), ("forward", 0, 2, 1, "Other")]
    assert calls[0].payload == SEED_PAYLOAD and calls[1].payload == b"abc"


@pytest.mark.parametrize(("data", "message"), [
    (b"", "empty file"), (b"\0" * 64, "not an ExecuTorch program"), (SEED_PTE[:40], "corrupt .pte"),
])
def test_pte_errors_name_the_file(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "bad.pte"
    path.write_bytes(data)
    with pytest.raises(AnalysisError, match=f"^{path}: .*{message}"):
        read_delegate_calls(path)
    with pytest.raises(AnalysisError, match="no such .pte file"):
        read_delegate_calls(tmp_path / "missing.pte")


@pytest.mark.parametrize("header", [True, False])
def test_xnnpack_payload_nodes(header: bool) -> None:
    graph = parse_xnnpack_payload(xnn_graph(CNN, header=header))
    assert [(n.kind, n.debug_handle, n.inputs, n.outputs) for n in graph.nodes] == [
        (n.kind, n.handle, n.inputs, n.outputs) for n in CNN]
    assert graph.nodes[2].output_min_max == (0.0, 6.0) and graph.nodes[1].output_min_max is None
    assert graph.producers()[3] == 2 and graph.consumers()[4] == [4]


def test_xnnpack_payload_of_a_newer_schema_and_foreign_bytes() -> None:
    assert parse_xnnpack_payload(xnn_graph([Node("XNNFuture", 7)])).nodes[0].kind == "XNNUnknown#200"
    for data in (b"", b"abc", xnn_graph(CNN, identifier=b"ZZ00"), SEED_PAYLOAD[:50]):
        with pytest.raises(AnalysisError, match="^d: "):
            parse_xnnpack_payload(data, "d")


FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def _only_analysis_errors(read: Any, data: bytes) -> None:
    began = time.process_time()  # CPU of this process: a loaded host stretches wall time, not the work
    try:
        read(data)
    except AnalysisError as exc:
        assert "\n" not in str(exc)
    assert time.process_time() - began < 2.0


@FUZZ
@given(st.integers(0, len(SEED_PTE) - 1), st.integers(0, 255), st.integers(0, len(SEED_PTE)))
def test_damaged_pte_raises_only_analysis_errors(position: int, value: int, cut: int) -> None:
    data = bytearray(SEED_PTE)
    data[position] = value
    _only_analysis_errors(parse_delegate_calls, bytes(data))
    _only_analysis_errors(parse_delegate_calls, SEED_PTE[:cut])


@FUZZ
@given(st.integers(0, len(SEED_PAYLOAD) - 1), st.integers(0, 255), st.integers(0, len(SEED_PAYLOAD)))
def test_damaged_payload_raises_only_analysis_errors(position: int, value: int, cut: int) -> None:
    data = bytearray(SEED_PAYLOAD)
    data[position] = value
    _only_analysis_errors(parse_xnnpack_payload, bytes(data))
    _only_analysis_errors(parse_xnnpack_payload, SEED_PAYLOAD[:cut])


# --- alignment -----------------------------------------------------------------------------------


def test_operator_family() -> None:
    assert operator_family("Convolution (NHWC, F32) IGEMM #12") == "Convolution"
    assert operator_family("Static Reshape (NC) #1") == "Static Reshape"


def test_alignment_skips_fused_nodes_and_runs_a_1x1_conv_as_a_gemm() -> None:
    kinds = ["XNNStaticConstantPad", "XNNConv2d", "XNNClamp", "XNNConv2d"]
    found = align(["Convolution (NHWC, F32) IGEMM #1", "Fully Connected (NC, F32) GEMM #1"], kinds)
    assert found.node_of == (1, 3) and found.operator_of == (None, 0, None, 1)
    assert found.candidates == ((1,), (3,)) and found.unmatched_reason == ("", "")


def test_alignment_marks_operators_xnnpack_added_and_ambiguous_ones() -> None:
    added = align(["Pack LH (X32) #1", "Fully Connected (NC, F32) GEMM #1"], ["XNNFullyConnected"])
    assert added.node_of == (None, 0) and "XNNPACK added it" in added.unmatched_reason[0]
    ambiguous = align(["Add (ND) #1"], ["XNNAdd", "XNNAdd"])
    assert ambiguous.candidates == ((0, 1),)


def test_alignment_refuses_huge_delegates() -> None:
    with pytest.raises(AlignmentTooLarge):
        align(["Add (ND) #1"] * 3000, ["XNNAdd"] * 3000)


# --- attribution ---------------------------------------------------------------------------------


def graph_of(nodes: list[Node]) -> XnnGraph:
    return XnnGraph(tuple(XnnNode(i, n.kind, n.handle, n.inputs, n.outputs, n.min_max) for i, n in enumerate(nodes)))


def op(name: str, target: str) -> tuple[OpNode, ...]:
    return (OpNode(name + "_", target, None, None),)


OPS = {1: op("conv", "aten.convolution.default"), 2: op("clamp", "aten.clamp.default"), 3: op("pool", "aten.max_pool2d.default"),
       4: op("pad", "aten.constant_pad_nd.default"), 5: op("relu", "aten.relu.default")}


def test_fused_folded_and_inserted_nodes_go_to_their_kernels() -> None:
    graph = graph_of(CNN)
    found = attribute(graph, align(KERNELS, [n.kind for n in graph.nodes]), [1, 2, 3, 4, 5],
                      edge_flow({"graph_module": {"graph": {"nodes": EDGE_NODES}}}), OPS)
    assert found.reasons == ("", "", "", "")
    # the pad (before) and the clamp (after) fused into the convolution; the relu the lowering folded too
    assert found.xnodes[1] == (2, 1, 3)
    assert found.handles[1] == ((1, "ran"), (4, "fused"), (2, "fused"), (5, "fused"))
    # the first transpose reads the delegate's input: it serves the conv it feeds (through the pad fused
    # into that conv); the last one serves the pool whose output it reads
    assert found.handles[0] == ((1, "serves"),) and found.handles[3] == ((3, "serves"),)
    assert "inserted by the XNNPACK lowering" in found.notes[0]


def test_dequantize_goes_to_its_consumer_and_quantization_is_not_served() -> None:
    nodes = [Node("XNNConvert", 7, (0,), (1,)), Node("XNNStaticTranspose", 65535, (1,), (2,)), Node("XNNConv2d", 1, (2, 9), (3,))]
    ops = {7: op("q", "quantized_decomposed.quantize_per_tensor.default"), 1: op("conv", "aten.convolution.default"),
           8: op("dq_w", "quantized_decomposed.dequantize_per_channel.default")}
    flow = EdgeFlow(producers={1: (7, 8)}, consumers={7: (1,), 8: (1,)})
    found = attribute(graph_of(nodes), align(["Convert (NC) #1", "Transpose (ND, X8) #1", "Convolution (NHWC, QS8) IGEMM #1"],
                                             [n.kind for n in nodes]), [1, 7, 8], flow, ops)
    assert found.handles[2] == ((1, "ran"), (8, "fused"))  # the weight's dequantize: into the conv that reads it
    assert found.handles[1] == ((1, "serves"),)  # not the input's quantize, the conv it feeds


def test_ambiguous_kernels_are_left_unmapped() -> None:
    nodes = [Node("XNNAdd", 1, (0, 1), (2,)), Node("XNNAdd", 2, (2, 1), (3,))]
    found = attribute(graph_of(nodes), align(["Add (ND) #1"], ["XNNAdd", "XNNAdd"]), [1, 2], EdgeFlow({}, {}), OPS)
    assert found.reasons[0].startswith("ambiguous")


# --- the API -------------------------------------------------------------------------------------


def test_link_block_names_each_kernel(program_files: tuple[Path, Path]) -> None:
    program = load_kernel_program(*program_files)
    block = events(KERNELS) + [EventInfo(9, "Method::execute", 0, None, False, True)]
    links = program.link_block(block)
    assert links[-2:] == (None, None)  # DELEGATE_CALL, Method::execute
    transpose, conv, pool, last = links[:4]
    assert (conv.module_path, conv.source_line, conv.covers) == ("body", "model.py:11", ("body", "body.act"))
    assert conv.op_types == ("aten.convolution.default", "aten.constant_pad_nd.default", "aten.clamp.default",
                             "aten.relu.default")
    assert "fused: aten.constant_pad_nd.default (model)" in conv.note
    assert (transpose.module_path, transpose.mapped) == ("body", True)
    assert (pool.module_path, last.module_path, pool.source_line) == ("pool", "pool", "model.py:14")
    assert program.link_block(block)[1] is conv  # cached


def test_unmappable_kernels_say_why(program_files: tuple[Path, Path], tmp_path: Path) -> None:
    program = load_kernel_program(*program_files)
    (other,) = program.link_block(events(["Some Kernel #1"], instruction_id=2))[:1]
    assert "Other kernels are not mapped" in other.reason and not other.mapped
    (missing,) = program.link_block(events(["Add (ND) #1"], instruction_id=7))[:1]
    assert "no delegate call at instruction 7" in missing.reason
    lost = program.link_block(events(["Transpose (ND, X32) #1", "Transpose (ND, X32) #2"]))[0]
    assert "another program" in lost.reason  # the conv and the pool ran no kernel: not this program's ETDump
    foreign = load_kernel_program(program_files[0], write_etrecord(tmp_path / "x.etrecord", EDGE_NODES, {"1": [1, 2]}))
    assert "disagree" in foreign.link_block(events(KERNELS))[0].reason


def test_missing_files(tmp_path: Path, program_files: tuple[Path, Path]) -> None:
    with pytest.raises(AnalysisError, match="no such file"):
        load_kernel_program(tmp_path / "none.pte", program_files[1])


def test_mapping_imports_neither_torch_nor_executorch(program_files: tuple[Path, Path]) -> None:
    import subprocess

    script = ("import sys; from orchestrator.profiles.kernel_map import load_kernel_program; "
              "from orchestrator.profiles.etdump_events import EventInfo; "
              f"p = load_kernel_program({str(program_files[0])!r}, {str(program_files[1])!r}); "
              f"links = p.link_block([EventInfo(0, {KERNELS[1]!r}, 1, {KERNELS[1]!r}, True, True)]); "
              "assert links[0] is not None and links[0].reason, links; "  # one kernel alone: the pool ran none
              "print(sorted(m for m in ('torch', 'executorch', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[3])
    assert out.stdout.strip() == "[]"

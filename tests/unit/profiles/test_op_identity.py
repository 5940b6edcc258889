"""The one op key: module path, ATen op and occurrence from the model, whatever the kernels or graph nodes are called."""

from __future__ import annotations

from pathlib import Path

from orchestrator.profiles.etdump_events import EventInfo
from orchestrator.profiles.etrecord import EventLink
from orchestrator.profiles.kernel_attribution import ROLE_FUSED, ROLE_RAN
from orchestrator.profiles.kernel_map import KernelLink, KernelNode
from orchestrator.profiles.op_identity import (
    DELEGATE,
    EVENT,
    FRAMEWORK,
    MODEL,
    OpIdentity,
    block_identities,
    graph_op,
    numbered,
)
from orchestrator.profiles.stat_rows import read_stats_csv

CONV = "aten.convolution.default"


def kernel(index: int, name: str) -> EventInfo:
    return EventInfo(index, name, 1, name, True, True)


def mapped(name: str, module: str, handle: int, *, fused: str = "") -> KernelLink:
    nodes = (KernelNode(handle, f"conv_{handle}", CONV, module, ROLE_RAN),
             *((KernelNode(handle + 100, "relu", fused, module, ROLE_FUSED),) if fused else ()))
    return KernelLink(name, 1, 0, nodes=nodes, module_path=module)


def test_one_convolution_on_two_cpus_is_one_op() -> None:
    """XNNPACK's F32 kernel on x86 and PF32 kernel on aarch64 of the same layer: one identity, from the model."""
    host = ["Convolution (NHWC, F32) IGEMM #1", "Convolution (NHWC, F32) IGEMM #2"]
    board = ["Convolution (NHWC, PF32) IGEMM #1", "Convolution (NHWC, PF32) IGEMM #2"]
    found = []
    for names in (host, board):
        events = [EventInfo(0, "Method::execute", -1, None, False, True), *(kernel(i + 1, n) for i, n in enumerate(names))]
        links = [EventLink()] * len(events)
        kernels = [None, mapped(names[0], "features.0", 3, fused="aten.relu.default"), mapped(names[1], "features.3", 7)]
        found.append(block_identities(events, links, kernels))
    assert found[0] == found[1] == (OpIdentity("", "Method::execute"), OpIdentity("features.0", CONV),
                                    OpIdentity("features.3", CONV))
    assert [i.basis for i in found[1]] == [FRAMEWORK, MODEL, MODEL]
    assert found[1][1].debug_handles == (3,) and found[1][1].label == "features.0 convolution"


def test_an_unmapped_kernel_falls_back_to_the_delegate_and_says_so() -> None:
    events = [kernel(0, "Convolution (NHWC, F32) IGEMM #1"), kernel(1, "Convolution (NHWC, F32) IGEMM #2"),
              EventInfo(2, "DELEGATE_CALL", 1, 1, False, True)]
    link = EventLink(debug_handles=(2, 3), op_types=(CONV,), delegate_backend_name="XnnpackBackend")
    found = block_identities(events, [link] * 3, [KernelLink(events[0].name, 1, 0, reason="?"), None, None])
    assert found == (OpIdentity("", "Convolution"), OpIdentity("", "Convolution", 1), OpIdentity("", "XnnpackBackend"))
    assert [i.basis for i in found] == [DELEGATE, DELEGATE, DELEGATE]
    assert found[1].label == "Convolution (delegate) #2" and found[2].debug_handles == (2, 3)
    without_record = block_identities(events)  # no ETRecord: the names only
    assert [i.basis for i in without_record] == [EVENT] * 3 and without_record[1] == OpIdentity("", "Convolution", 1)


def test_operators_repeated_in_a_module_are_occurrences() -> None:
    events = [EventInfo(i, "native_call_add.out", i, None, False, True) for i in range(2)]
    link = EventLink(debug_handles=5, op_types=("aten.add.Tensor",),
                     module_hierarchy={"add": {"l": ("block", "Block")}})
    found = block_identities(events, [link, link])
    assert found == (OpIdentity("block", "aten.add.Tensor"), OpIdentity("block", "aten.add.Tensor", 1))
    assert found[1].label == "block add #2" and found[0].debug_handles == (5,)


def test_an_old_stats_csv_without_identities_loads_with_derived_ones(tmp_path: Path) -> None:
    """A run directory written before identities: each row gets one from its other columns, and the same layer
    joins across the two devices' kernel names."""
    path = tmp_path / "stats.csv"
    header = "device,model,event_block,event_index,event_name,samples,p50_ms,avg_ms,is_delegated_op,op_types," \
             "module_path,kernel_mapping\n"
    lines = []
    for device, precision in (("local", "F32"), ("rpi5", "PF32")):
        lines += [f"{device},m,Execute,0,Method::execute,6,1.0,1.0,False,,,\n",
                  f"{device},m,Execute,1,\"Convolution (NHWC, {precision}) IGEMM #1\",6,0.2,0.2,True,,features.0,mapped\n",
                  f"{device},m,Execute,2,\"Convolution (NHWC, {precision}) IGEMM #2\",6,0.3,0.3,True,,features.3,mapped\n",
                  f"{device},m,Execute,3,native_call_add.out,6,0.1,0.1,False,aten.add.Tensor,head,\n",
                  f"{device},m,Execute,4,native_call_add.out,6,0.1,0.1,False,aten.add.Tensor,head,\n"]
    path.write_text(header + "".join(lines))
    rows = read_stats_csv(path)
    local, rpi5 = ([r.identity for r in rows if r.device == d] for d in ("local", "rpi5"))
    assert local == rpi5 == [OpIdentity("", "Method::execute"), OpIdentity("features.0", "Convolution"),
                             OpIdentity("features.3", "Convolution"), OpIdentity("head", "aten.add.Tensor"),
                             OpIdentity("head", "aten.add.Tensor", 1)]
    assert [i.basis for i in local] == [FRAMEWORK, EVENT, EVENT, MODEL, MODEL]


def test_a_graph_handle_is_its_first_node_that_is_not_a_quantize_step() -> None:
    assert graph_op(["relu_2", "quantize_per_tensor_3", "dequantize_per_tensor_3"], ["features.7", "", ""])[:2] == (
        "features.7", "relu")
    assert graph_op(["dequantize_per_channel_1"], [""]) is None
    conv = graph_op(["conv2d_1"], ["f"])
    assert numbered([conv, None, conv]) == [OpIdentity("f", "conv2d"), None, OpIdentity("f", "conv2d", 1)]
    assert OpIdentity("f", "conv2d", 1).label == "f conv2d #2"


def test_a_kernel_the_lowering_inserted_is_its_own_op_in_the_module_it_serves() -> None:
    """A layout transpose serving features.0's convolution is no second convolution (op type summaries count it)."""
    from orchestrator.profiles.kernel_attribution import ROLE_SERVES

    events = [kernel(0, "Transpose (ND, X32) #1"), kernel(1, "Convolution (NHWC, F32) IGEMM #1")]
    serves = KernelLink(events[0].name, 1, 0, nodes=(KernelNode(3, "conv_3", CONV, "features.0", ROLE_SERVES),),
                        module_path="features.0")
    found = block_identities(events, [EventLink()] * 2, [serves, mapped(events[1].name, "features.0", 3)])
    assert found == (OpIdentity("features.0", "Transpose"), OpIdentity("features.0", CONV))
    assert found[0].debug_handles == (3,) and found[0].label == "features.0 Transpose"

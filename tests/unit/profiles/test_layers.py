"""The one layer key: module path, op kind and occurrence, whatever the kernels or graph nodes are called."""

from __future__ import annotations

from orchestrator.profiles.layers import LayerKey, graph_op, layer_keys, row_op
from orchestrator.profiles.stat_rows import StatRow


def row(name: str, module: str = "", mapping: str | None = "mapped", op_types: str | None = None) -> StatRow:
    return StatRow("d", "m", "Execute", 0, name, module_path=module, kernel_mapping=mapping, op_types=op_types)


def test_kernels_of_two_precisions_and_cpus_key_alike() -> None:
    fp32 = [row("Transpose (ND, X32) #1", "features.0"), row("Convolution (NHWC, F32) IGEMM #1", "features.0"),
            row("Convolution (NHWC, F32) IGEMM #2", "features.3")]
    int8 = [row("Transpose (ND, X8) #1", "features.0"), row("Convolution (NHWC, QC8) IGEMM #1", "features.0"),
            row("Convolution (NHWC, PF32) IGEMM #2", "features.3")]
    assert layer_keys(row_op(r) for r in fp32) == layer_keys(row_op(r) for r in int8) == [
        LayerKey("features.0", "Transpose"), LayerKey("features.0", "Convolution"), LayerKey("features.3", "Convolution")]


def test_a_module_called_twice_has_two_occurrences_and_non_layers_are_none() -> None:
    rows = [row("Fully Connected (NC, F32) GEMM #1", "shared"), row("Method::execute", mapping=""),
            row("DELEGATE_CALL", mapping="", op_types="aten.linear.default"),
            row("Convert (NC) #1", "", mapping="unmapped"), row("Fully Connected (NC, F32) GEMM #2", "shared"),
            row("native_call_add.out", "block", mapping="", op_types="aten.add.Tensor;aten.relu.default")]
    assert layer_keys(row_op(r) for r in rows) == [
        LayerKey("shared", "Fully Connected"), None, None, None, LayerKey("shared", "Fully Connected", 1),
        LayerKey("block", "aten.add.Tensor")]


def test_a_graph_handle_is_its_first_node_that_is_not_a_quantize_step() -> None:
    assert graph_op(["relu_2", "quantize_per_tensor_3", "dequantize_per_tensor_3"], ["features.7", "", ""]) == (
        "features.7", "relu")
    assert graph_op(["dequantize_per_channel_1"], [""]) is None
    assert graph_op(["conv2d_1"], ["features.3"]) == ("features.3", "conv2d")
    assert layer_keys([("f", "conv2d"), None, ("f", "conv2d")]) == [LayerKey("f", "conv2d"), None,
                                                                      LayerKey("f", "conv2d", 1)]

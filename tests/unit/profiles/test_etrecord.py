"""orchestrator.profiles.etrecord: linking events to ops from the ETRecord's JSON members."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etrecord import TensorMeta, load_etrecord, module_stack, op_name

EDGE = "executorch.exir.dialects.edge.ops."
STACK = "L__self__,,m.Model;L__self__layers.0,layers.0,torch.nn.modules.linear.Linear"


def node(name: str, target: str, handle: int | None, stack: str | None = STACK, trace: str | None = "File x", outputs: Any = None) -> dict[str, Any]:
    meta: dict[str, str] = {}
    if handle is not None:
        meta["debug_handle"] = str(handle)
    if stack is not None:
        meta["nn_module_stack"] = stack
    if trace is not None:
        meta["stack_trace"] = trace
    return {"name": name, "target": target, "outputs": outputs if outputs is not None else [{"as_tensor": {"name": name}}], "metadata": meta}


def write_etrecord(path: Path, nodes: list[dict[str, Any]], handle_map: dict[str, Any], delegate_map: dict[str, Any] | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("ETRECORD_V0", "")
        zf.writestr("edge_dialect_exported_program/forward", json.dumps({"graph_module": {"graph": {"nodes": nodes}}}))
        zf.writestr("edge_dialect_exported_program/forward_state_dict", b"")
        zf.writestr("debug_handle_map", json.dumps({"forward": handle_map}))
        zf.writestr("delegate_map", json.dumps({"forward": delegate_map or {}}))
    return path


@pytest.fixture
def record_path(tmp_path: Path) -> Path:
    nodes = [
        node("aten_permute_copy_default", EDGE + "aten.permute_copy.default", 1),
        node("aten_addmm_default", EDGE + "aten.addmm.default", 1),
        node("getitem", "_operator.getitem", 1),
        node("aten_relu_default", EDGE + "aten.relu.default", 2, stack="L__self__,,m.Model", trace=None),
        node("no_handle", EDGE + "aten.add.Tensor", None),
        node("aten_add_tensor", EDGE + "aten.add.Tensor", 3),
    ]
    handle_map = {"0": 1, "1": [1], "2": 2, "3": [3, 2], "7": [1, 2, 3]}
    delegates = {"7": {"name": "XnnpackBackend", "delegate_map": {"5": [2], "Conv": [3]}}}
    return write_etrecord(tmp_path / "model.etrecord", nodes, handle_map, delegates)


def test_links_ops_stack_traces_and_module_hierarchy(record_path: Path) -> None:
    link = load_etrecord(record_path).link("native_call_addmm.out", 1, None)
    assert link.debug_handles == (1,)
    assert link.op_types == ("aten.permute_copy.default", "aten.addmm.default")
    assert link.stack_traces == {"aten_permute_copy_default_": "File x", "aten_addmm_default_": "File x"}
    assert link.module_hierarchy["aten_addmm_default_"] == {
        "L__self__": ("", "m.Model"),
        "L__self__layers.0": ("layers.0", "torch.nn.modules.linear.Linear"),
    }
    assert link.delegate_backend_name is None


def test_int_handles_and_missing_stack_trace(record_path: Path) -> None:
    link = load_etrecord(record_path).link("native_call_relu.out", 2, None)
    assert link.debug_handles == 2
    assert link.op_types == ("aten.relu.default",)
    assert link.stack_traces == {"aten_relu_default_": None}


def test_several_handles_keep_their_order(record_path: Path) -> None:
    assert load_etrecord(record_path).link("x", 3, None).op_types == ("aten.add.Tensor", "aten.relu.default")


def test_framework_events_get_handles_but_no_ops(record_path: Path) -> None:
    link = load_etrecord(record_path).link("Method::execute", 0, None)
    assert link.debug_handles == 1
    assert link.op_types == () and link.stack_traces == {}


def test_unknown_instruction_links_nothing(record_path: Path) -> None:
    link = load_etrecord(record_path).link("op", 99, None)
    assert link.debug_handles is None and link.op_types == ()


def test_delegate_call_gets_backend_and_all_ops(record_path: Path) -> None:
    link = load_etrecord(record_path).link("DELEGATE_CALL", 7, None)
    assert link.delegate_backend_name == "XnnpackBackend"
    assert link.op_types == ("aten.permute_copy.default", "aten.addmm.default", "aten.relu.default", "aten.add.Tensor")


def test_delegated_kernels_resolve_through_the_delegate_map(record_path: Path) -> None:
    record = load_etrecord(record_path)
    by_int = record.link("5", 7, 5)  # int id: str key
    assert (by_int.debug_handles, by_int.op_types, by_int.delegate_backend_name) == ((2,), ("aten.relu.default",), "XnnpackBackend")
    by_substring = record.link("Conv #1", 7, "Conv #1")  # Inspector's `key in str(id)` fallback
    assert by_substring.debug_handles == (3,)
    unmapped = record.link("Add #1", 7, "Add #1")
    assert (unmapped.debug_handles, unmapped.op_types, unmapped.delegate_backend_name) == (None, (), "XnnpackBackend")


def test_delegated_event_without_delegate_entry_uses_handle_map(record_path: Path) -> None:
    link = load_etrecord(record_path).link("k", 2, "k")
    assert link.debug_handles == 2 and link.delegate_backend_name is None


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (EDGE + "aten.addmm.default", "aten.addmm.default"),
        (EDGE + "dim_order_ops._to_dim_order_copy.default", "dim_order_ops._to_dim_order_copy.default"),
        ("executorch.exir.dialects.backend.ops.foo.bar.default", "foo.bar.default"),
        ("torch.ops.aten.addmm.default", "addmm.default"),
        ("torch.ops.higher_order.executorch_call_delegate", "executorch_call_delegate"),
        ("_operator.mul", "mul"),
    ],
)
def test_op_names_match_target_dunder_name(target: str, expected: str) -> None:
    assert op_name(target) == expected


def test_module_stack_split_respects_brackets() -> None:
    assert module_stack("L__self__,,M;L__self___b,b[0],(x, y)") == {"L__self__": ("", "M"), "L__self___b": ("b[0]", "(x, y)")}
    assert module_stack(None) is None
    assert module_stack("bad") is None


def test_multi_output_nodes_keep_their_node_name(tmp_path: Path) -> None:
    nodes = [node("split", EDGE + "aten.split.Tensor", 4, outputs=[{"as_tensors": [{"name": "a"}, {"name": "b"}]}])]
    record = load_etrecord(write_etrecord(tmp_path / "r.etrecord", nodes, {"0": 4}))
    assert list(record.link("x", 0, None).stack_traces) == ["split_"]


def test_parsed_once_then_reparsed_when_the_file_changes(record_path: Path) -> None:
    first = load_etrecord(record_path)
    assert load_etrecord(record_path) is first
    assert load_etrecord(str(record_path)) is first
    write_etrecord(record_path, [node("n", EDGE + "aten.mul.Tensor", 1)], {"0": 1, "1": 1, "2": 1})
    os.utime(record_path, ns=(1, 1))
    second = load_etrecord(record_path)
    assert second is not first
    assert second.link("x", 1, None).op_types == ("aten.mul.Tensor",)


def test_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="missing.etrecord: no such ETRecord"):
        load_etrecord(tmp_path / "missing.etrecord")
    (tmp_path / "junk").write_bytes(b"not a zip")
    with pytest.raises(AnalysisError, match="junk: not an ETRecord \\(not a zip file\\)"):
        load_etrecord(tmp_path / "junk")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as zf:
        zf.writestr("hello", "x")
    with pytest.raises(AnalysisError, match="no ETRECORD_V0 member"):
        load_etrecord(tmp_path / "other.zip")
    with zipfile.ZipFile(tmp_path / "badjson.etrecord", "w") as zf:
        zf.writestr("ETRECORD_V0", "")
        zf.writestr("debug_handle_map", "{nope")
    with pytest.raises(AnalysisError, match="debug_handle_map is not valid JSON"):
        load_etrecord(tmp_path / "badjson.etrecord")
    with zipfile.ZipFile(tmp_path / "nomap.etrecord", "w") as zf:
        zf.writestr("ETRECORD_V0", "")
    with pytest.raises(AnalysisError, match="has no debug_handle_map"):
        load_etrecord(tmp_path / "nomap.etrecord")


def test_zip_bomb_member_is_refused_not_inflated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orchestrator.profiles.etrecord as etrecord_module

    monkeypatch.setattr(etrecord_module, "ETRECORD_MEMBER_MAX_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.etrecord"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("ETRECORD_V0", "")
        zf.writestr("debug_handle_map", b" " * (8 << 20))  # 8 MiB of JSON whitespace: ~8 KB compressed
    assert bomb.stat().st_size < 64 << 10
    with pytest.raises(AnalysisError, match=r"debug_handle_map inflates to 8388608 bytes, over the 1048576-byte cap"):
        load_etrecord(bomb)


def test_the_edge_programs_user_inputs_and_outputs_are_read(tmp_path: Path) -> None:
    """What run/engine/belonging.py compares with a given .pte's forward: user inputs and outputs only, dtypes by name,
    a symbolic size as None; an edge program without its signature gives None (nothing to compare)."""
    def tensor(dtype: int, *sizes: int | str) -> dict[str, Any]:
        return {"dtype": dtype, "sizes": [{"as_int": s} if isinstance(s, int) else {"as_expr": {"expr_str": s}} for s in sizes]}

    program = {"graph_module": {
        "graph": {"nodes": [], "tensor_values": {"w": tensor(7, 8, 4), "x": tensor(7, "s0", 4), "ids": tensor(5, 1, 3),
                                                 "out": tensor(12, 2)}},
        "signature": {"input_specs": [{"parameter": {"arg": {"name": "w"}}},
                                      {"user_input": {"arg": {"as_tensor": {"name": "x"}}}},
                                      {"user_input": {"arg": {"as_tensor": {"name": "ids"}}}},
                                      {"user_input": {"arg": {"as_int": 3}}}],
                      "output_specs": [{"user_output": {"arg": {"as_tensor": {"name": "out"}}}},
                                       {"buffer_mutation": {"arg": {"as_tensor": {"name": "w"}}}}]}}}
    path = tmp_path / "signed.etrecord"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("ETRECORD_V0", "")
        zf.writestr("edge_dialect_exported_program/forward", json.dumps(program))
        zf.writestr("debug_handle_map", json.dumps({"forward": {}}))
    record = load_etrecord(path)
    assert record.inputs == (TensorMeta("float32", (None, 4)), TensorMeta("int64", (1, 3)), TensorMeta(None))
    assert record.outputs == (TensorMeta("bool", (2,)),)
    unsigned = load_etrecord(write_etrecord(tmp_path / "unsigned.etrecord", [], {}))
    assert unsigned.inputs is None and unsigned.outputs is None

"""Every op names what it is in the user's model: source line, delegate coverage, the printed `module` cell."""

from __future__ import annotations

from pathlib import Path

from orchestrator.profiles.etrecord import load_etrecord
from orchestrator.profiles.source import common_prefix, deepest_module, module_path, op_where, short_op_types, source_line
from tests.unit.profiles.test_etrecord import EDGE, node, write_etrecord

TRACE = (
    'File "/home/u/proj/models/bert.py", line 75, in forward\n    return self.classifier(self.encoder(x))\n'
    'File "/home/u/proj/models/bert.py", line 26, in forward\n    q = self.query(x)\n'
    'File "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py", line 134, in forward\n    return F.linear(x)\n'
    'File "/opt/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl\n'
)


def test_source_line_is_the_innermost_frame_of_user_code() -> None:
    assert source_line({"op_": TRACE}) == "bert.py:26"
    assert source_line({"a_": None, "b_": TRACE}) == "bert.py:26"  # the first op that has a trace
    only_library = 'File "/x/lib/python3.11/site-packages/torch/a.py", line 3, in f\n'
    assert source_line({"op_": only_library}) == ""
    assert source_line({}) == ""


def _stack(*paths: str) -> str:
    entries = ["L__self__,,m.Model"] + [f"L__self__{p},{p},torch.nn.Linear" for p in paths]
    return ";".join(entries)


def test_a_delegate_call_and_its_kernels_cover_the_modules_of_every_op(tmp_path: Path) -> None:
    nodes = [
        node("q", EDGE + "aten.linear.default", 1, stack=_stack("enc", "enc.att", "enc.att.query")),
        node("k", EDGE + "aten.linear.default", 2, stack=_stack("enc", "enc.att", "enc.att.key")),
        node("v", EDGE + "aten.view_copy.default", 2, stack=_stack("enc", "enc.att")),
        node("n", EDGE + "aten.native_layer_norm.default", 3, stack=_stack("enc", "enc.norm")),
    ]
    delegates = {"0": {"name": "XnnpackBackend", "delegate_map": {"0": [1]}}}
    record = load_etrecord(write_etrecord(tmp_path / "r.etrecord", nodes, {"0": [1, 2], "1": 3}, delegates))
    covers = ("enc.att.query", "enc.att.key", "enc.att")
    assert record.link("DELEGATE_CALL", 0, None).delegate_covers == covers
    assert record.link("Fully Connected #1", 0, "GEMM #1").delegate_covers == covers  # a kernel of that delegate
    assert record.link("native_call_native_layer_norm.out", 1, None).delegate_covers == ()  # not delegated


def test_module_cell() -> None:
    assert op_where("enc.att", "enc.att.query;enc.att.key;enc.att") == "enc.att{query,key}"
    assert op_where("", "enc.att.query;enc.att.key") == "in enc.att{query,key}"  # a kernel inside the delegate
    assert op_where("enc.norm", "") == "enc.norm"
    assert op_where("enc", "enc.ff.up;enc.ff;enc.ff.down;enc") == "enc{ff.up,ff.down}"  # ancestors left out
    assert op_where(None, None) == ""
    assert op_where("", "") == ""


def test_an_event_and_a_kernel_sit_in_the_deepest_module_their_ops_share() -> None:
    # one rule for the event columns (module_path) and the XNNPACK kernels' own (deepest_module)
    assert deepest_module([["enc", "enc.att", "enc.att.q"], ["enc", "enc.att", "enc.att.k"]]) == "enc.att"
    assert deepest_module([["enc"], ["dec"]]) == "" and deepest_module([]) == ""
    hierarchy = {"q_": {"a": ("enc", "E"), "b": ("enc.att", "A")}, "v_": {"a": ("enc", "E")}}
    assert module_path(hierarchy) == "enc" and module_path({}) == ""
    assert common_prefix([["enc", "att"], ["enc", "ff"]]) == ["enc"] and common_prefix([]) == []


def test_op_types_are_named_short_once_each() -> None:
    assert short_op_types("aten.addmm.default;aten.permute_copy.default;aten.addmm.default;my.op") == [
        "addmm", "permute_copy", "my.op"]
    assert short_op_types("") == [] and short_op_types(None) == []

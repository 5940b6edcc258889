"""Roll-ups: a module call tree (self and total) and a summary by op type, from one (device, model)'s rows."""

from __future__ import annotations

import csv
import io
from dataclasses import replace

from orchestrator.profiles.rollups import ROOT, module_tree, op_type_summary, rollup, rollups_csv
from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.terminal.rollups import format_rollup

CONV, RELU = "aten.convolution.default", "aten.relu.default"


def op(index: int, name: str, avg: float, module: str, kind: str, occurrence: int = 0, basis: str = "model",
       block: str = "Execute", delegated: bool = True) -> StatRow:
    return StatRow("local", "cnn", block, index, name, 6, avg_ms=avg, p50_ms=avg, is_delegated_op=delegated,
                   op_module=module, op_kind=kind, op_occurrence=occurrence, op_basis=basis)


ROWS = [
    op(0, "Method::execute", 10.0, "", "Method::execute", basis="framework", delegated=False),
    op(1, "DELEGATE_CALL", 9.0, "", "XnnpackBackend", basis="delegate", delegated=False),  # its kernels are listed
    op(2, "Convolution (NHWC, F32) IGEMM #1", 3.0, "features.0", CONV),
    op(3, "Convolution (NHWC, F32) IGEMM #2", 4.0, "features.3", CONV),
    op(4, "Clamp (NC, F32) #1", 0.5, "features.3", RELU),
    op(5, "Fully Connected (NC, F32) GEMM #1", 1.0, "head", "aten.linear.default"),
    op(6, "Transpose (ND, X32) #1", 0.5, "", "Transpose", basis="delegate"),  # a kernel the map could not name
    op(0, "Method::init", 5.0, "", "Method::init", basis="framework", block="Default", delegated=False),
]


def test_the_module_tree_has_self_and_total_time_as_a_call_tree() -> None:
    tree = {m.module: m for m in module_tree(ROWS)}
    assert [m.module for m in module_tree(ROWS)] == [ROOT, "features", "features.3", "features.0", "head"]
    assert (tree[ROOT].self_ms, tree[ROOT].total_ms, tree[ROOT].ops) == (0.5, 9.0, 5)  # the delegate call not twice
    assert (tree["features"].self_ms, tree["features"].total_ms, tree["features"].depth) == (0.0, 7.5, 1)
    assert (tree["features.3"].self_ms, tree["features.3"].total_ms, tree["features.3"].ops) == (4.5, 4.5, 2)
    assert tree["features.3"].share == 0.5 and tree["head"].share == 1.0 / 9.0


def test_the_op_type_summary_counts_totals_and_shares_biggest_first() -> None:
    summary = op_type_summary(ROWS)
    assert [(t.op_type, t.count, t.total_ms) for t in summary] == [
        ("convolution", 2, 7.0), ("linear", 1, 1.0), ("Transpose", 1, 0.5), ("relu", 1, 0.5)]  # ties by name
    assert abs(sum(t.share or 0.0 for t in summary) - 1.0) < 1e-12


def test_the_rollups_in_a_file_and_in_the_terminal() -> None:
    summed = rollup("local", "cnn", ROWS)
    records = list(csv.DictReader(io.StringIO(rollups_csv([summed]))))
    modules = [r for r in records if r["kind"] == "module"]
    assert [(r["name"], r["depth"], r["self_ms"], r["total_ms"]) for r in modules][:3] == [
        (ROOT, "0", "0.5", "9.0"), ("features", "1", "0.0", "7.5"), ("features.3", "2", "4.5", "4.5")]
    assert [(r["name"], r["count"]) for r in records if r["kind"] == "op_type"][0] == ("convolution", "2")
    text = format_rollup(summed)
    assert "local / cnn: time by module" in text and "    features.3" in text and "convolution" in text


def test_the_terminal_rollup_scales_each_time_column() -> None:
    """Times of ms print in ms; a tree whose every figure is under 1 ms prints them in us, never `0.0000` ms."""
    text = format_rollup(rollup("local", "cnn", ROWS))
    assert "self ms" in text and "total ms" in text
    tiny = format_rollup(rollup("local", "cnn", [replace(r, avg_ms=r.avg_ms / 100, p50_ms=r.p50_ms / 100) for r in ROWS]))
    assert "self us" in tiny and "total us" in tiny and " ms" not in tiny and "0.0000" not in tiny, tiny
    features = next(line.split() for line in tiny.splitlines() if line.strip().startswith("features.3"))
    assert features[2:4] == ["45.0", "45.0"]  # 0.045 ms

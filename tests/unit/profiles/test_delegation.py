"""Delegation coverage: time in delegated kernels against the ops the runtime ran itself, and which stayed outside."""

from __future__ import annotations

import pytest

from orchestrator.profiles.delegation import coverage
from orchestrator.profiles.stat_rows import StatRow


def op(index: int, name: str, avg: float, kind: str, *, delegated: bool, basis: str = "model",
       block: str = "Execute") -> StatRow:
    return StatRow("local", "vit", block, index, name, 6, avg_ms=avg, p50_ms=avg, is_delegated_op=delegated,
                   op_module="encoder", op_kind=kind, op_occurrence=index, op_basis=basis)


# A recorded shape: XNNPACK took the linears; layer norm, gelu and two adds ran outside the delegate.
ROWS = [
    op(0, "Method::execute", 10.0, "Method::execute", delegated=False, basis="framework"),
    op(1, "DELEGATE_CALL", 6.0, "XnnpackBackend", delegated=False, basis="delegate"),  # its kernels are listed
    op(2, "Fully Connected (NC, F32) GEMM #1", 4.0, "aten.linear.default", delegated=True),
    op(3, "Fully Connected (NC, F32) GEMM #2", 2.0, "aten.linear.default", delegated=True),
    op(4, "native_call_native_layer_norm.out", 1.5, "aten.native_layer_norm.default", delegated=False),
    op(5, "native_call_gelu.out", 1.0, "aten.gelu.default", delegated=False),
    op(6, "native_call_add.out", 0.25, "aten.add.Tensor", delegated=False),
    op(7, "native_call_add.out", 0.25, "aten.add.Tensor", delegated=False),
    op(8, "native_call_mystery.out", 0.5, "native_call_mystery.out", delegated=False, basis="event"),  # no ETRecord link
    op(0, "Method::init", 5.0, "Method::init", delegated=False, basis="framework", block="Default"),
]


def test_the_share_in_the_delegate_and_the_ops_left_outside_biggest_first() -> None:
    found = coverage("local", "vit", ROWS)
    assert found is not None
    assert (found.delegated_ms, found.outside_ms) == (6.0, 3.5)  # framework events and the delegate call not counted
    assert found.delegated_share == pytest.approx(6.0 / 9.5) and found.outside_share == pytest.approx(3.5 / 9.5)
    assert [(o.op, o.count, o.total_ms) for o in found.outside] == [
        ("aten.native_layer_norm.default", 1, 1.5), ("aten.gelu.default", 1, 1.0), ("aten.add.Tensor", 2, 0.5),
        ("native_call_mystery.out", 1, 0.5)]
    assert found.outside_text(2) == "aten.native_layer_norm.default, aten.gelu.default and 2 more"
    assert found.outside_text() == ("aten.native_layer_norm.default, aten.gelu.default, aten.add.Tensor x2, "
                                    "native_call_mystery.out")


def test_a_delegate_call_without_its_kernels_is_the_delegates_time() -> None:
    rows = [op(1, "DELEGATE_CALL", 6.0, "XnnpackBackend", delegated=False, basis="delegate"),
            op(2, "native_call_add.out", 2.0, "aten.add.Tensor", delegated=False)]
    found = coverage("local", "vit", rows)
    assert found is not None and (found.delegated_ms, found.outside_ms) == (6.0, 2.0)


def test_a_fully_delegated_model_says_none_outside_and_no_ops_no_coverage() -> None:
    found = coverage("local", "vit", ROWS[:4])
    assert found is not None and found.delegated_share == 1.0 and found.outside_text() == "none"
    assert coverage("local", "vit", [ROWS[0], ROWS[-1]]) is None

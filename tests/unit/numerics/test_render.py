"""The numerics renderers print the analysis' verdicts: devices, ops, module paths, sources, verification."""

from __future__ import annotations

import math

from orchestrator.numerics import (
    AGAINST_AOT,
    Comparison,
    Gap,
    Metric,
    ModelNumerics,
    NumericsReport,
    OpGap,
    csv_rows,
)
from orchestrator.numerics.render import render_markdown, render_text


def _op(index: int, mse: float, diverges: bool, module: str, ops: tuple[str, ...]) -> OpGap:
    return OpGap(index, (index + 1,), (index + 1,), ops, ("native_call_addmm.out",), (Gap(mse, mse * 10, 30.0),), mse,
                 diverges, module, "torch.nn.modules.linear.Linear", f"model.py:{10 + index}")


def _report() -> NumericsReport:
    calm = ModelNumerics("local", "mlp", (Comparison(AGAINST_AOT, (_op(0, 1e-9, False, "fc1", ("linear",)),), ("run-1",),
                                                     worst_index=0),), "pass", "1 run(s) match", True)
    ops = (_op(0, 1e-9, False, "fc1", ("linear",)), _op(1, 5e-3, True, "fc2", ("linear_1",)),
           _op(2, 9e-3, True, "fc3", ("linear_2",)))
    loud = ModelNumerics("pi", "mlp", (Comparison(AGAINST_AOT, ops, ("run-1",), worst_index=2),
                                       Comparison("device:local", error="reference device local: no runs")),
                         "fail", "output 0 differs", False)
    broken = ModelNumerics("phone", "mlp", error="no debug buffer was pulled (run with --numerics)")
    return NumericsReport("r1", Metric.MSE, 1e-4, "local", (calm, loud, broken))


def test_text_names_diverging_devices_ops_modules_and_sources() -> None:
    text = render_text(_report())
    assert "numerics of run r1: MSE, threshold 0.0001, reference device local" in text
    assert "local / mlp: ok; final outputs: pass" in text
    assert "pi / mlp: DIVERGES; final outputs: fail (output 0 differs)" in text
    assert "against the AOT reference: 2 of 3 op(s) above MSE 0.0001; worst MSE 0.009 at op 2" in text
    assert "divergence starts at op 1: linear_1 [native_call_addmm.out] in fc2 (Linear) at model.py:11" in text
    assert "MSE 0.009 op 2: linear_2 [native_call_addmm.out] in fc3 (Linear) at model.py:12" in text
    assert "against device local: not compared: reference device local: no runs" in text
    assert "the runs logged different intermediate outputs" in text
    assert "phone / mlp: NOT COMPARED; final outputs: not verified" in text and "not compared: no debug buffer" in text
    assert "diverging: pi (some devices or models could not be compared" in text


def test_markdown_carries_the_same_verdicts() -> None:
    md = render_markdown(_report())
    assert md.startswith("### Numerics (MSE, threshold 0.0001, reference device `local`)")
    assert "- pi / mlp: DIVERGES" in md and "`MSE 0.009`" in md
    assert md.rstrip().endswith("**Diverging devices:** pi")


def test_csv_rows_hold_every_metric_per_op() -> None:
    rows = csv_rows(_report().models[1])
    assert [r["op_index"] for r in rows] == [0, 1, 2]
    assert rows[2]["mse"] == 9e-3 and math.isclose(rows[2]["l1"], 9e-2) and rows[2]["snr"] == 30.0
    assert rows[1]["diverges"] is True and rows[1]["module_path"] == "fc2" and rows[1]["against"] == "aot"


def test_store_rows_are_typed_and_carry_the_run() -> None:
    rows = _report().rows()
    assert len(rows) == 4 and {r.run_id for r in rows} == {"r1"}
    assert [(r.device, r.op_index, r.diverges) for r in rows] == [("local", 0, False), ("pi", 0, False), ("pi", 1, True),
                                                                   ("pi", 2, True)]

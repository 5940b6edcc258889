"""The op x device table joins ops by their identity from the model, not by the kernel names each CPU gives."""

from __future__ import annotations

from orchestrator.profiles.stat_rows import StatRow
from orchestrator.report.builders.ops import op_ratios, op_stats
from orchestrator.report.page.run import kernel_label
from orchestrator.report.render.charts import ratio_tick

CONV = "aten.convolution.default"


def rows(device: str, precision: str, scale: float) -> list[StatRow]:
    out = [StatRow(device, "m", "Execute", 0, "Method::execute", 6, p50_ms=10 * scale, avg_ms=10 * scale,
                   op_module="", op_kind="Method::execute", op_occurrence=0, op_basis="framework")]
    for k, module in enumerate(("features.0", "features.3")):
        out.append(StatRow(device, "m", "Execute", k + 1, f"Convolution (NHWC, {precision}) IGEMM #{k + 1}", 6,
                           p50_ms=(k + 1) * scale, avg_ms=(k + 1) * scale, is_delegated_op=True, module_path=module,
                           kernel_mapping="mapped", op_module=module, op_kind=CONV, op_occurrence=0, op_basis="model"))
    return out


def test_every_convolution_has_both_devices_a_ratio_and_an_interval() -> None:
    per_device = {"local": op_stats(rows("local", "F32", 1.0)), "rpi5": op_stats(rows("rpi5", "PF32", 3.0))}
    runs = {device: {(op.block, op.op_key): [[op.p50_ms * (1 + 0.01 * k)] * 5 for k in range(4)]
                     for op in per_device[device][0]} for device in per_device}
    table = op_ratios(["local", "rpi5"], "local", per_device, runs)
    assert [r.name for r in table] == ["features.3 convolution", "features.0 convolution"]
    for r in table:
        assert None not in r.p50_ms and r.ratio[1] is not None and abs(r.ratio[1] - 3.0) < 1e-9
        assert r.ratio_ci[0] is None and r.ratio_ci[1] is not None  # the baseline has none; the other device has one
        assert r.ratio_ci[1].low <= r.ratio[1] <= r.ratio_ci[1].high and r.basis == "model"
    assert table[0].kernels == ("Convolution (NHWC, F32) IGEMM #2", "Convolution (NHWC, PF32) IGEMM #2")
    assert kernel_label(table[0].kernels, ["local", "rpi5"]) == "(NHWC, F32) IGEMM on local, (NHWC, PF32) IGEMM on rpi5"
    assert kernel_label(("Convolution (NHWC, F32) IGEMM #2",) * 2, ["a", "b"]) == ""


def test_heatmap_ticks_read_as_ratios() -> None:
    assert [ratio_tick(t) for t in (-10, -1, 0, 3)] == ["1/1024x", "1/2x", "1x", "8x"]

"""The device x model matrix first on a multi-device report: p50 per cell in its column's unit, the ratio to the
chosen baseline, cells beyond the threshold badged; the quantized answer in the first box."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from orchestrator.report.builders.matrix import device_matrix, latest_matrix
from orchestrator.report.builders.report import build_report
from orchestrator.report.dashboard.matrix import index_matrix
from orchestrator.report.dashboard.model import Summary
from orchestrator.report.dashboard.pages import index_page
from orchestrator.report.formats import column_unit
from orchestrator.report.model import DeviceRecipes, Interval, RecipeGroup, RecipeRow
from orchestrator.report.model.matrix import Beyond
from orchestrator.report.page.blocks import plain
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.html import render_html
from orchestrator.report.render.markdown import render_markdown
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.likeness import SeriesKey
from tests.helpers.synthetic_run import make_run_dir


def test_the_matrix_is_the_first_section_with_a_unit_per_column(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("pixel8", "rpi5", "local"), models=("cnn", "mlp"),
                       speed=(1.0, 2.0, 1.0), emulated=("rpi5",))
    report = build_report(RunRecord(run))
    page = run_page(report)
    assert page.sections[0].anchor == "matrix"
    matrix = report.matrix
    assert matrix is not None and matrix.devices == ("pixel8", "rpi5", "local") and matrix.models == ("cnn", "mlp")
    rpi5 = matrix.cells[1][0]
    assert rpi5.beyond is Beyond.SLOWER and rpi5.ratio is not None and 1.9 < rpi5.ratio < 2.1  # 2x slower: badged
    assert matrix.cells[0][0].beyond is Beyond.BASELINE and matrix.cells[2][0].beyond is Beyond.WITHIN  # the same speed
    text = render_markdown(page)
    first = text.split("## ")[2]  # the page's title, then its first section
    assert first.startswith("Devices x models") and "rpi5 (emulated)" in first
    assert "| device | cnn p50 (ms) | mlp p50 (ms) |" in first and "slower" in first


def test_another_baseline_and_threshold_change_the_highlights(tmp_path: Path) -> None:
    report = build_report(RunRecord(make_run_dir(tmp_path / "run", devices=("pixel8", "rpi5"), models=("cnn",), speed=(1.0, 1.3))),
                          baseline="rpi5")
    assert report.matrix is not None and report.matrix.cells[0][0].beyond is Beyond.FASTER
    wide = device_matrix(report.devices, report.models, "rpi5", threshold=0.5)
    assert wide is not None and wide.cells[0][0].beyond is Beyond.WITHIN  # 1.3x is within a 50 % threshold
    latency = replace(report.models[0].latency[0], ratio=0.7, ratio_ci=Interval(0.6, 0.97, 0.95))
    reaching = device_matrix(report.devices, (replace(report.models[0], latency=(latency,)),), "rpi5")
    assert reaching is not None and reaching.cells[0][0].beyond is Beyond.WITHIN  # its interval reaches the threshold


def test_one_device_has_no_matrix_and_units_follow_the_column(tmp_path: Path) -> None:
    report = build_report(RunRecord(make_run_dir(tmp_path / "run", devices=("pixel8",), models=("cnn",))))
    assert report.matrix is None and run_page(report).sections[0].anchor == "summary"
    assert column_unit([0.012, 0.4, None]) == ("us", 1000.0)
    assert column_unit([0.5, 12.0]) == ("ms", 1.0) and column_unit([9.0, 12_500.0]) == ("s", 0.001)
    assert plain(run_page(report).sections[0].title).startswith("Which device")


def _int8_group() -> RecipeGroup:
    def row(device: str, recipe: str, p50: float, speedup: float | None) -> RecipeRow:
        return RecipeRow(recipe, f"cnn-{recipe}", p50, speedup, Interval(speedup * 0.9, speedup * 1.1, 0.95)
                         if speedup else None, None, None, None, "pass")
    return RecipeGroup("cnn", ("fp32", "int8"), "fp32", (), tuple(
        DeviceRecipes(d, (row(d, "fp32", 2.0, None), row(d, "int8", 1.0, 2.0))) for d in ("pixel8", "rpi5")))


def test_the_quantized_answer_is_in_the_first_box(tmp_path: Path) -> None:
    several = build_report(RunRecord(make_run_dir(tmp_path / "a", devices=("pixel8", "rpi5"), models=("cnn",))))
    one = build_report(RunRecord(make_run_dir(tmp_path / "b", devices=("pixel8",), models=("cnn",))))
    for report in (replace(several, quantized=(_int8_group(),)), replace(one, quantized=(_int8_group(),))):
        first = run_page(report).sections[0].blocks[0]
        said = plain(first.body)  # type: ignore[attr-defined]
        assert said.startswith("Quantized cnn: On pixel8: int8 runs 2.00x as fast as fp32"), said
        assert "On rpi5: int8 runs 2.00x as fast as fp32" in said
    assert "Quantized" not in render_markdown(run_page(several))  # no recipes swept: no quantized answer


def _summary(device: str, model: str, p50: float | None) -> Summary:
    return Summary(SeriesKey(device, model, (("backend", "xnnpack"),)), f"{device}-{model}", 3,
                   (p50, p50, p50) if p50 is not None else None, None, False, None, (), (), (), (), "")


def test_the_dashboard_index_opens_with_the_newest_matrix() -> None:
    series = [_summary("pixel8", "cnn", 2.0), _summary("rpi5", "cnn", 4.0), _summary("rpi5", "cnn", 9.0),
              _summary("pixel8", "mlp", 0.5), _summary("rpi5", "mlp", 0.51), _summary("local", "cnn", 1.0)]
    matrix = latest_matrix([(s.key.device, s.key.model, s.latest[0] if s.latest else None) for s in series])
    assert matrix is not None and matrix.baseline == "pixel8"  # the most models measured; ties by name
    assert matrix.devices == ("local", "pixel8", "rpi5") and matrix.models == ("cnn", "mlp")
    rpi5 = matrix.cells[2]
    assert rpi5[0].ratio == 2.0 and rpi5[0].beyond is Beyond.SLOWER  # the first (most recently moved) series: 4.0
    assert rpi5[1].beyond is Beyond.WITHIN and matrix.cells[0][1].beyond is Beyond.NONE  # local never ran mlp
    page = render_html(index_page(series, "store.db", 3))
    assert page.index("Devices x models") < page.index('<table id="series">')
    assert "mlp p50 (us)" in page and "cnn p50 (ms)" in page  # a unit per column
    assert index_matrix(series[:1]) is None  # one device: no matrix


def test_a_ratio_without_an_interval_is_never_badged(tmp_path: Path) -> None:
    report = build_report(RunRecord(make_run_dir(tmp_path / "run", devices=("pixel8", "rpi5"), models=("cnn",), speed=(1.0, 3.0),
                                       runs=2)))  # two process runs: no interval, as the claim says
    assert report.matrix is not None and report.matrix.cells[1][0].ratio_ci is None
    assert report.matrix.cells[1][0].beyond is Beyond.WITHIN and report.models[0].claim.fastest is None  # type: ignore[union-attr]

"""An emulated device (`etfarm devices emulate`, inventory `emulated: true`) is said to be one wherever its timings
are shown: the page's heading line, the summary's columns, what to trust, the devices' facts, the terminal lines."""

from __future__ import annotations

from pathlib import Path

from orchestrator.report.builders.report import build_report
from orchestrator.report.builders.trust import EMULATED_NOTE
from orchestrator.report.dashboard.pages import configuration
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.markdown import render_markdown
from orchestrator.report.terminal.summary import wall_clock_lines
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.run.configuration import configuration_label, model_settings
from orchestrator.verdicts.compare import compare_jobs
from orchestrator.verdicts.likeness import SeriesKey
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.helpers.synthetic_run import make_run_dir


def test_every_view_of_an_emulated_device_says_so(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("pixel8", "rpi5"), models=("cnn",), emulated=("rpi5",))
    report = build_report(RunRecord(run))
    assert report.emulated == ("rpi5",)
    page = render_markdown(run_page(report))
    assert "| model | pixel8 | rpi5 (emulated) |" in page
    assert page.count(EMULATED_NOTE.split(": ", 1)[1]) == 1 and "pixel8 (emulated)" not in page
    lines = wall_clock_lines(load_manifest(run))
    assert [line.split(":")[0] for line in lines] == ["pixel8 cnn", "rpi5 (emulated) cnn"]


def test_a_report_without_emulated_devices_says_nothing_of_emulation(tmp_path: Path) -> None:
    report = build_report(RunRecord(make_run_dir(tmp_path / "run", devices=("pixel8", "rpi5"), models=("cnn",))))
    assert report.emulated == () and "emulated" not in render_markdown(run_page(report))


def test_an_emulated_run_is_never_judged_against_the_hardware(tmp_path: Path) -> None:
    """`emulated` is a setting (run/configuration.py): its own series, and settings-differ against the hardware."""
    hardware = make_run_dir(tmp_path / "a", devices=("rpi5",), models=("cnn",), runs=6)
    emulated = make_run_dir(tmp_path / "b", devices=("rpi5",), models=("cnn",), runs=6, speed=(40.0,), emulated=("rpi5",),
                            run_id="20261123-000000-bbbb")
    (pair,) = compare_jobs(RunRecord(hardware), RunRecord(emulated), VerdictSettings(resamples=200), per_op=False).pairs
    assert pair.verdict is Verdict.SETTINGS_DIFFER and not pair.regressed
    assert [(d.setting, d.a, d.b) for d in pair.differences] == [("emulated", "no", "yes")]
    job = load_manifest(emulated)
    assert dict(model_settings(job, "cnn", "rpi5"))["emulated"] == "yes"
    assert configuration_label(model_settings(job, "cnn", "rpi5"), ["emulated"]) == "xnnpack, emulated yes"


def test_the_dashboard_names_an_emulated_series_by_its_configuration() -> None:
    emulated = SeriesKey("rpi5", "cnn", (("backend", "xnnpack"), ("emulated", "yes")))
    hardware = SeriesKey("rpi5", "cnn", (("backend", "xnnpack"), ("emulated", "no")))
    assert configuration(emulated) == "backend xnnpack, emulated yes" and configuration(hardware) == "backend xnnpack"

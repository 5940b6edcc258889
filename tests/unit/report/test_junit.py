"""`compare --junit FILE`: the verdicts as JUnit XML, read back by a JUnit parser (junitparser)."""

from __future__ import annotations

from pathlib import Path

import junitparser

from orchestrator.cli import main
from orchestrator.report.builders.junit import junit_report
from orchestrator.report.render.junit import render_junit
from orchestrator.verdicts.compare import Comparison, OpVerdict, PairVerdict
from orchestrator.verdicts.statistics import Estimate, Verdict, VerdictSettings
from tests.helpers.synthetic_run import make_run_dir as make_synthetic_run
from tests.unit.store.rundirs import make_run_dir


def _estimate(ratio: float) -> Estimate:
    return Estimate(ratio=ratio, ci_low=ratio - 0.05, ci_high=ratio + 0.05, p_value=0.001, runs_a=6, runs_b=6,
                    median_a_ms=1.0, median_b_ms=ratio)


def _cases(xml: Path) -> dict[tuple[str, str], junitparser.TestCase]:
    suites = junitparser.JUnitXml.fromfile(str(xml))
    return {(suite.name, case.name): case for suite in suites for case in suite}


def _props(case: junitparser.TestCase) -> dict[str, str]:
    element = case._elem.find("properties")  # testcase properties (junitparser reads suite properties only)
    return {p.get("name"): p.get("value") for p in element} if element is not None else {}


def test_each_verdict_becomes_a_case_failure_skip_or_pass(tmp_path: Path) -> None:
    op = OpVerdict("Execute", 3, "Convolution #1", Verdict.REGRESSED, _estimate(1.4), 0.002, op="features.0 convolution")
    pairs = (
        PairVerdict("pixel8", "cnn", "cnn", Verdict.REGRESSED, _estimate(1.2), 0.05, 0.1, ops=(op,)),
        PairVerdict("pixel8", "mlp", "mlp", Verdict.UNCHANGED, _estimate(1.0), 0.05, 0.1),
        PairVerdict("rpi5", "cnn", "cnn", Verdict.NO_DATA, reason="[rpi5] connection refused"),
        PairVerdict("rpi5", "mlp", "mlp", Verdict.INCONCLUSIVE, _estimate(1.03), 0.05, 0.1),
    )
    xml = tmp_path / "verdicts.xml"
    xml.write_text(render_junit(junit_report(Comparison("run-a", "run-b", VerdictSettings(), pairs), "etfarm")))
    cases = _cases(xml)
    assert set(cases) == {("pixel8", "cnn"), ("pixel8", "cnn: features.0 convolution"), ("pixel8", "mlp"),
                          ("rpi5", "cnn"), ("rpi5", "mlp")}
    regressed = cases[("pixel8", "cnn")]
    assert [type(r).__name__ for r in regressed.result] == ["Failure"] and regressed.result[0].type == "regressed"
    assert _props(regressed)["ratio"] == "1.2000" and _props(regressed)["interval"] == "[1.1500, 1.2500]"
    assert cases[("pixel8", "cnn: features.0 convolution")].result[0].type == "regressed"
    assert cases[("pixel8", "mlp")].is_passed
    assert cases[("rpi5", "cnn")].is_skipped and "connection refused" in cases[("rpi5", "cnn")].result[0].message
    assert cases[("rpi5", "mlp")].is_skipped and _props(cases[("rpi5", "mlp")])["verdict"] == "inconclusive"
    suites = {s.name: s for s in junitparser.JUnitXml.fromfile(str(xml))}
    assert (suites["pixel8"].tests, suites["pixel8"].failures, suites["rpi5"].skipped) == (3, 2, 2)


def test_compare_junit_gives_a_case_per_device_and_model(tmp_path: Path) -> None:
    devices = ("local", "rpi5", "pixel8")
    a = make_synthetic_run(tmp_path / "a", devices=devices, models=("mlp", "cnn"), runs=6, run_id="20261101-000000-aaaa")
    b = make_synthetic_run(tmp_path / "b", devices=devices, models=("mlp", "cnn"), runs=6, speed=(1.5, 1.0, 1.0),
                           failed=("pixel8",), run_id="20261102-000000-bbbb", seed=1)  # local 1.5x slower
    xml = tmp_path / "out" / "verdicts.xml"
    xml.parent.mkdir()
    assert main(["compare", str(a), str(b), "--no-ops", "--junit", str(xml)]) == 1  # exit as without --junit
    cases = _cases(xml)
    assert set(cases) == {(d, m) for d in devices for m in ("mlp", "cnn")}
    assert all(cases[("local", m)].result[0].type == "regressed" for m in ("mlp", "cnn"))
    assert float(_props(cases[("local", "mlp")])["ratio"]) > 1.3
    assert all(cases[("pixel8", m)].is_skipped for m in ("mlp", "cnn"))  # B's pixel8 failed: not judged
    assert not [r for m in ("mlp", "cnn") for r in cases[("rpi5", m)].result if r.type == "regressed"]


def test_a_junit_file_that_cannot_be_written_is_one_line_before_comparing(tmp_path: Path, capsys) -> None:
    a = make_run_dir(tmp_path, "20261101-000000-aaaa", "2026-11-01T00:00:00+0000")
    assert main(["compare", str(a), str(a), "--junit", str(tmp_path / "missing" / "v.xml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --junit ") and "does not exist" in err[0]

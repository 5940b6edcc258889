"""The report model built from a synthetic run directory: ratios, CIs, flags, ops, facts, history."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from orchestrator.base.errors import UsageError
from orchestrator.report.builders.ratios import _pooled_p50s, ratio_with_ci
from orchestrator.report.builders.report import build_report
from orchestrator.report.render.charts import report_charts
from orchestrator.results.record import RunRecord
from orchestrator.store.history import HistoryPoint
from tests.helpers.synthetic_run import make_run_dir


def latency(report, model: str = "m0"):
    return {d.device: d for d in next(m for m in report.models if m.name == model).latency}


def test_ratio_to_baseline_with_a_ci_over_process_runs(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("fast", "slow"), speed=(1.0, 2.0), runs=5)
    report = build_report(RunRecord(run))
    rows = latency(report)
    assert report.baseline == "fast"  # the job's first device by default
    assert rows["fast"].ratio == 1.0 and rows["fast"].ratio_ci is None
    slow = rows["slow"]
    assert slow.ratio == pytest.approx(2.0, rel=0.05)
    assert slow.ratio_ci is not None and slow.ratio_ci.low <= slow.ratio <= slow.ratio_ci.high
    assert slow.ratio_ci.low > 1.5  # clearly slower: the interval is far from 1
    assert rows["fast"].fastest and not slow.fastest  # 2x apart, 5 runs each: the interval says so
    assert len(slow.run_medians) == 5 and slow.runs == 5
    assert any("bootstrap" in m and "replication unit" in m for m in report.methods)


def test_baseline_option_and_unknown_baseline(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("fast", "slow"), speed=(1.0, 2.0))
    rows = latency(build_report(RunRecord(run), baseline="slow"))
    assert rows["fast"].ratio == pytest.approx(0.5, rel=0.05)
    with pytest.raises(UsageError, match="--baseline: device 'nope' is not in run .*fast, slow"):
        build_report(RunRecord(run), baseline="nope")


def test_ci_needs_three_runs_each_side() -> None:
    assert ratio_with_ci([[2.1], [2.2]], [[1.0], [1.1], [1.0]]) == (pytest.approx(2.15 / 1.0), None)
    assert ratio_with_ci([], [[1.0]]) == (None, None)
    ratio, ci = ratio_with_ci([[2.0, 2.1], [2.2], [2.1]], [[1.0], [1.05], [1.1]])
    assert ratio == pytest.approx(2.1 / 1.05) and ci is not None and ci.level == 0.95


def _jobs(rng: np.random.Generator, scale: float, runs: int, iterations: int = 20) -> list[np.ndarray]:
    """A device's process runs: each run at its own level (3 % process-to-process noise), 1 % jitter inside."""
    return [scale * (1 + rng.normal(0, 0.03)) * (1 + np.abs(rng.normal(0, 0.01, iterations))) for _ in range(runs)]


def test_claims_and_interval_rates_measured() -> None:
    """Identical devices (3 % run-to-run noise): the interval excludes 1 in 15 % of jobs with 3 runs a side, 6 %
    with 5, 4 % with 10 (measured, 300 jobs each); the claim `fastest` (interval beyond 1 + 5 %) is never made.
    A device 10 % faster is called faster in 57 % of jobs with 3 or 5 runs, 82 % with 10."""
    rng = np.random.default_rng(7)
    trials = 300

    def rates(scale: float, runs: int) -> tuple[float, float]:
        excludes = claims = 0
        for _ in range(trials):
            _, ci = ratio_with_ci(_jobs(rng, scale, runs), _jobs(rng, 1.0, runs))
            excludes += ci is not None and not ci.low <= 1.0 <= ci.high
            claims += ci is not None and ci.low > 1.05
        return excludes / trials, claims / trials

    excludes, claims = rates(1.0, 5)
    assert excludes <= 0.10 and claims == 0
    assert rates(1.10, 10)[1] >= 0.7


def test_bootstrap_replicates_are_numpys_p50_of_the_drawn_runs() -> None:
    """Each replicate pools the drawn process runs' executions (a run drawn twice counts twice) and takes
    np.percentile(..., 50) of them, exactly."""
    from orchestrator.report.builders.ratios import RESAMPLES

    rng = np.random.default_rng(1)
    runs = [rng.normal(1 + 0.1 * k, 0.05, 20 + k) for k in range(4)]
    got = _pooled_p50s(runs, np.random.default_rng(5))
    draws = np.random.default_rng(5).integers(0, 4, (RESAMPLES, 4))
    expected = [np.percentile(np.concatenate([runs[j] for j in d]), 50) for d in draws]
    assert np.array_equal(got, expected)


def test_unstable_partial_and_failed_devices_are_flagged(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b", "dead"), noise=0.4, failed=("dead",))
    report = build_report(RunRecord(run))
    rows = latency(report)
    assert "dead" not in rows  # no result for the model: not a latency row ...
    facts = {f.device: f for f in report.facts}
    assert facts["dead"].error == "device unreachable" and facts["dead"].status == "failed"  # ... but a device fact
    flags = {f.kind: f.reason for f in rows["a"].flags}
    first_failed = build_report(RunRecord(make_run_dir(tmp_path / "r2", devices=("dead", "a", "b"), failed=("dead",))))
    assert first_failed.baseline == "a"  # the default baseline is the first device that measured something
    assert "unstable" in flags and "IQR / median; limit 20%" in flags["unstable"]


def test_ops_shares_groups_and_op_ratios(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"), speed=(1.0, 3.0), kernels=8)
    section = build_report(RunRecord(run)).models[0]
    ops = {o.device: o for o in section.ops}
    names = [op.name for op in ops["a"].top]
    assert "DELEGATE_CALL" not in names and "Method::execute" not in names  # kernels listed: no double count
    assert len(names) == 9  # 8 kernels + the portable softmax, under TOP_OPS
    assert sum(op.share or 0.0 for op in ops["a"].top) == pytest.approx(0.95, abs=0.01)
    assert all((op.share is None) == op.below_resolution for op in ops["a"].top)
    softmax = next(op for op in ops["a"].top if op.name == "native_call_softmax.out")
    assert softmax.module_path == "head.softmax" and softmax.source_line == "net.py:42" and not softmax.delegated
    kernel = next(op for op in ops["a"].top if op.delegated)
    assert kernel.covers == "features.0;features.1;classifier" and kernel.backend == "XnnpackBackend"
    groups = dict(ops["a"].groups)
    assert "Convolution (NHWC, F32) IGEMM" in groups and groups["other"] == pytest.approx(0.05 * 1.0, rel=0.3)
    for row in section.op_ratios:  # sorted by p50, the statistic they show
        if any(row.below_resolution):  # under the timer's resolution: no ratio
            assert row.ratio == (None, None)
            continue
        assert row.ratio[0] == 1.0 and row.ratio[1] == pytest.approx(3.0, rel=1e-6)
    p50s = [max(p for p in row.p50_ms if p is not None) for row in section.op_ratios]
    assert p50s == sorted(p50s, reverse=True)


def test_device_facts_name_frequencies_governor_and_temperatures(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a",), runs=3)
    facts = build_report(RunRecord(run)).facts[0]
    assert facts.frequencies == "max 1800/2400 MHz, seen 1800-1800 MHz"
    assert facts.governor == "schedutil"
    assert facts.temperatures == "cpu-thermal 40-43 °C over 4 readings"  # 3 traced runs + 1 untraced
    assert facts.abi == "arm64-v8a" and facts.cores == "8"


def test_history_keeps_this_model_and_devices_last_runs(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    points = [HistoryPoint(f"r{i}", f"2026-11-{i + 10:02d}T00:00:00", dev, "m0", "ok", 1.0 + i, 1.1 + i, None)
              for i in range(12) for dev in ("a", "b")]
    points += [HistoryPoint("x", "2026-11-30T00:00:00", "a", "other-model", "ok", 9.0, 9.0, None),
               HistoryPoint("y", "2026-11-30T00:00:00", "c", "m0", "ok", 9.0, 9.0, None)]
    history = build_report(RunRecord(run), history=points, history_runs=10).models[0].history
    assert [p.run_id for p in history[::2]] == [f"r{i}" for i in range(2, 12)]  # oldest first, last 10 runs
    assert {p.device for p in history} == {"a", "b"}
    assert build_report(RunRecord(run)).models[0].history == ()


def test_charts_are_deterministic_svg(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    points = [HistoryPoint(f"r{i}", f"2026-11-{i + 10:02d}", "a", "m0", "ok", 1.0, 1.1, None) for i in range(3)]
    first = report_charts(build_report(RunRecord(run), history=points)).all
    second = report_charts(build_report(RunRecord(run), history=points)).all
    assert [c.stem for c in first] == ["m0-latency", "m0-op-groups", "m0-op-heatmap", "m0-history"]
    assert [c.svg for c in first] == [c.svg for c in second]
    for chart in first:
        assert chart.svg.startswith("<svg") and "<title>" in chart.svg  # hover text on bars / cells / lines
        assert "<dc:date>" not in chart.svg and "<metadata>" not in chart.svg


def test_building_a_report_draws_nothing(tmp_path: Path) -> None:
    """Charts are rendering: the report's data is built without matplotlib, for JSON and CSV as for the pages."""
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    probe = ("import sys\nfrom orchestrator.report.builders.report import build_report\n"
             "from orchestrator.results.record import RunRecord\n"
             f"report = build_report(RunRecord({str(run)!r}), history=())\n"
             "print(len(report.models), sorted(m for m in sys.modules if m.startswith('matplotlib'))[:1])")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "[]"]


def test_android_product_from_describe_facts(tmp_path: Path) -> None:
    from device_agents.facts import DeviceFacts
    from orchestrator.report.builders.device_facts import device_facts
    from orchestrator.results.model import DeviceResult

    facts = DeviceFacts.parse("abi=aarch64\nandroid.product.model=Pixel 8\nandroid.product.manufacturer=Google\n"
                              "android.build.version.release=15\n")
    assert device_facts(DeviceResult("pixel8", "adb", "android-arm64-v8a", facts=facts)).product == "Google Pixel 8, Android 15"
    assert device_facts(DeviceResult("rpi5", "ssh", "linux-aarch64", facts=DeviceFacts(abi="aarch64"))).product == "-"


def test_history_rows_put_devices_side_by_side_newest_first(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path / "run", devices=("a", "b"))
    points = [HistoryPoint("r1", "2026-11-01", "a", "m0", "ok", 1.0, 1.1, "c1"),
              HistoryPoint("r1", "2026-11-01", "b", "m0", "failed", None, None, "c1"),
              HistoryPoint("r2", "2026-11-02", "a", "m0", "ok", 1.5, 1.6, None)]
    rows = build_report(RunRecord(run), history=points).models[0].history_rows
    assert [(r.run_id, r.p50_ms, r.status, r.git_commit) for r in rows] == [
        ("r2", (1.5, None), ("ok", ""), None), ("r1", (1.0, None), ("ok", "failed"), "c1")]


def test_devices_a_thousand_times_apart_get_readable_charts_and_ratios(tmp_path: Path) -> None:
    from orchestrator.report.formats import interval, ratio

    run = make_run_dir(tmp_path / "run", devices=("board", "phone"), speed=(1000.0, 1.0))
    report = build_report(RunRecord(run))
    section = report.models[0]
    charts = {c.stem: c.svg for c in report_charts(report).all}
    assert "(log scale)" in charts["m0-latency"]
    assert "% of each device" in charts["m0-op-groups"]
    phone = section.latency[1]
    assert ratio(phone.ratio) == f"{phone.ratio:.3g}x" and ratio(phone.ratio).startswith(("0.000", "0.001"))
    assert interval(phone.ratio_ci).startswith("[0.000")
    close = {c.stem: c.svg for c in report_charts(build_report(RunRecord(make_run_dir(tmp_path / "close", devices=("a", "b"))))).all}
    assert "(log scale)" not in close["m0-latency"] and "mean ms per execution" in close["m0-op-groups"]


def test_rollups_by_module_and_op_type_on_the_page_and_in_json(tmp_path: Path) -> None:
    from orchestrator.report.page.rollups import rollup_section
    from orchestrator.report.render.export import render_json

    run = make_run_dir(tmp_path / "run", devices=("a", "b"), speed=(1.0, 3.0), kernels=8)
    report = build_report(RunRecord(run))
    section = report.models[0]
    assert [r.device for r in section.rollups] == ["a", "b"]
    a, b = section.rollups
    assert a.modules[0].total_ms == pytest.approx(sum(t.total_ms for t in a.op_types))  # one time, two cuts
    assert b.op_ms == pytest.approx(3.0 * a.op_ms, rel=1e-6)
    assert rollup_section(section) is not None
    data = json.loads(render_json(report))
    assert data["models"][0]["rollups"][0]["op_types"][0]["op_type"] == a.op_types[0].op_type

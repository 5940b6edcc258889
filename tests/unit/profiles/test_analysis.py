"""orchestrator.profiles.analysis / analysis_core / analysis_report on synthetic ETDumps."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.analysis import (
    STATS_COLUMNS,
    analyze_files,
    load_events,
    load_samples,
    method_summary,
    per_run,
    summarize,
)
from orchestrator.profiles.analysis_core import (
    IDENTITY_COLUMNS,
    collect_samples,
    group_stats,
    record_columns,
    summary_records,
)
from orchestrator.profiles.stat_rows import StatRow, write_stats_csv
from orchestrator.report.terminal.events import format_report
from tests.helpers.etdumps import Profile, Run, build_etdump, typical_runs


def write(tmp_path: Path, name: str, runs: list[Run]) -> Path:
    path = tmp_path / name
    path.write_bytes(build_etdump(runs))
    return path


def reference_stats(values: np.ndarray) -> dict[str, float]:
    mean = np.mean(values)
    std = float(np.std(values, ddof=1)) if len(values) > 1 else 0.0
    p10, p90 = np.percentile(values, 10), np.percentile(values, 90)
    inside = values[(values >= p10) & (values <= p90)]
    return {
        "samples": len(values),
        "min_ms": min(values),
        "p10_ms": p10,
        "p50_ms": np.percentile(values, 50),
        "p90_ms": p90,
        "avg_ms": mean,
        "max_ms": max(values),
        "std_ms": std,
        "trimmed_mean_ms": float(np.mean(inside)) if len(inside) else mean,
    }


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=40), min_size=1, max_size=6))
def test_group_stats_equal_numpy_per_group(groups: list[list[float]]) -> None:
    values = np.concatenate([np.array(g) for g in groups])
    gid = np.concatenate([np.full(len(g), i) for i, g in enumerate(groups)])
    order = np.random.default_rng(len(values)).permutation(len(values))  # groups interleaved
    stats = group_stats(values[order], gid[order], len(groups))
    for i, g in enumerate(groups):
        expected = reference_stats(np.array(g))
        for key, value in expected.items():
            if key in ("p10_ms", "p50_ms", "p90_ms", "min_ms", "max_ms", "samples"):
                assert stats[key][i] == value, key  # same algorithm: bit for bit
            else:
                assert stats[key][i] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def test_cv_is_std_over_mean_and_nan_for_zero_mean() -> None:
    stats = group_stats(np.array([1.0, 3.0, 0.0, 0.0]), np.array([0, 0, 1, 1]), 2)
    assert stats["cv"][0] == pytest.approx(np.std([1.0, 3.0], ddof=1) / 2.0)
    assert np.isnan(stats["cv"][1])


def test_samples_frame_and_summary_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "a.etdp", typical_runs(iterations=4, layers=2))
    samples = load_samples([path])
    assert list(samples.columns) == [
        "run", "event_block", "event_index", "event_name", "iteration", "duration_ms", "is_delegated_op", "delegate_debug_identifier",
    ]
    assert len(samples) == 2 + 4 * 5
    assert samples["run"].unique().tolist() == [0]
    summary = summarize(samples)
    assert list(summary.columns[: len(STATS_COLUMNS)]) == STATS_COLUMNS
    assert list(summary.columns[len(STATS_COLUMNS) :]) == ["cv", "trimmed_mean_ms", "is_delegated_op", "delegate_debug_identifier"]
    assert summary["event_block"].tolist() == ["Default"] * 2 + ["Execute"] * 5
    assert summary["event_index"].tolist() == [0, 1, 0, 1, 2, 3, 4]
    assert summary["samples"].tolist() == [1, 1, 4, 4, 4, 4, 4]
    first = samples[(samples.event_block == "Execute") & (samples.event_index == 0)]["duration_ms"].to_numpy()
    assert summary.loc[2, "p90_ms"] == np.percentile(first, 90)


def test_analyze_files_equals_summarize_of_samples(tmp_path: Path) -> None:
    paths = [write(tmp_path, f"r{k}.etdp", typical_runs(iterations=3 + k, layers=3, base=10**6 * (k + 1))) for k in range(3)]
    expected = summarize(load_samples(paths))
    pd.testing.assert_frame_equal(analyze_files(paths), expected.reset_index(drop=True), check_dtype=False)


def test_files_merge_by_signature_and_disagreeing_blocks_stay_apart(tmp_path: Path) -> None:
    a = write(tmp_path, "a.etdp", [Run("Execute", [Profile("x", instr=0, end=1000)])] * 2)
    b = write(tmp_path, "b.etdp", [Run("Execute", [Profile("x", instr=0, end=3000)]), Run("Execute", [Profile("y", instr=0)])])
    summary = analyze_files([a, b], run_labels=["first", "second"])
    assert summary[["event_block", "event_name", "samples"]].values.tolist() == [["Execute", "x", 3], ["Execute#2", "y", 1]]
    assert summary.loc[0, "max_ms"] == 0.003
    runs = per_run(load_samples([a, b], run_labels=["first", "second"]))
    assert runs[["run", "event_block", "samples"]].values.tolist() == [["first", "Execute", 2], ["second", "Execute", 1], ["second", "Execute#2", 1]]


def test_repeated_run_labels_merge(tmp_path: Path) -> None:
    a = write(tmp_path, "a.etdp", typical_runs(iterations=2))
    runs = per_run(load_samples([a, a, a], run_labels=["dev1", "dev1", "dev2"]))
    assert runs.groupby("run", observed=True)["samples"].max().to_dict() == {"dev1": 4, "dev2": 2}


def test_method_summary_reports_execute_and_load(tmp_path: Path) -> None:
    path = write(tmp_path, "a.etdp", typical_runs(iterations=3))
    summary = method_summary(load_samples([path, path]))
    assert summary[["measure", "event_name", "samples"]].values.tolist() == [
        ["init", "Method::init", 2],
        ["load_method", "Program::load_method", 2],
        ["execute", "Method::execute", 6],
    ]
    assert method_summary(load_samples([path, path], run_labels=["a", "b"]), by=["run"])["run"].tolist() == ["a"] * 3 + ["b"] * 3


def test_load_events_lists_events_without_timing_too(tmp_path: Path) -> None:
    from tests.helpers.etdumps import Debug

    path = write(tmp_path, "a.etdp", [Run("Execute", [Debug("dbg", instr=1), Profile("p", instr=0)])])
    events = load_events([path])
    assert events[["event_name", "has_perf"]].values.tolist() == [["dbg", False], ["p", True]]


def test_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(AnalysisError, match="no ETDump files"):
        load_samples([])
    path = write(tmp_path, "a.etdp", typical_runs())
    with pytest.raises(AnalysisError, match="1 run labels for 2 ETDump files"):
        load_samples([path, path], run_labels=["x"])
    with pytest.raises(AnalysisError, match="nope.etdp: no such file"):
        analyze_files([path, tmp_path / "nope.etdp"])


def test_empty_summary_keeps_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "a.etdp", [Run("Execute", [])])
    assert list(analyze_files([path]).columns[:3]) == ["event_block", "event_index", "event_name"]
    assert summarize(load_samples([path])).empty


def test_report_and_csv(tmp_path: Path) -> None:
    path = write(tmp_path, "a.etdp", typical_runs(iterations=5, layers=3))
    samples = collect_samples([path])
    records = summary_records(samples)
    text = format_report(records, top=2)
    assert "Method::execute" in text and "Program::load_method" in text
    assert "top 2 of 3 events by avg time" in text
    assert "OPERATOR_CALL" not in text
    assert "native_call_op2.out" in text  # the slowest op is listed first
    out = write_stats_csv(tmp_path / "stats.csv", [StatRow.from_record("", "", r) for r in records], with_ids=False)
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0])[: len(STATS_COLUMNS)] == STATS_COLUMNS
    assert list(rows[0]) == [*record_columns(samples), *IDENTITY_COLUMNS]  # the op identity, last
    assert {r["op_basis"] for r in rows} == {"event", "framework"}  # no ETRecord: from the event names
    assert [float(r["p50_ms"]) for r in rows] == [r["p50_ms"] for r in records]  # exact round trip
    assert not list(tmp_path.glob(".tmp-*"))

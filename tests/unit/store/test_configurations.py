"""A configuration is part of a series' key: one model run with xnnpack, with portable and with --numerics is
three series in `history`, its `--changes` and the report's "Over time" chart, and a nightly's regressed run lists
as regressed (real SQLite store, synthetic run directories)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from orchestrator.base.cache import write_json_atomic
from orchestrator.cli import main
from orchestrator.report.builders.report import build_report
from orchestrator.report.render.charts import report_charts
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from tests.unit.store.rundirs import make_run_dir

# (backend, numerics, level): four nights each, oldest first; 10x and 3x apart, so one series through all of them
# would shift twice
CONFIGURATIONS = [("xnnpack", False, 1.0), ("portable", False, 10.0), ("xnnpack", True, 3.0)]


def configured(run_dir: Path, backend: str, numerics: bool, level: float) -> Path:
    """The run as if it ran with `backend` and `--numerics` on or off, its samples scaled by `level`."""
    job = load_manifest(run_dir)
    devices = tuple(dataclasses.replace(d, models=tuple(dataclasses.replace(m, runs=tuple(
        dataclasses.replace(r, execute_ms=tuple(level * v for v in r.execute_ms)) for r in m.runs)) for m in d.models))
        for d in job.devices)
    config = dataclasses.replace(job.config, backend=backend,
                                 options=dataclasses.replace(job.config.options, numerics=numerics))
    models = tuple(dataclasses.replace(m, backend=backend) for m in job.models)
    write_json_atomic(run_dir / "manifest.json",
                      dataclasses.replace(job, config=config, models=models, devices=devices).to_dict())
    return run_dir


@pytest.fixture
def store_of_three(tmp_path: Path) -> tuple[Path, list[Path]]:
    db = tmp_path / "results.db"
    dirs = []
    with open_store(db) as store:
        for c, (backend, numerics, level) in enumerate(CONFIGURATIONS):
            for night in range(4):
                k = 4 * c + night
                dirs.append(configured(make_run_dir(tmp_path / "runs", f"run-{k:02d}", f"2026-01-{k + 1:02d}T00:00:00+0000",
                                                    devices=("local",)), backend, numerics, level))
                store.record(RunRecord(dirs[-1]))
    return db, dirs


def test_history_lists_three_configurations(store_of_three: tuple[Path, list[Path]],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    db, _ = store_of_three
    assert main(["history", "--store", str(db)]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run-")]
    labels = {re.split(r"\s{2,}", line)[4] for line in rows}
    assert labels == {"xnnpack", "portable", "xnnpack, numerics on"}
    assert main(["history", "--store", str(db), "--json"]) == 0
    points = [p for run in json.loads(capsys.readouterr().out) for p in run["points"]]
    assert {(p["settings"]["backend"], p["settings"]["numerics"]) for p in points} == {
        ("xnnpack", "off"), ("portable", "off"), ("xnnpack", "on")}


def test_history_changes_never_mix_configurations(store_of_three: tuple[Path, list[Path]],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    db, _ = store_of_three
    assert main(["history", "--store", str(db), "--changes", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert len(found) == 3 and all(s["points"] == 4 and s["changes"] == [] for s in found)
    assert main(["history", "--store", str(db), "--changes"]) == 0
    out = capsys.readouterr().out
    assert "no change points found" in out
    for label in ("xnnpack", "portable", "xnnpack, numerics on"):  # each series named by what tells it apart
        assert f"local mlp ({label}): 4 runs" in out


def test_over_time_chart_draws_each_configuration(store_of_three: tuple[Path, list[Path]]) -> None:
    db, dirs = store_of_three
    with open_store(db) as store:
        history = store.history_points("mlp", ["local"], limit=12)
    report = build_report(RunRecord(dirs[-1]), history=history)
    section = report.models[0]
    chart = report_charts(report).of("mlp", "history")
    assert chart is not None
    assert len(set(re.findall(r'id="hist-(\d+)"', chart.svg))) == 3  # one line per configuration
    assert {r.configuration for r in section.history_rows} == {"xnnpack", "portable", "xnnpack, numerics on"}


def test_a_regressed_night_lists_as_regressed(store_of_three: tuple[Path, list[Path]],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    db, dirs = store_of_three
    write_json_atomic(dirs[-1] / "verdicts.json", {"pairs": [
        {"device": "local", "model_b": "mlp", "verdict": "regressed", "regressed": True}]})
    assert main(["history", "--store", str(db), "--limit", "2"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("run-")]
    assert "regressed on local" in rows[0] and "regressed" not in rows[1]

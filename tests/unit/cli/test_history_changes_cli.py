"""`etfarm history --changes` over a real SQLite store: names the run and commit where a shift began."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.base.cache import write_json_atomic
from orchestrator.cli import main
from orchestrator.results.model import load_manifest
from tests.unit.store.rundirs import make_run_dir


def run_at(root: Path, i: int, level: float) -> Path:
    """A stored-run-to-be whose end-to-end samples sit at `level` ms, with commit c<i>."""
    path = make_run_dir(root, f"r{i:02d}", f"2026-11-{i + 1:02d}T03:00:00+0000", devices=("local",),
                        commit=f"c{i:02d}")
    job = load_manifest(path)
    device = job.devices[0]
    model = device.models[0]
    runs = tuple(replace(r, execute_ms=tuple(level * (1 + 0.002 * k) for k in range(len(r.execute_ms))))
                 for r in model.runs)
    job = job.with_device(replace(device, models=(replace(model, runs=runs),)))
    write_json_atomic(path / "manifest.json", job.to_dict())
    return path


def test_history_changes_names_the_first_slow_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    levels = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.3, 1.31, 1.29, 1.3, 1.32]
    db = str(tmp_path / "s.db")
    paths = [run_at(tmp_path / "runs", i, level) for i, level in enumerate(levels)]
    assert main(["store", "import", *map(str, paths), "--store", db]) == 0
    capsys.readouterr()
    assert main(["history", "--changes", "--model", "mlp", "--store", db, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [(c["run_id"], c["git_commit"]) for s in found for c in s["changes"]] == [("r07", "c07")]
    assert found[0]["changes"][0]["ratio"] == pytest.approx(1.3, rel=0.03)
    assert main(["history", "--changes", "--store", db]) == 0
    out = capsys.readouterr().out
    assert "r07" in out and "c07" in out and "PELT" in out


def test_runs_flagged_interfered_are_left_out_of_changes_and_marked(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: one job shared the cores (its runs flagged interfered by the calibration) and measured
    1.77x; it is left out of --changes (and named as left out), and `history` marks it and shows the backend."""
    from orchestrator.results.model import RunFlag

    levels = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.77, 1.0, 1.01, 0.99, 1.0, 1.02]
    paths = [run_at(tmp_path / "runs", i, level) for i, level in enumerate(levels)]
    job = load_manifest(paths[6])
    device = job.devices[0]
    model = device.models[0]
    flagged = tuple(replace(r, flag=RunFlag.INTERFERED, slowdown=0.8) if r.traced else r for r in model.runs)
    write_json_atomic(paths[6] / "manifest.json", job.with_device(replace(device, models=(replace(model, runs=flagged),)))
                      .to_dict())
    db = str(tmp_path / "s.db")
    assert main(["store", "import", *map(str, paths), "--store", db]) == 0
    capsys.readouterr()
    assert main(["history", "--changes", "--model", "mlp", "--store", db, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [c for s in found for c in s["changes"]] == [] and found[0]["left_out_flagged"] == ["r06"]
    assert found[0]["points"] == len(levels) - 1
    assert main(["history", "--changes", "--store", db]) == 0
    assert "left out (a process run flagged interfered or throttled): local mlp: r06" in capsys.readouterr().out
    assert main(["history", "--store", db]) == 0
    listing = capsys.readouterr().out
    assert listing.splitlines()[0].split()[:5] == ["run", "started", "status", "model", "configuration"]
    r06 = next(line for line in listing.splitlines() if line.startswith("r06"))
    assert "xnnpack" in r06 and "*" in r06 and "flagged interfered or throttled" in listing


def test_a_series_never_mixes_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Runs of the same model with other iterations are another series (likeness.SeriesKey): their level is not a
    shift of the first series, however different."""
    paths = []
    for i in range(12):
        path = run_at(tmp_path / "runs", i, 1.0 if i < 6 else 1.3)
        if i >= 6:  # the slower runs ran 99 iterations: another configuration, not a change
            job = load_manifest(path)
            write_json_atomic(path / "manifest.json", replace(job, config=replace(
                job.config, options=replace(job.config.options, iterations=99))).to_dict())
        paths.append(path)
    db = str(tmp_path / "s.db")
    assert main(["store", "import", *map(str, paths), "--store", db]) == 0
    capsys.readouterr()
    assert main(["history", "--changes", "--model", "mlp", "--store", db, "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert sorted((s["settings"]["iterations"], s["points"], len(s["changes"])) for s in found) == [("3", 6, 0),
                                                                                                   ("99", 6, 0)]

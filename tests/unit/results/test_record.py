"""results/record.py and results/verdicts_file.py: a finished run's record, read lazily, and verdicts.json read
typed through the codec (what `history`, `last-good` and `publish` see of it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.base.cache import write_json_atomic
from orchestrator.base.errors import DataError
from orchestrator.profiles.stat_rows import model_stats, write_stats_csv
from orchestrator.results.night_marks import read_marks
from orchestrator.results.record import RunRecord, run_root
from orchestrator.results.samples import write_samples
from orchestrator.results.verdicts_file import RecordedPair, recorded_pairs
from orchestrator.verdicts.recorded import WRONG_OUTPUTS, recorded_verdicts
from tests.helpers.etdumps import build_etdump, typical_runs
from tests.unit.run.golden_results import rich_job


def _run_dir(root: Path) -> Path:
    job = rich_job()
    write_json_atomic(root / "manifest.json", job.to_dict())
    device, model = next(iter(job.results()))
    dump = root / device.name / model.name / "run-1" / "etdump.etdp"
    dump.parent.mkdir(parents=True)
    dump.write_bytes(build_etdump(typical_runs(iterations=3, layers=2)))
    stats = model_stats(device.name, model.name, [dump], None)
    write_stats_csv(root / "stats.csv", stats.rows)
    write_samples(root / "samples.npz", [stats])
    return root


def test_a_record_reads_each_file_once_when_asked(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    record = RunRecord(root)
    device, model = next(iter(record.job.results()))
    assert record.job == rich_job() and record.job is record.job  # read once, kept
    rows = record.rows(device.name, model.name)
    assert rows and rows == record.stats[(device.name, model.name)] and record.rows("nowhere", "x") == ()
    found = record.samples(device.name, model.name)
    assert found is not None and found.samples.run_labels == ("run-1",)
    assert sum(r.samples for r in rows) == found.samples.duration_ms.size
    assert record.samples("nowhere", "x") is None and record.verdicts == ()


def test_a_record_given_its_job_reads_no_manifest(tmp_path: Path) -> None:
    job = rich_job()
    assert RunRecord(tmp_path, job).job is job  # no manifest.json there
    with pytest.raises(DataError):
        _ = RunRecord(tmp_path).job
    assert RunRecord(tmp_path).samples("d", "m") is None  # a run directory without samples.npz


def test_a_record_given_its_rows_reads_no_stats_csv(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    rows = RunRecord(root).all_rows
    (root / "stats.csv").write_text("not,a,stats,file\n")  # it would fail, were it read
    record = RunRecord(root, rows=rows)
    assert record.all_rows == rows and record.rows(rows[0].device, rows[0].model) == tuple(
        r for r in rows if (r.device, r.model) == (rows[0].device, rows[0].model))
    with pytest.raises(DataError, match="not an etfarm stats.csv"):
        _ = RunRecord(root).stats
    assert RunRecord(root).stats_or_none() == {}  # verdicts then key the ops by their names


def test_stats_are_read_again_only_when_the_file_changes(tmp_path: Path) -> None:
    root = _run_dir(tmp_path)
    first, again = RunRecord(root).stats, RunRecord(root).stats
    assert first is again  # a night's many records of one run read its stats.csv once
    rows = [r for pair in first.values() for r in pair]
    write_stats_csv(root / "stats.csv", rows[:1])
    assert sum(map(len, RunRecord(root).stats.values())) == 1
    (root / "stats.csv").unlink()
    assert RunRecord(root).stats == {}  # no device measured anything: no rows, as before


def test_records_of_one_directory_are_equal(tmp_path: Path) -> None:
    assert RunRecord(tmp_path) == RunRecord(tmp_path, rich_job()) and len({RunRecord(tmp_path), RunRecord(tmp_path)}) == 1
    assert RunRecord(tmp_path / "a") != RunRecord(tmp_path / "b")


def test_present_and_run_root_say_what_is_a_run_directory(tmp_path: Path) -> None:
    root = _run_dir(tmp_path / "run")
    assert RunRecord(root).present and not RunRecord(tmp_path).present
    assert RunRecord(tmp_path, rich_job()).present  # a job in memory is there
    assert run_root(root) == root and run_root(root / "manifest.json") == root
    assert run_root(tmp_path) is None and run_root(root / "stats.csv") is None and run_root(tmp_path / "gone") is None


def test_verdicts_read_typed_and_what_does_not_decode_is_left_out(tmp_path: Path) -> None:
    pairs = [
        {"device": "pixel8", "model_b": "mlp", "verdict": "unchanged", "regressed": True, "estimate": {"ratio": 1.25},
         "ops": [{"anything": "else"}]},  # what the readers do not need is ignored
        {"device": "pixel8", "model_b": "cnn", "verdict": "improved", "verification_failed": True, "estimate": None},
        {"device": "rpi5", "model_b": "mlp", "verdict": "new"},
        {"device": "rpi5", "model_b": "cnn", "regressed": "yes"},  # not a boolean: not this file's pair
        {"device": "", "model_b": "mlp"}, "not a pair",
    ]
    (tmp_path / "verdicts.json").write_text(json.dumps({"pairs": pairs}))
    found = recorded_pairs(tmp_path)
    assert found == (RecordedPair("pixel8", "mlp", "unchanged", True, estimate=found[0].estimate),
                     RecordedPair("pixel8", "cnn", "improved", verification_failed=True),
                     RecordedPair("rpi5", "mlp", "new"))
    assert [p.ratio for p in found] == [1.25, None, None]
    assert recorded_verdicts(RunRecord(tmp_path)) == {("pixel8", "mlp"): "regressed", ("pixel8", "cnn"): WRONG_OUTPUTS,
                                           ("rpi5", "mlp"): "new"}
    marks, night = read_marks(tmp_path)
    assert night is None and (marks[("pixel8", "mlp")].regressed, marks[("pixel8", "mlp")].ratio) == (True, 1.25)
    assert RunRecord(tmp_path).verdicts == found


@pytest.mark.parametrize("text", ["", "[1, 2]", '{"pairs": 3}', "{not json"])
def test_no_verdicts_from_a_file_that_holds_none(tmp_path: Path, text: str) -> None:
    (tmp_path / "verdicts.json").write_text(text)
    assert recorded_pairs(tmp_path) == () and recorded_verdicts(RunRecord(tmp_path)) == {}

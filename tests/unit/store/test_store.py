"""The store's queries on synthetic run directories (real manifests, real ETDump bytes, real SQLite)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from orchestrator.base.errors import DataError, UsageError
from orchestrator.profiles.analysis_core import collect_samples
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store, resolve_run, store_path
from tests.unit.store.rundirs import make_run_dir


def test_record_round_trips_the_results_model(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    with open_store(tmp_path / "s.db") as store:
        assert store.record(RunRecord(run)) == "r1"
        assert store.job("r1").to_dict() == load_manifest(run).to_dict()
        assert store.run_dir("r1") == run.resolve()


def test_recording_again_replaces_instead_of_duplicating(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        store.record(RunRecord(run))
        assert [r.run_id for r in store.jobs()] == ["r1"]
        assert len(store.history_points("mlp")) == 2
        # a resumed run gains a device: re-recording replaces the old record
        shutil.rmtree(run)
        make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000", devices=("local", "rpi5", "pixel"))
        store.record(RunRecord(run))
        assert store.jobs()[0].devices == tuple(d.name for d in load_manifest(run).devices)
        assert set(store.jobs()[0].devices) == {"local", "rpi5", "pixel"}
        assert len(store.events("r1", "pixel", "mlp")) == len(store.events("r1", "local", "mlp"))


def test_event_samples_are_the_etdump_samples_per_run(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000", runs=3, iterations=4)
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        stored = store.event_samples("r1", "rpi5", "mlp")
        events = store.events("r1", "rpi5", "mlp")
    dumps = sorted((run / "rpi5" / "mlp").glob("run-*/etdump.etdp"))
    for k, dump in enumerate(dumps):
        samples = collect_samples([dump])
        for key, per_run in stored.items():
            block = samples.block_keys.index(key[0])
            mask = (samples.block == block) & (samples.event_index == key[1])
            np.testing.assert_array_equal(per_run[f"run-{k + 1}"], samples.duration_ms[mask])
    execute = next(e for e in events if e.event_name == "Method::execute")
    assert execute.samples == 12 and execute.samples_ms is not None and len(execute.samples_ms) == 12
    assert execute.stats["p50_ms"] == pytest.approx(float(np.percentile(execute.samples_ms, 50)))
    assert list(execute.run_counts) == [4, 4, 4]


def test_execute_samples_traced_and_untraced(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    manifest = load_manifest(run)
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        traced = store.execute_samples("r1", "local", "mlp")
        untraced = store.execute_samples("r1", "local", "mlp", traced=False)
    model = manifest.device("local").model("mlp")
    assert list(traced) == ["run-1", "run-2"]
    assert tuple(traced["run-1"]) == model.runs[0].execute_ms
    assert list(untraced) == ["e2e-1"] and tuple(untraced["e2e-1"]) == (0.09, 0.095)


def test_runs_newest_first_and_filtered(tmp_path: Path) -> None:
    def make(rid, when, **kw):
        return make_run_dir(tmp_path, rid, when, **kw)
    runs = [make("a", "2026-11-01T10:00:00+0000"), make("b", "2026-11-03T10:00:00+0000", models=("cnn",)),
            make("c", "2026-11-02T10:00:00+0000", devices=("local",))]
    with open_store(tmp_path / "s.db") as store:
        for run in runs:
            store.record(RunRecord(run))
        assert [r.run_id for r in store.jobs()] == ["b", "c", "a"]
        assert [r.run_id for r in store.jobs(model="mlp")] == ["c", "a"]
        assert [r.run_id for r in store.jobs(device="rpi5")] == ["b", "a"]
        assert [r.run_id for r in store.jobs(since="2026-11-02")] == ["b", "c"]
        assert [r.run_id for r in store.jobs(limit=1)] == ["b"]
        with pytest.raises(UsageError, match="--since"):
            store.jobs(since="yesterday-ish")


def test_history_points_last_runs_of_a_model(tmp_path: Path) -> None:
    with open_store(tmp_path / "s.db") as store:
        for day in range(1, 6):
            store.record(RunRecord(make_run_dir(tmp_path, f"r{day}", f"2026-11-0{day}T10:00:00+0000",
                                      failed=("rpi5",) if day == 4 else ())))
        points = store.history_points("mlp", limit=3)
        assert [(p.run_id, p.device) for p in points] == [("r5", "local"), ("r5", "rpi5"), ("r4", "local"),
                                                           ("r4", "rpi5"), ("r3", "local"), ("r3", "rpi5")]
        failed = points[3]
        assert failed.status == "failed" and failed.e2e_p50_ms is None
        ok = points[0]
        assert ok.status == "ok" and ok.git_commit == "abc123"
        assert ok.e2e_p50_ms == pytest.approx(float(np.median(store.job("r5").device("local").model("mlp").wall_execute_ms)))
        assert [p.run_id for p in store.history_points("mlp", devices=["rpi5"], limit=2, before_run="r4")] == ["r3", "r2"]
        assert store.history_points("nope") == []


def test_stats_csv_alone_is_kept_when_etdumps_are_gone(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000", devices=("local",))
    for dump in run.glob("local/mlp/run-*/etdump.etdp"):
        dump.unlink()
    (run / "stats.csv").write_text(
        "device,model,event_block,event_index,event_name,samples,min_ms,p10_ms,p50_ms,p90_ms,avg_ms,max_ms,std_ms,"
        "module_path\nlocal,mlp,Execute,0,native_call_op0.out,6,0.1,0.1,0.2,0.3,0.2,0.3,0.05,layers.0\n")
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        (event,) = store.events("r1", "local", "mlp")
        assert event.stats["p50_ms"] == 0.2 and event.meta["module_path"] == "layers.0" and event.samples_ms is None
        assert store.event_samples("r1", "local", "mlp") == {}


def test_unknown_run_and_resolve_run(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    db = tmp_path / "s.db"
    with open_store(db) as store:
        with pytest.raises(UsageError, match="no stored run 'zz'"):
            store.job("zz")
        store.record(RunRecord(run))
    assert resolve_run(str(run), db) == run.resolve()
    assert resolve_run("r1", db) == run.resolve()
    with pytest.raises(UsageError, match="neither a run directory nor a run id"):
        resolve_run("zz", db)
    with pytest.raises(UsageError, match="no store at"):
        resolve_run("zz", tmp_path / "absent.db")
    shutil.rmtree(run)
    with pytest.raises(DataError, match="run directory is gone"):
        resolve_run("r1", db)


def test_store_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ETFARM_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert store_path() == tmp_path / "data" / "etfarm" / "results.db"
    monkeypatch.setenv("ETFARM_STORE", str(tmp_path / "env.db"))
    assert store_path() == tmp_path / "env.db"
    assert store_path(tmp_path / "flag.db") == tmp_path / "flag.db"
    with pytest.raises(UsageError, match="is a directory"):
        open_store(tmp_path)

"""The store keeps a (device, model)'s memory by owner and energy whole, and their two queried figures (schema v6),
which history's points carry; an older store migrates to NULLs."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from orchestrator.base.cache import write_json_atomic
from orchestrator.results.energy_figures import EnergyPhase, ModelEnergy, RailEnergy
from orchestrator.results.footprint import Footprint, ModelMemory, Owners
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from tests.unit.store.rundirs import make_run_dir

OWNERS = Owners(program=33_593_608, planned=8256, delegate=34_528_550, runtime=666, other=5_455_872)
MEMORY = ModelMemory(OWNERS, 73_396_224, Footprint(OWNERS, 73_396_224, 40_120_320), ("program", "planned", "runtime"),
                     ("delegate", "other"), "e2e-1")
ENERGY = ModelEnergy(True, sensor="odpm", uj_per_inference=812.5, uj_per_inference_low=790.0,
                     uj_per_inference_high=835.0, mw=95.0, idle_mw=45.0, sample_period_ms=250.0,
                     rails=(RailEnergy("S2M_VDD_CPUCL2", 700.0, 5.0),),
                     phases=(EnergyPhase(120, 5.0, 10.2, 41, 45.0, 140.0, 812.5),))


def test_memory_and_energy_round_trip_and_reach_history(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    job = load_manifest(run)
    device = job.device("local")
    assert device is not None and (model := device.model("mlp")) is not None
    job = job.with_device(device.with_model(replace(model, memory=MEMORY, energy=ENERGY)))
    write_json_atomic(run / "manifest.json", job.to_dict())
    unmeasured = make_run_dir(tmp_path, "r0", "2026-11-19T10:00:00+0000")
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(unmeasured))
        store.record(RunRecord(run))
        stored = store.job("r1")
        points = {p.run_id: p for p in store.history_points("mlp", ["local"])}
    assert stored.device("local").model("mlp").memory == MEMORY  # type: ignore[union-attr]
    assert stored.device("local").model("mlp").energy == ENERGY  # type: ignore[union-attr]
    assert stored.to_dict() == job.to_dict()
    assert (points["r1"].peak_rss_bytes, points["r1"].uj_per_inference) == (73_396_224, 812.5)
    assert (points["r0"].peak_rss_bytes, points["r0"].uj_per_inference) == (None, None)


def test_no_sensor_stores_no_figure(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    job = load_manifest(run)
    device = job.device("local")
    assert device is not None and (model := device.model("mlp")) is not None
    unavailable = ModelEnergy.unavailable("no power sensor on the device")
    write_json_atomic(run / "manifest.json", job.with_device(device.with_model(replace(model, energy=unavailable))).to_dict())
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        assert store.job("r1").device("local").model("mlp").energy == unavailable  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("SELECT uj_per_inference, json_extract(result_json, '$.energy') IS NOT NULL FROM results WHERE device = 'local'").fetchall() == [(None, 1)]

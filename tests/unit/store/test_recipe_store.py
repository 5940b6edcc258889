"""The store keeps a recipe configuration whole: the model's recipe (a queried column, the series' configuration)
and calibration, and the accuracy each device's outputs paid (schema v5)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

from orchestrator.artifacts.recipes import RecipeInfo
from orchestrator.base.cache import write_json_atomic
from orchestrator.results.accuracy import Accuracy
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store
from tests.unit.store.rundirs import make_run_dir


def test_recipe_and_accuracy_round_trip(tmp_path: Path) -> None:
    run = make_run_dir(tmp_path, "r1", "2026-11-20T10:00:00+0000")
    job = load_manifest(run)
    recipe = RecipeInfo("int8-static", "int8-static", "xnnpack_pt2e_int8_static_per_channel", True, 16, "model")
    models = tuple(replace(m, recipe=recipe, eager_outputs="eager.etft", eager_reference="eager.npz")
                   for m in job.models)
    device = job.device("local")
    assert device is not None
    model = device.model("mlp")
    assert model is not None
    accuracy = Accuracy(41.25, 0.0125, 0.9999, 1.0, 8, 3)
    job = replace(job, models=models).with_device(device.with_model(replace(model, accuracy=accuracy)))
    write_json_atomic(run / "manifest.json", job.to_dict())
    with open_store(tmp_path / "s.db") as store:
        store.record(RunRecord(run))
        stored = store.job("r1")
    assert stored.to_dict() == load_manifest(run).to_dict()
    assert stored.model_artifacts("mlp").recipe == recipe  # type: ignore[union-attr]
    assert stored.device("local").model("mlp").accuracy == accuracy  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("SELECT DISTINCT recipe FROM models").fetchall() == [("int8-static",)]

"""A nightly plan with `recipe: [fp32, int8-static]`: two series per device and model in the store, and a night
whose int8 accuracy dropped (its calibration data changed) says so and fails (exit 1), on the real testbed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from tests.helpers.exports import export_ahead
from tests.helpers.inventory import write_inventory

MODEL = '''
import torch
from torch import nn
from orchestrator.artifacts.calibration import CalibratedModel

from calib import SCALE  # the calibration data's scale: a local module, so part of the export key


def build():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)).eval()
    batches = [(SCALE * torch.randn(1, 3, 16, 16),) for _ in range(8)]
    return CalibratedModel(model, (torch.randn(1, 3, 16, 16),), calibration=batches)
'''


def etfarm(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=900, env=env, check=False)


@pytest.mark.slow
def test_two_series_per_recipe_and_a_night_whose_accuracy_dropped(tmp_path: Path) -> None:
    (tmp_path / "night.py").write_text(MODEL)
    (tmp_path / "calib.py").write_text("SCALE = 1.0\n")
    inventory = write_inventory(tmp_path / "devices.yaml", [DeviceSpec("local", "host", str(tmp_path / "local"))])
    report = tmp_path / "reports"
    plan = tmp_path / "plan.yaml"
    plan.write_text(json.dumps({"devices": ["local"], "models": [f"{tmp_path / 'night.py'}:build"], "runs": 3, "confirm_max_runs": 6,
                                "iterations": 5, "warmup": 1, "recipe": ["fp32", "int8-static"], "report": str(report),
                                "config": str(inventory)}))
    store = tmp_path / "results.db"
    env = {**os.environ, "ETFARM_STORE": str(store)}

    export_ahead(f"{tmp_path / 'night.py'}:build", recipes="fp32,int8-static")
    first = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    assert first.returncode == 0, first.stdout + first.stderr[-3000:]
    with sqlite3.connect(store) as conn:
        series = conn.execute("SELECT r.device, r.model, m.recipe FROM results r JOIN models m ON m.run_id = r.run_id "
                              "AND m.name = r.model ORDER BY r.model").fetchall()
    assert series == [("local", "night-fp32", "fp32"), ("local", "night-int8-static", "int8-static")]

    (tmp_path / "calib.py").write_text("SCALE = 0.01\n")  # calibrated on inputs 100x too small: clipped at run time
    export_ahead(f"{tmp_path / 'night.py'}:build", recipes="fp32,int8-static")
    dropped = etfarm("nightly", "--plan", str(plan), "-q", env=env)
    assert dropped.returncode == 1, dropped.stdout + dropped.stderr[-3000:]
    verdicts = json.loads(max(report.glob("nightly-*.json")).read_text())
    pairs = {p["model_b"]: p for p in verdicts["pairs"]}
    assert pairs["night-int8-static"]["accuracy_dropped"] and not pairs["night-fp32"]["accuracy_dropped"]
    assert pairs["night-int8-static"]["accuracy"]["snr_b_db"] < pairs["night-int8-static"]["accuracy"]["snr_a_db"] - 3
    assert "ACCURACY-DROPPED" in dropped.stdout and "accuracy held" in dropped.stdout
    assert "accuracy dropped" in (report / "latest.md").read_text()

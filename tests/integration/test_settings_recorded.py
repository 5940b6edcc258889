"""Every setting a real local job recorded reads back as recorded: in the manifest's configuration
(run/configuration.py SETTINGS) and in `history --json`, never `?` (the value of a setting a job did not
record). The runtime route once read `?` for every run: a dict probe of the typed device facts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.results.model import load_manifest
from orchestrator.run.configuration import SETTINGS, UNKNOWN, model_settings

REPO = Path(__file__).resolve().parents[2]
MLP = f"{REPO / 'configs' / 'models' / 'tiny_mlp.py'}:build"


def etfarm(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ETFARM_STORE": str(store)}
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=900, env=env)


@pytest.mark.slow
def test_no_setting_reads_unknown_for_a_job_that_recorded_it(tmp_path: Path) -> None:
    store, out = tmp_path / "results.db", tmp_path / "run"
    result = etfarm("run", "--devices", "local", "--model", MLP, "--backend", "portable", "--runs", "1",
                    "--iterations", "2", "--untraced-runs", "0", "--no-report", "--out", str(out), store=store)
    assert result.returncode == 0, result.stderr[-3000:]

    settings = dict(model_settings(load_manifest(out), "tiny_mlp", "local"))
    assert set(settings) == set(SETTINGS)
    assert [name for name, value in settings.items() if value == UNKNOWN] == []
    assert settings["runtime"] == "wheel" and settings["backend"] == "portable"

    listed = etfarm("history", "--json", store=store)
    assert listed.returncode == 0, listed.stderr[-3000:]
    (run,) = json.loads(listed.stdout)
    (point,) = [p for p in run["points"] if p["model"] == "tiny_mlp" and p["device"] == "local"]
    assert point["settings"] == settings  # the store reads the same configuration, every setting known

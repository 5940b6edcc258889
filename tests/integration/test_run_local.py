"""`etfarm run --devices local` end to end: real export, real runner, real ETDumps, checked against Inspector."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from orchestrator.results.model import load_manifest
from tests.helpers.exports import export_ahead
from tests.helpers.inspector_stats import assert_stats_equal_inspector

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "configs" / "models"
CONTRACT_COLUMNS = ["device", "model", "event_block", "event_index", "event_name", "samples",
                    "min_ms", "p10_ms", "p50_ms", "p90_ms", "avg_ms", "max_ms", "std_ms"]


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_run_local_xnnpack_end_to_end_then_warm(tmp_path: Path) -> None:
    out = tmp_path / "first"
    result = etfarm("run", "--devices", "local", "--model", f"{MODELS / 'tiny_cnn.py'}:build",
                    "--runs", "3", "--iterations", "4", "--warmup", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ok"
    assert manifest["config"]["runs"] == 3 and manifest["versions"]["executorch"] == "1.5.1"
    device = manifest["devices"]["local"]
    assert device["status"] == "ok" and device["error"] is None
    assert device["models"]["tiny_cnn"]["verification"]["status"] == "pass"

    model_dir = out / "local" / "tiny_cnn"
    facts = json.loads((model_dir / "device.json").read_text())["facts"]
    assert facts["cores"] >= 1 and facts["abi"]
    etdumps = sorted(model_dir.glob("run-*/etdump.etdp"))
    assert [p.parent.name for p in etdumps] == ["run-1", "run-2", "run-3"]

    stats = pd.read_csv(out / "stats.csv")
    assert list(stats.columns[: len(CONTRACT_COLUMNS)]) == CONTRACT_COLUMNS
    assert set(stats["device"]) == {"local"} and set(stats["model"]) == {"tiny_cnn"}
    execute = stats[stats["event_name"] == "Method::execute"]
    # Warmup iterations are not in the ETDump; the executions that waited for a CPU are left out, and counted.
    assert (execute["samples"] + execute["contended_samples"]).tolist() == [3 * 4]
    runs = load_manifest(out).device("local").model("tiny_cnn").traced_runs  # type: ignore[union-attr]
    assert execute["contended_samples"].tolist() == [sum(not ok for r in runs for ok in r.clean)]
    assert (stats["event_name"] == "DELEGATE_CALL").any()  # XNNPACK did take the model
    etrecord = Path(manifest["models"]["tiny_cnn"]["etrecord"])
    assert_stats_equal_inspector(stats.drop(columns=["device", "model"]), etdumps, etrecord)
    assert "Method::execute" in result.stdout and f"run directory: {out}" in result.stdout

    # A warm second run of the unchanged model re-exports and rebuilds nothing, and says so.
    again = etfarm("run", "--devices", "local", "--model", f"{MODELS / 'tiny_cnn.py'}:build",
                   "--runs", "1", "--iterations", "2", "--out", str(tmp_path / "second"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert "export cached" in again.stderr and "exporting" not in again.stderr
    assert "runner for host: cached, not rebuilt" in again.stderr
    assert "staged nothing" in again.stderr


@pytest.mark.slow
def test_run_local_portable_matches_inspector(tmp_path: Path) -> None:
    out = tmp_path / "portable"
    result = etfarm("run", "--model", f"{MODELS / 'tiny_mlp.py'}:build", "--backend", "portable",
                    "--runs", "2", "--iterations", "5", "--warmup", "1", "--out", str(out), "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr == ""  # --quiet
    stats = pd.read_csv(out / "stats.csv")
    assert not (stats["event_name"] == "DELEGATE_CALL").any()
    assert stats["event_name"].str.startswith("native_call_").any()
    manifest = json.loads((out / "manifest.json").read_text())
    etdumps = sorted((out / "local" / "tiny_mlp").glob("run-*/etdump.etdp"))
    assert len(etdumps) == 2
    assert_stats_equal_inspector(stats.drop(columns=["device", "model"]), etdumps, Path(manifest["models"]["tiny_mlp"]["etrecord"]))


@pytest.mark.slow
def test_failing_device_exits_1_and_keeps_the_others(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    config.write_text(
        "devices:\n"
        f"  good:\n    transport: local\n    workdir: {tmp_path / 'good'}\n"
        f"  broken:\n    transport: local\n    workdir: {tmp_path / 'broken'}\n    exec_prefix: ['false']\n"
    )
    out = tmp_path / "mixed"
    result = etfarm("run", "--config", str(config), "--devices", "good,broken", "--model", f"{MODELS / 'tiny_mlp.py'}:build",
                    "--backend", "portable", "--runs", "1", "--iterations", "2", "--out", str(out))
    assert result.returncode == 1, result.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "partial"
    assert manifest["devices"]["good"]["status"] == "ok"
    assert manifest["devices"]["broken"]["status"] == "failed"
    assert "runner" in manifest["devices"]["broken"]["error"]
    stats = pd.read_csv(out / "stats.csv")
    assert set(stats["device"]) == {"good"}
    assert (out / "broken" / "tiny_mlp" / "run-1" / "runner.log").is_file()
    assert "broken: FAILED" in result.stdout


@pytest.mark.slow
def test_run_json_log_and_two_factories_of_one_file(tmp_path: Path) -> None:
    """`run --json`: one JSON document on stdout naming the run directory and every device's status;
    DIR/etfarm.log holds progress and device commands; two factories of one file are named after themselves."""
    models = tmp_path / "models.py"
    models.write_text((MODELS / "tiny_mlp.py").read_text() + "\n\ndef a():\n    return build()\n\n\ndef b():\n    return build()\n")
    out = tmp_path / "json-run"
    export_ahead(f"{models}:a", f"{models}:b", backend="portable")
    result = etfarm("run", "--model", f"{models}:a", "--model", f"{models}:b", "--backend", "portable",
                    "--runs", "2", "--iterations", "3", "--warmup", "1", "--out", str(out), "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    view = json.loads(result.stdout)  # the whole of stdout is one document
    assert view["run_dir"] == str(out) and view["status"] == "ok" and view["exit_code"] == 0
    assert view["run_id"] == json.loads((out / "manifest.json").read_text())["run_id"]
    (device,) = view["devices"]
    assert (device["name"], device["status"], device["error"], device["blame"]) == ("local", "ok", None, None)
    assert [m["name"] for m in device["models"]] == ["a", "b"]
    for model in device["models"]:
        assert model["status"] == "ok" and model["verification"]["status"] == "pass"
        assert model["e2e_samples"] == 2 * 3 and 0 < model["e2e_p50_ms"] < 1000
    assert "[local]" in result.stderr  # progress stays on stderr
    assert {p.name for p in (out / "local").iterdir()} == {"a", "b"}

    log = (out / "etfarm.log").read_text()
    assert "etfarm.progress INFO exporting a " in log or "etfarm.progress INFO export cached" in log
    assert "etfarm.device.local DEBUG exec: " in log and "etfarm_runner" in log  # the device commands
    assert "etfarm.progress.local INFO" in log


@pytest.mark.slow
def test_failed_device_in_json_names_its_error_and_blame(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    config.write_text(f"devices:\n  broken:\n    transport: local\n    workdir: {tmp_path / 'broken'}\n    exec_prefix: ['false']\n")
    result = etfarm("run", "--config", str(config), "--devices", "local,broken", "--model", f"{MODELS / 'tiny_mlp.py'}:build",
                    "--backend", "portable", "--runs", "1", "--iterations", "2", "--out", str(tmp_path / "r"), "--json")
    assert result.returncode == 1, result.stderr[-3000:]
    view = json.loads(result.stdout)
    assert view["status"] == "partial" and view["exit_code"] == 1
    devices = {d["name"]: d for d in view["devices"]}
    assert devices["local"]["status"] == "ok"
    assert devices["broken"]["status"] == "failed" and devices["broken"]["blame"] == "infrastructure"
    assert "\n" not in devices["broken"]["error"] and "runner" in devices["broken"]["error"]

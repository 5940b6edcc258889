"""One `etfarm run` over an emulated Raspberry Pi 5 (SSH + qemu), an adb device and `local`."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from testbed.chromium import visit

from device_agents import DeviceSpec
from orchestrator.report.destination import REPORT_HTML
from orchestrator.results.record import RunRecord
from orchestrator.run.device.locks import device_lock
from tests.helpers.inspector_stats import assert_stats_equal_inspector
from tests.helpers.inventory import with_workdir, write_inventory

REPO = Path(__file__).resolve().parents[2]
TINY = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
# Workdir names with a space, a quote and a ';' must survive every transport's quoting.
AWKWARD = "work dir 'q';x"


def etfarm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, timeout=1200)


@pytest.mark.slow
def test_one_run_over_rpi5_adb_and_local(rpi5_device: DeviceSpec, adb_device: DeviceSpec, tmp_path: Path) -> None:
    rpi5 = with_workdir(rpi5_device, tmp_path / "rpi5" / AWKWARD)
    adb = with_workdir(adb_device, Path(adb_device.workdir) / AWKWARD)
    local = DeviceSpec("local", "host", str(tmp_path / "local" / AWKWARD))
    config = write_inventory(tmp_path / "devices.yaml", [rpi5, adb, local])
    out = tmp_path / "fleet"

    result = etfarm("run", "--config", str(config), "--devices", "rpi5,adbdev,local", "--model", TINY,
                    "--runs", "3", "--iterations", "3", "--warmup", "1", "--out", str(out))  # 3 runs: ratio intervals
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "ok"
    etrecord = Path(manifest["models"]["tiny_cnn"]["etrecord"])
    stats = pd.read_csv(out / "stats.csv")
    assert set(stats["device"]) == {"rpi5", "adbdev", "local"}
    for name in ("rpi5", "adbdev", "local"):
        entry = manifest["devices"][name]
        assert entry["status"] == "ok", entry
        assert entry["models"]["tiny_cnn"]["verification"]["status"] == "pass"
        etdumps = sorted((out / name / "tiny_cnn").glob("run-*/etdump.etdp"))
        assert len(etdumps) == 3
        own = stats[stats["device"] == name].drop(columns=["device", "model"])
        assert_stats_equal_inspector(own, etdumps, etrecord)
    # The rpi5 really ran the aarch64 runner under qemu.
    log = (out / "rpi5" / "tiny_cnn" / "run-1" / "runner.log").read_text()
    assert "qemu-aarch64" in log.splitlines()[0]
    # Progress was reported per device, and the side-by-side table names all three.
    for name in ("rpi5", "adbdev", "local"):
        assert f"[{name}] tiny_cnn: run 3/3" in result.stderr
    assert "p50 per device (rpi5, adbdev, local)" in result.stdout
    _every_convolution_is_compared_across_devices(out, tmp_path)


def _every_convolution_is_compared_across_devices(out: Path, work: Path) -> None:
    """x86 names tiny_cnn's convolutions `F32 IGEMM`, the emulated aarch64 boards may say `PF32`: joined by the op's
    identity from the model, every convolution row has all three devices' p50, a ratio and its interval, so no
    heatmap cell is empty; the page names the layers, not the kernels."""
    from orchestrator.report.builders.report import build_report

    (section,) = build_report(RunRecord(out)).models
    convolutions = [r for r in section.op_ratios if r.name.endswith(("convolution", "convolution #2"))]
    assert len(convolutions) >= 2 and all(r.basis == "model" for r in convolutions), section.op_ratios
    baseline = [d.device for d in section.latency].index("rpi5")
    for row in convolutions:
        assert None not in row.p50_ms and None not in row.ratio, row  # the heatmap draws every cell from these
        assert all(ci is not None for k, ci in enumerate(row.ratio_ci) if k != baseline), row
        assert row.module_path.startswith("features."), row
    page = (out / "report.html").read_text()
    for row in convolutions:  # every heatmap cell of a convolution is coloured by a ratio (its hover text says which)
        for device in ("rpi5", "adbdev", "local"):
            cell = rf"<title>{re.escape(row.name)} on {device}[^<]*: p50 [^<]* ms, [0-9.]+x rpi5</title>"
            assert re.search(cell, page), (row.name, device)
    # The roll-ups beside stats.csv: every device's call tree, its root holding every op's time.
    with open(out / "rollups.csv", newline="") as fh:
        roots = [r for r in csv.DictReader(fh) if r["kind"] == "module" and r["depth"] == "0"]
    assert sorted(r["device"] for r in roots) == ["adbdev", "local", "rpi5"] and all(float(r["total_ms"]) > 0
                                                                                      for r in roots)
    assert "Time by module and by op type" in page
    # Headless Chromium draws the heatmap: a cell per (op, device) shown, and a real screenshot of the page.
    drawn = visit(out / REPORT_HTML, work)
    heatmap = next(c for c in drawn.probe["charts"] if c["chart"] == "tiny_cnn-op-heatmap")
    assert heatmap["width"] > 200 and heatmap["marks"] >= 3 * len(section.op_ratios), heatmap
    assert drawn.console == [] and drawn.screenshot.stat().st_size > 50_000


@pytest.mark.slow
def test_busy_device_fails_with_no_wait(tmp_path: Path) -> None:
    out = tmp_path / "busy"
    with device_lock("local"):
        result = etfarm("run", "--model", TINY, "--runs", "1", "--iterations", "1", "--no-wait", "--out", str(out))
    assert result.returncode == 1
    assert "device is busy" in result.stdout + result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["devices"]["local"]["status"] == "failed"

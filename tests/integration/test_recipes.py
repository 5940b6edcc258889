"""Export recipes as a configuration (README "Quantized models"): `etfarm run --recipe fp32,int8-static` on the
host and on the emulated Raspberry Pi 5 (SSH + qemu) in one job, real exports through ExecuTorch's export API,
real runners; per-op statistics checked against Inspector on the pulled ETDumps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from tests.helpers.inspector_stats import assert_stats_equal_inspector
from tests.helpers.inventory import write_inventory
from tests.helpers.tools import missing, require_tool

from testbed.sshd import start_sshd  # tests/integration/testbed, on the path by conftest.py  # isort: skip

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
MODELS = ("tiny_cnn-fp32", "tiny_cnn-int8-static")
DEVICES = ("local", "rpi5")
QEMU_SYSROOT = "/usr/aarch64-linux-gnu"


def etfarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=1200, check=False, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`local` and an emulated Raspberry Pi 5 (an sshd whose runner runs under qemu-aarch64), for the module. Its CPU
    is the Pi 5's Cortex-A76: under qemu 7.2's default `max` CPU, XNNPACK picks int8 kernels that qemu computes
    wrongly (static int8 tiny_cnn: SNR 1.3 dB against eager, where the host and a Cortex-A76 agree exactly)."""
    qemu = require_tool("qemu-aarch64")
    if not os.path.isdir(QEMU_SYSROOT):
        missing(f"the aarch64 sysroot {QEMU_SYSROOT} is not installed (Debian g++-aarch64-linux-gnu)")
    root = tmp_path_factory.mktemp("recipes-devices")
    host = start_sshd(root / "sshd")
    rpi5 = host.spec("rpi5", root / "rpi5-workdir", target="linux-aarch64", exec_prefix=(qemu, "-cpu", "cortex-a76",
                                                                                             "-L", QEMU_SYSROOT))
    yield write_inventory(root / "devices.yaml", [rpi5, DeviceSpec("local", "host", str(root / "local"))])
    host.stop()


@pytest.fixture(scope="module")
def job(inventory: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One job: fp32 and static int8 side by side on both devices, intermediate outputs dumped (--numerics)."""
    out = tmp_path_factory.mktemp("recipes") / "run"
    result = etfarm("run", "--config", str(inventory), "--devices", ",".join(DEVICES), "--model", CNN,
                    "--recipe", "fp32,int8-static", "--runs", "2", "--iterations", "3", "--warmup", "1",
                    "--numerics", "--out", str(out), "--no-store")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-4000:]
    return out, result


def test_both_recipes_run_on_both_devices_with_statistics_equal_to_inspector(job: tuple[Path, object]) -> None:
    out, _ = job
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["recipes"] == ["fp32", "int8-static"]
    stats = pd.read_csv(out / "stats.csv")
    for model in MODELS:
        artifacts = manifest["models"][model]
        assert artifacts["recipe"]["label"] == model.removeprefix("tiny_cnn-")
        for device in DEVICES:
            entry = manifest["devices"][device]["models"][model]
            assert entry["status"] == "ok" and entry["verification"]["status"] == "pass", entry
            etdumps = sorted((out / device / model).glob("run-*/etdump.etdp"))
            assert len(etdumps) == 2
            own = stats[(stats["device"] == device) & (stats["model"] == model)].drop(columns=["device", "model"])
            assert_stats_equal_inspector(own, etdumps, Path(artifacts["etrecord"]))
    # The int8 program is at most 40 % of the fp32 one, and the rpi5 really ran the aarch64 runner.
    fp32, int8 = (Path(manifest["models"][m]["pte"]).stat().st_size for m in MODELS)
    assert int8 <= 0.4 * fp32
    assert "qemu-aarch64" in (out / "rpi5" / MODELS[1] / "run-1" / "runner.log").read_text().splitlines()[0]


def test_accuracy_against_the_fp32_eager_model_per_device(job: tuple[Path, object]) -> None:
    out, _ = job
    manifest = json.loads((out / "manifest.json").read_text())
    int8_recipe = manifest["models"]["tiny_cnn-int8-static"]["recipe"]
    assert int8_recipe["quantized"] and int8_recipe["calibration_batches"] == 1
    assert int8_recipe["calibration"] == "example inputs"
    for device in DEVICES:
        fp32 = manifest["devices"][device]["models"]["tiny_cnn-fp32"]["accuracy"]
        int8 = manifest["devices"][device]["models"]["tiny_cnn-int8-static"]["accuracy"]
        assert fp32["runs"] == int8["runs"] == 2
        # fp32 is the eager model to float rounding; int8 pays for its size, within what a calibrated CNN keeps.
        assert fp32["snr_db"] > 100 and fp32["max_abs_error"] < 1e-5
        assert 20 < int8["snr_db"] < fp32["snr_db"] and 0 < int8["max_abs_error"] < 0.05
        assert int8["top1_agreement"] == 1.0 and int8["top1_rows"] == 1

"""`etfarm run` on the emulated phone (orchestrator/emulate/android.py) with no NDK: real adb server, real runner, real job.

The phone runs the bundled-glibc runner (the linux-aarch64 runner + the glibc it needs, started through
its own loader) from an empty root; the emulated Raspberry Pi 5 (ssh + qemu) runs the linux-aarch64 one
in the same job, at the same time. Checked against Inspector, with the outputs verified, --numerics,
Android's facts and controls (cpus: prime/big, --max-temp on the skin temperature) in the manifest and
the report; `adb:SERIAL` without an inventory entry; the ABI check before anything is pushed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from device_agents import DeviceSpec
from orchestrator.emulate.adbserver import AdbTestServer
from orchestrator.emulate.android import AndroidPhone, start_android_phone
from orchestrator.emulate.android_root import Cluster
from orchestrator.results.model import load_manifest
from tests.helpers.inspector_stats import assert_stats_equal_inspector
from tests.helpers.inventory import write_inventory
from tests.helpers.tools import missing

REPO = Path(__file__).resolve().parents[2]
TINY_CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
SMALL = ("--runs", "2", "--iterations", "3", "--warmup", "1")
NDK_VARIABLES = ("ANDROID_NDK", "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT", "EXECUTORCH_SRC")
LOG_LINE = re.compile(r"^(\S+) \S+ etfarm\.progress\.(\S+) INFO (.*)$")


def etfarm(*args: str, env: dict[str, str] | None = None, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in NDK_VARIABLES}  # the no-NDK route
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**clean, **(env or {})})


def _host_cpus() -> tuple[int, int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        missing("pinning to the phone's clusters needs two cpus on this host")
    return cpus[0], cpus[1]


@pytest.fixture(scope="module")
def phone(adb_server: AdbTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AndroidPhone]:
    """A phone with a little and a prime cluster on cpus this host has (so taskset to them works here)."""
    for tool in ("aarch64-linux-gnu-g++", "cmake", "qemu-aarch64"):
        if not shutil.which(tool):
            missing(f"{tool} is not installed (run `make testbed`)")
    little, prime = _host_cpus()
    clusters = (Cluster((little,), 1704000, 250), Cluster((prime,), 2910000, 1024, "schedutil"))
    device = start_android_phone(adb_server, tmp_path_factory.mktemp("phone"), clusters=clusters)
    yield device
    device.stop()


def _progress_times(log: Path, device: str) -> list[tuple[datetime, str]]:
    """(time, message) of the device's progress lines that start a process run, from DIR/etfarm.log."""
    times = []
    for line in log.read_text().splitlines():
        match = LOG_LINE.match(line)
        if match and match.group(2) == device and re.match(r"tiny_cnn: (run \d+/|end-to-end )", match.group(3)):
            times.append((datetime.fromisoformat(match.group(1)), match.group(3)))
    return times


@pytest.mark.slow
def test_phone_and_rpi5_in_one_job(phone: AndroidPhone, rpi5_device: DeviceSpec, tmp_path: Path,
                                   etfarm_store_home: Path) -> None:
    pixel = replace(phone.spec("pixel8"), cpus="prime")
    rpi5 = replace(rpi5_device, cpus="big")
    config = write_inventory(tmp_path / "devices.yaml", [pixel, rpi5])
    out = tmp_path / "run"
    result = etfarm("run", "--config", str(config), "--devices", "pixel8,rpi5", "--model", TINY_CNN, *SMALL,
                    "--numerics", "--max-temp", "40", "--out", str(out))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-5000:]

    job = load_manifest(out)
    assert job.status == "ok"
    artifacts = job.model_artifacts("tiny_cnn")
    assert artifacts is not None and artifacts.etrecord
    stats = pd.read_csv(out / "stats.csv")
    for name in ("pixel8", "rpi5"):
        device = job.device(name)
        assert device is not None and device.status == "ok", device
        model = device.model("tiny_cnn")
        assert model is not None and model.verification is not None and model.verification.status == "pass"
        etdumps = sorted((out / name / "tiny_cnn").glob("run-*/etdump.etdp"))
        assert len(etdumps) == 2
        assert_stats_equal_inspector(stats[stats["device"] == name].drop(columns=["device", "model"]), etdumps,
                                     Path(artifacts.etrecord))
        assert (out / name / "tiny_cnn" / "numerics.csv").is_file()
    numerics = json.loads((out / "numerics.json").read_text())
    assert {m["device"] for m in numerics["models"] if not m["error"] and m["comparisons"]} == {"pixel8", "rpi5"}
    assert not numerics["diverges"], numerics["diverging_devices"]

    phone_facts = job.device("pixel8").facts.to_json()  # type: ignore[union-attr]
    runner = phone_facts["runner"]
    assert runner["runtime"] == "bundled-glibc" and "ld-linux-aarch64.so.1" in runner["bundled"]
    assert runner["launcher"] == ["./lib/ld-linux-aarch64.so.1", "--library-path", "./lib"]
    assert "XnnpackBackend" in runner["backends"] and runner["executorch_dir"].endswith("share/cmake")
    assert job.device("rpi5").facts.runner.runtime == "wheel"  # type: ignore[union-attr]
    android = phone_facts["android"]
    assert android["product"] == {"model": "Pixel 8", "manufacturer": "Google", "cpu": {"abi": "arm64-v8a"}}
    assert android["soc"] == {"model": "Tensor G3", "manufacturer": "Google"}
    assert android["build"]["version"] == {"release": 14, "sdk": 34}
    assert android["battery"] == {"level": 85, "status": "charging", "plugged": "usb"}
    assert android["temp"] == {"skin_c": 32.5, "battery_c": 29.4}
    assert set(phone_facts["clusters"]) == {f"cpu{c}" for c in _host_cpus()}
    device_json = json.loads((out / "pixel8" / "tiny_cnn" / "device.json").read_text())
    assert device_json["facts"]["runner"]["runtime"] == "bundled-glibc"
    with sqlite3.connect(etfarm_store_home) as db:  # the results store keeps the same facts
        (stored,) = db.execute("SELECT facts_json FROM devices WHERE run_id = ? AND name = 'pixel8'", (job.run_id,)).fetchone()
    assert json.loads(stored)["runner"] == runner and json.loads(stored)["android"] == phone_facts["android"]

    # The runner started through its bundled loader, pinned to the prime cluster; the rpi5's `big` is every cpu
    # (the host's cpus are alike). Nothing of the phone's own (no /lib, no /usr) was there to use.
    _, prime = _host_cpus()
    command = (out / "pixel8" / "tiny_cnn" / "run-1" / "runner.log").read_text().splitlines()[0]
    assert f"taskset {1 << prime:x} " in command and "/data/local/tmp/etfarm/lib/ld-linux-aarch64.so.1 --library-path" in command
    assert job.device("pixel8").controls["cpus"] == f"{prime} (prime, by capacity)"  # type: ignore[union-attr]
    rpi5_command = (out / "rpi5" / "tiny_cnn" / "run-1" / "runner.log").read_text().splitlines()[0]
    assert "taskset 3 " in rpi5_command and "qemu-aarch64" in rpi5_command
    assert not phone.host_path("/lib").exists() and not phone.host_path("/usr").exists()
    assert not phone.host_path("/system/bin/bash").exists(), "step.sh and describe.sh ran under mksh"
    # --max-temp read Android's skin temperature (32.5 °C), not the hottest thermal zone (45.2 °C): no wait.
    state = json.loads((out / "pixel8" / "tiny_cnn" / "run-1" / "device_state.json").read_text())
    assert state["max_temp_c"] == 32.5 and not state["too_hot"] and state["cooldown_waited_s"] == 0

    # Both devices ran at the same time: each started a process run before the other had started its last.
    log = out / "etfarm.log"
    phone_runs, rpi5_runs = _progress_times(log, "pixel8"), _progress_times(log, "rpi5")
    assert len(phone_runs) == len(rpi5_runs) == 3, (phone_runs, rpi5_runs)
    assert phone_runs[0][0] < rpi5_runs[-1][0] and rpi5_runs[0][0] < phone_runs[-1][0], (phone_runs, rpi5_runs)

    # The report's "What the devices were" names what the phone is.
    html = (out / "report.html").read_text()
    for fact in ("Google Pixel 8 (Tensor G3)", "Android 14 (SDK 34)", "arm64-v8a (aarch64)", "bundled-glibc runtime",
                 "battery 85 % charging (usb)", "skin 32"):
        assert fact in html, fact


@pytest.mark.slow
def test_adb_serial_without_an_inventory_entry(phone: AndroidPhone, adb_server: AdbTestServer, tmp_path: Path) -> None:
    if not phone.binfmt:
        missing("adb:SERIAL on the emulated phone needs qemu in its own binfmt_misc (Linux >= 6.7): "
                "a device without an inventory entry has no exec_prefix")
    name = f"adb:{phone.serial}"
    env = {"ANDROID_ADB_SERVER_PORT": str(adb_server.port)}
    config = write_inventory(tmp_path / "devices.yaml", [replace(phone.spec("other"), settings=replace(
        phone.spec().settings, serial="127.0.0.1:1"))])  # the inventory names another phone only

    listed = etfarm("devices", "--config", str(config), "--json", env=env, timeout=300)
    assert listed.returncode == 0, listed.stderr
    entries = {e["name"]: e for e in json.loads(listed.stdout)["devices"]}
    entry = entries[name]
    assert entry["in_inventory"] is False and entry["target"] == "android-arm64-v8a" and entry["health"] == "ok"
    assert entry["facts"]["android"]["product"]["model"] == "Pixel 8"
    assert entries["other"]["in_inventory"] is True
    table = etfarm("devices", "--config", str(config), env=env, timeout=300)
    line = next(line for line in table.stdout.splitlines() if line.startswith(name))
    assert "android-arm64-v8a" in line and "Pixel 8 (Tensor G3), Android 14 (SDK 34), arm64-v8a" in line
    assert "skin 32.5 °C" in line and "battery 85% charging, usb, 29.4 °C" in line, line

    out = tmp_path / "run"
    run = etfarm("run", "--config", str(config), "--devices", name, "--model", TINY_CNN, "--runs", "1",
                 "--iterations", "2", "--warmup", "0", "--untraced-runs", "0", "--no-report", "--out", str(out), env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    device = load_manifest(out).device(name)
    assert device is not None and device.status == "ok" and device.target == "android-arm64-v8a"
    assert device.facts.runner.runtime == "bundled-glibc"


def test_wrong_abi_is_refused_before_anything_is_pushed(phone: AndroidPhone, adb_server: AdbTestServer,
                                                        tmp_path: Path) -> None:
    phone.set_props({"ro.product.cpu.abi": "armeabi-v7a"})
    workdir = "/data/local/tmp/etfarm-abi"
    try:
        config = write_inventory(tmp_path / "devices.yaml", [phone.spec("pixel8", workdir)])
        out = tmp_path / "run"
        result = etfarm("run", "--config", str(config), "--devices", "pixel8", "--model", TINY_CNN, "--runs", "1",
                        "--no-report", "--no-store", "--out", str(out))
        assert result.returncode == 1, result.stderr[-3000:]
        error = load_manifest(out).device("pixel8").error  # type: ignore[union-attr]
        assert error is not None and "\n" not in error
        assert "the device's ABI is armeabi-v7a (ro.product.cpu.abi): no etfarm runner runs there" in error
        assert not phone.host_path(f"{workdir}/bin").exists(), "nothing was pushed"

        usage = etfarm("run", "--devices", f"adb:{phone.serial}", "--model", TINY_CNN, "--no-store",
                       env={"ANDROID_ADB_SERVER_PORT": str(adb_server.port)})
        assert usage.returncode == 2
        assert usage.stderr.strip().splitlines()[-1].endswith(
            "the device's ABI is armeabi-v7a (ro.product.cpu.abi); etfarm's runners run on arm64-v8a only")
    finally:
        phone.set_props({})


def test_unknown_adb_serial_is_a_usage_error(adb_server: AdbTestServer) -> None:
    started = time.monotonic()
    result = etfarm("run", "--devices", "adb:NOPE123", "--model", TINY_CNN, "--no-store",
                    env={"ANDROID_ADB_SERVER_PORT": str(adb_server.port)})
    assert result.returncode == 2 and time.monotonic() - started < 60
    assert "adb:NOPE123: the adb server at 127.0.0.1:" in result.stderr and "does not see this device" in result.stderr


@pytest.mark.slow
def test_a_farm_worker_starts_the_phones_runner_through_its_loader(phone: AndroidPhone, tmp_path: Path) -> None:
    """The client builds the bundled-glibc runner; the task carries its launcher to the worker that holds the phone."""
    from tests.integration.test_farm import Farm

    root = tmp_path / "farm"
    root.mkdir()
    farm = Farm(root)
    try:
        farm.worker("usb-host", write_inventory(tmp_path / "worker.yaml", [phone.spec("pixel8")]))
        farm.wait_online("pixel8")
        out = tmp_path / "run"
        result = etfarm("run", "--scheduler", farm.address, "--devices", "pixel8", "--model", TINY_CNN, "--runs", "1",
                        "--iterations", "2", "--warmup", "0", "--untraced-runs", "0", "--no-report", "--no-store",
                        "--out", str(out))
        assert result.returncode == 0, result.stderr[-3000:] + farm.logs()
    finally:
        farm.stop()
    device = load_manifest(out).device("pixel8")
    assert device is not None and device.status == "ok" and device.facts.runner.runtime == "bundled-glibc"
    command = (out / "pixel8" / "tiny_cnn" / "run-1" / "runner.log").read_text().splitlines()[0]
    assert "/data/local/tmp/etfarm/lib/ld-linux-aarch64.so.1 --library-path /data/local/tmp/etfarm/lib " in command

"""Android without an NDK, on the emulated phone (orchestrator/emulate/android.py): real adb server, real runner.

The android-arm64-v8a runtime is built with ANDROID_NDK unset (the linux-aarch64 runner plus the
glibc it needs), pushed with the adb agent to /data/local/tmp/etfarm of a phone whose root has no
glibc, no /lib and no /usr, and started through its bundled loader under qemu-aarch64 by the step
script under mksh: it writes an ETDump that orchestrator/profiles reads. describe.sh reports the
phone's Android facts from getprop, dumpsys and sysfs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from device_agents import create_agent
from device_agents.keyvalues import parse_key_values
from device_agents.step import StepRequest, StepResult, kill_step_command, run_step, step_files
from orchestrator.artifacts.build import RunnerBuild, build_runner
from orchestrator.artifacts.lowering import export_model
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.artifacts.targets import target_for_abi
from orchestrator.emulate import android_root
from orchestrator.emulate.android import AndroidPhone
from orchestrator.profiles.etdump import read_etdump
from tests.helpers.tools import missing

REPO = Path(__file__).resolve().parents[2]
TINY_CNN = f"{REPO / 'configs' / 'models' / 'tiny_cnn.py'}:build"
EXECUTIONS = 3


@pytest.fixture(scope="module")
def android_build(tmp_path_factory: pytest.TempPathFactory) -> RunnerBuild:
    for tool in ("aarch64-linux-gnu-g++", "cmake", "qemu-aarch64"):
        if not shutil.which(tool):
            missing(f"{tool} is not installed (run `make testbed`)")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("ANDROID_NDK", "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT", "EXECUTORCH_SRC"):
            mp.delenv(name, raising=False)
        return build_runner("android-arm64-v8a")


def test_etfarm_build_says_what_it_bundled(android_build: RunnerBuild) -> None:
    """`etfarm build --target android-arm64-v8a` with no NDK: the runtime, the bundled glibc, how the phone starts it."""
    env = {k: v for k, v in os.environ.items() if k not in ("ANDROID_NDK", "ANDROID_NDK_HOME", "ANDROID_NDK_ROOT")}
    result = subprocess.run([sys.executable, "-m", "orchestrator.cli", "build", "--target", "android-arm64-v8a"],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"cached: {android_build.runner}"
    assert lines[1].startswith("runtime: bundled-glibc (executorch_DIR ") and lines[1].endswith("/share/cmake)")
    assert lines[2] == f"bundled glibc: {', '.join(android_build.bundled)}" and "libc.so.6" in lines[2]
    assert lines[3] == "started on the device as: ./lib/ld-linux-aarch64.so.1 --library-path ./lib ./bin/etfarm_runner ..."


def test_phone_is_android_shaped(android_phone: AndroidPhone) -> None:
    """No glibc and no bash on the phone; mksh is its sh; toybox-only commands."""
    for absent in ("lib", "lib64", "usr", "bin", "tmp"):
        assert not android_phone.host_path(f"/{absent}").exists(), absent
    with create_agent(android_phone.spec()) as agent:
        probe = agent.check(["sh", "-c", 'echo "$KSH_VERSION"; command -v bash || echo no-bash; uname -m; '
                                         "stat --printf=%s /etc/passwd >/dev/null 2>&1 || echo no-gnu-stat"])
        # Every device command runs under the phone's `timeout`: its exit codes must be the command's.
        codes = [agent.run(["sh", "-c", f"exit {k % 3}"]).exit_code for k in range(30)]
    lines = probe.stdout.splitlines()
    assert "MIRBSD KSH" in lines[0] and lines[1:] == ["no-bash", "aarch64", "no-gnu-stat"], lines
    assert codes == [k % 3 for k in range(30)], codes


def test_describe_reports_android_facts(android_phone: AndroidPhone) -> None:
    with create_agent(android_phone.spec()) as agent:
        facts = agent.describe().to_json()  # in the form the manifest keeps: describe.sh's key paths
        android = facts["android"]
        assert android["product"]["model"] == "Pixel 8" and android["soc"]["model"] == "Tensor G3"
        assert android["build"]["version"] == {"release": 14, "sdk": 34}
        assert android["product"]["cpu"]["abi"] == "arm64-v8a"
        assert android["temp"] == {"skin_c": 32.5, "battery_c": 29.4}
        assert android["battery"] == {"level": 85, "status": "charging", "plugged": "usb"}
        assert android["thermal_status"] == 0
        assert facts["clusters"] == {
            "cpu0": {"cpus": "0-3", "cores": 4, "max_khz": 1704000, "governor": "sched_pixel", "capacity": 250},
            "cpu4": {"cpus": "4-7", "cores": 4, "max_khz": 2367000, "governor": "sched_pixel", "capacity": 620},
            "cpu8": {"cpus": 8, "cores": 1, "max_khz": 2910000, "governor": "sched_pixel", "capacity": 1024},
        }
        assert facts["cores"] == 9 and facts["abi"] == "aarch64"

        # What changes between runs is read again each time (describe.sh's dynamic mode).
        android_phone.set_dumpsys("battery", android_root.BATTERY.replace("USB powered: true", "USB powered: false")
                                  .replace("status: 2", "status: 3").replace("temperature: 294", "temperature: -51"))
        android_phone.set_dumpsys("thermalservice", android_root.THERMALSERVICE.replace("Thermal Status: 0", "Thermal Status: 3")
                                  .replace("mValue=32.5, mType=3", "mValue=39.0, mType=3"))
        script = (REPO / "device_agents" / "remote" / "describe.sh").read_text()
        dynamic = parse_key_values(agent.check(["env", "ETFARM_DESCRIBE_DYNAMIC=1", "sh", "-c", script]).stdout)
    assert dynamic["android"] == {"thermal_status": 3, "temp": {"skin_c": 39.0, "battery_c": -5.1},
                                  "battery": {"level": 85, "status": "discharging", "plugged": "none"}}
    assert "clusters" not in dynamic and "os" not in dynamic, "what never changes is read once"


def test_step_script_runs_under_mksh(android_phone: AndroidPhone, tmp_path: Path) -> None:
    """run_step's step.sh and describe.sh (dynamic facts) on the phone's shell, with a stand-in runner."""
    spec = android_phone.spec(exec_prefix=())
    with create_agent(spec) as agent:
        agent.stage(step_files())
        out_rel = "out/m/run-2"
        runner = ["sh", "-c", 'echo "$KSH_VERSION"; printf abc > "$1/result.bin"; echo oops >&2; exit 3', "runner",
                  agent.remote_path(out_rel)]
        result = run_step(agent, StepRequest(out_rel=out_rel, argv=runner, timeout_s=30, static_facts=False), tmp_path)
    assert result.exit_code == 3 and not result.timed_out and not result.lost
    assert "MIRBSD KSH" in result.stdout and result.stderr == "oops\n"
    assert result.files["result.bin"].read_bytes() == b"abc"
    android = result.facts.android
    assert android is not None and android.battery_status == "charging" and android.model is None


def test_a_killed_step_leaves_no_runner_under_toybox_timeout(android_phone: AndroidPhone, tmp_path: Path) -> None:
    """Ctrl-C and retries kill the step's runner (kill_step_command): toybox's `timeout` puts the runner in a
    process group of its own and does not pass signals on, so the runner's session is killed, not `timeout`."""
    spec = android_phone.spec(exec_prefix=())
    out_rel = "out/m/run-1"
    with create_agent(spec) as agent:
        agent.stage(step_files())
        runner = ["sh", "-c", 'echo $$ >"$1/runner.pid"; exec sleep 120', "runner", agent.remote_path(out_rel)]
        request = StepRequest(out_rel=out_rel, argv=runner, timeout_s=300, describe=False)
        done: list[StepResult] = []
        step = threading.Thread(target=lambda: done.append(run_step(agent, request, tmp_path)), daemon=True)
        step.start()
        pid_file = android_phone.host_path(f"{spec.workdir}/{out_rel}/runner.pid")
        deadline = time.monotonic() + 30
        while not (pid_file.is_file() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline and step.is_alive(), "the runner never started"
            time.sleep(0.05)
        runner_pid = int(pid_file.read_text())
        with create_agent(spec) as other:
            assert other.run(kill_step_command(other, out_rel), timeout_s=10).ok
        step.join(30)
    assert done and done[0].exit_code in (143, 137) and not done[0].lost, done  # ended by the signal
    stat = Path(f"/proc/{runner_pid}/stat")  # the phone shares this host's pid namespace
    assert not stat.exists() or stat.read_text().split(") ")[1].startswith("Z"), "the runner was left running"


def test_abi_comes_from_the_phone(android_phone: AndroidPhone) -> None:
    android_phone.set_props({"ro.product.cpu.abi": "armeabi-v7a"})
    with create_agent(android_phone.spec()) as agent:
        android = agent.describe().android
    assert android is not None and android.abi == "armeabi-v7a" and target_for_abi(android.abi) is None, "no runner for a 32-bit phone: say so before pushing"


@pytest.mark.slow
def test_bundled_glibc_runner_runs_on_the_phone(android_phone: AndroidPhone, android_build: RunnerBuild, tmp_path: Path) -> None:
    assert android_build.runtime == "bundled-glibc"
    assert {"ld-linux-aarch64.so.1", "libc.so.6", "libstdc++.so.6"} <= set(android_build.bundled)
    assert "XnnpackBackend" in android_build.backends, "the build ran the runner through its loader"
    model = export_model(parse_model_spec(TINY_CNN))
    spec = android_phone.spec()
    files = {**android_build.stage_files(), **step_files(), "models/tiny_cnn.pte": model.pte}
    with create_agent(spec) as agent:
        first = agent.stage(files)
        assert set(first.pushed) == set(files)
        again = agent.stage(files)
        assert again.pushed == () and again.bytes_pushed == 0, "unchanged files are not sent twice"

        workdir = spec.workdir
        out_rel = "out/tiny_cnn/run-1"
        argv = [*android_build.start_words(workdir), "--model_path", agent.remote_path("models/tiny_cnn.pte"),
                "--warmup", "1", "--num_executions", str(EXECUTIONS), "--cpu_threads", "1",
                "--etdump_path", agent.remote_path(f"{out_rel}/etdump.etdp")]
        result = run_step(agent, StepRequest(out_rel=out_rel, argv=argv, timeout_s=300, env=android_build.env(workdir)),
                          tmp_path)
    assert result.ok, result.tail()
    # The phone's qemu prefix (`env QEMU_CPU=...` where qemu is in the phone's own binfmt_misc: started as on a phone)
    start = len(android_phone.runner_prefix)
    assert result.command.startswith("timeout ") and shlex.split(result.command)[4:6 + start] == [
        *android_phone.runner_prefix, f"{workdir}/lib/ld-linux-aarch64.so.1", "--library-path"]
    assert 'ETFARM_BACKENDS ["XnnpackBackend"]' in result.stdout and "ETFARM_RESULT" in result.stdout
    assert result.facts.android and result.facts.android.model == "Pixel 8", "describe.sh ran inside the step, under mksh"
    etdump = read_etdump(result.files["etdump.etdp"])
    blocks = [etdump.string(int(code)) for code in etdump.block_name]
    assert blocks == ["Default"] + ["Execute"] * EXECUTIONS, "one load block + one per measured execution"
    names = {etdump.string(int(code)) for code in etdump.events.name}
    assert "Method::execute" in names and any("DELEGATE_CALL" in (n or "") or "Xnnpack" in (n or "") for n in names), names

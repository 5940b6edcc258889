"""run.device.controls: CPU affinity words and Android's fixed performance mode, as the device sees them."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from device_agents.adb.settings import AdbSettings
from device_agents.base import DeviceSpec
from device_agents.local import LocalAgent
from device_agents.spec import LocalSettings
from device_agents.ssh.settings import SshSettings
from orchestrator.run.device.controls import affinity_prefix, restore_commands, setup_commands


def spec(transport: str = "ssh", target: str = "linux-aarch64", cpus: str | None = None) -> DeviceSpec:
    settings = {"ssh": SshSettings("board", key="k"), "adb": AdbSettings("serial"), "local": LocalSettings()}[transport]
    return DeviceSpec("d", target, "/tmp/w", exec_prefix=("qemu", "-L", "/x"), settings=settings, cpus=cpus)


def test_cpus_pin_the_runner_before_the_exec_prefix() -> None:
    device = spec(cpus="4-7")
    assert affinity_prefix(device.cpus) == ("taskset", "f0")  # a mask: Android's toybox taskset has no -c
    agent = LocalAgent(device)
    words = agent.command_words(["runner", "--x"], timeout_s=10, use_exec_prefix=True, prefix=affinity_prefix(device.cpus))
    assert words == ["timeout", "-k", "5", "10", "taskset", "f0", "qemu", "-L", "/x", "runner", "--x"]
    assert affinity_prefix("0,2,8-9") == ("taskset", "305") and affinity_prefix("63") == ("taskset", "8" + "0" * 15)
    assert affinity_prefix(spec().cpus) == ()


def test_android_gets_fixed_performance_mode_for_the_job_and_back_after() -> None:
    android = spec("adb", "android-arm64-v8a")
    (on,) = setup_commands(android)
    (off,) = restore_commands(android)
    assert on[:2] == ["sh", "-c"] and "cmd power set-fixed-performance-mode-enabled true" in on[2]
    assert "cmd power set-fixed-performance-mode-enabled false" in off[2]
    assert setup_commands(spec()) == [] and restore_commands(spec()) == []  # Linux boards: nothing to set
    assert setup_commands(spec("adb", "linux-aarch64")) == [on]  # the adb transport is Android whatever the target
    assert setup_commands(spec("ssh", "android-arm64-v8a")) == [on]  # so is an Android target on any transport
    assert setup_commands(spec("local", "host")) == []


def test_perf_mode_command_where_the_platform_lacks_it(tmp_path: Path) -> None:
    """Without Android's `cmd`, the job goes on and records that the mode was unavailable."""
    (on,) = setup_commands(spec("adb", "android-arm64-v8a"))
    result = subprocess.run(["/bin/sh", *on[1:]], capture_output=True, text=True, env={"PATH": str(tmp_path)}, check=True)
    assert result.stdout.strip() == "fixed_performance_mode=unavailable"
    fake_cmd = tmp_path / "cmd"
    fake_cmd.write_text('#!/bin/sh\necho "$@" > "$(dirname "$0")/called"\n')
    fake_cmd.chmod(0o755)
    result = subprocess.run(on, capture_output=True, text=True, env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, check=True)
    assert result.stdout.strip() == "fixed_performance_mode=on"
    assert shlex.split((tmp_path / "called").read_text()) == ["power", "set-fixed-performance-mode-enabled", "true"]

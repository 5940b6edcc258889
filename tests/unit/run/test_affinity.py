"""run/device/affinity.py and run/loop/launch.py: `cpus: big|prime` from a device's facts, and the ABI check before staging."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from device_agents.adb.settings import AdbSettings
from device_agents.base import DeviceSpec
from device_agents.facts import DeviceFacts
from device_agents.ssh.settings import SshSettings
from orchestrator.artifacts.build import RunnerBuild
from orchestrator.base.errors import Blame
from orchestrator.run.device.affinity import NoClusters, cpu_list, parse_cpu_list, resolve
from orchestrator.run.loop.launch import DeviceMismatch, Launch, prepare_launch

PIXEL8 = {"clusters": {"cpu0": {"cpus": "0-3", "cores": 4, "max_khz": 1704000, "capacity": 250},
                       "cpu4": {"cpus": "4-7", "cores": 4, "max_khz": 2367000, "capacity": 620},
                       "cpu8": {"cpus": 8, "cores": 1, "max_khz": 2910000, "capacity": 1024}},
          "android": {"product": {"cpu": {"abi": "arm64-v8a"}}}}
# A Linux board without cpufreq policies in the facts, but per-cpu maximum frequencies (RK3399: 4 x A53 + 2 x A72).
RK3399 = {"cpus": {f"cpu{c}": {"max_khz": 1416000 if c < 4 else 1800000, "governor": "schedutil"} for c in range(6)}}


@pytest.mark.parametrize(("facts", "asked", "cpus", "by"), [
    (PIXEL8, "prime", "8", "capacity"),
    (PIXEL8, "big", "4-8", "capacity"),  # no little core: the A715s and the X3
    (RK3399, "prime", "4-5", "max_khz"),
    (RK3399, "big", "4-5", "max_khz"),
    ({"cpus": {"cpu0": {"capacity": 1024}, "cpu1": {"capacity": 1024}}}, "big", "0-1", "capacity"),  # all alike
    ({"clusters": {"cpu0": {"cpus": "0-3", "max_khz": 1800000}, "cpu4": {"cpus": "4-7", "max_khz": 2400000}}},
     "prime", "4-7", "max_khz"),  # no capacities: by frequency
])
def test_named_clusters_resolve_from_the_facts(facts: dict[str, Any], asked: str, cpus: str, by: str) -> None:
    chosen = resolve(asked, DeviceFacts.from_json(facts))
    assert (chosen.cpus, chosen.by) == (cpus, by)
    assert chosen.describe() == f"{cpus} ({asked}, by {by})"


def test_no_clusters_no_pinning() -> None:
    with pytest.raises(NoClusters):
        resolve("big", DeviceFacts.from_json({"cores": 4, "cpus": {"cpu0": {"governor": "x"}}}))


def test_cpu_lists() -> None:
    assert cpu_list([8, 4, 5, 6, 7, 0, 2]) == "0,2,4-8"
    assert parse_cpu_list("0,2,4-6") == [0, 2, 4, 5, 6] and parse_cpu_list(8) == [8] and parse_cpu_list("x") == []


class FakeAgent:
    def __init__(self, facts: dict[str, Any]) -> None:
        self.facts = DeviceFacts.from_json(facts)  # as a manifest holds them
        self.described = 0

    def describe(self) -> DeviceFacts:
        self.described += 1
        return self.facts


def _build(tmp_path: Path, launcher: tuple[str, ...] = ()) -> RunnerBuild:
    return RunnerBuild("android-arm64-v8a", "k", tmp_path, tmp_path / "bin" / "etfarm_runner", (), cached=True,
                       runtime="bundled-glibc", launcher=launcher)


def _phone(cpus: str | None = None, target: str = "android-arm64-v8a") -> DeviceSpec:
    return DeviceSpec("p", target, "/data/local/tmp/etfarm", settings=AdbSettings("s"), cpus=cpus, source="inv.yaml")


def test_the_bundled_loader_starts_the_runner_pinned_to_the_prime_core(tmp_path: Path) -> None:
    agent = FakeAgent(PIXEL8)
    build = _build(tmp_path, ("./lib/ld-linux-aarch64.so.1", "--library-path", "./lib"))
    launch = prepare_launch(agent, _phone("prime"), build, say=lambda s: None)  # type: ignore[arg-type]
    assert launch.words == ("/data/local/tmp/etfarm/lib/ld-linux-aarch64.so.1", "--library-path",
                            "/data/local/tmp/etfarm/lib", "/data/local/tmp/etfarm/bin/etfarm_runner")
    assert launch.env == {} and launch.prefix == ("taskset", "100") and launch.controls == {"cpus": "8 (prime, by capacity)"}
    assert launch.info.runtime == "bundled-glibc" and agent.described == 1


def test_a_board_without_named_clusters_is_not_described(tmp_path: Path) -> None:
    agent = FakeAgent({})
    board = DeviceSpec("b", "linux-aarch64", "/w", settings=SshSettings("h", key="k"), cpus="2-3")
    build = RunnerBuild("linux-aarch64", "k", tmp_path, tmp_path / "bin" / "etfarm_runner", (), cached=True)
    launch = prepare_launch(agent, board, build, say=lambda s: None)  # type: ignore[arg-type]
    assert launch == Launch(("/w/bin/etfarm_runner",), {"LD_LIBRARY_PATH": "/w/lib"}, ("taskset", "c"), build.info)
    assert agent.described == 0, "no extra device command"


@pytest.mark.parametrize(("abi", "target", "problem"), [
    ("armeabi-v7a", "android-arm64-v8a", "the device's ABI is armeabi-v7a (ro.product.cpu.abi): no etfarm runner runs "
                                         "there (arm64-v8a only); nothing was pushed"),
    ("arm64-v8a", "linux-aarch64", "the device's ABI is arm64-v8a (ro.product.cpu.abi), which runs target "
                                   "android-arm64-v8a, not linux-aarch64 as inv.yaml says; nothing was pushed"),
])
def test_a_phone_of_another_abi_is_refused_in_one_line(tmp_path: Path, abi: str, target: str, problem: str) -> None:
    agent = FakeAgent({"android": {"product": {"cpu": {"abi": abi}}}})
    with pytest.raises(DeviceMismatch) as info:
        prepare_launch(agent, _phone(target=target), _build(tmp_path), say=lambda s: None)  # type: ignore[arg-type]
    assert str(info.value) == f"[p] {problem}" and info.value.blame is Blame.USAGE


def test_an_unknown_abi_or_no_clusters(tmp_path: Path) -> None:
    launch = prepare_launch(FakeAgent({}), _phone(), _build(tmp_path), say=lambda s: None)  # type: ignore[arg-type]
    assert launch.prefix == ()  # an Android device whose ABI is not told (the testbed's host-shell adb device) runs
    with pytest.raises(DeviceMismatch, match=r"cpus: big: the device reports neither .* give a cpu list instead"):
        prepare_launch(FakeAgent({}), _phone("big"), _build(tmp_path), say=lambda s: None)  # type: ignore[arg-type]

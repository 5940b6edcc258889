"""device_agents/facts.py: describe.sh's output parsed once into typed records whose JSON form is the one
etfarm always wrote (keyvalues.py's nesting, keys sorted as the manifest sorts them)."""

from __future__ import annotations

import json
import subprocess
from importlib import resources

import pytest

from device_agents.facts import CpuFacts, DeviceFacts, RunnerFacts, ThermalZone
from device_agents.keyvalues import parse_key_values
from tests.unit.report.test_device_facts_android import PHONE_TEXT

HOSTILE = "\n".join([
    "cores=abc", "loadavg=nan", "cpus.cpu0.max_khz=nan", "cpus.cpu0.cur_khz=inf", "cpus.cpu1.max_khz=99999999999999999999",
    "cpus.cpu1.governor=" + "g" * 5000, "cpus.cpu2=5", "cpus.cpu2.cur_khz=1", "clusters.cpu0.cpus=nonsense",
    "clusters.cpu0.capacity=-inf", "thermal.thermal_zone0=cpu:nan", "thermal.thermal_zone1=garbage",
    "android.temp.skin_c=nan", "android.battery.level=NaN", "android.temp=7", "runner.runtime=the device's word",
    "novel.key.path=1", "noise line", "=novalue",
])  # fmt: skip


# What describe.sh prints on a phone, in its order: Android's battery temperature comes after the battery level,
# so without a skin temperature `android.temp` follows `android.battery`.
PHONE_DESCRIBED = "\n".join([
    "os=Linux", "kernel=6.1.75", "abi=aarch64", "cpus.cpu0.cur_khz=1704000", "cpus.cpu0.max_khz=1704000",
    "cpus.cpu0.governor=sched_pixel", "cpus.cpu0.capacity=250", "cores=9", "loadavg=1.2 1.1 1.0",
    "mem_total_kb=7800000", "mem_available_kb=3900000", "thermal.thermal_zone0=BIG:45200", "battery.battery.level=85",
    "battery.battery.status=Charging", "clusters.cpu0.cpus=0-3", "clusters.cpu0.cores=4", "clusters.cpu0.max_khz=1704000",
    "clusters.cpu0.governor=sched_pixel", "clusters.cpu0.capacity=250", "android.thermal_status=0",
    "android.temp.skin_c=32.5", "android.battery.level=85", "android.battery.status=charging",
    "android.temp.battery_c=29.4", "android.battery.plugged=usb", "android.product.model=Pixel 8",
    "android.product.manufacturer=Google", "android.build.version.release=14", "android.build.version.sdk=34",
    "android.product.cpu.abi=arm64-v8a", "android.soc.model=Tensor G3", "android.soc.manufacturer=Google",
])  # fmt: skip


def _host_describe() -> str:
    script = resources.files("device_agents").joinpath("remote/describe.sh").read_text()
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60, check=True).stdout


def test_describe_output_is_read_by_field() -> None:
    facts = DeviceFacts.parse("abi=aarch64\ncores=8\nloadavg=0.1 0.2 0.3\ncpus.cpu0.cur_khz=2400000\n"
                              "cpus.cpu0.governor=schedutil\ncpus.cpu4.capacity=1024\nandroid.product.model=Pixel 8\n"
                              "android.product.cpu.abi=arm64-v8a\nthermal.thermal_zone0=cpu:45000\ntemp=41.5\n")
    assert (facts.abi, facts.cores, facts.loadavg) == ("aarch64", 8, "0.1 0.2 0.3")
    assert facts.cpus == (CpuFacts("cpu0", cur_khz=2400000, governor="schedutil"), CpuFacts("cpu4", capacity=1024))
    assert facts.cpus[1].number == 4
    assert facts.android is not None and (facts.android.model, facts.android.abi) == ("Pixel 8", "arm64-v8a")
    assert facts.thermal == (ThermalZone("thermal_zone0", "cpu:45000"),)
    assert (facts.thermal[0].kind, facts.thermal[0].reading) == ("cpu", 45000.0)
    assert facts.other == ((("temp",), 41.5),)  # nothing this etfarm reads: kept, not dropped
    assert not DeviceFacts() and DeviceFacts(cores=1)


@pytest.mark.parametrize("text", [PHONE_TEXT, HOSTILE, "cores=2\n"], ids=["phone", "hostile", "one fact"])
def test_the_json_form_is_the_one_etfarm_always_wrote(text: str) -> None:
    """The manifest, device.json and the store held describe.sh's nesting with sorted keys: so do they still."""
    facts = DeviceFacts.parse(text)
    assert json.dumps(facts.to_json()) == json.dumps(parse_key_values(text), sort_keys=True)
    assert DeviceFacts.from_json(json.loads(json.dumps(facts.to_json()))) == facts


@pytest.mark.parametrize("written", [{"runner": {}, "cpus": {}}, {"cores": None, "thermal": {"z": ["a", 1]}},
                                     {"android": {"temp": {"skin_c": True}}}])
def test_what_no_field_reads_is_written_back_as_it_came(written: dict) -> None:
    assert DeviceFacts.from_json(written).to_json() == written


@pytest.mark.parametrize("described", [PHONE_DESCRIBED, PHONE_DESCRIBED.replace("android.temp.skin_c=32.5\n", "")],
                         ids=["phone", "phone without a skin sensor"])
def test_etfarm_devices_json_keeps_describe_shs_order(described: str) -> None:
    facts = DeviceFacts.parse(described)
    assert json.dumps(facts.to_json(sort_keys=False)) == json.dumps(parse_key_values(described))


def test_this_hosts_facts_and_the_runner_read_back_as_written() -> None:
    text = _host_describe()
    facts = DeviceFacts.parse(text)
    assert json.dumps(facts.to_json(sort_keys=False)) == json.dumps(parse_key_values(text))  # `etfarm devices --json`
    assert isinstance(facts.cores, int) and facts.cores >= 1 and facts.os == "Linux"
    runner = {"runtime": "wheel", "backends": ["XnnpackBackend"], "launcher": []}
    recorded = facts.with_runner(RunnerFacts.from_json(runner))
    assert json.dumps(recorded.to_json()) == json.dumps({**parse_key_values(text), "runner": runner}, sort_keys=True)
    assert DeviceFacts.from_json(recorded.to_json()) == recorded


def test_hostile_readings_stay_text_and_nothing_non_finite_reaches_json() -> None:
    facts = DeviceFacts.parse(HOSTILE)
    assert (facts.cores, facts.loadavg, facts.cpus[0].max_khz, facts.cpus[0].cur_khz) == ("abc", "nan", "nan", "inf")
    assert facts.cpus[1].max_khz == "99999999999999999999" and len(str(facts.cpus[1].governor)) == 5000
    assert [c.name for c in facts.cpus] == ["cpu0", "cpu1"]  # cpus.cpu2=5 came first: the rest of cpu2 is dropped
    assert facts.runner == RunnerFacts(runtime="the device's word")  # the host's own record replaces it (with_runner)
    json.dumps(facts.to_json(), allow_nan=False)


@pytest.mark.parametrize("runner", [{"runtime": 5, "launcher": "./ld.so", "bundled": ["libc.so.6", 7], "newer": {"a": 1}},
                                    {"backends": [], "runtime": "user", "executorch_dir": "/opt/et/lib/cmake"}])
def test_the_runner_record_reads_its_fields_by_type_and_keeps_the_rest(runner: dict) -> None:
    """A field reads only a value of its type (another etfarm's or a device's word stays in `other`), and the
    record is written back as it came, key for key."""
    facts = DeviceFacts.from_json({"cores": 4, "runner": runner})
    assert facts.runner is not None and facts.to_json() == {"cores": 4, "runner": runner}
    typed = {name for name in ("runtime", "executorch_dir", "launcher", "bundled", "backends")
             if getattr(facts.runner, name) is not None}
    assert typed | set(facts.runner.other) == set(runner) and not typed & set(facts.runner.other)
    assert facts.runner.runtime == (runner["runtime"] if isinstance(runner["runtime"], str) else None)

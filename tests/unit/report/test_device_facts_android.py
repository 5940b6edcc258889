"""report/device_facts.py on a phone: what describe.sh reports of Android reaches "What the devices were"."""

from __future__ import annotations

import pytest

from device_agents.facts import DeviceFacts, RunnerFacts
from orchestrator.report.builders.device_facts import device_facts
from orchestrator.results.conditions import DeviceState
from orchestrator.results.model import DeviceResult, ModelResult, ModelStatus, ProcessRun

PHONE_TEXT = """abi=aarch64
cores=9
android.product.model=Pixel 8
android.product.manufacturer=Google
android.product.cpu.abi=arm64-v8a
android.soc.model=Tensor G3
android.build.version.release=14
android.build.version.sdk=34
android.battery.level=85
android.battery.status=charging
android.battery.plugged=usb
android.temp.skin_c=32.5
android.temp.battery_c=29.4
clusters.cpu0.cpus=0-3
clusters.cpu0.cores=4
clusters.cpu0.governor=sched_pixel
clusters.cpu4.cpus=4-7
clusters.cpu4.cores=4
clusters.cpu4.governor=sched_pixel
clusters.cpu8.cpus=8
clusters.cpu8.cores=1
clusters.cpu8.governor=sched_pixel
thermal.thermal_zone0=BIG:45200
"""
PHONE = DeviceFacts.parse(PHONE_TEXT)


def test_what_the_phone_was() -> None:
    runner = RunnerFacts(runtime="bundled-glibc", backends=("XnnpackBackend",))
    hotter = DeviceState(DeviceFacts.parse("android.temp.skin_c=36.0\nandroid.temp.battery_c=30.1\nthermal.thermal_zone0=BIG:47000"))
    device = DeviceResult("pixel8", "adb", "android-arm64-v8a", facts=PHONE.with_runner(runner),
                          models=(ModelResult("m", ModelStatus.OK, (ProcessRun("run-1", True, (1.0,), device_state=hotter),)),))
    facts = device_facts(device)
    assert facts.product == "Google Pixel 8 (Tensor G3), Android 14 (SDK 34), battery 85 % charging (usb), bundled-glibc runtime"
    assert facts.abi == "arm64-v8a (aarch64)" and facts.cores == "9 (4+4+1)" and facts.governor == "sched_pixel"
    assert facts.temperatures == "skin 36 °C, battery 30 °C, BIG 47 °C over 1 reading"


def test_a_device_reporting_garbage_is_shown_as_it_said_and_breaks_no_reader() -> None:
    """`nan`, `inf`, huge numbers and text where numbers belong stay text (device_agents/facts.py): every reader of
    facts shows or skips them, none fails on them."""
    from device_agents.facts import DeviceFacts
    from orchestrator.cli.devices import _facts_line
    from orchestrator.results.conditions import max_temperature_c
    from orchestrator.run.device.affinity import NoClusters, resolve
    from tests.unit.device_agents.test_facts import HOSTILE

    facts = DeviceFacts.parse(HOSTILE)
    state = DeviceState(facts)
    run = ProcessRun("run-1", True, (1.0,), device_state=state)
    shown = device_facts(DeviceResult("odd", "ssh", "linux-aarch64", facts=facts,
                                      models=(ModelResult("m", ModelStatus.OK, (run,)),)))
    assert (shown.cores, shown.load, shown.frequencies, shown.temperatures) == ("abc", "nan", "-", "-")
    assert _facts_line(facts).startswith("?, abc cores, governor ggg")
    with pytest.raises(NoClusters):
        resolve("big", facts)
    assert max_temperature_c(DeviceFacts.parse("thermal.thermal_zone0=garbage\nandroid.temp.skin_c=hot")) is None

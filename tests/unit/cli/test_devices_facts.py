"""`etfarm devices`: one line of facts per device, Android's own answers first."""

from __future__ import annotations

from device_agents.facts import DeviceFacts
from orchestrator.cli.devices import _facts_line
from tests.unit.report.test_device_facts_android import PHONE


def test_a_phone_in_one_line() -> None:
    assert _facts_line(PHONE) == ("Pixel 8 (Tensor G3), Android 14 (SDK 34), arm64-v8a, 9 cores (4+4+1), "
                                  "governor sched_pixel, skin 32.5 °C, battery 85% charging, usb, 29.4 °C")


def test_a_board_in_one_line() -> None:
    board = DeviceFacts.from_json({"abi": "aarch64", "cores": 4,
                                   "cpus": {f"cpu{c}": {"max_khz": 2400000, "governor": "ondemand"} for c in range(4)}})
    assert _facts_line(board) == "aarch64, 4 cores, max 2.40 GHz, governor ondemand"
    assert _facts_line(DeviceFacts()) == ""

"""A device's power sensors: which one it has, the command that reads it once, and that output's parser.

- `odpm`: Android's on-device power monitor, `dumpsys powerstats`: the channels (`ChannelId: 0,
  ChannelName: S4M_VDD_CPUCL0, ChannelSubsystem: CPU`) and their energy meters (`ChannelId: 0,
  Timestamp (ms): T, Duration (ms): D, Energy (uWs): E`, as PowerStatsService prints them); a counter
  in microwatt-seconds (= microjoules) per rail, the last reading of each channel kept.
- `rapl`: `/sys/class/powercap/intel-rapl:N/energy_uj`, a counter per package domain (its subdomains
  are inside it, so they are not added) wrapping at `max_energy_range_uj`.
- `pmic`: the Raspberry Pi 5's `vcgencmd pmic_read_adc`, one snapshot of each rail's current
  (`VDD_CORE_A current(7)=0.75012000A`) and voltage (`VDD_CORE_V volt(15)=0.72178200V`): power = I x V
  for each rail that has both (EXT5V_V, the input voltage, has no current and is not a rail).
- `hwmon`: `/sys/class/hwmon/hwmon*/power*_input` in microwatts (INA3221 on Jetson-class boards).

Battery current over USB is not a source: it is wrong while the battery charges.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

__all__ = ["DETECT_COMMAND", "NO_SENSOR", "SENSORS", "Kind", "Reading", "Sensor", "parse_hwmon", "parse_pmic",
           "parse_powerstats", "parse_rapl"]


class Kind(StrEnum):
    COUNTER = "counter"  # energy so far, microjoules: the integral is a difference
    POWER = "power"  # power now, microwatts: the integral is over the samples


@dataclass(frozen=True)
class Reading:
    """One reading of every channel: microjoules (a counter) or microwatts (power)."""

    values: Mapping[str, float]
    wraps: Mapping[str, float] = field(default_factory=dict)  # a counter's range, where it wraps


@dataclass(frozen=True)
class Sensor:
    name: str
    kind: Kind
    command: str  # /bin/sh: prints one reading
    parse: Callable[[str], Reading]
    period_s: float  # how often the phase reads it


_CHANNEL = re.compile(r"ChannelId: (\d+), ChannelName: ([^,]+), ChannelSubsystem: (.*)")
_METER = re.compile(r"ChannelId: (\d+), Timestamp \(ms\): (\d+), Duration \(ms\): (\d+), Energy \(uWs\): (\d+)")


def parse_powerstats(text: str) -> Reading:
    """`dumpsys powerstats`: each channel's last energy reading (uWs = uJ), named by its channel."""
    names = {m.group(1): m.group(2).strip() for m in _CHANNEL.finditer(text)}
    latest: dict[str, tuple[int, float]] = {}
    for m in _METER.finditer(text):
        cid, stamp, energy = m.group(1), int(m.group(2)), float(m.group(4))
        if cid not in latest or stamp >= latest[cid][0]:
            latest[cid] = (stamp, energy)
    return Reading({names.get(cid, f"channel{cid}"): energy for cid, (_, energy) in latest.items()})


_PMIC = re.compile(r"^\s*(\S+)_([AV])\s+(current|volt)\(\d+\)=([0-9.]+)[AV]\s*$", re.MULTILINE)


def parse_pmic(text: str) -> Reading:
    """`vcgencmd pmic_read_adc`: microwatts per rail that reports both its current and its voltage."""
    amps: dict[str, float] = {}
    volts: dict[str, float] = {}
    for m in _PMIC.finditer(text):
        rail, unit, value = m.group(1), m.group(2), float(m.group(4))
        (amps if unit == "A" else volts)[rail] = value
    return Reading({rail: amps[rail] * volts[rail] * 1e6 for rail in sorted(amps) if rail in volts})


def parse_rapl(text: str) -> Reading:
    """Lines `NAME ENERGY_UJ MAX_ENERGY_RANGE_UJ` (RAPL_COMMAND's): a counter per domain, with its wrap."""
    values: dict[str, float] = {}
    wraps: dict[str, float] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 3 and words[1].isdigit() and words[2].isdigit():
            name = words[0] if words[0] not in values else f"{words[0]}{len(values)}"
            values[name], wraps[name] = float(words[1]), float(words[2])
    return Reading(values, wraps)


def parse_hwmon(text: str) -> Reading:
    """Lines `CHIP/powerN_input MICROWATTS` (HWMON_COMMAND's)."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2 and words[1].lstrip("-").isdigit():
            values[words[0]] = float(words[1])
    return Reading(values)


RAPL_COMMAND = ("for d in /sys/class/powercap/intel-rapl:*; do case ${d##*/} in *:*:*) continue;; esac; "
                "echo \"$(cat $d/name) $(cat $d/energy_uj) $(cat $d/max_energy_range_uj)\"; done")
HWMON_COMMAND = ("for f in /sys/class/hwmon/hwmon*/power*_input; do "
                 "echo \"$(cat ${f%/*}/name 2>/dev/null || echo hwmon)/${f##*/} $(cat $f)\"; done")

SENSORS: Mapping[str, Sensor] = {
    "odpm": Sensor("odpm", Kind.COUNTER, "dumpsys powerstats", parse_powerstats, 0.1),
    "rapl": Sensor("rapl", Kind.COUNTER, RAPL_COMMAND, parse_rapl, 0.1),
    "pmic": Sensor("pmic", Kind.POWER, "vcgencmd pmic_read_adc", parse_pmic, 0.1),
    "hwmon": Sensor("hwmon", Kind.POWER, HWMON_COMMAND, parse_hwmon, 0.1),
}

# One device command: prints the name of the first sensor that reads, or `none`.
DETECT_COMMAND = (
    "if command -v dumpsys >/dev/null 2>&1 && dumpsys powerstats 2>/dev/null | grep -q 'Energy (uWs)'; then echo odpm; "
    "elif cat /sys/class/powercap/intel-rapl:*/energy_uj >/dev/null 2>&1; then echo rapl; "
    "elif command -v vcgencmd >/dev/null 2>&1 && vcgencmd pmic_read_adc 2>/dev/null | grep -q 'current('; "
    "then echo pmic; "
    "elif cat /sys/class/hwmon/hwmon*/power*_input >/dev/null 2>&1; then echo hwmon; "
    "else echo none; fi")
NO_SENSOR = ("no power sensor on the device: no energy rails from `dumpsys powerstats` (ODPM), no readable RAPL "
             "(/sys/class/powercap/intel-rapl:*/energy_uj), no Pi 5 PMIC (`vcgencmd pmic_read_adc`), "
             "no hwmon power*_input")

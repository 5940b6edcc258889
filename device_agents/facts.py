"""Device facts: what the device is right now (abi, cores, cpufreq, governors, temperatures, load), typed.

`remote/describe.sh` prints `key=value` lines (keyvalues.py nests them); `DeviceFacts` is that
output parsed once into frozen records, read by field everywhere on the host (the ABI check,
`cpus: big`, calibration, thermal gating, `etfarm devices`, the reports). Its JSON form, in the
manifest, device.json, device_state.json and the results store, is describe.sh's own nesting
(`cpus.cpu0.cur_khz` is `{"cpus": {"cpu0": {"cur_khz": ...}}}`), keys sorted as the manifest
writes them (`etfarm devices --json`: in describe.sh's order): the same JSON etfarm always wrote,
so every old manifest and store reads.

A device's readings are not trusted, so each field holds a `Reading` as the device gave it: a
finite number, else its text (`nan`, a huge number, garbage stay text); readers check the type
they need. What this etfarm does not read (another version's facts, a device's oddities) is kept
in `other` and written back as it came.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from typing import TYPE_CHECKING, Any

from device_agents.emulated import emulated_facts
from device_agents.keyvalues import KeyPath, leaves, nest, parse_key_values, sorted_keys
from orchestrator.base.errors import CommandFailed

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent

Reading = int | float | str  # one fact as the device reported it: a finite number, else its text


def describe(agent: DeviceAgent) -> DeviceFacts:
    """Run describe.sh on the device (through its persistent shell where it has one) and parse it."""
    script = resources.files("device_agents").joinpath("remote/describe.sh").read_text()
    result = agent.run(["sh", "-c", script], persistent=True)
    if not result.ok:
        raise CommandFailed(agent.spec.name, "describe.sh", result.exit_code, result.tail(), result.timed_out)
    facts = DeviceFacts.parse(result.stdout)
    # describe.sh ran on the emulating host: the device's machine is read through qemu
    return emulated_facts(agent, facts) if agent.spec.emulated else facts


def shown(reading: Reading | None, missing: str = "-") -> str:
    """A reading as people read it; `missing` when the device did not report it."""
    return missing if reading is None else str(reading)


# ---- the records: each field says where describe.sh puts it (its key path below the record) -------------


def _at(*path: str) -> Any:
    """A reading at `path` below its record; None when the device did not report it."""
    return field(default=None, metadata={"path": path})


def _each(record: type, *path: str) -> Any:
    """Records of one kind under `path`, one per key there (cpus.cpu0, cpus.cpu1, ...), in the device's order."""
    return field(default=(), metadata={"path": path, "each": record})


def _one(record: type, *path: str) -> Any:
    """One record under `path` (android.*), None when the device reported none of it."""
    return field(default=None, metadata={"path": path, "one": record})


@dataclass(frozen=True)
class CpuFacts:
    """One cpu (`cpus.cpuN`): its clocks and governor (cpufreq), its capacity (`cpu_capacity`)."""

    name: str  # cpuN
    cur_khz: Reading | None = _at("cur_khz")
    max_khz: Reading | None = _at("max_khz")
    min_khz: Reading | None = _at("min_khz")
    governor: Reading | None = _at("governor")
    capacity: Reading | None = _at("capacity")

    @property
    def number(self) -> int | None:
        """N of cpuN, None for another name."""
        digits = self.name.removeprefix("cpu")
        return int(digits) if self.name.startswith("cpu") and digits.isdigit() else None


@dataclass(frozen=True)
class ClusterFacts:
    """One cpufreq policy (`clusters.cpuN`, named by its first cpu): its cpus (taskset's list), cores, fastest
    clock, governor and capacity."""

    name: str
    cpus: Reading | None = _at("cpus")  # "4-7", "0,2", or one cpu (a number)
    cores: Reading | None = _at("cores")
    max_khz: Reading | None = _at("max_khz")
    governor: Reading | None = _at("governor")
    capacity: Reading | None = _at("capacity")


@dataclass(frozen=True)
class ThermalZone:
    """One thermal zone (`thermal.<zone>=<type>:<reading>`): the kernel reports millidegrees."""

    name: str
    value: Reading | None = _at()

    @property
    def kind(self) -> str:
        """The zone's type ("" when the value names none)."""
        return str(self.value).rpartition(":")[0]

    @property
    def reading(self) -> float | None:
        """The number the kernel reported, None when it is not a finite one (`nan` is a device's garbage)."""
        try:
            number = float(str(self.value).rpartition(":")[2])
        except ValueError:
            return None
        return number if math.isfinite(number) else None


@dataclass(frozen=True)
class PowerSupply:
    """A battery the kernel reports (`battery.<supply>`: /sys/class/power_supply)."""

    name: str
    level: Reading | None = _at("level")
    status: Reading | None = _at("status")


@dataclass(frozen=True)
class AndroidFacts:
    """Android's own answers (`android.*`): thermal verdict and temperatures (dumpsys thermalservice, battery),
    battery, and what the device is (getprop). Fields in describe.sh's order."""

    thermal_status: Reading | None = _at("thermal_status")  # 0 none .. 6 shutdown
    skin_c: Reading | None = _at("temp", "skin_c")
    battery_level: Reading | None = _at("battery", "level")
    battery_status: Reading | None = _at("battery", "status")  # charging | discharging | not charging | full
    battery_c: Reading | None = _at("temp", "battery_c")
    plugged: Reading | None = _at("battery", "plugged")  # usb | ac | wireless | dock | none
    model: Reading | None = _at("product", "model")
    manufacturer: Reading | None = _at("product", "manufacturer")
    release: Reading | None = _at("build", "version", "release")
    sdk: Reading | None = _at("build", "version", "sdk")
    abi: Reading | None = _at("product", "cpu", "abi")  # ro.product.cpu.abi
    soc_model: Reading | None = _at("soc", "model")
    soc_manufacturer: Reading | None = _at("soc", "manufacturer")


@dataclass(frozen=True)
class RunnerFacts:
    """How the runner started on the device (`facts.runner`: artifacts/runner_info.py `RuntimeInfo.facts`),
    recorded by the host, not the device. A field is None when the record did not hold it as its type (an
    older etfarm's, a device's word): what no field reads is `other`, written back as it came."""

    runtime: str | None = None  # wheel | bundled-glibc | ndk | user
    executorch_dir: str | None = None  # the executorch_DIR the runner was built against
    launcher: tuple[str, ...] | None = None  # argv words that start the runner, before it
    bundled: tuple[str, ...] | None = None  # glibc files in lib/ (bundled-glibc)
    backends: tuple[str, ...] | None = None  # what the runner registers
    other: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunnerFacts:
        values: dict[str, Any] = {}
        for f in fields(cls)[:-1]:
            value = data.get(f.name)
            if f.name in ("runtime", "executorch_dir"):
                if isinstance(value, str):
                    values[f.name] = value
            elif isinstance(value, list) and all(isinstance(word, str) for word in value):
                values[f.name] = tuple(value)
        return cls(**values, other={key: value for key, value in data.items() if key not in values})

    def to_json(self) -> dict[str, Any]:
        """In `RuntimeInfo.facts`' order, then what no field reads."""
        out = {f.name: list(v) if isinstance(v, tuple) else v
               for f in fields(self)[:-1] if (v := getattr(self, f.name)) is not None}
        return {**out, **self.other}


@dataclass(frozen=True)
class DeviceFacts:
    """What describe.sh reported (fields in its order), the runner's runtime once a run recorded it, and
    what this etfarm does not read. Falsy when empty, as no facts at all."""

    os: Reading | None = _at("os")
    kernel: Reading | None = _at("kernel")
    abi: Reading | None = _at("abi")  # uname -m
    cpus: tuple[CpuFacts, ...] = _each(CpuFacts, "cpus")
    cores: Reading | None = _at("cores")  # cpus online
    loadavg: Reading | None = _at("loadavg")  # "0.1 0.2 0.3"
    mem_total_kb: Reading | None = _at("mem_total_kb")
    mem_available_kb: Reading | None = _at("mem_available_kb")
    thermal: tuple[ThermalZone, ...] = _each(ThermalZone, "thermal")
    batteries: tuple[PowerSupply, ...] = _each(PowerSupply, "battery")
    clusters: tuple[ClusterFacts, ...] = _each(ClusterFacts, "clusters")
    android: AndroidFacts | None = _one(AndroidFacts, "android")
    # How the runner started there (artifacts/runner_info.py RuntimeInfo.facts): recorded by the host, not
    # the device, beside the facts of the model's first run (`facts.runner` in the manifest).
    runner: RunnerFacts | None = None
    other: tuple[tuple[KeyPath, Any], ...] = ()  # (key path, value) of what no field reads, as it came

    @classmethod
    def parse(cls, text: str) -> DeviceFacts:
        """describe.sh's output."""
        return cls.from_json(parse_key_values(text))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeviceFacts:
        """The JSON form (see the module docstring); never raises for a mapping: what no field reads is `other`."""
        runner = data.get("runner")
        recorded = isinstance(runner, Mapping) and bool(runner)  # else, as any key no field reads: `other`
        values, other = _read(cls, list(leaves({k: v for k, v in data.items() if k != "runner" or not recorded})))
        return cls(**values, runner=RunnerFacts.from_json(runner) if recorded else None,  # type: ignore[arg-type]
                   other=tuple(other))

    def to_json(self, sort_keys: bool = True) -> dict[str, Any]:
        """The JSON form: describe.sh's nesting, keys sorted as the manifest and the store hold them; unsorted,
        in describe.sh's own order (what no field reads last), as `etfarm devices --json` prints them."""
        runner = [(("runner",), self.runner.to_json())] if self.runner is not None else []
        nested = nest([*_pairs(self), *runner, *self.other])
        return sorted_keys(nested) if sort_keys else nested

    def with_runner(self, runner: RunnerFacts) -> DeviceFacts:
        return replace(self, runner=runner)

    def __bool__(self) -> bool:
        return bool(self.runner is not None or self.other or next(_pairs(self), None))


# ---- reading and writing by the fields' key paths -------------------------------------------------------


def _pairs(record: Any, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """(key path, reading) of every fact a record holds, in field order."""
    for f in fields(record):
        path, value = f.metadata.get("path"), getattr(record, f.name)
        if path is None or value is None:
            continue
        if "each" in f.metadata:
            for item in value:
                yield from _pairs(item, (*prefix, *path, item.name))
        elif "one" in f.metadata:
            yield from _pairs(value, (*prefix, *path))
        else:
            yield (*prefix, *path), value


def _read(cls: type, found: list[tuple[KeyPath, Any]]) -> tuple[dict[str, Any], list[tuple[KeyPath, Any]]]:
    """The field values of `cls` from (key path, value) pairs below it, and the pairs no field takes."""
    values: dict[str, Any] = {}
    other: list[tuple[KeyPath, Any]] = []
    below: dict[str, list[tuple[KeyPath, Any]]] = {}  # the pairs under each record field
    plain = {f.metadata["path"]: f.name for f in fields(cls) if "path" in f.metadata and not _holds_records(f)}
    records = [f for f in fields(cls) if _holds_records(f)]
    for path, value in found:
        owner = next((f for f in records if _under(path, f.metadata["path"])), None)
        if owner is not None:
            below.setdefault(owner.name, []).append((path[len(owner.metadata["path"]):], value))
        elif path in plain and _is_reading(value):
            values[plain[path]] = value
        else:
            other.append((path, value))
    for f in records:
        pairs = below.get(f.name, [])
        if "one" in f.metadata:
            values[f.name], left = _record(f.metadata["one"], pairs)
        else:
            values[f.name], left = _records(f.metadata["each"], pairs)
        other += [((*f.metadata["path"], *path), value) for path, value in left]
    return values, other


def _record(cls: type, pairs: list[tuple[KeyPath, Any]], **given: Any) -> tuple[Any, list[tuple[KeyPath, Any]]]:
    """One record from its pairs, None (and every pair left) when no field takes one."""
    taken, left = _read(cls, pairs)
    return (cls(**given, **taken), left) if taken else (None, pairs)


def _records(cls: type, pairs: list[tuple[KeyPath, Any]]) -> tuple[tuple[Any, ...], list[tuple[KeyPath, Any]]]:
    """One record per name (the first key of each pair), in the order the names come."""
    items, left = [], []
    for name in dict.fromkeys(path[0] for path, _ in pairs):
        item, rest = _record(cls, [(path[1:], value) for path, value in pairs if path[0] == name], name=name)
        items += [item] if item is not None else []
        left += [((name, *path), value) for path, value in rest]
    return tuple(items), left


def _holds_records(f: Any) -> bool:
    return "each" in f.metadata or "one" in f.metadata


def _under(path: KeyPath, base: KeyPath) -> bool:
    """Whether `path` lies below `base` (a record's key, then its own)."""
    return len(path) > len(base) and path[:len(base)] == base


def _is_reading(value: Any) -> bool:
    return isinstance(value, (int, float, str)) and not isinstance(value, bool)

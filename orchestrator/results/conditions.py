"""Device conditions that make numbers trustworthy: cool-down and thermal gating before runs, and the
device's state each process run records (`DeviceState`: device_state.json, `runs[].device_state`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from device_agents.facts import DeviceFacts
from device_agents.keyvalues import sorted_keys

COOLDOWN_POLL_SEC = 2.0
COOLDOWN_MAX_WAIT_SEC = 300.0


@dataclass(frozen=True)
class Gate:
    """Thermal gating before a run (`--max-temp`): the temperature read last, and whether it was still over."""

    temperature_c: float | None  # None: the device reports no temperature
    too_hot: bool


@dataclass(frozen=True)
class CoolDown:
    """How long a run waited before it started (`--cooldown`, `--max-temp`), and the gate when there was one."""

    waited_s: float = 0.0
    gate: Gate | None = None


@dataclass(frozen=True)
class DeviceState:
    """What the device was just before a process run: its facts (describe.sh, the dynamic ones after a model's
    first run), the wait before it and the thermal gate. The JSON form is what etfarm always wrote
    (`{"facts": ..., "cooldown_waited_s": s, "max_temp_c": t, "too_hot": b}`, keys sorted; the last two only
    when gated); keys this etfarm does not read are kept in `other`."""

    facts: DeviceFacts | None = None
    cooldown_waited_s: float | None = None
    gate: Gate | None = None
    other: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, facts: DeviceFacts, cooldown: CoolDown) -> DeviceState:
        return cls(facts, cooldown.waited_s, cooldown.gate)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DeviceState:
        facts, waited = data.get("facts"), data.get("cooldown_waited_s")
        temperature, too_hot = data.get("max_temp_c"), data.get("too_hot")
        read = {"facts": isinstance(facts, Mapping), "cooldown_waited_s": _is_number(waited)}
        read["max_temp_c"] = read["too_hot"] = ("max_temp_c" in data and isinstance(too_hot, bool)
                                                and (temperature is None or _is_number(temperature)))
        return cls(DeviceFacts.from_json(facts) if read["facts"] else None,  # type: ignore[arg-type]
                   waited if read["cooldown_waited_s"] else None,
                   Gate(temperature, too_hot) if read["too_hot"] else None,  # type: ignore[arg-type]
                   {key: value for key, value in data.items() if not read.get(key)})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.other)
        if self.facts is not None:
            out["facts"] = self.facts.to_json()
        if self.cooldown_waited_s is not None:
            out["cooldown_waited_s"] = self.cooldown_waited_s
        if self.gate is not None:
            out.update(max_temp_c=self.gate.temperature_c, too_hot=self.gate.too_hot)
        return sorted_keys(out)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def max_temperature_c(facts: DeviceFacts) -> float | None:
    """The device's temperature in °C from describe.sh facts: on Android its skin temperature as the platform
    reports it (`android.temp.skin_c`, dumpsys thermalservice: what Android's own thermal throttling watches),
    else the hottest thermal zone (`thermal.<zone>=<type>:<millidegrees>`)."""
    skin = facts.android.skin_c if facts.android is not None else None
    if isinstance(skin, (int, float)):
        return float(skin)
    readings = [z.reading for z in facts.thermal if z.reading is not None]
    temps = [r / 1000.0 if r > 1000 else r for r in readings]  # most kernels report m°C
    return max(temps) if temps else None


def cool_down(describe: Callable[[], DeviceFacts], *, pause_s: float, max_temp_c: float | None,
              say: Callable[[str], None], max_wait_s: float = COOLDOWN_MAX_WAIT_SEC,
              sleep: Callable[[float], None] = time.sleep) -> CoolDown:
    """Pause, then wait until the device is below max_temp_c (bounded): how long it waited, and the gate."""
    if pause_s > 0:
        sleep(pause_s)
    facts = describe()
    if max_temp_c is None:
        return CoolDown(pause_s)
    waited = 0.0
    temperature = max_temperature_c(facts)
    announced = False
    while temperature is not None and temperature > max_temp_c and waited < max_wait_s:
        if not announced:
            say(f"cooling down: {temperature:.1f} °C > {max_temp_c:.1f} °C")
            announced = True
        sleep(COOLDOWN_POLL_SEC)
        waited += COOLDOWN_POLL_SEC
        temperature = max_temperature_c(describe())
    too_hot = temperature is not None and temperature > max_temp_c
    if too_hot:
        say(f"still {temperature:.1f} °C after {waited:.0f}s; running anyway (recorded)")
    return CoolDown(pause_s + waited, Gate(temperature, too_hot))

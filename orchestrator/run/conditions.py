"""Device conditions that make numbers trustworthy: cool-down and thermal gating before runs."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

COOLDOWN_POLL_SEC = 2.0
COOLDOWN_MAX_WAIT_SEC = 300.0


def max_temperature_c(facts: dict[str, Any]) -> float | None:
    """The device's temperature in °C from describe.sh facts: on Android its skin temperature as the platform
    reports it (`android.temp.skin_c`, dumpsys thermalservice: what Android's own thermal throttling watches),
    else the hottest thermal zone (`thermal.<zone>=<type>:<millidegrees>`)."""
    android = facts.get("android")
    skin = android.get("temp", {}).get("skin_c") if isinstance(android, dict) and isinstance(android.get("temp"), dict) else None
    if isinstance(skin, (int, float)) and not isinstance(skin, bool):
        return float(skin)
    temps = []
    for value in (facts.get("thermal") or {}).values():
        _, _, raw = str(value).rpartition(":")
        try:
            reading = float(raw)
        except ValueError:
            continue
        temps.append(reading / 1000.0 if reading > 1000 else reading)  # most kernels report m°C
    return max(temps) if temps else None


def cool_down(describe: Callable[[], dict[str, Any]], *, pause_s: float, max_temp_c: float | None,
              say: Callable[[str], None], max_wait_s: float = COOLDOWN_MAX_WAIT_SEC,
              sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Pause, then wait until the device is below max_temp_c (bounded). Returns the facts read last."""
    if pause_s > 0:
        sleep(pause_s)
    facts = describe()
    if max_temp_c is None:
        return {"facts": facts, "cooldown_waited_s": pause_s}
    waited = 0.0
    temperature = max_temperature_c(facts)
    announced = False
    while temperature is not None and temperature > max_temp_c and waited < max_wait_s:
        if not announced:
            say(f"cooling down: {temperature:.1f} °C > {max_temp_c:.1f} °C")
            announced = True
        sleep(COOLDOWN_POLL_SEC)
        waited += COOLDOWN_POLL_SEC
        facts = describe()
        temperature = max_temperature_c(facts)
    too_hot = temperature is not None and temperature > max_temp_c
    if too_hot:
        say(f"still {temperature:.1f} °C after {waited:.0f}s; running anyway (recorded)")
    return {"facts": facts, "cooldown_waited_s": pause_s + waited, "max_temp_c": temperature, "too_hot": too_hot}

"""The report's device facts: what each device was (ABI, cores, clocks, governors, temperatures), computed here.

From the device's facts (describe() at the job's first process run) and the state every process
run recorded just before it ran (frequencies, thermal zones); the renderers only format them.
"""

from __future__ import annotations

from device_agents.facts import AndroidFacts, shown
from device_agents.facts import DeviceFacts as Described
from orchestrator.report.model import DeviceFacts
from orchestrator.results.model import DeviceResult


def device_facts(device: DeviceResult) -> DeviceFacts:
    """What the device was during the job: from its facts at the first run and every run's device state."""
    facts = device.facts
    states = [r.device_state.facts for m in device.models for r in m.runs]
    readings = [s for s in states if s is not None] or [facts]
    max_mhz = sorted({int(c.max_khz) // 1000 for c in facts.cpus if isinstance(c.max_khz, (int, float))})
    cur = [int(c.cur_khz) // 1000 for s in readings for c in s.cpus if isinstance(c.cur_khz, int)]
    frequencies = "-"
    if max_mhz:
        frequencies = f"max {'/'.join(map(str, max_mhz))} MHz" + (f", seen {min(cur)}-{max(cur)} MHz" if cur else "")
    governors = sorted({str(c.governor) for c in [*facts.cpus, *facts.clusters] if c.governor is not None})
    abi = facts.android.abi if facts.android is not None else None
    cores = shown(facts.cores) + (f" ({'+'.join(shown(c.cores, '?') for c in facts.clusters)})"
                                  if len(facts.clusters) > 1 else "")
    return DeviceFacts(
        device=device.name,
        transport=device.transport,
        target=device.target,
        status=device.status.value,
        abi=f"{abi} ({shown(facts.abi)})" if abi else shown(facts.abi),
        cores=cores,
        frequencies=frequencies,
        governor=", ".join(governors) or "-",
        temperatures=_temperatures(readings),
        load=shown(facts.loadavg),
        kernel=shown(facts.kernel),
        product=_product(facts),
        error=device.error,
    )


def _product(facts: Described) -> str:
    """Android's model, SoC and version, the battery at the job's start, and the runner's runtime (or "-")."""
    android = facts.android or AndroidFacts()
    parts = [" ".join(str(name) for name in (android.manufacturer, android.model) if name is not None)
             + (f" ({android.soc_model})" if android.soc_model else "")]
    if android.release:
        parts.append(f"Android {android.release}" + (f" (SDK {android.sdk})" if android.sdk else ""))
    battery = (android.battery_level, android.battery_status, android.plugged)
    if any(value is not None for value in battery):
        level, status, plugged = battery
        parts.append(f"battery {shown(level, '?')} % {shown(status, '?')}"
                     + (f" ({plugged})" if plugged and plugged != "none" else ""))
    if facts.runner is not None and facts.runner.runtime:
        parts.append(f"{facts.runner.runtime} runtime")
    return ", ".join(p for p in parts if p.strip()) or "-"


def _temperatures(states: list[Described]) -> str:
    """Android's skin and battery temperatures, then per thermal zone type, the range over the job start and every
    run: "skin 32-33 °C, battery 29 °C, cpu 41-47 °C"."""
    seen: dict[str, list[float]] = {}
    android: dict[str, list[float]] = {}
    for state in states:
        temps = (("skin", state.android.skin_c), ("battery", state.android.battery_c)) if state.android else ()
        for kind, value in temps:
            if isinstance(value, (int, float)):
                android.setdefault(kind, []).append(float(value))
        for zone in state.thermal:
            if zone.reading is not None:
                seen.setdefault(zone.kind or "zone", []).append(zone.reading / 1000.0)
    if not seen and not android:
        return "-"
    parts = []
    for kind, temps in [*sorted(android.items(), reverse=True), *sorted(seen.items(), key=lambda kv: -max(kv[1]))[:3]]:
        lo, hi = min(temps), max(temps)
        parts.append(f"{kind} {lo:.0f}" + (f"-{hi:.0f}" if round(hi) != round(lo) else "") + " °C")
    return ", ".join(parts) + f" over {len(states)} reading{'s' if len(states) != 1 else ''}"

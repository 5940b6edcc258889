"""The report's device facts: what each device was (ABI, cores, clocks, governors, temperatures), computed here.

From the device's facts (describe() at the job's first process run) and the state every process
run recorded just before it ran (frequencies, thermal zones); the renderers only format them.
"""

from __future__ import annotations

from orchestrator.report.model import DeviceFacts
from orchestrator.run.results import DeviceResult


def device_facts(device: DeviceResult) -> DeviceFacts:
    """What the device was during the job: from its facts at the first run and every run's device state."""
    facts = dict(device.facts)
    states = [r.device_state.get("facts") for m in device.models for r in m.runs]
    states = [s for s in states if isinstance(s, dict)] or [facts]
    cpus = facts.get("cpus") if isinstance(facts.get("cpus"), dict) else {}
    max_mhz = sorted({int(c["max_khz"]) // 1000 for c in cpus.values() if isinstance(c, dict) and "max_khz" in c})
    cur = [
        int(c["cur_khz"]) // 1000
        for s in states
        for c in (s.get("cpus") or {}).values()
        if isinstance(c, dict) and isinstance(c.get("cur_khz"), int)
    ]
    frequencies = "-"
    if max_mhz:
        frequencies = f"max {'/'.join(map(str, max_mhz))} MHz" + (f", seen {min(cur)}-{max(cur)} MHz" if cur else "")
    clusters = [c for c in (facts.get("clusters") or {}).values() if isinstance(c, dict)]
    governors = sorted({str(c["governor"]) for c in [*cpus.values(), *clusters] if isinstance(c, dict) and "governor" in c})
    android = facts.get("android") if isinstance(facts.get("android"), dict) else {}
    abi = (android.get("product") or {}).get("cpu", {}).get("abi") if isinstance(android.get("product"), dict) else None
    cores = str(facts.get("cores", "-")) + (f" ({'+'.join(str(c.get('cores', '?')) for c in clusters)})"
                                            if len(clusters) > 1 else "")
    return DeviceFacts(
        device=device.name,
        transport=device.transport,
        target=device.target,
        status=device.status.value,
        abi=f"{abi} ({facts.get('abi', '-')})" if abi else str(facts.get("abi", "-")),
        cores=cores,
        frequencies=frequencies,
        governor=", ".join(governors) or "-",
        temperatures=_temperatures(states),
        load=str(facts.get("loadavg", "-")),
        kernel=str(facts.get("kernel", "-")),
        product=_product(facts),
        error=device.error,
    )


def _product(facts: dict) -> str:
    """Android's model, SoC and version, the battery at the job's start, and the runner's runtime (or "-")."""
    android = facts.get("android") if isinstance(facts.get("android"), dict) else {}
    names = android.get("product") if isinstance(android.get("product"), dict) else {}  # describe.sh: android.product.*
    soc = android.get("soc") if isinstance(android.get("soc"), dict) else {}
    version = android.get("build", {}).get("version", {}) if isinstance(android.get("build"), dict) else {}
    parts = [" ".join(str(names[k]) for k in ("manufacturer", "model") if k in names)
             + (f" ({soc['model']})" if soc.get("model") else "")]
    if version.get("release"):
        parts.append(f"Android {version['release']}" + (f" (SDK {version['sdk']})" if version.get("sdk") else ""))
    battery = android.get("battery") if isinstance(android.get("battery"), dict) else {}
    if battery:
        plugged = battery.get("plugged")
        parts.append(f"battery {battery.get('level', '?')} % {battery.get('status', '?')}"
                     + (f" ({plugged})" if plugged and plugged != "none" else ""))
    runner = facts.get("runner") if isinstance(facts.get("runner"), dict) else {}
    if runner.get("runtime"):
        parts.append(f"{runner['runtime']} runtime")
    return ", ".join(p for p in parts if p.strip()) or "-"


def _temperatures(states: list[dict]) -> str:
    """Android's skin and battery temperatures, then per thermal zone type, the range over the job start and every
    run: "skin 32-33 °C, battery 29 °C, cpu 41-47 °C"."""
    seen: dict[str, list[float]] = {}
    android: dict[str, list[float]] = {}
    for state in states:
        temp = state.get("android", {}).get("temp") if isinstance(state.get("android"), dict) else None
        for key, value in (temp.items() if isinstance(temp, dict) else ()):
            if isinstance(value, (int, float)):
                android.setdefault(key.removesuffix("_c"), []).append(float(value))
        zones = state.get("thermal")
        if not isinstance(zones, dict):
            continue
        for value in zones.values():
            kind, _, milli = str(value).rpartition(":")
            try:
                seen.setdefault(kind or "zone", []).append(float(milli) / 1000.0)
            except ValueError:
                continue
    if not seen and not android:
        return "-"
    parts = []
    for kind, temps in [*sorted(android.items(), reverse=True), *sorted(seen.items(), key=lambda kv: -max(kv[1]))[:3]]:
        lo, hi = min(temps), max(temps)
        parts.append(f"{kind} {lo:.0f}" + (f"-{hi:.0f}" if round(hi) != round(lo) else "") + " °C")
    return ", ".join(parts) + f" over {len(states)} reading{'s' if len(states) != 1 else ''}"

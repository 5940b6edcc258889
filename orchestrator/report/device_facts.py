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
    governors = sorted({str(c["governor"]) for c in cpus.values() if isinstance(c, dict) and "governor" in c})
    android = facts.get("android") if isinstance(facts.get("android"), dict) else {}
    names = android.get("product") if isinstance(android.get("product"), dict) else {}  # describe.sh: android.product.*
    release = android.get("build", {}).get("version", {}).get("release") if isinstance(android.get("build"), dict) else None
    product = " ".join(str(names[k]) for k in ("manufacturer", "model") if k in names)
    product = (product + (f", Android {release}" if release else "")).strip() or "-"
    return DeviceFacts(
        device=device.name,
        transport=device.transport,
        target=device.target,
        status=device.status.value,
        abi=str(facts.get("abi", "-")),
        cores=str(facts.get("cores", "-")),
        frequencies=frequencies,
        governor=", ".join(governors) or "-",
        temperatures=_temperatures(states),
        load=str(facts.get("loadavg", "-")),
        kernel=str(facts.get("kernel", "-")),
        product=product,
        error=device.error,
    )


def _temperatures(states: list[dict]) -> str:
    """Per thermal zone type, the range over the job start and every run: "cpu 41-47 °C"."""
    seen: dict[str, list[float]] = {}
    for state in states:
        zones = state.get("thermal")
        if not isinstance(zones, dict):
            continue
        for value in zones.values():
            kind, _, milli = str(value).rpartition(":")
            try:
                seen.setdefault(kind or "zone", []).append(float(milli) / 1000.0)
            except ValueError:
                continue
    if not seen:
        return "-"
    parts = []
    for kind, temps in sorted(seen.items(), key=lambda kv: -max(kv[1]))[:3]:
        lo, hi = min(temps), max(temps)
        parts.append(f"{kind} {lo:.0f}" + (f"-{hi:.0f}" if round(hi) != round(lo) else "") + " °C")
    return ", ".join(parts) + f" over {len(states)} reading{'s' if len(states) != 1 else ''}"

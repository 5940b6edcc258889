"""Write device inventories for testbed devices, as a user's devices.yaml would list them."""

from __future__ import annotations

from pathlib import Path

import yaml

from device_agents import DeviceSpec


def write_inventory(path: Path, specs: list[DeviceSpec]) -> Path:
    devices = {}
    for spec in specs:
        entry = {"transport": spec.transport, "target": spec.target, "workdir": spec.workdir, **dict(spec.settings)}
        if spec.exec_prefix:
            entry["exec_prefix"] = list(spec.exec_prefix)
        devices[spec.name] = {k: (str(v) if isinstance(v, Path) else v) for k, v in entry.items()}
    path.write_text(yaml.safe_dump({"devices": devices}))
    return path


def with_workdir(spec: DeviceSpec, workdir: Path) -> DeviceSpec:
    return DeviceSpec(spec.name, spec.transport, spec.target, str(workdir), spec.exec_prefix, spec.settings, spec.source)

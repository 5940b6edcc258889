"""Write device inventories for testbed devices, as a user's devices.yaml would list them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import yaml

from device_agents import DeviceSpec


def write_inventory(path: Path, specs: list[DeviceSpec]) -> Path:
    devices = {spec.name: spec.inventory_entry() for spec in specs}
    path.write_text(yaml.safe_dump({"devices": devices}))
    return path


def with_workdir(spec: DeviceSpec, workdir: Path) -> DeviceSpec:
    return replace(spec, workdir=str(workdir))

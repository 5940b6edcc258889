"""`etfarm farm status`: the scheduler's view of the farm, as typed rows for the CLI to print.

Per worker: its name and address, each `dev-<name>` resource (1 online, 0 offline) and the
etfarm tasks it is processing now (task keys `etfarm-<run id>-<device>-<model>`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.farm import RESOURCE_PREFIX


@dataclass(frozen=True)
class WorkerRow:
    address: str
    name: str
    devices: dict[str, bool]  # name -> online
    running: tuple[str, ...]  # task keys in processing on this worker


def farm_status(client: Any) -> list[WorkerRow]:
    info = client.scheduler_info(n_workers=-1)["workers"]
    processing = client.processing()
    rows = []
    for address, worker in sorted(info.items()):
        devices = {r[len(RESOURCE_PREFIX):]: v > 0 for r, v in sorted((worker.get("resources") or {}).items())
                   if r.startswith(RESOURCE_PREFIX)}
        running = tuple(sorted(str(k) for k in processing.get(address, ())))
        rows.append(WorkerRow(address, str(worker.get("name", address)), devices, running))
    return rows


def status_lines(rows: list[WorkerRow], scheduler: str) -> list[str]:
    if not rows:
        return [f"{scheduler}: no workers"]
    lines = [f"{scheduler}: {len(rows)} worker(s)"]
    for row in rows:
        devices = ", ".join(f"{n} ({'online' if up else 'offline'})" for n, up in row.devices.items()) or "no devices"
        lines.append(f"{row.name} {row.address}: {devices}")
        lines.extend(f"  running {key}" for key in row.running)
    return lines

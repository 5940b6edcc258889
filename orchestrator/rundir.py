"""The run directory contract (DESIGN.md §3): where every artifact of a job lands.

    DIR/manifest.json                          run id, config, versions, per-device status + error
    DIR/stats.csv                              per-event statistics, all devices and models
    DIR/<device>/<model>/device.json           what the device was
    DIR/<device>/<model>/run-<k>/etdump.etdp   raw artifacts of process run k (+ outputs, log, result)
"""

from __future__ import annotations

import platform
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator import __version__
from orchestrator.cache import write_json_atomic

MANIFEST = "manifest.json"
STATS = "stats.csv"
DEVICE_JSON = "device.json"
DEFAULT_ROOT = Path("etfarm-runs")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)


@dataclass
class RunDirectory:
    root: Path
    run_id: str
    manifest: dict[str, Any] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def create(cls, out: Path | None, config: dict[str, Any]) -> RunDirectory:
        run_id = new_run_id()
        root = (out if out is not None else DEFAULT_ROOT / run_id).resolve()
        root.mkdir(parents=True, exist_ok=True)
        rundir = cls(root=root, run_id=run_id)
        rundir.manifest = {
            "run_id": run_id,
            "status": "running",
            "started": _now(),
            "finished": None,
            "config": config,
            "versions": _versions(),
            "host": {"hostname": platform.node(), "machine": platform.machine(), "python": sys.version.split()[0]},
            "models": {},
            "devices": {},
        }
        rundir.save()
        return rundir

    def model_dir(self, device: str, model: str) -> Path:
        path = self.root / device / model
        path.mkdir(parents=True, exist_ok=True)
        return path

    def run_dir(self, device: str, model: str, k: int) -> Path:
        path = self.model_dir(device, model) / f"run-{k}"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def update(self, *path: str, value: Any) -> None:
        """Set manifest[path...] = value and rewrite it atomically (thread-safe)."""
        with self._lock:
            node = self.manifest
            for key in path[:-1]:
                node = node.setdefault(key, {})
            node[path[-1]] = value
            write_json_atomic(self.root / MANIFEST, self.manifest)

    def save(self) -> None:
        with self._lock:
            write_json_atomic(self.root / MANIFEST, self.manifest)

    def finish(self, status: str) -> None:
        self.manifest["status"] = status
        self.manifest["finished"] = _now()
        self.save()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def _versions() -> dict[str, str]:
    from orchestrator.lowering import tool_versions

    return {"etfarm": __version__, **tool_versions()}

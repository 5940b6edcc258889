"""The host itself as a device: the embedded default, no hardware needed."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from device_agents.base import DeviceAgent, RawExecResult
from device_agents.keys import InventoryEntry
from device_agents.presence import AlwaysPresent, Presence
from device_agents.spec import TransportSettings
from orchestrator import procs
from orchestrator.cache import cache_dir
from orchestrator.errors import DeviceError


@dataclass(frozen=True)
class LocalSettings(TransportSettings):
    """`transport: local` has no keys of its own; its workdir defaults to the cache."""

    TRANSPORT: ClassVar[str] = "local"
    DEFAULT_TARGET: ClassVar[str | None] = "host"

    @classmethod
    def parse(cls, entry: InventoryEntry) -> LocalSettings:
        return cls()

    @property
    def address(self) -> str:
        return "this host"

    @property
    def presence(self) -> Presence:
        return AlwaysPresent()

    def default_workdir(self, device: str) -> str:
        return str(cache_dir("devices") / device)

    def workdir(self, given: str) -> str:
        return str(Path(given).expanduser())


class LocalAgent(DeviceAgent):
    def _connect(self, timeout_s: float) -> None:
        pass  # nothing to open; the workdir is made and checked by `check_workdir`, as on every transport

    def _exec_raw(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        result, out, err = procs.run_bytes(["sh", "-c", command], timeout_s=timeout_s)
        if len(out) > max_bytes:
            raise DeviceError(self.spec.name, f"command wrote {len(out)} bytes, over the {max_bytes}-byte cap")
        return RawExecResult(command, result.exit_code, out, err, result.duration_s, result.timed_out)

    def _push(self, local: Path, remote_path: str) -> None:
        shutil.copyfile(local, remote_path)

    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None:
        if Path(remote_path).stat().st_size > max_bytes:
            raise DeviceError(self.spec.name, f"{remote_path} is over the {max_bytes}-byte cap")
        shutil.copyfile(remote_path, local)

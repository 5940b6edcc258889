"""The host itself as a device: the embedded default, no hardware needed."""

from __future__ import annotations

import shutil
from pathlib import Path

from device_agents.base import DeviceAgent, RawExecResult
from orchestrator.base import procs
from orchestrator.base.errors import DeviceError


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

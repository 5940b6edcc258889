"""Synthetic run directories for the store's unit tests: a real manifest (results.Job) and real ETDump bytes."""

from __future__ import annotations

from pathlib import Path

from device_agents.facts import DeviceFacts
from orchestrator.base.cache import write_json_atomic
from orchestrator.base.errors import Blame
from orchestrator.results.conditions import DeviceState
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobOptions,
    JobStatus,
    ModelArtifacts,
    ModelResult,
    ModelStatus,
    ProcessRun,
    Verification,
    VerificationStatus,
)
from tests.helpers.etdumps import build_etdump, typical_runs


def make_run_dir(root: Path, run_id: str, started: str, devices: tuple[str, ...] = ("local", "rpi5"),
                 models: tuple[str, ...] = ("mlp",), runs: int = 2, iterations: int = 3, base: int = 1_000_000,
                 failed: tuple[str, ...] = (), commit: str | None = "abc123", layers: int = 2) -> Path:
    """A run directory of `devices` x `models`; a device in `failed` failed before running anything."""
    out = root / run_id
    device_results = []
    for d, device in enumerate(devices):
        if device in failed:
            device_results.append(DeviceResult(device, "ssh", "linux-aarch64", DeviceStatus.FAILED,
                                               error=f"[{device}] unreachable", blame=Blame.INFRASTRUCTURE))
            continue
        results = []
        for m, model in enumerate(models):
            process_runs = []
            for k in range(1, runs + 1):
                offset = base * (1 + d + m) + k * 1000
                label = f"run-{k}"
                path = out / device / model / label / "etdump.etdp"
                path.parent.mkdir(parents=True)
                path.write_bytes(build_etdump(typical_runs(iterations=iterations, layers=layers, base=offset)))
                process_runs.append(ProcessRun(label, True, tuple(0.1 * (d + 1) + 0.01 * i + 0.001 * k
                                                                  for i in range(iterations)),
                                               load_ms=1.5 + k, device_state=DeviceState.from_json({"temp_c": 40.0 + k, "governor": "perf"}),
                                               artifacts=(f"{device}/{model}/{label}/etdump.etdp",),
                                               runner={"threads": 4}))
            process_runs.append(ProcessRun("e2e-1", False, (0.09, 0.095), load_ms=2.0))
            results.append(ModelResult(model, ModelStatus.OK, tuple(process_runs),
                                       Verification(VerificationStatus.PASS, "max |diff| 0", 0.0, runs)))
        device_results.append(DeviceResult(device, "local", "host", DeviceStatus.OK, facts=DeviceFacts(abi="x86_64", cores=2),
                                           models=tuple(results), runner_key="runnerkey1"))
    status = JobStatus.PARTIAL if failed else JobStatus.OK
    job = Job(run_id=run_id, status=status, started=started, finished=started,
              config=JobConfig(devices=devices, models=tuple(f"{m}.py:build" for m in models), backend="xnnpack",
                               options=JobOptions(runs=runs, iterations=iterations)),
              versions={"etfarm": "0.1.0", "executorch": "1.5.1", "torch": "2.13.0"}, host={"hostname": "h"},
              models=tuple(ModelArtifacts(m, f"{m}.py:build", "xnnpack", f"key-{m}", f"/x/{m}.pte",
                                          content_hash=f"hash-{m}", git_commit=commit) for m in models),
              devices=tuple(device_results))
    write_json_atomic(out / "manifest.json", job.to_dict())
    return out

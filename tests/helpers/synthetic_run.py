"""A synthetic run directory (manifest.json + stats.csv) for report tests and the report benchmark.

Shaped like a real `etfarm run`: devices x models, traced process runs of seeded samples plus
one untraced run, per-run device state with temperatures, and per-event rows in stats.csv
(Method::execute, a DELEGATE_CALL and its delegated kernels, one portable op). Device k is
`speed[k]` times slower than device 0, so ratios are known in advance.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from device_agents.facts import DeviceFacts
from orchestrator.base.cache import write_json_atomic
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

STATS_HEADER = ["device", "model", "event_block", "event_index", "event_name", "samples", "min_ms", "p10_ms", "p50_ms",
                "p90_ms", "avg_ms", "max_ms", "std_ms", "cv", "trimmed_mean_ms", "is_delegated_op",
                "delegate_debug_identifier", "op_types", "delegate_backend_name", "module_path", "source_line",
                "delegate_covers"]
KERNELS = ("Convolution (NHWC, F32) IGEMM", "Fully Connected (NC, F32) GEMM", "Max Pooling (NHWC, F32)", "Add (ND)")


def make_run_dir(root: Path, devices: Sequence[str] = ("pixel8", "rpi5", "local"),
                 models: Sequence[str] = ("m0",), speed: Sequence[float] | None = None, runs: int = 5,
                 iterations: int = 20, kernels: int = 12, noise: float = 0.02, seed: int = 0,
                 failed: Sequence[str] = (), run_id: str = "20261122-000000-abcd",
                 started: str = "2026-11-22T00:00:00+0000", module: str = "head.softmax",
                 op: str = "native_call_softmax.out", emulated: Sequence[str] = ()) -> Path:
    """Write the run directory at `root`; devices named in `failed` have no results, those in `emulated` are
    emulations (`etfarm devices emulate`)."""
    rng = np.random.default_rng(seed)
    speed = speed or [1.0 + 0.5 * k for k in range(len(devices))]
    root.mkdir(parents=True, exist_ok=True)
    stats_rows = []
    device_results = []
    for k, device in enumerate(devices):
        facts = {"abi": "arm64-v8a" if k == 0 else "aarch64", "cores": 8, "kernel": "6.1", "loadavg": "0.1 0.2 0.3",
                 "cpus": {f"cpu{c}": {"cur_khz": 1800000, "max_khz": 2400000 if c > 3 else 1800000,
                                      "governor": "schedutil"} for c in range(8)},
                 "thermal": {"thermal_zone0": "cpu-thermal:41000"}}
        if device in failed:
            device_results.append(DeviceResult(device, "ssh", "linux-aarch64", DeviceStatus.FAILED,
                                               error="device unreachable", facts=DeviceFacts.from_json(facts)))
            continue
        results = []
        for j, model in enumerate(models):
            base = 1.0 + j
            level = base * speed[k]
            process_runs = []
            for r in range(runs + 1):
                traced = r < runs
                run_level = level * (1.0 + rng.normal(0, noise)) * (1.0 if traced else 0.95)
                samples = tuple(float(x) for x in run_level * (1.0 + np.abs(rng.normal(0, noise, iterations))))
                state = DeviceState(DeviceFacts.from_json({**facts, "thermal": {"thermal_zone0": f"cpu-thermal:{40000 + 1000 * r}"}}))
                process_runs.append(ProcessRun(label=f"run-{r + 1}" if traced else "e2e-1", traced=traced,
                                               execute_ms=samples, load_ms=2.0 * speed[k], device_state=state))
            results.append(ModelResult(model, ModelStatus.OK, tuple(process_runs),
                                       Verification(VerificationStatus.PASS, "match", 1e-7, runs)))
            stats_rows += _stats_rows(device, model, level, kernels, runs * iterations, np.random.default_rng(seed + j),
                                      module, op)
        device_results.append(DeviceResult(device, "ssh", "linux-aarch64", DeviceStatus.OK, facts=DeviceFacts.from_json(facts),
                                           models=tuple(results), emulated=device in emulated))
    options = JobOptions(runs=runs, iterations=iterations)
    artifacts = tuple(ModelArtifacts(m, f"{m}.py:build", "xnnpack", "key", f"/tmp/{m}.pte") for m in models)
    job = Job(run_id=run_id, status=JobStatus.PARTIAL if failed else JobStatus.OK,
              started=started, finished=started,
              config=JobConfig(tuple(devices), tuple(f"{m}.py:build" for m in models), "xnnpack", options),
              versions={"etfarm": "0.1", "executorch": "1.5.1"}, models=artifacts, devices=tuple(device_results))
    write_json_atomic(root / "manifest.json", job.to_dict())
    if stats_rows:
        with open(root / "stats.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(STATS_HEADER)
            writer.writerows(stats_rows)
    return root


def _stats_rows(device: str, model: str, level: float, kernels: int, samples: int,
                model_rng: np.random.Generator, module: str = "head.softmax",
                op: str = "native_call_softmax.out") -> list[list[object]]:
    weights = model_rng.dirichlet(np.ones(kernels)) * 0.9  # kernels take 90 % of the method's time, same split on every device
    rows: list[list[object]] = []

    def row(index: int, name: str, ms: float, delegated: bool, op_types: str = "", module: str = "",
            source: str = "") -> None:
        in_delegate = delegated or name == "DELEGATE_CALL"
        rows.append([device, model, "Execute", index, name, samples, ms * 0.9, ms * 0.95, ms, ms * 1.1, ms, ms * 1.3,
                     ms * 0.05, 0.05, ms, delegated, name if delegated else "", op_types,
                     "XnnpackBackend" if in_delegate else "", module, source,
                     "features.0;features.1;classifier" if in_delegate else ""])

    for i in range(kernels):
        row(i, f"{KERNELS[i % len(KERNELS)]} #{i // len(KERNELS) + 1}", level * weights[i], True)
    row(kernels, "DELEGATE_CALL", level * 0.9, False, "aten.convolution.default;aten.linear.default")
    row(kernels + 1, op, level * 0.05, False, "aten._softmax.default", module, "net.py:42")
    row(kernels + 2, "Method::execute", level, False)
    return rows

"""A results model with every field set (and the edge cases of reading), shared by the manifest golden test.

`rich_job()` sets every field of every class of results/model.py to a non-default value, so a field
written in the wrong place, under another key or in another order changes the golden JSON.
`READ_CASES` are manifest fragments the reader must keep accepting (keys missing, nulls, old files).
"""

from __future__ import annotations

from typing import Any

from device_agents.facts import DeviceFacts
from orchestrator.artifacts.recipes import RecipeInfo
from orchestrator.base.errors import Blame
from orchestrator.results.accuracy import Accuracy
from orchestrator.results.conditions import DeviceState
from orchestrator.results.contention import Contention
from orchestrator.results.model import (
    Attempt,
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobOptions,
    JobStatus,
    LeftOut,
    ModelArtifacts,
    ModelResult,
    ModelStatus,
    ProcessRun,
    RunFlag,
    Verification,
    VerificationStatus,
)
from orchestrator.run.schedule import RunOrder


def rich_job() -> Job:
    runs = (
        ProcessRun("run-1", True, (1.5, 2.25, 1.75), load_ms=5.0, program_load_ms=0.5, device_state=DeviceState.from_json({"temp": 41.0}),
                   artifacts=("d/m/run-1/etdump.etdp",), runner={"method": "forward", "warmup": 3}, cold=True,
                   peak_rss_load_kb=6000, peak_rss_kb=7000, planned_memory_bytes=1248, program_bytes=72616,
                   calibration_before_ms=15.0, calibration_after_ms=16.0, flag=RunFlag.INTERFERED, slowdown=0.25,
                   runner_ms=30.0, step_ms=80.0,
                   contention=Contention((0.01, 0.5, 0.02), cpu_ms=5.25, wall_ms=5.75, involuntary_switches=3, migrations=1,
                                         threads=2, read_ms=0.125), warmup_ms=(4.5, 1.75, 1.5)),
        ProcessRun("e2e-1", False, (1.0, 1.25)),
    )
    model = ModelResult("m", ModelStatus.PARTIAL, runs, Verification(VerificationStatus.FAIL, "max diff 0.5", 0.5, 2),
                        "runner crashed", Blame.INFRASTRUCTURE, Accuracy(41.5, 0.01, 0.999, 1.0, 1, 2))
    device = DeviceResult("d", "ssh", "linux-aarch64", DeviceStatus.WRONG_RESULTS, "wrong results", Blame.DATA,
                          facts=DeviceFacts(abi="aarch64", cores=4), models=(model, ModelResult("n", ModelStatus.FAILED)),
                          runner_key="rk", controls={"fixed_performance_mode": "on"},
                          attempts=(Attempt("connect", "refused", "2026-11-22T00:00:00Z", retried=True),))
    options = JobOptions(runs=3, iterations=7, warmup=2, run_timeout_s=60.0, wait_for_lock=False, lock_timeout_s=5.0,
                         intermediate_outputs=True, debug_buffer_size=0, numerics=True, cpu_threads=2, untraced_runs=2,
                         cooldown_s=1.5, max_temp_c=60.0, order=RunOrder.ABBA, seed=7, recipes=("fp32", "int8-static"))
    config = JobConfig(("d", "e"), ("m.py:build", "n.pte"), "portable", options, "devices.yaml", "tcp://h:8786")
    artifacts = ModelArtifacts("m", "m.py:build", "portable", "key", "m.pte", "m.etrecord", "in.etft", "ref.etft",
                               "sha", "abc123", "num.etft", RecipeInfo("int8-static", "int8-static", "xnnpack_int8", True, 1,
                                                                       "example inputs"), "eager.etft", "eager.npz")
    return Job("20261122-000000-abcd", JobStatus.PARTIAL, "2026-11-22T00:00:00Z", config, "2026-11-22T00:01:00Z",
               {"etfarm": "0.3"}, {"hostname": "h"}, (artifacts,), (device, DeviceResult("e", "local", "host")),
               (LeftOut("m-int8-dynamic", "m.py:build", "int8-dynamic", "the host's reference run of 'm.py:build' "
                        "with recipe int8-dynamic failed: [XNNExecutor.cpp:169] Internal Error (error 0x1)"),))


READ_CASES: dict[str, Any] = {
    "process_run_minimal": {"label": "run-1", "traced": True},
    "process_run_nulls": {"label": "run-1", "traced": 1, "execute_ms": [1, 2.5], "load_ms": None, "device_state": None,
                          "artifacts": None, "runner": None, "cold": 0, "peak_rss_kb": "12", "flag": None,
                          "slowdown": float("nan"), "runner_ms": float("inf"), "step_ms": 3},
    "device_minimal": {"status": "ok"},
    "model_minimal": {"status": "failed"},
    "verification_minimal": {"status": "skipped"},
    "attempt_empty": {},
    "config_empty": {},
    "config_flat": {"devices": ["a"], "models": ["m.py"], "backend": "xnnpack", "runs": 2, "order": "abba",
                    "unknown_key": 1},
    "artifacts_extra": {"name": "m", "spec": "m.py", "backend": "xnnpack", "key": "k", "pte": "m.pte", "future": 1},
}

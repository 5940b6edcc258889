"""results: the run loop's figures (memory, cold load, calibration flags) survive the manifest."""

from __future__ import annotations

from pathlib import Path

from orchestrator.base.cache import write_json_atomic
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    Job,
    JobConfig,
    JobStatus,
    ModelResult,
    ModelStatus,
    ProcessRun,
    RunFlag,
    load_manifest,
)


def test_process_run_figures_round_trip(tmp_path: Path) -> None:
    runs = (ProcessRun("run-1", True, (1.0,), load_ms=5.0, cold=True, peak_rss_load_kb=6000, peak_rss_kb=7000,
                       planned_memory_bytes=1248, program_bytes=72616, calibration_before_ms=15.0,
                       calibration_after_ms=16.0, slowdown=0.0, runner_ms=30.0, step_ms=80.0),
            ProcessRun("run-2", True, (1.0,), load_ms=2.0, peak_rss_kb=7100, flag=RunFlag.THROTTLED, slowdown=0.4))
    model = ModelResult("m", ModelStatus.OK, runs)
    job = Job("id", JobStatus.OK, "now", JobConfig(("d",), ("m.py",), "xnnpack"),
              devices=(DeviceResult("d", "adb", "host", DeviceStatus.OK, models=(model,),
                                    controls={"fixed_performance_mode": "on"}),))
    write_json_atomic(tmp_path / "manifest.json", job.to_dict())
    back = load_manifest(tmp_path)
    assert back == job
    got = back.device("d").model("m")  # type: ignore[union-attr]
    assert got.cold_load_ms == 5.0 and got.warm_load_ms == (2.0,)
    assert got.peak_rss_kb == 7100 and got.planned_memory_bytes == 1248 and got.program_bytes == 72616
    assert got.runs[0].host_overhead_ms == 50.0 and got.runs[0].calibration_ms == 16.0
    assert got.summary()["flagged_runs"] == {"run-2": "throttled +40%"}


def test_manifest_without_the_new_fields_still_loads() -> None:
    old = {"label": "run-1", "traced": True, "execute_ms": [1.0], "load_ms": 2.0}
    run = ProcessRun.from_dict(old)
    assert run.cold is False and run.peak_rss_kb is None and run.flag is None


def test_the_first_execution_in_a_process_is_the_p50_of_the_runs_first_warmups() -> None:
    """Since issue 37 the runner times its warmups; the first one is a fresh process's first call (caches cold,
    the threadpool's first wake-up): the job gives its p50 over process runs, and older runs without it none."""
    from orchestrator.report.terminal.summary import wall_clock_lines

    runs = (ProcessRun("run-1", True, (1.0, 1.1), warmup_ms=(3.0, 1.2)), ProcessRun("run-2", True, (1.0,), warmup_ms=(5.0,)),
            ProcessRun("e2e-1", False, (0.9,), warmup_ms=(4.0, 1.0)), ProcessRun("run-3", True, (1.0,)))
    model = ModelResult("m", ModelStatus.OK, runs)
    assert model.first_execution_ms == 4.0 and model.summary()["first_execution_ms_p50"] == 4.0
    assert ModelResult("m", ModelStatus.OK, (ProcessRun("run-1", True, (1.0,)),)).first_execution_ms is None
    job = Job("id", JobStatus.OK, "now", JobConfig(("d",), ("m.py",), "xnnpack"),
              devices=(DeviceResult("d", "adb", "host", DeviceStatus.OK, models=(model,)),))
    (line,) = wall_clock_lines(job)
    assert "first execution in a process p50 4.0000 ms" in line

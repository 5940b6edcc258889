"""run.calibration: throttling / interference flags from the runner's calibration workload."""

from __future__ import annotations

import pytest

from orchestrator.run.calibration import SLOWDOWN_THRESHOLD, flag_runs
from orchestrator.run.results import ProcessRun, RunFlag


def run(label: str, before: float | None, after: float | None, khz: int | None = None, thermal: int | None = None) -> ProcessRun:
    facts: dict = {}
    if khz is not None:
        facts["cpus"] = {"cpu0": {"cur_khz": khz}, "cpu1": {"cur_khz": khz}}
    if thermal is not None:
        facts["android"] = {"thermal_status": thermal}
    return ProcessRun(label, True, (1.0,), calibration_before_ms=before, calibration_after_ms=after,
                      device_state={"facts": facts})


def test_slower_than_the_reference_is_flagged_with_the_figure() -> None:
    flagged = flag_runs([run("run-1", 10.0, 10.2), run("run-2", 10.1, 10.4), run("run-3", 10.0, 19.0)])
    assert [r.flag for r in flagged] == [None, None, RunFlag.INTERFERED]
    assert flagged[0].slowdown == pytest.approx(0.02)  # its worse half against the job's best
    assert flagged[2].slowdown == pytest.approx(0.9)


def test_a_disturbed_first_run_cannot_hide_the_others() -> None:
    flagged = flag_runs([run("run-1", 20.0, 20.0), run("run-2", 10.0, 10.0), run("run-3", 10.0, 10.5)])
    assert [r.flag for r in flagged] == [RunFlag.INTERFERED, None, None]


def test_clock_drop_or_thermal_status_means_throttled() -> None:
    runs = [run("run-1", 10.0, 10.0, khz=2_000_000, thermal=0), run("run-2", 14.0, 14.0, khz=1_200_000, thermal=0),
            run("run-3", 14.0, 14.0, khz=2_000_000, thermal=2), run("run-4", 14.0, 14.0, khz=1_990_000, thermal=0)]
    assert [r.flag for r in flag_runs(runs)] == [None, RunFlag.THROTTLED, RunFlag.THROTTLED, RunFlag.INTERFERED]


def test_threshold_is_exclusive_and_runs_without_calibration_pass_through() -> None:
    edge = 10.0 * (1 + SLOWDOWN_THRESHOLD)
    flagged = flag_runs([run("run-1", 10.0, 10.0), run("run-2", edge, edge), run("e2e-1", None, None)])
    assert flagged[1].flag is None and flagged[2].slowdown is None and flagged[2].flag is None
    assert flag_runs([run("run-1", None, None)])[0].slowdown is None

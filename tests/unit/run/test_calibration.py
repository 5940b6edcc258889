"""run.calibration: throttling / interference flags from the runner's calibration workload."""

from __future__ import annotations

import pytest

from device_agents.facts import DeviceFacts
from orchestrator.results.conditions import DeviceState
from orchestrator.results.model import ProcessRun, RunFlag
from orchestrator.run.calibration import SLOWDOWN_THRESHOLD, flag_runs


def run(label: str, before: float | None, after: float | None, khz: int | None = None, thermal: int | None = None) -> ProcessRun:
    facts: dict = {}
    if khz is not None:
        facts["cpus"] = {"cpu0": {"cur_khz": khz}, "cpu1": {"cur_khz": khz}}
    if thermal is not None:
        facts["android"] = {"thermal_status": thermal}
    return ProcessRun(label, True, (1.0,), calibration_before_ms=before, calibration_after_ms=after,
                      device_state=DeviceState(DeviceFacts.from_json(facts)))


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


def test_progress_lines_and_the_summary_come_from_one_rule() -> None:
    """The issue's case: run 1 disturbed, runs 2 and 3 flagged against it as they came, then a faster calibration
    (the untraced run) moves the reference. The news after each run, replayed, ends in exactly what the summary
    says: every flagged run with its final figure, run 1 included."""
    from orchestrator.report.terminal.summary import wall_clock_lines
    from orchestrator.results.model import DeviceResult, DeviceStatus, Job, JobConfig, JobStatus, ModelResult, ModelStatus
    from orchestrator.run.calibration import flag_news, flag_text

    order = [("m", run("run-1", 15.0, 15.8)), ("m", run("run-2", 14.0, 14.2)), ("m", run("run-3", 15.2, 15.3)),
             ("m", run("e2e-1", 10.0, 10.1))]
    said: dict[str, str] = {}
    for k in range(1, len(order)):
        for line in flag_news(order[:k], order[:k + 1]):
            for part in line.removeprefix("faster calibration in e2e-1: now ").split(", "):
                said[part.split()[1] if part.startswith("m ") else part.split()[0]] = part.removeprefix("m ")
    final = [r for r in flag_runs([r for _, r in order]) if r.flag is not None]
    assert said == {r.label: flag_text(r) for r in final}
    assert [r.label for r in final] == ["run-1", "run-2", "run-3"]
    model = ModelResult("m", ModelStatus.OK, tuple(final[0:1]) + tuple(
        r for r in flag_runs([r for _, r in order]) if r.label != "run-1"))
    job = Job("id", JobStatus.OK, "now", JobConfig(("d",), ("m.py",), "xnnpack"),
              devices=(DeviceResult("d", "local", "host", DeviceStatus.OK, models=(model,)),))
    (line,) = wall_clock_lines(job)
    assert "FLAGGED: " + ", ".join(flag_text(r) for r in final) in line

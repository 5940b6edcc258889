"""run/energy/phase.py's pure parts: how long a phase runs, its script, and reading its output back."""

from __future__ import annotations

import pytest

from orchestrator.results.job_config import JobOptions
from orchestrator.run.energy.phase import parse_phase, plan_for, script
from orchestrator.run.energy.sensors import SENSORS
from orchestrator.run.runner_contract import RunnerInvocation

ODPM = SENSORS["odpm"]
BASE = RunnerInvocation("/w/bin/etfarm_runner", "/w/m.pte", None, "/w/out/m/energy", 1, 3, traced=False)


def meter(energy: int) -> str:
    return (f"  ChannelId: 0, ChannelName: S2M_VDD_CPUCL2, ChannelSubsystem: CPU(BIG)\n"
            f"  ChannelId: 0, Timestamp (ms): 1, Duration (ms): 1, Energy (uWs): {energy}")


def test_a_phase_lasts_energy_s_and_a_power_sensors_hundred_periods_at_the_models_speed() -> None:
    plan = plan_for(JobOptions(energy_s=10.0), ODPM, BASE, median_ms=4.0)
    assert plan.invocation.iterations == 2500 and not plan.invocation.traced
    assert plan.invocation.calibration_rounds == 0 and plan.active_s == 10.0 and plan.idle_s == 5.0
    slow_sensor = plan_for(JobOptions(energy_s=1.0), SENSORS["pmic"], BASE, median_ms=100.0)  # power: 100 periods
    assert slow_sensor.active_s == pytest.approx(10.0) and slow_sensor.invocation.iterations == 100
    counter = plan_for(JobOptions(energy_s=1.0), ODPM, BASE, median_ms=100.0)  # a counter: exact between two readings
    assert counter.active_s == pytest.approx(1.0) and counter.invocation.iterations == 10 and counter.idle_s == 3.0
    assert plan_for(JobOptions(energy_s=0.5), ODPM, BASE, median_ms=1e9).invocation.iterations == 1


def test_the_script_samples_idle_then_the_runner_until_it_exits() -> None:
    text = script(ODPM, "/w/bin/etfarm_runner --model_path=/w/m.pte", idle_s=2.0)
    assert text.index("dumpsys powerstats") < text.index("@@ START") < text.index("etfarm_runner")
    assert "i -lt 20" in text and "kill -0 $p" in text and "@@ EXIT $rc" in text


def test_the_output_splits_into_idle_and_active_samples() -> None:
    out = "\n".join(["@@ 1000000000", meter(100), "@@ 2000000000", meter(200), "@@ START",
                     "@@ 3000000000", meter(900), "@@ 4000000000", meter(1900), "@@ EXIT 0",
                     "ETFARM_BACKENDS []", 'ETFARM_RESULT {"executions": 7}'])
    samples, rc, runner = parse_phase(out, ODPM)
    assert rc == 0 and runner.splitlines()[-1] == 'ETFARM_RESULT {"executions": 7}'
    assert [s.t_s for s in samples.idle] == [1.0, 2.0]
    assert [s.t_s for s in samples.active] == [2.0, 3.0, 4.0]  # from the last idle reading on
    assert samples.active[-1].reading.values == {"S2M_VDD_CPUCL2": 1900.0}
    with pytest.raises(ValueError, match="before the runner's exit status"):
        parse_phase(out.split("@@ EXIT")[0], ODPM)

"""run/energy/integrate.py on recorded samples: counters (with a wrap), power, idle subtracted, interval."""

from __future__ import annotations

import pytest

from orchestrator.run.energy.integrate import PhaseSamples, Sample, energy_uj, phase_energy, summarize
from orchestrator.run.energy.sensors import Kind, Reading


def counter(t: float, **uj: float) -> Sample:
    return Sample(t, Reading(uj, {"cpu": 1000.0}))


def test_a_counter_that_wraps_counts_across_the_wrap() -> None:
    samples = [counter(0, cpu=900.0), counter(1, cpu=980.0), counter(2, cpu=30.0)]  # wraps at 1000
    assert energy_uj(samples, Kind.COUNTER) == {"cpu": pytest.approx(130.0)}
    restarted = [Sample(0, Reading({"x": 50.0})), Sample(1, Reading({"x": 10.0})), Sample(2, Reading({"x": 15.0}))]
    assert energy_uj(restarted, Kind.COUNTER) == {"x": 5.0}  # no range known: the step down is left out


def test_power_is_integrated_by_trapezoids() -> None:
    samples = [Sample(0, Reading({"a": 1000.0})), Sample(2, Reading({"a": 3000.0})), Sample(3, Reading({"a": 3000.0}))]
    assert energy_uj(samples, Kind.POWER) == {"a": pytest.approx(2000.0 * 2 + 3000.0)}


def test_energy_above_idle_per_execution() -> None:
    # idle: 100 uW for 2 s; active: 10 s at 1100 uW (1000 above idle) for 50 executions -> 200 uJ each
    idle = (counter(0, cpu=0.0), counter(2, cpu=200.0))
    active = (counter(2, cpu=200.0), counter(12, cpu=200.0 + 11000.0))
    phase, rails, idle_mw = phase_energy(PhaseSamples(idle, active, 50), Kind.COUNTER)
    assert phase.uj_per_inference == pytest.approx(200.0) and rails == {"cpu": pytest.approx(200.0)}
    assert phase.idle_mw == pytest.approx(0.1) and phase.active_mw == pytest.approx(1.1) and idle_mw["cpu"] == 0.1
    with pytest.raises(ValueError, match="two samples"):
        phase_energy(PhaseSamples(idle[:1], active, 50), Kind.COUNTER)


def test_repeated_phases_give_a_mean_with_a_t_interval() -> None:
    def phase(extra: float) -> PhaseSamples:
        idle = (counter(0, cpu=0.0), counter(1, cpu=0.0))
        return PhaseSamples(idle, (counter(1, cpu=0.0), counter(3, cpu=extra)), 10)

    energy = summarize([phase(100.0), phase(120.0), phase(140.0)], Kind.COUNTER, "odpm", 0.25, tokens_per_inference=4)
    assert energy.available and energy.sensor == "odpm" and energy.uj_per_inference == pytest.approx(12.0)
    half = 4.303 * 2.0 / 3 ** 0.5  # t(0.975, 2) x sd 2 / sqrt(3)
    assert (energy.uj_per_inference_low, energy.uj_per_inference_high) == (pytest.approx(12 - half), pytest.approx(12 + half))
    assert energy.uj_per_token == pytest.approx(3.0) and energy.mw == pytest.approx(12.0 / 0.2 / 1000)
    single = summarize([phase(100.0)], Kind.COUNTER, "odpm", 0.25)
    assert single.uj_per_inference_low is None and single.uj_per_token is None

"""Sensor samples -> energy above idle per inference.

A phase is idle samples (nothing of ours running) then active samples (the runner's untraced
executions). Per channel: the energy of a stretch is the counter's growth (each step's difference; a
step that went down wrapped at the channel's range, or, with no range known, the counter restarted
and that step is left out) or the power's integral (trapezoids between samples). Idle power =
idle energy / idle time; energy above idle = active energy - idle power x active time; per inference
= the rails' sum / executions. Over repeated phases: the mean and a 95 % interval of it (Student's t).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from orchestrator.results.energy_figures import EnergyPhase, ModelEnergy, RailEnergy
from orchestrator.run.energy.sensors import Kind, Reading

__all__ = ["PhaseSamples", "Sample", "energy_uj", "phase_energy", "summarize"]

# Two-sided 95 % quantiles of Student's t for 1..10 degrees of freedom; 1.96 beyond.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


@dataclass(frozen=True)
class Sample:
    t_s: float  # the device's clock, seconds
    reading: Reading


@dataclass(frozen=True)
class PhaseSamples:
    idle: tuple[Sample, ...]
    active: tuple[Sample, ...]
    executions: int


def _span(samples: Sequence[Sample]) -> float:
    return samples[-1].t_s - samples[0].t_s if len(samples) >= 2 else 0.0


def energy_uj(samples: Sequence[Sample], kind: Kind) -> dict[str, float]:
    """Each channel's energy over the samples, microjoules."""
    channels = set.intersection(*(set(s.reading.values) for s in samples)) if samples else set()
    out = {name: 0.0 for name in channels}
    for a, b in zip(samples, samples[1:], strict=False):
        for name in channels:
            x, y = a.reading.values[name], b.reading.values[name]
            if kind is Kind.POWER:
                out[name] += (x + y) / 2.0 * (b.t_s - a.t_s)
            elif y >= x:
                out[name] += y - x
            elif (wrap := b.reading.wraps.get(name)) is not None:
                out[name] += y + wrap - x
    return out


def phase_energy(phase: PhaseSamples, kind: Kind) -> tuple[EnergyPhase, dict[str, float], dict[str, float]]:
    """One phase: its figures, each rail's energy above idle per inference (uJ), each rail's idle power (mW)."""
    idle_s, active_s = _span(phase.idle), _span(phase.active)
    if idle_s <= 0 or active_s <= 0 or phase.executions < 1:
        raise ValueError(f"a phase needs two samples idle and two active ({len(phase.idle)}, {len(phase.active)}) "
                         f"and executions ({phase.executions})")
    idle = energy_uj(phase.idle, kind)
    active = energy_uj(phase.active, kind)
    idle_uw = {name: idle[name] / idle_s for name in idle}
    above = {name: (active[name] - idle_uw.get(name, 0.0) * active_s) / phase.executions for name in active}
    figures = EnergyPhase(executions=phase.executions, idle_s=idle_s, active_s=active_s, samples=len(phase.active),
                          idle_mw=sum(idle_uw.values()) / 1000.0, active_mw=sum(active.values()) / active_s / 1000.0,
                          uj_per_inference=sum(above.values()))
    return figures, above, {name: uw / 1000.0 for name, uw in idle_uw.items()}


def summarize(phases: Sequence[PhaseSamples], kind: Kind, sensor: str, period_s: float,
              tokens_per_inference: int | None = None) -> ModelEnergy:
    """The model's energy over its phases (at least one)."""
    results = [phase_energy(p, kind) for p in phases]
    per = [r[0].uj_per_inference for r in results]
    mean = statistics.fmean(per)
    low = high = None
    if len(per) >= 2:
        half = (_T95[len(per) - 2] if len(per) - 1 <= len(_T95) else 1.96) * statistics.stdev(per) / math.sqrt(len(per))
        low, high = mean - half, mean + half
    rails = _rails([r[1] for r in results], [r[2] for r in results])
    seconds_per_inference = statistics.fmean(r[0].active_s / r[0].executions for r in results)
    return ModelEnergy(available=True, sensor=sensor, uj_per_inference=mean, uj_per_inference_low=low,
                       uj_per_inference_high=high, mw=mean / seconds_per_inference / 1000.0,
                       idle_mw=statistics.fmean(r[0].idle_mw for r in results),
                       uj_per_token=mean / tokens_per_inference if tokens_per_inference else None,
                       sample_period_ms=period_s * 1000.0, rails=rails, phases=tuple(r[0] for r in results))


def _rails(above: Sequence[Mapping[str, float]], idle_mw: Sequence[Mapping[str, float]]) -> tuple[RailEnergy, ...]:
    names = sorted(set.intersection(*(set(a) for a in above)))
    return tuple(RailEnergy(name, statistics.fmean(a[name] for a in above), statistics.fmean(i.get(name, 0.0)
                                                                                            for i in idle_mw))
                 for name in names)

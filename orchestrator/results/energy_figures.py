"""What the manifest keeps of a model's energy (`devices.<d>.models.<m>.energy`).

A device without a sensor says so: `available: false` and the reason, never a zero."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EnergyPhase", "ModelEnergy", "RailEnergy"]


@dataclass(frozen=True)
class RailEnergy:
    """One rail (channel, domain) of the sensor: its energy above idle per inference, over the phases."""

    name: str
    uj_per_inference: float
    idle_mw: float


@dataclass(frozen=True)
class EnergyPhase:
    """One idle-then-run phase: what it measured."""

    executions: int
    idle_s: float
    active_s: float
    samples: int  # sensor readings during the active part
    idle_mw: float  # the rails' sum while nothing of ours ran
    active_mw: float  # the rails' sum while the runner ran
    uj_per_inference: float  # (active energy - idle power x active time) / executions


@dataclass(frozen=True)
class ModelEnergy:
    """Energy per inference from the device's sensor, or why there is none."""

    available: bool
    reason: str | None = None  # why not (available false)
    sensor: str | None = None  # odpm, pmic, rapl, hwmon
    uj_per_inference: float | None = None  # mean over the phases, above idle, the rails summed
    uj_per_inference_low: float | None = None  # a 95 % interval of that mean over the phases (t distribution)
    uj_per_inference_high: float | None = None
    mw: float | None = None  # average power above idle while the model ran
    idle_mw: float | None = None
    uj_per_token: float | None = None  # LLMs: per generated token
    sample_period_ms: float | None = None
    rails: tuple[RailEnergy, ...] = ()
    phases: tuple[EnergyPhase, ...] = ()

    @classmethod
    def unavailable(cls, reason: str, sensor: str | None = None) -> ModelEnergy:
        return cls(available=False, reason=reason, sensor=sensor)

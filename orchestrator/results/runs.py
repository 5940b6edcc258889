"""A process run of the runner on a device, as the results model records it (results/model.py re-exports it).

`ProcessRun` is one `run-k` (event tracer on) or `e2e-k` (off): the runner's own times and what the host
knew of the run (device state, memory, contention, calibration flag), written and read by base/codec.py
from its fields like the rest of the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from orchestrator.artifacts.generation import LlmRunFigures
from orchestrator.base.codec import Layout, decode, encode
from orchestrator.results.conditions import DeviceState
from orchestrator.results.contention import Contention, clean_mask
from orchestrator.results.footprint import RunnerMemory

if TYPE_CHECKING:
    from orchestrator.run.runner_contract import RunnerResult


class RunFlag(StrEnum):
    """Why a process run's numbers are suspect: its calibration workload ran slower than the job's first."""

    THROTTLED = "throttled"  # the device's clocks dropped or it reported thermal trouble
    INTERFERED = "interfered"  # same clocks, less CPU: something else shared the core


@dataclass(frozen=True)
class ProcessRun:
    """One process run of the runner on a device: `run-k` (event tracer on) or `e2e-k` (off)."""

    LAYOUT: ClassVar[Layout] = Layout(first=("label", "traced", "cold"), last=("device_state", "artifacts", "runner"))

    label: str
    traced: bool
    execute_ms: tuple[float, ...]  # wall clock of each measured execution, as the runner timed it
    load_ms: float | None = None  # method load
    program_load_ms: float | None = None
    device_state: DeviceState = field(default_factory=DeviceState)  # facts just before the run (results/conditions.py)
    artifacts: tuple[str, ...] = ()  # files of this run, relative to the run directory
    runner: Mapping[str, Any] = field(default_factory=dict)  # anything else the runner reported, verbatim
    cold: bool = False  # the model's first process run after staging: its load times are apart
    peak_rss_load_kb: int | None = None  # VmHWM after the program and method loaded
    peak_rss_kb: int | None = None  # VmHWM after the measured executions
    planned_memory_bytes: int | None = None  # MethodMeta's memory-planned buffers, summed
    program_bytes: int | None = None  # the .pte's size on the device
    calibration_before_ms: float | None = None  # the fixed calibration workload, before and after
    calibration_after_ms: float | None = None
    flag: RunFlag | None = None  # throttled / interfered, from the calibration
    slowdown: float | None = None  # calibration vs the job's first run on the device: 0.3 = 30 % slower
    runner_ms: float | None = None  # the runner process's own time, start to result
    step_ms: float | None = None  # host wall time of the whole device step (one round trip)
    pss_load_kb: int | None = None  # PSS after the method load (smaps_rollup), at most peak_rss_kb
    pss_kb: int | None = None  # PSS after the measured executions
    llm: LlmRunFigures | None = None  # an LLM's generations: TTFT, prefill and decode figures, tokens
    memory: RunnerMemory | None = None  # memory by owner after load and after the executions (results/footprint.py)
    contention: Contention | None = None  # CPU taken from the runner, per execution (results/contention.py); None: unmeasured
    warmup_ms: tuple[float, ...] | None = None  # each warmup execution, as the runner timed it (older runners: None)

    @property
    def clean(self) -> tuple[bool, ...]:
        """Per measured execution, whether it ran without waiting for a CPU (all True when unmeasured)."""
        return clean_mask(self.execute_ms, self.contention.wait_ms if self.contention else ())

    @property
    def clean_execute_ms(self) -> tuple[float, ...]:
        return tuple(ms for ms, ok in zip(self.execute_ms, self.clean, strict=True) if ok)

    @property
    def calibration_ms(self) -> float | None:
        """The slower of the two calibrations: what the run's core was like at its worst."""
        values = [v for v in (self.calibration_before_ms, self.calibration_after_ms) if v is not None]
        return max(values) if values else None

    @property
    def host_overhead_ms(self) -> float | None:
        """What the host and the link added to the runner's own time."""
        if self.step_ms is None or self.runner_ms is None:
            return None
        return self.step_ms - self.runner_ms

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessRun:
        return decode(cls, data)

    @classmethod
    def from_runner(cls, result: RunnerResult, *, label: str, traced: bool, **run: Any) -> ProcessRun:
        """A process run from the runner's checked result (runner_contract.parse_result) and what the
        host knows of it (`run`: cold, device_state, artifacts, step_ms, ...). The result's fields that
        are ProcessRun fields too are taken as such (-1, a size the device could not measure, as
        None); the rest of the result is kept verbatim under `runner`."""
        shared = {f.name for f in fields(cls)} & {f.name for f in fields(result)}
        printed = result.to_dict()
        typed = {name: None if isinstance(value, (int, float)) and value < 0 else value
                 for name in shared if (value := getattr(result, name)) is not None}
        return cls(label=label, traced=traced, **typed, **run,
                   runner={k: v for k, v in printed.items() if k not in shared})

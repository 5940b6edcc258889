"""What a job has left to run (docs/architecture.md, "The job engine: resume").

A new job runs every process run of every model on every device. A resumed one
(`etfarm run --resume DIR`) reads what DIR's manifest recorded: a device that ended (ok or wrong
results) with every model complete is not contacted again; on the others, each model carries the
process runs it finished (`done`), so only the missing ones run; a model with every run recorded
is `complete` (the farm does not send it again; a device session on this host verifies and
analyses it again with the others).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from orchestrator.results.model import Job, JobOptions, ModelStatus, ProcessRun

Runs = tuple[ProcessRun, ...]


@dataclass(frozen=True)
class JobPlan:
    devices: tuple[str, ...]  # to run, in job order
    complete_devices: tuple[str, ...] = ()  # nothing left to run: not contacted
    done: Mapping[str, Mapping[str, Runs]] = field(default_factory=dict)  # device -> model -> finished runs
    complete_models: frozenset[tuple[str, str]] = frozenset()  # (device, model) with every process run

    @classmethod
    def fresh(cls, devices: Sequence[str]) -> JobPlan:
        return cls(tuple(devices))

    @classmethod
    def resume(cls, recorded: Job) -> JobPlan:
        names = [a.name for a in recorded.models]
        complete = tuple(d.name for d in recorded.devices if d.complete(names) and d.name in recorded.config.devices)
        running = [d for d in recorded.devices if d.name not in complete]
        return cls(devices=tuple(n for n in recorded.config.devices if n not in complete), complete_devices=complete,
                   done={d.name: {m.name: m.runs for m in d.models} for d in running},
                   complete_models=frozenset((d.name, m.name) for d in running for m in d.models
                                             if m.status is ModelStatus.OK))

    @property
    def finished(self) -> bool:
        """Nothing is left to run."""
        return not self.devices

    def runs_done(self, device: str, model: str) -> Runs:
        return tuple(self.done.get(device, {}).get(model, ()))

    def missing(self, models: Sequence[str], options: JobOptions) -> tuple[int, int]:
        """(device, model) pairs with process runs left, and how many process runs that is."""
        per_model = options.runs + options.untraced_runs
        pairs = [(d, m) for d in self.devices for m in models if (d, m) not in self.complete_models]
        return len(pairs), sum(per_model - len(self.runs_done(d, m)) for d, m in pairs)

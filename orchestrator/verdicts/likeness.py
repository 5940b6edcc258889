"""What a comparison compares: the settings two runs of a model must share, and whether a side is whole.

ONE home for "comparable". `SETTINGS` (run/configuration.py: the one home of a configuration, which the store
reads too) names what two runs of a model must share for B's time against A's to say anything about a
regression: the backend, the export recipe, iterations, warmup, CPU threads, an LLM's generation (prompt and
generation length), intermediate outputs on or off (numerics) and the runner's runtime route.
The same settings make a series of the store (`SeriesKey`: device, model name, settings), which history,
change points and the nightly's baselines and series verdicts never mix (a setting a job did not record,
`?`, matches any value). `last-good` (baseline.py) only picks a baseline that matches every one; a
comparison whose sides differ in one (`compare` of an xnnpack run against a portable one, a named
baseline of other iterations) lists each difference (`SettingDifference`) in its pair's JSON and the
table's legend, and that pair's verdicts are `settings-differ`, never regressed or improved (`unjudged`):
a 15x ratio between two backends is the backends', not a regression. Adding a setting (a recipe) is one
line in SETTINGS.

A side that is not whole is named too (`IncompleteSide`): its job was interrupted or never finished
(killed, or still running), its device was interrupted, or its model lacks some of its process runs. Its
verdicts stand on the runs it has (the statistics account for fewer runs), and the legend and JSON say so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.base.codec import PAIRS
from orchestrator.results.model import DeviceStatus, Job, JobStatus
from orchestrator.run.configuration import (
    SETTINGS,
    UNKNOWN,
    SettingDifference,
    Settings,
    model_settings,
    setting_differences,
)
from orchestrator.verdicts.statistics import Verdict

__all__ = ["SETTINGS", "UNKNOWN", "IncompleteSide", "SeriesKey", "SettingDifference", "Settings", "model_settings",
           "setting_differences", "side_gap", "unjudged"]


@dataclass(frozen=True)
class SeriesKey:
    """A series of the store: one device, one model name, one set of settings (SETTINGS). The model's content
    hash is not part of it: editing the model file is exactly the change a series must show (last-good matches by
    name for the same reason); each point carries its content hash instead (series.py)."""

    device: str
    model: str
    settings: Settings = field(metadata=PAIRS)

    @classmethod
    def of(cls, job: Job, device: str, model: str) -> SeriesKey:
        return cls(device, model, model_settings(job, model, device))

    def matches(self, other: SeriesKey) -> bool:
        """The same series: same device and model, no setting set differently (an unknown one matches)."""
        return (self.device, self.model) == (other.device, other.model) and not setting_differences(
            self.settings, other.settings)

    def describe(self) -> str:
        return f"{self.device} {self.model} ({', '.join(f'{k} {v}' for k, v in self.settings)})"


@dataclass(frozen=True)
class IncompleteSide:
    """A side of a pair that is not whole: which one, its run(s), and why."""

    side: str  # "A" or "B"
    source: str
    why: str

    def describe(self) -> str:
        return f"{self.side} ({self.source}): {self.why}"


def side_gap(job: Job, device: str, model: str) -> str | None:
    """Why `model` on `device` in `job` is not a whole side, or None when it is."""
    dev = job.device(device)
    result = dev.model(model) if dev is not None else None
    wanted = job.config.options.runs
    traced = len(result.traced_runs) if result is not None else 0
    runs = f"{traced} of {wanted} process runs" if traced < wanted else f"all {wanted} process runs of this model finished"
    if job.status is JobStatus.INTERRUPTED:
        return f"its job was interrupted (Ctrl-C or SIGTERM): {runs}"
    if job.status is JobStatus.RUNNING:
        return f"its job never finished (killed, or still running): {runs}"
    if dev is not None and dev.status is DeviceStatus.INTERRUPTED:
        return f"its device was interrupted: {runs}"
    return f"partial: {runs}" if traced < wanted else None


def unjudged(verdict: Verdict) -> Verdict:
    """A verdict between sides of different settings: a difference, not a regression or an improvement."""
    return Verdict.SETTINGS_DIFFER if verdict in (Verdict.REGRESSED, Verdict.IMPROVED) else verdict

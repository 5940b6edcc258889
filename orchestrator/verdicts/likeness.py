"""What a comparison compares: the settings two runs of a model must share, and whether a side is whole.

ONE home for "comparable". `SETTINGS` names what two runs of a model must share for B's time against A's
to say anything about a regression: the backend, the export recipe, iterations, warmup, CPU threads, an
LLM's generation (prompt and generation length), intermediate outputs on or off (numerics) and the
runner's runtime route.
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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.run.llm_figures import generation_key
from orchestrator.run.results import DeviceStatus, Job, JobStatus
from orchestrator.verdicts.statistics import Verdict

Settings = tuple[tuple[str, str], ...]  # (setting, value as people read it), in SETTINGS order


def _backend(job: Job, model: str) -> str:
    artifacts = job.model_artifacts(model)
    return artifacts.backend if artifacts else job.config.backend


def _recipe(job: Job, model: str) -> str:
    artifacts = job.model_artifacts(model)
    return artifacts.recipe.text if artifacts is not None and artifacts.recipe is not None else "-"


def _generation(job: Job, model: str) -> str:
    key = generation_key(job, model)
    if key is None:
        return "-"  # not an LLM
    prompt, seed, gen_len = key
    return f"prompt {'file' if prompt is None else prompt}, seed {seed}, {gen_len} tokens"


def _runtime(job: Job, model: str, device: str | None) -> str:
    """The runtime route the device's runner took (wheel, bundled-glibc, ndk, user: artifacts/runner_info.py);
    UNKNOWN when the job did not record it (older manifests) or no device is named."""
    dev = job.device(device) if device is not None else None
    runner = dev.facts.get("runner") if dev is not None and isinstance(dev.facts, dict) else None
    value = runner.get("runtime") if isinstance(runner, dict) else None
    return str(value) if value else UNKNOWN


UNKNOWN = "?"  # a setting the job did not record: matches any value (older manifests)

# setting -> its value for (job, model, device). What must match for two runs of a model to be compared, and
# what a series is (`SeriesKey`): the store's history, change points and nightly baselines never mix them.
SETTINGS: dict[str, Callable[[Job, str, str | None], object]] = {
    "backend": lambda job, model, device: _backend(job, model),
    "recipe": lambda job, model, device: _recipe(job, model),
    "iterations": lambda job, model, device: job.config.options.iterations,
    "warmup": lambda job, model, device: job.config.options.warmup,
    "threads": lambda job, model, device: job.config.options.cpu_threads or "default",
    "generation": lambda job, model, device: _generation(job, model),
    # intermediate outputs (`--numerics`, `--intermediate-outputs`) copy every op's output: slower, not a regression
    "numerics": lambda job, model, device: "on" if job.config.options.numerics or job.config.options.intermediate_outputs
    else "off",
    "runtime": _runtime,
}


def model_settings(job: Job, model: str, device: str | None = None) -> Settings:
    """The settings `model` ran with in `job` (on `device`: its runtime route), by name."""
    return tuple((name, str(read(job, model, device))) for name, read in SETTINGS.items())


@dataclass(frozen=True)
class SeriesKey:
    """A series of the store: one device, one model name, one set of settings (SETTINGS). The model's content
    hash is not part of it: editing the model file is exactly the change a series must show (last-good matches by
    name for the same reason); each point carries its content hash instead (series.py)."""

    device: str
    model: str
    settings: Settings

    @classmethod
    def of(cls, job: Job, device: str, model: str) -> SeriesKey:
        return cls(device, model, model_settings(job, model, device))

    def matches(self, other: SeriesKey) -> bool:
        """The same series: same device and model, no setting set differently (an unknown one matches)."""
        return (self.device, self.model) == (other.device, other.model) and not setting_differences(
            self.settings, other.settings)

    def describe(self) -> str:
        return f"{self.device} {self.model} ({', '.join(f'{k} {v}' for k, v in self.settings)})"

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "model": self.model, "settings": dict(self.settings)}


@dataclass(frozen=True)
class SettingDifference:
    """A setting the two sides of a pair ran with differently."""

    setting: str
    a: str
    b: str

    def describe(self) -> str:
        return f"{self.setting} {self.a} (A) vs {self.b} (B)"

    def to_dict(self) -> dict[str, Any]:
        return {"setting": self.setting, "a": self.a, "b": self.b}


def setting_differences(a: Settings, b: Settings) -> tuple[SettingDifference, ...]:
    """The settings both sides know and set differently (a side built without its job knows none)."""
    known = dict(a)
    return tuple(SettingDifference(name, known[name], value) for name, value in b
                 if name in known and known[name] != value and UNKNOWN not in (known[name], value))


@dataclass(frozen=True)
class IncompleteSide:
    """A side of a pair that is not whole: which one, its run(s), and why."""

    side: str  # "A" or "B"
    source: str
    why: str

    def describe(self) -> str:
        return f"{self.side} ({self.source}): {self.why}"

    def to_dict(self) -> dict[str, Any]:
        return {"side": self.side, "source": self.source, "why": self.why}


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

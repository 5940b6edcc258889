"""What a configuration is: the settings a model ran with, which make a series of the store and must match
for two runs to be compared.

ONE home for "configuration". `SETTINGS` names them: the backend, the export recipe, iterations, warmup, CPU
threads, an LLM's generation (prompt and generation length), intermediate outputs on or off (numerics) and the
runner's runtime route. The store keys every history point by them (store/db.py), history, change points, the
report's "Over time" chart and the nightly's baselines never mix them (verdicts/likeness.py `SeriesKey`), and
`compare` judges a pair whose sides differ in one as `settings-differ`. Adding a setting is one line here.
A setting a job did not record (older manifests) is `?` and matches any value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from orchestrator.results.llm_figures import generation_key
from orchestrator.results.model import Job

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
    runner = dev.facts.runner if dev is not None else None
    return runner.runtime if runner is not None and runner.runtime else UNKNOWN


def _emulated(job: Job, device: str | None) -> str:
    dev = job.device(device) if device is not None else None
    return UNKNOWN if dev is None else "yes" if dev.emulated else "no"


UNKNOWN = "?"  # a setting the job did not record: matches any value (older manifests)

# setting -> its value for (job, model, device). What must match for two runs of a model to be compared, and
# what a series is: the store's history, change points and nightly baselines never mix them.
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
    # an emulated device (`etfarm devices emulate`): qemu's timings never join, nor are judged against, the hardware's
    "emulated": lambda job, model, device: _emulated(job, device),
}
# A setting's value that says nothing worth a word in a short label (`configuration_label`).
_QUIET = {"recipe": "-", "threads": "default", "generation": "-", "numerics": "off", "runtime": UNKNOWN,
          "emulated": "no"}


def model_settings(job: Job, model: str, device: str | None = None) -> Settings:
    """The settings `model` ran with in `job` (on `device`: its runtime route), by name."""
    return tuple((name, str(read(job, model, device))) for name, read in SETTINGS.items())


def configuration_label(settings: Settings, shown: Iterable[str] | None = None) -> str:
    """A configuration in a few words: its backend, then each setting in `shown` (default: every one) that is not
    at its quiet value ("portable, numerics on", "xnnpack, threads 4"). Views pass the settings that vary among
    the series they list, so a label says what tells its series apart and nothing else."""
    named = dict(settings)
    wanted = set(SETTINGS) if shown is None else set(shown)
    words = [named.get("backend", UNKNOWN)]
    words += [f"{name} {value}" for name, value in settings
              if name != "backend" and name in wanted and value != _QUIET.get(name)]
    return ", ".join(words)


def varying_settings(all_settings: Iterable[Settings]) -> set[str]:
    """The settings whose value differs among `all_settings` (what a label must show to tell them apart)."""
    seen: dict[str, set[str]] = {}
    for settings in all_settings:
        for name, value in settings:
            seen.setdefault(name, set()).add(value)
    return {name for name, values in seen.items() if len(values) > 1}


@dataclass(frozen=True)
class SettingDifference:
    """A setting the two sides of a pair ran with differently."""

    setting: str
    a: str
    b: str

    def describe(self) -> str:
        return f"{self.setting} {self.a} (A) vs {self.b} (B)"


def setting_differences(a: Settings, b: Settings) -> tuple[SettingDifference, ...]:
    """The settings both sides know and set differently (a side built without its job knows none)."""
    known = dict(a)
    return tuple(SettingDifference(name, known[name], value) for name, value in b
                 if name in known and known[name] != value and UNKNOWN not in (known[name], value))

"""The results model: what a job produced, as typed, frozen data. `manifest.json` is this, serialised.

    Job ── DeviceResult (one per device) ── ModelResult (one per model on it) ── ProcessRun (results/runs.py)

Every reader (the printed summary, `--json`, the store, reports, compare, resume, Dask) goes
through `load_manifest`, never through dict paths. The file's shape has one home: the dataclass
fields below, written and read by base/codec.py from their types (each class's `LAYOUT` keeps the
manifest's key order), so a new field is declared once. A manifest carries `schema_version`; one
written by a newer etfarm is refused with a clear error instead of being half understood.

Derived figures (all execute samples, tracer overhead, CV, instability) are properties computed
from the raw samples; `to_dict` also writes them under `summary` for people and scripts reading
the JSON, and `from_dict` ignores them. See docs/architecture.md, "The results model".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from device_agents.facts import DeviceFacts
from orchestrator.base.codec import KEYED, FieldError, Layout, decode, encode
from orchestrator.base.errors import Blame, DataError
from orchestrator.base.ids import checked_id
from orchestrator.base.stats import Stability, coefficient_of_variation, median, stability
from orchestrator.base.wholefile import json_problem
from orchestrator.results.accuracy import Accuracy
from orchestrator.results.contention import ContentionSummary, contention_summary
from orchestrator.results.energy_figures import ModelEnergy
from orchestrator.results.footprint import ModelMemory
from orchestrator.results.job_config import JobConfig, JobOptions, LeftOut, ModelArtifacts
from orchestrator.results.layout import MANIFEST
from orchestrator.results.llm_figures import llm_summary
from orchestrator.results.runs import ProcessRun, RunFlag

__all__ = [
    "MANIFEST_NAME", "SCHEMA_VERSION", "Attempt", "DeviceResult", "DeviceStatus", "Job", "JobConfig", "JobStatus",
    "LeftOut", "ModelArtifacts", "ModelResult", "ModelStatus", "ProcessRun", "RunFlag", "JobOptions", "Verification",
    "VerificationStatus", "load_manifest",
]

SCHEMA_VERSION = 1
MANIFEST_NAME = MANIFEST


class JobStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"  # every device succeeded
    PARTIAL = "partial"  # some devices succeeded
    FAILED = "failed"  # none did, or the job itself failed
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM


class DeviceStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    WRONG_RESULTS = "wrong-results"  # ran, but its outputs failed verification: not a success (exit 1)
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM stopped it; `etfarm run --resume` finishes it


class ModelStatus(StrEnum):
    OK = "ok"
    PARTIAL = "partial"  # some process runs are missing; the others are analysed
    FAILED = "failed"


class VerificationStatus(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class Verification:
    """The device's outputs against the eager reference, over every run that wrote outputs."""

    status: VerificationStatus
    detail: str = ""
    max_abs_diff: float | None = None
    runs_checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verification:
        return decode(cls, data)


@dataclass(frozen=True)
class ModelResult:
    """One model on one device: its process runs, the output verification, what went wrong."""

    LAYOUT: ClassVar[Layout] = Layout(key="name", first=("status", "error", "blame", "verification"),
                                      derived=("summary",))
    name: str
    status: ModelStatus
    runs: tuple[ProcessRun, ...] = ()
    verification: Verification | None = None
    error: str | None = None
    blame: Blame | None = None
    accuracy: Accuracy | None = None  # a recipe's outputs against the fp32 eager model's (results/accuracy.py)
    memory: ModelMemory | None = None  # memory by owner, from one of its runs (results/footprint.py)
    energy: ModelEnergy | None = None  # energy per inference, or why there is none (run/energy/)

    @property
    def traced_runs(self) -> tuple[ProcessRun, ...]:
        return tuple(r for r in self.runs if r.traced)

    @property
    def untraced_runs(self) -> tuple[ProcessRun, ...]:
        return tuple(r for r in self.runs if not r.traced)

    @property
    def wall_execute_ms(self) -> tuple[float, ...]:
        """Every measured execution of the traced runs, in run order."""
        return tuple(ms for r in self.traced_runs for ms in r.execute_ms)

    @property
    def untraced_execute_ms(self) -> tuple[float, ...]:
        return tuple(ms for r in self.untraced_runs for ms in r.execute_ms)

    @property
    def clean_wall_execute_ms(self) -> tuple[float, ...]:
        """The traced runs' executions that did not wait for a CPU (results/contention.py's rule), in run order."""
        return tuple(ms for r in self.traced_runs for ms in r.clean_execute_ms)

    @property
    def reported_execute_ms(self) -> tuple[float, ...]:
        """What every p50 and p90 of this model is over: the clean executions, or all when none was clean (then the
        contention summary says every one was contended)."""
        return self.clean_wall_execute_ms or self.wall_execute_ms

    @property
    def contention_summary(self) -> ContentionSummary:
        """How contended this model's process runs (traced and not) were: what the job reports per device."""
        return contention_summary([(r.execute_ms, r.contention) for r in self.runs])

    @property
    def contended_share(self) -> float | None:
        """The share of measured executions dropped as contended, over all runs; None when none was measured."""
        return self.contention_summary.contended_share

    @property
    def load_ms(self) -> tuple[float, ...]:
        return tuple(r.load_ms for r in self.traced_runs if r.load_ms is not None)

    @property
    def warm_load_ms(self) -> tuple[float, ...]:
        """Method load times of every run but the cold first one (all runs, traced or not)."""
        return tuple(r.load_ms for r in self.runs if r.load_ms is not None and not r.cold)

    @property
    def cold_load_ms(self) -> float | None:
        return next((r.load_ms for r in self.runs if r.cold), None)

    @property
    def first_execution_ms(self) -> float | None:
        """The first execution in a fresh process (its first warmup: caches cold, the threadpool's first wake-up),
        p50 over the process runs that timed one (an LLM's: its first generation); None without warmups or from
        older runners."""
        firsts = [r.warmup_ms[0] for r in self.runs if r.warmup_ms]
        return median(firsts)

    @property
    def peak_rss_kb(self) -> int | None:
        """The highest peak resident memory of any run (after its measured executions)."""
        return max((r.peak_rss_kb for r in self.runs if r.peak_rss_kb is not None and r.peak_rss_kb >= 0), default=None)

    @property
    def pss_kb(self) -> int | None:
        """The highest PSS of any run after its measured executions."""
        return max((r.pss_kb for r in self.runs if r.pss_kb is not None), default=None)

    @property
    def planned_memory_bytes(self) -> int | None:
        return next((r.planned_memory_bytes for r in self.runs if r.planned_memory_bytes is not None), None)

    @property
    def program_bytes(self) -> int | None:
        return next((r.program_bytes for r in self.runs if r.program_bytes is not None), None)

    @property
    def flagged_runs(self) -> tuple[ProcessRun, ...]:
        return tuple(r for r in self.runs if r.flag is not None)

    @property
    def tracer_overhead(self) -> float | None:
        """Relative cost of the ETDump event tracer on the median execution: 0.05 means +5 %."""
        traced, untraced = median(self.wall_execute_ms), median(self.untraced_execute_ms)
        if traced is None or untraced is None or untraced <= 0:
            return None
        return traced / untraced - 1.0

    @property
    def execute_cv(self) -> float | None:
        return coefficient_of_variation(self.wall_execute_ms)

    @property
    def stability(self) -> Stability:
        """Within-run and between-run spread of the traced runs' executions (orchestrator/base/stats.py)."""
        return stability([r.execute_ms for r in self.traced_runs], [r.label for r in self.traced_runs],
                         {r.label for r in self.flagged_runs})

    @property
    def unstable(self) -> bool:
        return self.stability.unstable

    def summary(self) -> dict[str, Any]:
        return {"runs": len(self.traced_runs), "wall_execute_ms": list(self.wall_execute_ms),
                "untraced_execute_ms": list(self.untraced_execute_ms), "load_ms": list(self.load_ms),
                "warm_load_ms": list(self.warm_load_ms), "cold_load_ms": self.cold_load_ms,
                "first_execution_ms_p50": self.first_execution_ms,
                "peak_rss_kb": self.peak_rss_kb, "pss_kb": self.pss_kb, "planned_memory_bytes": self.planned_memory_bytes,
                "program_bytes": self.program_bytes,
                "host_overhead_ms_p50": median([o for r in self.runs if (o := r.host_overhead_ms) is not None]),
                "flagged_runs": {r.label: f"{r.flag} {r.slowdown:+.0%}" if r.slowdown is not None else str(r.flag)
                                 for r in self.flagged_runs},
                "tracer_overhead": self.tracer_overhead, "execute_cv": self.execute_cv,
                "within_run_spread": self.stability.within, "between_run_spread": self.stability.between,
                "unstable": self.unstable, "contention": encode(self.contention_summary), **llm_summary(self.runs)}

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> ModelResult:
        return decode(cls, data, name=name)


@dataclass(frozen=True)
class Attempt:
    """One failed try of a device step (connect, stage, a process run) that etfarm retried or gave up on."""

    step: str = ""
    error: str = ""
    at: str = ""  # ISO 8601 UTC, when it failed
    retried: bool | None = None  # another try followed; None in manifests written before etfarm recorded it

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attempt:
        return decode(cls, data)


@dataclass(frozen=True)
class DeviceResult:
    """One device of the job: what it is, how it went, its models in job order."""

    LAYOUT: ClassVar[Layout] = Layout(key="name", first=("status", "error", "blame"), last=("models",))

    name: str
    transport: str = ""
    target: str = ""
    status: DeviceStatus = DeviceStatus.PENDING
    error: str | None = None
    blame: Blame | None = None
    facts: DeviceFacts = field(default_factory=DeviceFacts)  # describe() at the job's first process run
    models: tuple[ModelResult, ...] = field(default=(), metadata=KEYED)
    runner_key: str | None = None  # cache key of the runner build the device ran
    controls: Mapping[str, Any] = field(default_factory=dict)  # device controls set for the job (perf mode)
    attempts: tuple[Attempt, ...] = ()  # failed tries of retried steps, in order (run/device/retry.py)
    emulated: bool = False  # qemu on a host, not the hardware (inventory `emulated: true`): timings are emulation

    def model(self, name: str) -> ModelResult | None:
        return next((m for m in self.models if m.name == name), None)

    def wrong_results(self) -> str | None:
        """`model: detail; ...` for the models whose outputs failed verification, None when none did."""
        wrong = [f"{m.name}: {m.verification.detail}" for m in self.models
                 if m.verification is not None and m.verification.status is VerificationStatus.FAIL]
        return "; ".join(wrong) or None

    def complete(self, models: Iterable[str]) -> bool:
        """Nothing left to run here: it ended (ok or wrong results) and every model has all its runs."""
        return self.status in (DeviceStatus.OK, DeviceStatus.WRONG_RESULTS) and all(
            (m := self.model(name)) is not None and m.status is ModelStatus.OK for name in models)

    def with_model(self, result: ModelResult) -> DeviceResult:
        """A copy with `result` added, or replacing the model of the same name in place."""
        models = [result if m.name == result.name else m for m in self.models]
        if self.model(result.name) is None:
            models.append(result)
        return replace(self, models=tuple(models))

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> DeviceResult:
        return decode(cls, data, name=name)


# The baseline program's name in a night's interleaved confirmation job, beside the model it confirms: `<model>-baseline`
BASELINE_SUFFIX = "-baseline"


@dataclass(frozen=True)
class Job:
    """A whole `etfarm run`: settings, versions, models, and every device's results."""

    LAYOUT: ClassVar[Layout] = Layout(first=("schema_version", "run_id", "status", "started", "finished"))
    run_id: str
    status: JobStatus
    started: str
    config: JobConfig
    finished: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    host: Mapping[str, str] = field(default_factory=dict)
    models: tuple[ModelArtifacts, ...] = field(default=(), metadata=KEYED)
    devices: tuple[DeviceResult, ...] = field(default=(), metadata=KEYED)
    left_out: tuple[LeftOut, ...] = ()  # configurations whose export failed: not measured, with the reason
    schema_version: int = SCHEMA_VERSION

    def device(self, name: str) -> DeviceResult | None:
        return next((d for d in self.devices if d.name == name), None)

    def model_artifacts(self, name: str) -> ModelArtifacts | None:
        return next((m for m in self.models if m.name == name), None)

    def confirms(self, model: str) -> bool:
        """Whether this job is a night's interleaved confirmation of `model` (app/confirm_ab.py): it ran the baseline's
        program beside it as `<model>-baseline`. Such a job measured its night again, so it is no point of a series."""
        return self.model_artifacts(f"{model}{BASELINE_SUFFIX}") is not None

    def with_device(self, result: DeviceResult) -> Job:
        devices = [result if d.name == result.name else d for d in self.devices]
        return replace(self, devices=tuple(devices if self.device(result.name) else [*devices, result]))

    def results(self) -> Iterable[tuple[DeviceResult, ModelResult]]:
        """Every (device, model) pair that has a result, in job order."""
        return ((device, model) for device in self.devices for model in device.models)

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "manifest") -> Job:
        version = data.get("schema_version")
        if not isinstance(version, int):
            raise DataError(f"{source}: no schema_version: not an etfarm manifest, or written by etfarm 0.1")
        if version > SCHEMA_VERSION:
            raise DataError(f"{source}: schema version {version} is newer than this etfarm reads ({SCHEMA_VERSION}); "
                            "upgrade etfarm")
        try:
            return _ids_checked(decode(cls, data), source)
        except FieldError as exc:  # names the key path: `config.runs: expected a whole number, got 'abc'`
            raise DataError(f"{source}: malformed manifest: {exc}") from None
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"{source}: malformed manifest ({type(exc).__name__}: {exc})") from None


def _ids_checked(job: Job, source: str) -> Job:
    """The job, once every id in it (run, devices, models) is an id: they name files and reach pages."""
    checked_id(job.run_id, f"{source}: run_id")
    for artifacts in job.models:
        checked_id(artifacts.name, f"{source}: models")
    for device in job.devices:
        checked_id(device.name, f"{source}: devices")
        for model in device.models:
            checked_id(model.name, f"{source}: devices.{device.name}.models")
    return job


def load_manifest(path: str | Path) -> Job:
    """The one reader of `manifest.json`: a run directory or the file itself."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such manifest (is this an etfarm run directory?)") from None
    except (OSError, ValueError, RecursionError) as exc:  # cut short, not UTF-8, nested 100000 deep, ...
        raise DataError(f"{path}: {json_problem(exc, 'manifest')}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: not an etfarm manifest")
    return Job.from_dict(data, source=str(path))

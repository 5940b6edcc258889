"""The results model: what a job produced, as typed, frozen data. `manifest.json` is this, serialised.

    Job ── DeviceResult (one per device) ── ModelResult (one per model on it) ── ProcessRun

Every reader (the printed summary, `--json`, the store, reports, compare, resume, Dask) goes
through `load_manifest`, never through dict paths, so the file's shape has one home: the
`to_dict`/`from_dict` pairs below. A manifest carries `schema_version`; one written by a newer
etfarm is refused with a clear error instead of being half understood.

Derived figures (all execute samples, tracer overhead, CV, instability) are properties computed
from the raw samples; `to_dict` also writes them under `summary` for people and scripts reading
the JSON, and `from_dict` ignores them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from orchestrator.errors import Blame, DataError
from orchestrator.run.schedule import RunOrder
from orchestrator.stats import coefficient_of_variation, is_unstable, median

SCHEMA_VERSION = 1
MANIFEST_NAME = "manifest.json"


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
    detail: str
    max_abs_diff: float | None = None
    runs_checked: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value, "detail": self.detail, "max_abs_diff": self.max_abs_diff,
                "runs_checked": self.runs_checked}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verification:
        return cls(VerificationStatus(data["status"]), data.get("detail", ""), data.get("max_abs_diff"),
                   int(data.get("runs_checked", 0)))


class RunFlag(StrEnum):
    """Why a process run's numbers are suspect: its calibration workload ran slower than the job's first."""

    THROTTLED = "throttled"  # the device's clocks dropped or it reported thermal trouble
    INTERFERED = "interfered"  # same clocks, less CPU: something else shared the core


@dataclass(frozen=True)
class ProcessRun:
    """One process run of the runner on a device: `run-k` (event tracer on) or `e2e-k` (off)."""

    label: str
    traced: bool
    execute_ms: tuple[float, ...]  # wall clock of each measured execution, as the runner timed it
    load_ms: float | None = None  # method load
    program_load_ms: float | None = None
    device_state: Mapping[str, Any] = field(default_factory=dict)  # facts just before the run
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
        return {"label": self.label, "traced": self.traced, "cold": self.cold, "execute_ms": list(self.execute_ms),
                "load_ms": self.load_ms, "program_load_ms": self.program_load_ms,
                "peak_rss_load_kb": self.peak_rss_load_kb, "peak_rss_kb": self.peak_rss_kb,
                "planned_memory_bytes": self.planned_memory_bytes, "program_bytes": self.program_bytes,
                "calibration_before_ms": self.calibration_before_ms, "calibration_after_ms": self.calibration_after_ms,
                "flag": _enum_value(self.flag), "slowdown": self.slowdown, "runner_ms": self.runner_ms,
                "step_ms": self.step_ms,
                "device_state": dict(self.device_state), "artifacts": list(self.artifacts), "runner": dict(self.runner)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProcessRun:
        return cls(label=str(data["label"]), traced=bool(data["traced"]),
                   execute_ms=tuple(float(x) for x in data.get("execute_ms", ())),
                   load_ms=_opt_float(data.get("load_ms")), program_load_ms=_opt_float(data.get("program_load_ms")),
                   device_state=dict(data.get("device_state") or {}), artifacts=tuple(data.get("artifacts") or ()),
                   runner=dict(data.get("runner") or {}), cold=bool(data.get("cold", False)),
                   peak_rss_load_kb=_opt_int(data.get("peak_rss_load_kb")), peak_rss_kb=_opt_int(data.get("peak_rss_kb")),
                   planned_memory_bytes=_opt_int(data.get("planned_memory_bytes")),
                   program_bytes=_opt_int(data.get("program_bytes")),
                   calibration_before_ms=_opt_float(data.get("calibration_before_ms")),
                   calibration_after_ms=_opt_float(data.get("calibration_after_ms")),
                   flag=RunFlag(data["flag"]) if data.get("flag") else None, slowdown=_opt_float(data.get("slowdown")),
                   runner_ms=_opt_float(data.get("runner_ms")), step_ms=_opt_float(data.get("step_ms")))


@dataclass(frozen=True)
class ModelResult:
    """One model on one device: its process runs, the output verification, what went wrong."""

    name: str
    status: ModelStatus
    runs: tuple[ProcessRun, ...] = ()
    verification: Verification | None = None
    error: str | None = None
    blame: Blame | None = None

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
    def peak_rss_kb(self) -> int | None:
        """The highest peak resident memory of any run (after its measured executions)."""
        values = [r.peak_rss_kb for r in self.runs if r.peak_rss_kb is not None and r.peak_rss_kb >= 0]
        return max(values) if values else None

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
    def unstable(self) -> bool:
        return is_unstable(self.execute_cv)

    def summary(self) -> dict[str, Any]:
        return {"runs": len(self.traced_runs), "wall_execute_ms": list(self.wall_execute_ms),
                "untraced_execute_ms": list(self.untraced_execute_ms), "load_ms": list(self.load_ms),
                "warm_load_ms": list(self.warm_load_ms), "cold_load_ms": self.cold_load_ms,
                "peak_rss_kb": self.peak_rss_kb, "planned_memory_bytes": self.planned_memory_bytes,
                "program_bytes": self.program_bytes,
                "host_overhead_ms_p50": median([o for r in self.runs if (o := r.host_overhead_ms) is not None]),
                "flagged_runs": {r.label: f"{r.flag} {r.slowdown:+.0%}" if r.slowdown is not None else str(r.flag)
                                 for r in self.flagged_runs},
                "tracer_overhead": self.tracer_overhead, "execute_cv": self.execute_cv, "unstable": self.unstable}

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value, "error": self.error, "blame": _enum_value(self.blame),
                "verification": self.verification.to_dict() if self.verification else None,
                "runs": [r.to_dict() for r in self.runs], "summary": self.summary()}

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> ModelResult:
        verification = data.get("verification")
        return cls(name=name, status=ModelStatus(data["status"]),
                   runs=tuple(ProcessRun.from_dict(r) for r in data.get("runs", ())),
                   verification=Verification.from_dict(verification) if verification else None,
                   error=data.get("error"), blame=_opt_enum(Blame, data.get("blame")))


@dataclass(frozen=True)
class Attempt:
    """One failed try of an idempotent device step (connect, stage) that etfarm retried or gave up on."""

    step: str
    error: str
    at: str  # ISO 8601 UTC, when it failed

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "error": self.error, "at": self.at}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Attempt:
        return cls(step=str(data.get("step", "")), error=str(data.get("error", "")), at=str(data.get("at", "")))


@dataclass(frozen=True)
class DeviceResult:
    """One device of the job: what it is, how it went, its models in job order."""

    name: str
    transport: str
    target: str
    status: DeviceStatus = DeviceStatus.PENDING
    error: str | None = None
    blame: Blame | None = None
    facts: Mapping[str, Any] = field(default_factory=dict)  # describe() at the job's first process run
    models: tuple[ModelResult, ...] = ()
    runner_key: str | None = None  # cache key of the runner build the device ran
    controls: Mapping[str, Any] = field(default_factory=dict)  # device controls set for the job (perf mode)
    attempts: tuple[Attempt, ...] = ()  # failed tries of retried steps, in order (run/retry.py)

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
        return {"status": self.status.value, "error": self.error, "blame": _enum_value(self.blame),
                "transport": self.transport, "target": self.target, "facts": dict(self.facts),
                "runner_key": self.runner_key, "controls": dict(self.controls),
                "attempts": [a.to_dict() for a in self.attempts],
                "models": {m.name: m.to_dict() for m in self.models}}

    @classmethod
    def from_dict(cls, name: str, data: Mapping[str, Any]) -> DeviceResult:
        return cls(name=name, transport=str(data.get("transport", "")), target=str(data.get("target", "")),
                   status=DeviceStatus(data["status"]), error=data.get("error"), blame=_opt_enum(Blame, data.get("blame")),
                   facts=dict(data.get("facts") or {}), runner_key=data.get("runner_key"),
                   controls=dict(data.get("controls") or {}),
                   attempts=tuple(Attempt.from_dict(a) for a in data.get("attempts") or ()),
                   models=tuple(ModelResult.from_dict(n, m) for n, m in (data.get("models") or {}).items()))


@dataclass(frozen=True)
class ModelArtifacts:
    """A lowered model as the job used it: where its program, ETRecord and references are."""

    name: str
    spec: str
    backend: str
    key: str  # export cache key (content hash of the model file, factory, backend, versions)
    pte: str
    etrecord: str | None = None
    inputs: str | None = None
    reference_outputs: str | None = None
    content_hash: str | None = None  # sha256 of the model's source file (.py or .pte), at run time
    git_commit: str | None = None  # the user's commit of that file, when it is in a git repository
    numerics_reference: str | None = None  # AOT intermediate outputs for `etfarm numerics`

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelArtifacts:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass(frozen=True)
class RunOptions:
    """How each device runs each model; recorded so a job can be repeated or resumed alike."""

    runs: int = 5
    iterations: int = 20
    warmup: int = 3
    run_timeout_s: float = 600.0
    wait_for_lock: bool = True
    lock_timeout_s: float | None = None  # give up waiting for a busy device after this long (None: wait)
    intermediate_outputs: bool = False
    debug_buffer_size: int = 16 << 20  # 0: sized from each model's ETRecord (profiles/debug_buffer.py)
    numerics: bool = False  # `--numerics`: intermediate outputs analysed per device (orchestrator/numerics)
    cpu_threads: int = 0
    untraced_runs: int = 1  # extra runs without the event tracer: end-to-end time and tracer overhead
    cooldown_s: float = 0.0  # pause before each run
    max_temp_c: float | None = None  # before each run, wait until the device is at most this hot
    order: RunOrder = RunOrder.INTERLEAVED  # how the models' process runs alternate on a device
    seed: int = 0  # of the interleaving shuffle

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["order"] = self.order.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunOptions:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "order" in values:
            values["order"] = RunOrder(values["order"])
        return cls(**values)


@dataclass(frozen=True)
class JobConfig:
    """What was asked for: enough to repeat or resume the job with the same settings.

    Serialised flat (`config.runs`, `config.devices`, ...) for people reading the manifest."""

    devices: tuple[str, ...]
    models: tuple[str, ...]
    backend: str
    options: RunOptions = field(default_factory=RunOptions)
    config_file: str | None = None
    scheduler: str | None = None  # a distributed run (`--scheduler`): where its devices were; resumed there

    def to_dict(self) -> dict[str, Any]:
        return {"devices": list(self.devices), "models": list(self.models), "backend": self.backend,
                "config_file": self.config_file, "scheduler": self.scheduler, **self.options.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobConfig:
        return cls(devices=tuple(data.get("devices", ())), models=tuple(data.get("models", ())),
                   backend=str(data.get("backend", "")), options=RunOptions.from_dict(data),
                   config_file=data.get("config_file"), scheduler=data.get("scheduler"))


@dataclass(frozen=True)
class Job:
    """A whole `etfarm run`: settings, versions, models, and every device's results."""

    run_id: str
    status: JobStatus
    started: str
    config: JobConfig
    finished: str | None = None
    versions: Mapping[str, str] = field(default_factory=dict)
    host: Mapping[str, str] = field(default_factory=dict)
    models: tuple[ModelArtifacts, ...] = ()
    devices: tuple[DeviceResult, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def device(self, name: str) -> DeviceResult | None:
        return next((d for d in self.devices if d.name == name), None)

    def model_artifacts(self, name: str) -> ModelArtifacts | None:
        return next((m for m in self.models if m.name == name), None)

    def with_device(self, result: DeviceResult) -> Job:
        devices = [result if d.name == result.name else d for d in self.devices]
        if self.device(result.name) is None:
            devices.append(result)
        return replace(self, devices=tuple(devices))

    def results(self) -> Iterable[tuple[DeviceResult, ModelResult]]:
        """Every (device, model) pair that has a result, in job order."""
        for device in self.devices:
            for model in device.models:
                yield device, model

    def to_dict(self) -> dict[str, Any]:
        return {"schema_version": self.schema_version, "run_id": self.run_id, "status": self.status.value,
                "started": self.started, "finished": self.finished, "config": self.config.to_dict(),
                "versions": dict(self.versions), "host": dict(self.host),
                "models": {m.name: m.to_dict() for m in self.models},
                "devices": {d.name: d.to_dict() for d in self.devices}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "manifest") -> Job:
        version = data.get("schema_version")
        if not isinstance(version, int):
            raise DataError(f"{source}: no schema_version: not an etfarm manifest, or written by etfarm 0.1")
        if version > SCHEMA_VERSION:
            raise DataError(f"{source}: schema version {version} is newer than this etfarm reads ({SCHEMA_VERSION}); "
                            "upgrade etfarm")
        try:
            return cls(run_id=str(data["run_id"]), status=JobStatus(data["status"]), started=str(data["started"]),
                       finished=data.get("finished"), config=JobConfig.from_dict(data.get("config") or {}),
                       versions=dict(data.get("versions") or {}), host=dict(data.get("host") or {}),
                       models=tuple(ModelArtifacts.from_dict(m) for m in (data.get("models") or {}).values()),
                       devices=tuple(DeviceResult.from_dict(n, d) for n, d in (data.get("devices") or {}).items()),
                       schema_version=version)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise DataError(f"{source}: malformed manifest ({type(exc).__name__}: {exc})") from None


def load_manifest(path: str | Path) -> Job:
    """The one reader of `manifest.json`: a run directory or the file itself."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: no such manifest (is this an etfarm run directory?)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read manifest: {exc}") from None
    if not isinstance(data, dict):
        raise DataError(f"{path}: not an etfarm manifest")
    return Job.from_dict(data, source=str(path))


def _opt_float(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _opt_int(value: Any) -> int | None:
    return None if value is None else int(value)


def _enum_value(value: StrEnum | None) -> str | None:
    return value.value if value is not None else None


def _opt_enum(kind: type[Blame], value: Any) -> Blame | None:
    return kind(value) if value is not None else None

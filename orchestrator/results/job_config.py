"""What a job was asked to do: its settings (`JobConfig`, `JobOptions`) and the models it used.

Part of the results model (results/model.py, which re-exports these): recorded in `manifest.json`
under `config` (flat: `config.runs`, `config.devices`, ...) and `models`, so a job can be repeated
or resumed with the same settings. Written and read by base/codec.py from the fields below.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from orchestrator.artifacts.recipes import RecipeInfo
from orchestrator.base.codec import FLAT, decode, encode
from orchestrator.results.limits import check_bounds


class RunOrder(StrEnum):
    """The order of a device's process runs (run/schedule.py): a setting of the job, so its record's."""

    INTERLEAVED = "interleaved"
    SEQUENTIAL = "sequential"
    ABBA = "abba"


@dataclass(frozen=True)
class LeftOut:
    """A configuration (a model under one export recipe) the job left out because its export, quantization or
    the host's reference run of its program failed (run/engine/sweep.py); the other configurations run. `reason` is
    the exporter's or the runtime's own message, in one line."""

    name: str  # the model's name at that configuration (`mobilenet_v2-int8-dynamic`)
    spec: str
    recipe: str
    reason: str

    @property
    def note(self) -> str:
        return f"{self.name} NOT EXPORTED: {self.reason}"


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
    recipe: RecipeInfo | None = None  # lowered with an export recipe (--recipe): which, quantized, calibration
    eager_outputs: str | None = None  # a recipe export: the fp32 eager model's outputs (accuracy per device)
    eager_reference: str | None = None  # a recipe export: its intermediate outputs (accuracy per layer)

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelArtifacts:
        return decode(cls, data)


@dataclass(frozen=True)
class JobOptions:
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
    # Sweeps (run/engine/sweep.py): a list makes each model one model per point, named after it ("-t2", "-p128", "-g64").
    thread_counts: tuple[int, ...] = ()  # --threads 1,2,4 (a single --threads N is cpu_threads)
    prompt_lens: tuple[int, ...] = ()  # LLMs: prompt tokens per generation (empty: the default)
    gen_lens: tuple[int, ...] = ()  # LLMs: generated tokens per generation (empty: the eager reference's, else 32)
    recipes: tuple[str, ...] = ()  # --recipe: export recipes, as written; several sweep ("-fp32", "-int8-static")
    energy: bool = False  # --energy: a phase per model reading the device's power sensor (run/energy/)
    energy_s: float = 10.0  # --energy-seconds: the executions of a phase last at least this long
    energy_phases: int = 3  # --energy-phases: repeated phases, for an interval

    def __post_init__(self) -> None:
        # Every count and duration bounded, whatever built it (command line, plan, manifest): results/limits.py.
        check_bounds({f.name: getattr(self, f.name) for f in fields(self)})

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobOptions:
        return decode(cls, data)


@dataclass(frozen=True)
class JobConfig:
    """What was asked for: enough to repeat or resume the job with the same settings.

    Serialised flat (`config.runs`, `config.devices`, ...) for people reading the manifest."""

    devices: tuple[str, ...]
    models: tuple[str, ...]
    backend: str = ""
    options: JobOptions = field(default_factory=JobOptions, metadata=FLAT)
    config_file: str | None = None
    scheduler: str | None = None  # a distributed run (`--scheduler`): where its devices were; resumed there
    names: tuple[str, ...] = ()  # each spec's model name, before a sweep names one model per point

    def to_dict(self) -> dict[str, Any]:
        return encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JobConfig:
        return decode(cls, data)

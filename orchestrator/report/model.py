"""The report model: everything a comparison report says, computed once, as frozen data.

`build.build_report` fills it from a run directory (the results model, stats.csv) and the
store's history; the renderers (`html`, `markdown`, `export`) only format it. Keeping every
number, verdict and flag here means the HTML page, the CI summary and the JSON say the same
thing, and a renderer can never disagree with another about what is unstable or how fast.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.numerics.model import NumericsReport
from orchestrator.store.history import HistoryPoint

if TYPE_CHECKING:
    from orchestrator.report.llm_section import LlmSection
    from orchestrator.report.memory import MemoryRow


@dataclass(frozen=True)
class Interval:
    """A confidence interval (low, high) at `level` (0.95 = 95 %)."""

    low: float
    high: float
    level: float


@dataclass(frozen=True)
class Flag:
    """Why a number should not be taken at face value: `kind` is short, `reason` a sentence."""

    kind: str  # "unstable", "partial", "failed", "verification"
    reason: str


@dataclass(frozen=True)
class DeviceLatency:
    """One model on one device: end-to-end latency, its spread, and how it compares."""

    device: str
    status: str  # the model's status on that device: ok / partial / failed
    runs: int  # traced process runs that produced samples
    samples: tuple[float, ...]  # every measured execution (traced runs), ms
    run_medians: tuple[float, ...]  # median of each traced process run, ms: the replication unit
    p50_ms: float | None
    p90_ms: float | None
    cv: float | None
    p90_over_p50: float | None
    untraced_p50_ms: float | None  # without the ETDump event tracer
    tracer_overhead: float | None  # 0.05 = the tracer adds 5 %
    load_p50_ms: float | None  # method load, median over traced runs
    verification: str  # pass / fail / skipped / none
    verification_detail: str
    ratio: float | None  # median of run medians, this device / the baseline's; None for the baseline itself
    ratio_ci: Interval | None
    fastest: bool
    flags: tuple[Flag, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class OpStat:
    """One event (operator or delegate kernel) of a model on one device."""

    block: str
    index: int
    name: str
    group: str  # the name without its instance suffix: "Convolution (NHWC, F32) IGEMM"
    p50_ms: float
    avg_ms: float
    share: float | None  # avg time / the method's avg execute time
    module_path: str
    op_types: str
    delegated: bool
    backend: str
    source_line: str = ""  # "model.py:28", from the ETRecord's stack trace
    covers: str = ""  # for delegate events: the module paths the delegate runs, ";"-separated


@dataclass(frozen=True)
class DeviceOps:
    """A device's slowest events for one model, and its time per op group."""

    device: str
    top: tuple[OpStat, ...]
    groups: tuple[tuple[str, float], ...]  # (group, avg ms per execution), biggest first; "other" last


@dataclass(frozen=True)
class OpRatioRow:
    """One event across devices: p50 per device and the ratio to the baseline's p50."""

    block: str
    index: int
    name: str
    module_path: str
    p50_ms: tuple[float | None, ...]  # in Report.devices order
    ratio: tuple[float | None, ...]


@dataclass(frozen=True)
class Chart:
    """A rendered chart: inline SVG text plus a file stem for formats that write it beside."""

    stem: str  # "tiny_cnn-latency": file name without extension
    title: str
    svg: str


@dataclass(frozen=True)
class HistoryRow:
    """One earlier run of a model: its end-to-end p50 per device (None: failed or not on that run)."""

    run_id: str
    started: str
    git_commit: str | None
    p50_ms: tuple[float | None, ...]  # in ModelSection.latency's device order
    status: tuple[str, ...]  # per device, "" when the device was not in that run


@dataclass(frozen=True)
class ModelSection:
    name: str
    backend: str
    latency: tuple[DeviceLatency, ...]  # in Report.devices order, devices without this model left out
    ops: tuple[DeviceOps, ...]
    op_ratios: tuple[OpRatioRow, ...]
    history: tuple[HistoryPoint, ...]  # oldest first
    history_rows: tuple[HistoryRow, ...] = ()  # the same, a row per run, newest first
    charts: tuple[Chart, ...] = ()

    @property
    def fastest(self) -> DeviceLatency | None:
        return next((d for d in self.latency if d.fastest), None)


@dataclass(frozen=True)
class DeviceFacts:
    """What a device was while it measured: from the job start and every run's device state."""

    device: str
    transport: str
    target: str
    status: str
    abi: str
    cores: str
    frequencies: str  # "cpu0-3 600-2400 MHz (cur 1800)" or "-"
    governor: str
    temperatures: str  # "cpu-thermal 41-47 °C over 6 runs" or "-"
    load: str
    kernel: str
    product: str  # Android model, or "-"
    error: str | None = None


@dataclass(frozen=True)
class Report:
    run_id: str
    status: str
    started: str
    finished: str | None
    devices: tuple[str, ...]
    baseline: str | None
    models: tuple[ModelSection, ...]
    facts: tuple[DeviceFacts, ...]
    versions: tuple[tuple[str, str], ...]
    settings: str  # "2 runs x 3 iterations, 1 warmup, 1 untraced run"
    methods: tuple[str, ...]  # how each figure was computed, stated in every format
    numerics: NumericsReport | None = None  # runs made with --numerics: which op diverges, on which device
    numerics_error: str | None = None  # why the numerics section is missing from such a run
    llm: tuple[LlmSection, ...] = ()  # models that generated: TTFT, tokens/s, memory, phases (report/llm_section.py)
    memory: tuple[MemoryRow, ...] = ()  # per model and device: peak RSS, PSS, planned, program (report/memory.py)

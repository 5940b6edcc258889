"""The report model: everything a run's report says, computed once, as frozen data.

`builders/report.py` fills it from a run directory (the results model, stats.csv) or the job in
memory, and the store's history; the pages (report/page/), the charts and the JSON and CSV export
(report/render/) only format it. Keeping every number, verdict and flag here means the HTML page,
the CI summary and the JSON say the same thing, and a renderer can never disagree with another
about what is unstable or how fast. Charts are not data: they are drawn from it for the formats
that show them (report/render/charts.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.numerics.model import NumericsReport
from orchestrator.profiles.delegation import Coverage
from orchestrator.profiles.op_identity import OpIdentity
from orchestrator.profiles.rollups import Rollup
from orchestrator.report.model.llm import LlmSection
from orchestrator.report.model.matrix import DeviceMatrix
from orchestrator.report.model.memory import MemoryRow
from orchestrator.report.model.quantized import RecipeGroup
from orchestrator.store.history import HistoryPoint


@dataclass(frozen=True)
class Interval:
    """A confidence interval (low, high) at `level` (0.95 = 95 %)."""

    low: float
    high: float
    level: float


@dataclass(frozen=True)
class Flag:
    """Why a number should not be taken at face value: `kind` is short, `reason` a sentence."""

    kind: str  # "unstable", "interfered", "throttled", "partial", "failed", "verification"
    reason: str


@dataclass(frozen=True)
class FlaggedRun:
    """A process run the calibration workload says was disturbed (run/calibration.py)."""

    label: str
    flag: str  # "interfered" / "throttled"
    slowdown: float | None  # its slower calibration against the job's fastest on that device: 0.41 = +41 %
    text: str  # as every page and the terminal word it: "run-2 interfered (calibration +41%)"


@dataclass(frozen=True)
class TracerOverhead:
    """What the ETDump event tracer costs: traced p50 / untraced p50 - 1, with its interval when enough
    untraced runs exist; otherwise it is marked unreliable and says why."""

    overhead: float | None
    interval: Interval | None  # of the overhead (ratio interval - 1)
    untraced_runs: int
    reliable: bool
    note: str  # "" when reliable; else why not ("1 untraced run: ...")
    # the figure cannot be told from noise: the interval holds 0, or (no interval) it is negative (a tracer only
    # adds work) or within the run-to-run spread of the traced runs; pages then say "within noise", not -13.6 %
    within_noise: bool = False


@dataclass(frozen=True)
class Versus:
    """The leading device against one other: how many times faster, and whether the interval says so."""

    other: str
    speedup: float  # other's p50 / the leader's p50: 1.35 = the leader is 1.35x faster
    interval: Interval | None
    clear: bool  # the whole interval lies above 1 + the practical margin


@dataclass(frozen=True)
class SpeedClaim:
    """What the report may claim about which device is fastest for a model (report/builders/claims.py)."""

    fastest: str | None  # claimed only when every comparison is clear
    leader: str | None  # the lowest p50, claimed or not
    leader_p50_ms: float | None
    versus: tuple[Versus, ...] = ()
    reason: str = ""  # why no device is called fastest, when none is


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
    cv: float | None  # std / mean of every execution (kept for scripts; the instability rule is robust, below)
    p90_over_p50: float | None
    untraced_p50_ms: float | None  # without the ETDump event tracer
    tracer_overhead: float | None  # 0.05 = the tracer adds 5 %
    load_p50_ms: float | None  # method load, median over the warm runs (the cold first one apart)
    verification: str  # pass / fail / skipped / none
    verification_detail: str
    ratio: float | None  # median of run medians, this device / the baseline's; None for the baseline itself
    ratio_ci: Interval | None
    fastest: bool
    flags: tuple[Flag, ...] = ()
    error: str | None = None
    within_spread: float | None = None  # a typical run's IQR / median (orchestrator/base/stats.py)
    between_spread: float | None = None  # IQR / median of the per-run medians (unflagged runs)
    tracer: TracerOverhead | None = None
    flagged_runs: tuple[FlaggedRun, ...] = ()
    cold_load_ms: float | None = None
    p50_ci: Interval | None = None  # the p50's own bootstrap interval over process runs (builders/ratios.py)
    first_execution_ms: float | None = None  # the first execution in a fresh process, p50 over process runs


@dataclass(frozen=True)
class OpStat:
    """One event (operator or delegate kernel) of a model on one device."""

    block: str
    index: int
    name: str
    group: str  # the name without its instance suffix: "Convolution (NHWC, F32) IGEMM"
    p50_ms: float
    avg_ms: float
    share: float | None  # avg time / the method's avg execute time; None when under the timer's resolution
    module_path: str
    op_types: str
    delegated: bool
    backend: str
    source_line: str = ""  # "model.py:28", from the ETRecord's stack trace
    covers: str = ""  # for delegate events: the module paths the delegate runs, ";"-separated
    kernel: str = ""  # a delegate kernel: "mapped" (module_path is its own) or "unmapped"; "" otherwise
    kernel_note: str = ""  # how it maps (fused ops), or why it is not mapped
    below_resolution: bool = False  # mean and p50 under the timer's resolution: shown as such, no share
    op: str = ""  # the op's identity as people read it (`features.3 convolution`: profiles/op_identity.py)
    op_key: OpIdentity | None = None  # the key that joins this op across devices


@dataclass(frozen=True)
class DeviceOps:
    """A device's slowest events for one model, and its time per op group."""

    device: str
    top: tuple[OpStat, ...]
    groups: tuple[tuple[str, float], ...]  # (group, avg ms per execution), biggest first; "other" last


@dataclass(frozen=True)
class OpRatioRow:
    """One op of the user's model across devices (joined by its identity, profiles/op_identity.py): p50 per device,
    the ratio to the baseline's p50 with its interval, and each device's own name for the kernel that ran it."""

    block: str
    index: int  # the first device's
    name: str  # the op's identity, as people read it: `features.3 convolution`
    module_path: str
    p50_ms: tuple[float | None, ...]  # in ModelSection.latency's device order
    ratio: tuple[float | None, ...]
    below_resolution: tuple[bool, ...] = ()  # per device: its p50 is under the timer's resolution
    ratio_ci: tuple[Interval | None, ...] = ()  # per device: the ratio's interval over process runs (ratios.py)
    kernels: tuple[str, ...] = ()  # per device: its event's name (`Convolution (NHWC, PF32) IGEMM #2`), '' if none
    basis: str = ""  # how much the identity knows: model, delegate (a delegate call only), event (names only)


@dataclass(frozen=True)
class HistoryRow:
    """One earlier run of a model: its end-to-end p50 per device (None: failed or not on that run)."""

    run_id: str
    started: str
    git_commit: str | None
    p50_ms: tuple[float | None, ...]  # in ModelSection.latency's device order
    status: tuple[str, ...]  # per device, "" when the device was not in that run
    configuration: str = ""  # its series' configuration in a few words (run/configuration.py configuration_label)


@dataclass(frozen=True)
class ModelSection:
    name: str
    backend: str
    latency: tuple[DeviceLatency, ...]  # in Report.devices order, devices without this model left out
    ops: tuple[DeviceOps, ...]
    op_ratios: tuple[OpRatioRow, ...]
    history: tuple[HistoryPoint, ...]  # oldest first
    history_rows: tuple[HistoryRow, ...] = ()  # the same, a row per run, newest first
    claim: SpeedClaim | None = None
    rollups: tuple[Rollup, ...] = ()  # per device with op statistics: time by module subtree and by op type
    # what one "execution" is: a forward call, or an LLM's whole generation (prefill and every decode step), so each
    # unit says what it counts; an LLM's ops are per forward call (`op_unit`)
    unit: str = "execution"

    @property
    def op_unit(self) -> str:
        return "execution" if self.unit == "execution" else "forward call"

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
    trust: tuple[TrustNote, ...] = ()  # runs flagged or left out, the tracer's cost: why to (not) believe it
    colours: tuple[tuple[str, str], ...] = ()  # (device, colour): one colour per device in every chart
    llm: tuple[LlmSection, ...] = ()  # models that generated: TTFT, tokens/s, memory, phases (report/builders/llm.py)
    memory: tuple[MemoryRow, ...] = ()  # per model and device: peak RSS, PSS, planned, program (report/builders/memory.py)
    quantized: tuple[RecipeGroup, ...] = ()  # models under export recipes, side by side (report/builders/quantized.py)
    matrix: DeviceMatrix | None = None  # several devices: the device x model matrix (report/builders/matrix.py)
    emulated: tuple[str, ...] = ()  # devices that are emulations (qemu on a host): their timings are not hardware's
    delegation: tuple[Coverage, ...] = ()  # per model and device: time in the delegate, ops left outside it
    left_out: tuple[str, ...] = ()  # configurations the job left out (`<model> NOT EXPORTED: <reason>`)


@dataclass(frozen=True)
class TrustNote:
    """One thing the reader should know before believing a number: a disturbed run, a run left out of the
    statistics and why, the tracer's cost and whether it can be trusted, an unstable result."""

    device: str
    model: str
    kind: str  # "interfered", "throttled", "contended", "excluded", "tracer", "unstable", "partial"
    text: str

"""The numerics results as frozen data: what every renderer (text, Markdown, JSON, CSV, store) reads.

    NumericsReport ── ModelNumerics (one per device and model) ── OpGap (one per compared op)

Judgement (which ops cross the threshold, where divergence starts) is made once, by
`numerics.analyze`, and stored here; renderers only print it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from orchestrator.base.codec import SKIP, Layout, named
from orchestrator.numerics.metrics import Gap, Metric, worst

AGAINST_AOT = "aot"  # the eager/AOT reference captured at export time


@dataclass(frozen=True)
class OpGap:
    """One row of Inspector's `calculate_numeric_gap`, plus where the op comes from."""

    index: int  # position along the graph (Inspector's row order: the reference graph's order)
    aot_handle: tuple[int, ...] = field(metadata=named("aot_debug_handle"))
    runtime_handle: tuple[int, ...] = field(metadata=named("runtime_debug_handle"))
    aot_ops: tuple[str, ...]
    runtime_ops: tuple[str, ...]
    gaps: tuple[Gap, ...]  # one per output compared (Inspector's `gap` list)
    value: float  # the worst gap under the report's metric
    diverges: bool  # value crosses the threshold
    module_path: str | None = None  # innermost nn.Module of the op (nn_module_stack), e.g. "features.3"
    module_type: str | None = None
    source: str | None = None  # "file.py:line" of the model code that created the op
    stack_trace: str | None = field(default=None, metadata=SKIP)  # for the text report only

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)  # an SNR of identical outputs is infinite


@dataclass(frozen=True)
class Comparison:
    """One device's intermediate outputs against one reference: the AOT graph or another device."""

    against: str  # AGAINST_AOT or "device:<name>"
    ops: tuple[OpGap, ...] = ()
    runs: tuple[str, ...] = ()  # the runs compared; gaps are the worst over them
    error: str | None = None  # why this comparison could not be made
    worst_index: int | None = field(default=None, metadata=named("worst_op"))  # the worst gap under the report's metric

    # what it found, then its ops
    LAYOUT: ClassVar[Layout] = Layout(derived=(("diverging", "diverging_count"), ("first_divergence", "first_divergence_index")),
                                      order=("against", "runs", "error", "worst_op", "diverging", "first_divergence"))

    @property
    def diverging(self) -> tuple[OpGap, ...]:
        return tuple(op for op in self.ops if op.diverges)

    @property
    def first_divergence(self) -> OpGap | None:
        """Where along the graph divergence starts: the first op crossing the threshold."""
        return next((op for op in self.ops if op.diverges), None)

    @property
    def diverging_count(self) -> int:
        return len(self.diverging)

    @property
    def first_divergence_index(self) -> int | None:
        first = self.first_divergence
        return first.index if first else None


@dataclass(frozen=True)
class NumericsRow:
    """One compared op, flat: a numerics.csv line, and what a results store keeps (`NumericsReport.rows`)."""

    run_id: str
    device: str
    model: str
    against: str
    op_index: int
    aot_ops: str  # space-separated
    runtime_ops: str
    aot_debug_handle: str  # comma-separated
    runtime_debug_handle: str
    mse: float  # worst over the op's outputs and the runs
    l1: float
    snr: float
    diverges: bool
    module_path: str
    module_type: str
    source: str


@dataclass(frozen=True)
class ModelNumerics:
    """One model on one device: its comparisons and the final-output verification verdict."""

    device: str
    model: str
    comparisons: tuple[Comparison, ...] = ()
    verification: str | None = None  # ModelResult.verification.status, e.g. "pass"
    verification_detail: str | None = None
    runs_identical: bool | None = None  # every run logged bit-identical intermediate outputs
    error: str | None = None  # why nothing could be compared

    # its verdicts, then its comparisons
    LAYOUT: ClassVar[Layout] = Layout(derived=("diverges",), order=(
        "device", "model", "verification", "verification_detail", "runs_identical", "error", "diverges"))

    @property
    def diverges(self) -> bool:
        return any(c.diverging for c in self.comparisons)

    def comparison(self, against: str) -> Comparison | None:
        return next((c for c in self.comparisons if c.against == against), None)

    def rows(self, run_id: str = "") -> tuple[NumericsRow, ...]:
        return tuple(
            NumericsRow(run_id, self.device, self.model, c.against, op.index, " ".join(op.aot_ops), " ".join(op.runtime_ops),
                        ",".join(map(str, op.aot_handle)), ",".join(map(str, op.runtime_handle)),
                        worst(op.gaps, Metric.MSE), worst(op.gaps, Metric.L1), worst(op.gaps, Metric.SNR), op.diverges,
                        op.module_path or "", op.module_type or "", op.source or "")
            for c in self.comparisons for op in c.ops
        )


@dataclass(frozen=True)
class NumericsReport:
    """`etfarm numerics RUN`: every device and model of a run, judged with one metric and threshold."""

    run_id: str
    metric: Metric
    threshold: float
    reference_device: str | None
    models: tuple[ModelNumerics, ...] = field(default_factory=tuple)

    LAYOUT: ClassVar[Layout] = Layout(derived=("diverges", "incomplete", "diverging_devices"), order=(
        "run_id", "metric", "threshold", "reference_device", "diverges", "incomplete", "diverging_devices"))

    @property
    def diverges(self) -> bool:
        return any(m.diverges for m in self.models)

    def rows(self) -> tuple[NumericsRow, ...]:
        """Every compared op of every device and model: what `etfarm`'s results store can insert."""
        return tuple(row for m in self.models for row in m.rows(self.run_id))

    @property
    def incomplete(self) -> bool:
        """Something could not be compared (no debug buffer, no reference, a damaged file)."""
        return any(m.error or any(c.error for c in m.comparisons) for m in self.models)

    @property
    def diverging_devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.device for m in self.models if m.diverges))

"""What a comparison found: per op (`OpVerdict`), per (device, model) pair (`PairVerdict`) and over every pair
(`Comparison`, with the exit code and headline). compare.py makes them; renderers only print them
(report/terminal/verdicts.py, report/page/comparison.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.base.codec import FLAT, NAN_NULL, SKIP, Layout, named
from orchestrator.base.errors import EXIT_OK, Blame
from orchestrator.verdicts.accuracy import AccuracyVerdict
from orchestrator.verdicts.below import BelowThreshold
from orchestrator.verdicts.device_states import DeviceStates
from orchestrator.verdicts.figures import SideFigures
from orchestrator.verdicts.likeness import IncompleteSide, SettingDifference
from orchestrator.verdicts.llm_metrics import MetricVerdict
from orchestrator.verdicts.memory import MemoryVerdict
from orchestrator.verdicts.noise import NoiseFloor
from orchestrator.verdicts.statistics import (
    Estimate,
    Verdict,
    VerdictSettings,
    can_reach_significance,
    statistic_name,
)
from orchestrator.verdicts.trust import Load

EXIT_REGRESSION = 1
EXIT_UNJUDGED = 3  # measured, but some pair could not be judged (too noisy, or its sides under different load)

@dataclass(frozen=True)
class OpVerdict:
    event_block: str
    event_index: int
    event_name: str
    verdict: Verdict
    estimate: Estimate = field(metadata=FLAT)
    p_adjusted: float
    module_path: str = ""  # where the op is in the user's model (B's stats.csv; '' when unknown or the model itself)
    source_line: str = ""
    op: str = ""  # the op's identity, as people read it (`features.3 convolution`): what both sides were joined by
    op_basis: str = ""  # how much the identity knows (op_identity.py: model, delegate, event)
    detectable: float = field(default=math.nan, metadata=NAN_NULL)  # the smallest change its samples could detect
    blind: str | None = field(default=None, metadata=named("could_not_judge"))  # why not judged, when inconclusive
    # what the op's own samples said (regressed, improved) when the end to end's doubt held it back (trust.py)
    held: Verdict | None = None
    # A's and B's p50 and trimmed mean over the op's clean samples (what tables show; the estimate is the judging
    # statistic's, named by the comparison's `statistic`)
    figures: tuple[SideFigures | None, SideFigures | None] = field(default=(None, None), metadata=SKIP)

    # the estimate's keys after the op's own: one flat row per op (verdicts.json `pairs.*.ops`), then each side's
    # p50 and trimmed mean (`figures`, as a pair's)
    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True, derived=(("figures", "side_figures"),), order=(
        "event_block", "event_index", "event_name", "op", "op_basis", "verdict", "p_adjusted", "module_path",
        "source_line", "detectable", "could_not_judge", "held"))

    @property
    def side_figures(self) -> Figures:
        return Figures(*self.figures)


@dataclass(frozen=True)
class Contention:
    """A pair's contention as its JSON says it: A's and B's load (None: not measured), and the executions left out."""

    a: Load | None
    b: Load | None
    dropped_a: int
    dropped_b: int


@dataclass(frozen=True)
class Figures:
    """A's and B's p50 and trimmed mean, as a pair's JSON says them."""

    a: SideFigures | None
    b: SideFigures | None


_PAIR_KEYS = ("device", "model_a", "model_b", "verdict", "estimate", "threshold", "op_threshold", "regressed", "ops_skipped",
              "reason", "blame", "verification_failed", "source_a", "source_b", "noise_floor", "metrics",
              "settings_differ", "incomplete", "below_threshold", "series", "ops", "accuracy", "accuracy_dropped",
              "memory", "memory_grew", "detectable", "could_not_judge", "settle", "speed_states", "contention",
              "figures")


@dataclass(frozen=True)
class PairVerdict:
    """B against A for one device: end to end, then per op."""

    device: str
    model_a: str
    model_b: str
    verdict: Verdict
    estimate: Estimate | None = None
    threshold: float = 0.0
    op_threshold: float = 0.0
    ops: tuple[OpVerdict, ...] = ()
    ops_skipped: int = 0  # events too fast to time (median 0) or missing on one side
    reason: str | None = None  # why there is no data
    blame: Blame | None = None
    verification_failed: bool = False  # B's outputs did not match the reference
    source_a: str = ""  # run id(s) of A and B
    source_b: str = ""
    noise: NoiseFloor | None = field(default=None, metadata=named("noise_floor"))  # behind the thresholds, and whence
    dir_a: Path | None = field(default=None, metadata=SKIP)  # the run directories compared (structure diff, links)
    dir_b: Path | None = field(default=None, metadata=SKIP)
    metrics: tuple[MetricVerdict, ...] = ()  # an LLM's TTFT and decode tokens/s (llm_metrics.py)
    # settings A and B ran with differently: verdict settings-differ
    differences: tuple[SettingDifference, ...] = field(default=(), metadata=named("settings_differ"))
    incomplete: tuple[IncompleteSide, ...] = ()  # sides that are not whole (interrupted, partial)
    # a confident change end to end under the threshold (not a regression)
    below: BelowThreshold | None = field(default=None, metadata=named("below_threshold"))
    series: Any = None  # series.SeriesVerdict: the night against its series' reference (nightly only)
    accuracy: AccuracyVerdict | None = None  # B's accuracy against A's (a recipe's), judged on its own
    memory: MemoryVerdict | None = None  # B's peak RSS against A's (verdicts/memory.py), judged on its own
    # the smallest change end to end its samples could detect (trust.py)
    detectable: float = field(default=math.nan, metadata=NAN_NULL)
    # why it could not judge, when inconclusive ("too noisy: could see >= 14 %")
    blind: str | None = field(default=None, metadata=named("could_not_judge"))
    settle: str | None = None  # the command that would settle it (`etfarm run --ab ...`), when inconclusive
    # A's and B's contention (None: not measured), and the contended executions left out of their statistics
    loads: tuple[Load | None, Load | None] = field(default=(None, None), metadata=SKIP)
    dropped: tuple[int, int] = field(default=(0, 0), metadata=SKIP)
    # A's and B's p50 and trimmed mean
    figures: tuple[SideFigures | None, SideFigures | None] = field(default=(None, None), metadata=SKIP)
    # what the device's stored jobs of the model and the sides showed of its speed states (`etfarm compare` only)
    states: DeviceStates | None = field(default=None, metadata=named("speed_states"))

    LAYOUT: ClassVar[Layout] = Layout(derived=("regressed", "accuracy_dropped", "memory_grew", "contention",
                                               ("figures", "side_figures")), order=_PAIR_KEYS)

    @property
    def unjudged(self) -> bool:
        """Measured, yet not judged: end to end inconclusive, or a night whose series could not say whether its level
        moved beyond the threshold (the night or compare exits 3 unless something regressed: never green over it)."""
        return self.verdict is Verdict.INCONCLUSIVE or self.series_unjudged

    @property
    def series_unjudged(self) -> bool:
        return self.series is not None and self.series.verdict is Verdict.INCONCLUSIVE

    @property
    def unjudged_reason(self) -> str:
        """Why it was not judged: the pair's own reason (trust.py), else its series'."""
        if self.blind:
            return self.blind
        if self.verdict is not Verdict.INCONCLUSIVE and self.series_unjudged:
            return f"its series: {self.series.describe()}"  # type: ignore[union-attr]
        return "inconclusive"

    @property
    def accuracy_dropped(self) -> bool:
        return self.accuracy is not None and self.accuracy.dropped

    @property
    def memory_grew(self) -> bool:
        return self.memory is not None and self.memory.grew

    @property
    def model(self) -> str:
        return self.model_b if self.model_a == self.model_b else f"{self.model_a} -> {self.model_b}"

    @property
    def regressed_ops(self) -> tuple[OpVerdict, ...]:
        return tuple(o for o in self.ops if o.verdict is Verdict.REGRESSED)

    @property
    def regressed(self) -> bool:
        """A regression end to end, in any op or in an LLM metric (never for a pair without data)."""
        return (self.verdict is Verdict.REGRESSED or bool(self.regressed_ops)
                or any(m.verdict is Verdict.REGRESSED for m in self.metrics)
                or (self.series is not None and self.series.regressed))

    @property
    def contention(self) -> Contention:
        return Contention(*self.loads, *self.dropped)

    @property
    def side_figures(self) -> Figures:
        return Figures(*self.figures)


@dataclass(frozen=True)
class Comparison:
    """Every pair's verdict, B against A, with the settings that made them."""

    a: str
    b: str
    settings: VerdictSettings
    pairs: tuple[PairVerdict, ...] = field(default_factory=tuple)

    # what the comparison found, then its pairs
    LAYOUT: ClassVar[Layout] = Layout(
        last=("pairs",), derived=("statistic", "regressed", "headline", ("could_not_judge", "unjudged_count"),
                                  "accuracy_dropped", "memory_grew", "exit_code"),
        order=("a", "b", "settings", "statistic", "regressed", "headline", "could_not_judge", "accuracy_dropped",
               "memory_grew", "exit_code"))

    @property
    def statistic(self) -> str:
        """What each estimate's median_a_ms / median_b_ms is (not a report's p50: an estimator of its own)."""
        return statistic_name(self.settings.center)

    @property
    def regressed(self) -> bool:
        return any(p.regressed for p in self.pairs)

    @property
    def verification_failed(self) -> bool:
        return any(p.verification_failed for p in self.pairs)

    @property
    def accuracy_dropped(self) -> bool:
        return any(p.accuracy_dropped for p in self.pairs)

    @property
    def memory_grew(self) -> bool:
        return any(p.memory_grew for p in self.pairs)

    @property
    def no_data(self) -> tuple[PairVerdict, ...]:
        return tuple(p for p in self.pairs if p.verdict is Verdict.NO_DATA)

    @property
    def complete(self) -> bool:
        """Every pair was measured (no `no-data`)."""
        return not self.no_data

    @property
    def inconclusive(self) -> bool:
        return any(p.verdict is Verdict.INCONCLUSIVE for p in self.pairs)

    @property
    def unjudged(self) -> tuple[PairVerdict, ...]:
        """Pairs measured but not judged (inconclusive end to end): the comparison cannot say "no regression"."""
        return tuple(p for p in self.pairs if p.unjudged)

    @property
    def unjudged_count(self) -> int:
        return len(self.unjudged)

    @property
    def exit_code(self) -> int:
        """1 a regression (or B's outputs wrong, its accuracy dropped or its memory grew); else 3 when a pair could not
        be judged (inconclusive: trust.py says why); else 0."""
        if self.regressed or self.verification_failed or self.accuracy_dropped or self.memory_grew:
            return EXIT_REGRESSION
        return EXIT_UNJUDGED if self.unjudged else EXIT_OK

    @property
    def too_few_runs(self) -> list[str]:
        """Devices where a pair has too few runs for the test ever to be significant (statistics.py
        `can_reach_significance`, from its own run counts): its verdicts can only be unchanged or inconclusive."""
        s = self.settings
        return sorted({p.device for p in self.pairs if p.estimate is not None
                       and not can_reach_significance(p.estimate.runs_a, p.estimate.runs_b, s.center, s.alpha)})

    @property
    def headline(self) -> str:
        """One line: what the comparison found; never "no regression" over a pair it could not judge, nor over pairs
        that had nothing to be compared with (a plan's first night)."""
        regressed = sum(1 for p in self.pairs if p.regressed)
        blind = len(self.unjudged)
        new = sum(1 for p in self.pairs if p.verdict is Verdict.NEW)
        parts = [f"{regressed} regressed"] if regressed else []
        parts += [f"could not judge {blind} of {len(self.pairs)} pair(s)"] if blind else []
        if new and new == len(self.pairs) and not parts:
            return f"no baseline yet for {new} pair(s): this run becomes it"
        parts = parts or ["no regression"]
        return "; ".join(parts + ([f"no baseline yet for {new} of {len(self.pairs)} pair(s)"] if new else []))

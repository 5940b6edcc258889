"""What a comparison found: per op (`OpVerdict`), per (device, model) pair (`PairVerdict`) and over every pair
(`Comparison`, with the exit code and headline). compare.py makes them; renderers only print them
(report/terminal/verdicts.py, report/page/comparison.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from orchestrator.base.codec import FLAT, NAN_NULL, Layout, encode, named
from orchestrator.base.errors import EXIT_OK, Blame
from orchestrator.verdicts.accuracy import AccuracyVerdict
from orchestrator.verdicts.below import BelowThreshold
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

    # the estimate's keys after the op's own: one flat row per op (verdicts.json `pairs.*.ops`)
    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True, order=(
        "event_block", "event_index", "event_name", "op", "op_basis", "verdict", "p_adjusted", "module_path",
        "source_line", "detectable", "could_not_judge"))


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


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
    noise: NoiseFloor | None = None  # the noise floor behind `threshold`/`op_threshold`, and whence
    dir_a: Path | None = None  # the run directories compared (for the structure diff and links; not serialised)
    dir_b: Path | None = None
    metrics: tuple[MetricVerdict, ...] = ()  # an LLM's TTFT and decode tokens/s (llm_metrics.py)
    differences: tuple[SettingDifference, ...] = ()  # settings A and B ran with differently: verdict settings-differ
    incomplete: tuple[IncompleteSide, ...] = ()  # sides that are not whole (interrupted, partial)
    below: BelowThreshold | None = None  # a confident change end to end under the threshold (not a regression)
    series: Any = None  # series.SeriesVerdict: the night against its series' reference (nightly only)
    accuracy: AccuracyVerdict | None = None  # B's accuracy against A's (a recipe's), judged on its own
    memory: MemoryVerdict | None = None  # B's peak RSS against A's (verdicts/memory.py), judged on its own
    detectable: float = math.nan  # the smallest change end to end its samples could detect (trust.py)
    blind: str | None = None  # why it could not judge, when inconclusive ("too noisy: could see >= 14 %")
    settle: str | None = None  # the command that would settle it (`etfarm run --ab ...`), when inconclusive
    loads: tuple[Load | None, Load | None] = (None, None)  # A's and B's contention (None: not measured)
    dropped: tuple[int, int] = (0, 0)  # contended executions left out of A's and B's statistics
    figures: tuple[SideFigures | None, SideFigures | None] = (None, None)  # A's and B's p50 and trimmed mean

    @property
    def unjudged(self) -> bool:
        """Measured, yet not judged: end to end inconclusive (the night or compare exits 3 unless something regressed)."""
        return self.verdict is Verdict.INCONCLUSIVE

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

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "model_a": self.model_a, "model_b": self.model_b, "verdict": self.verdict.value,
                "estimate": encode(self.estimate) if self.estimate else None, "threshold": self.threshold,
                "op_threshold": self.op_threshold, "regressed": self.regressed, "ops_skipped": self.ops_skipped,
                "reason": self.reason, "blame": self.blame.value if self.blame else None,
                "verification_failed": self.verification_failed, "source_a": self.source_a,
                "source_b": self.source_b, "noise_floor": self.noise.to_dict() if self.noise else None,
                "metrics": [m.to_dict() for m in self.metrics],
                "settings_differ": [encode(d) for d in self.differences],
                "incomplete": [encode(i) for i in self.incomplete],
                "below_threshold": encode(self.below) if self.below else None,
                "series": self.series.to_dict() if self.series is not None else None, "ops": [encode(o) for o in self.ops],
                "accuracy": encode(self.accuracy) if self.accuracy else None, "accuracy_dropped": self.accuracy_dropped,
                "memory": encode(self.memory) if self.memory else None, "memory_grew": self.memory_grew,
                "detectable": _finite(self.detectable), "could_not_judge": self.blind, "settle": self.settle,
                "contention": {"a": encode(self.loads[0]) if self.loads[0] else None,
                               "b": encode(self.loads[1]) if self.loads[1] else None,
                               "dropped_a": self.dropped[0], "dropped_b": self.dropped[1]},
                "figures": {"a": encode(self.figures[0]) if self.figures[0] else None,
                            "b": encode(self.figures[1]) if self.figures[1] else None}}


@dataclass(frozen=True)
class Comparison:
    """Every pair's verdict, B against A, with the settings that made them."""

    a: str
    b: str
    settings: VerdictSettings
    pairs: tuple[PairVerdict, ...] = field(default_factory=tuple)

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
        """One line: what the comparison found; never "no regression" over a pair it could not judge."""
        regressed = sum(1 for p in self.pairs if p.regressed)
        blind = len(self.unjudged)
        parts = [f"{regressed} regressed"] if regressed else []
        parts += [f"could not judge {blind} of {len(self.pairs)} pair(s)"] if blind else []
        return "; ".join(parts) if parts else "no regression"

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "settings": encode(self.settings),
                # what each estimate's median_a_ms / median_b_ms is (not a report's p50: an estimator of its own)
                "statistic": statistic_name(self.settings.center), "regressed": self.regressed,
                "headline": self.headline, "could_not_judge": len(self.unjudged),
                "accuracy_dropped": self.accuracy_dropped, "memory_grew": self.memory_grew, "exit_code": self.exit_code,
                "pairs": [p.to_dict() for p in self.pairs]}

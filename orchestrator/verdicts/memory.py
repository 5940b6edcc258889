"""`memory-grew`, a verdict of its own (issue 39): B's peak RSS beyond A's by more than a threshold.

A model's peak resident memory (results/footprint.py: the median run's VmHWM, whose owners explain it) is
nearly deterministic for a given program, runtime and device, so B against A needs no interval: B
`memory-grew` when its peak exceeds A's by more than `memory_threshold` (10 % unless the plan or
`compare` says otherwise). It fails `compare` and a night (exit 1) as a latency regression does, and the
owner that grew most is named. Between sides of different settings (another recipe) nothing is judged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from orchestrator.base.codec import Layout, named
from orchestrator.results.footprint import OWNERS, ModelMemory

DEFAULT_MEMORY_THRESHOLD = 0.10


@dataclass(frozen=True)
class MemoryVerdict:
    peak_a: int = field(metadata=named("peak_rss_bytes_a"))
    peak_b: int = field(metadata=named("peak_rss_bytes_b"))
    threshold: float
    grew: bool
    reason: str

    @property
    def ratio(self) -> float:
        return self.peak_b / self.peak_a

    LAYOUT: ClassVar[Layout] = Layout(derived=("ratio",), raw_floats=True, order=(
        "peak_rss_bytes_a", "peak_rss_bytes_b", "ratio", "threshold", "grew", "reason"))


def memory_verdict(a: ModelMemory | None, b: ModelMemory | None,
                   threshold: float = DEFAULT_MEMORY_THRESHOLD) -> MemoryVerdict | None:
    """None when either side has no memory by owner (an older run, a failed one)."""
    if a is None or b is None or not a.peak_rss_bytes or not b.peak_rss_bytes:
        return None
    ratio = b.peak_rss_bytes / a.peak_rss_bytes
    grew = ratio > 1.0 + threshold
    owner, delta = max(((name, getattr(b.by_owner, name) - getattr(a.by_owner, name)) for name in OWNERS),
                       key=lambda item: item[1])
    change = f"peak RSS {_mib(a.peak_rss_bytes)} -> {_mib(b.peak_rss_bytes)} ({ratio - 1:+.1%})"
    reason = (f"memory grew: {change}, beyond {threshold:.0%}; most in {owner} (+{_mib(delta)})" if grew
              else f"memory held: {change}")
    return MemoryVerdict(a.peak_rss_bytes, b.peak_rss_bytes, threshold, grew, reason)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f} MiB"

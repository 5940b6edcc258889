"""What a verdict statistic is, and the registry of them (the package's modules register themselves).

A statistic is a side's center over its per-run medians (the replication unit is the process run:
statistics.py). It says how it is named (`name`: --center and plans; `label`: columns, sentences and JSON; `help`:
its part of --center's help; `method`: the legend's sentence), how it reduces per-run medians (`of_medians`, and
`resampled` for every bootstrap replicate at once), which per-run medians the rank test compares (`tested`), and
may replace the shared bootstrap estimate and rank test with its own (`estimates`, `significance_runs`,
`can_reach`: fast_state.py does) or hand each pair to another statistic (`delegates`: auto.py does). numpy is
imported inside the methods: light commands never pay for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from orchestrator.verdicts.estimates import Estimate, RunSamples


class CenterStatistic:
    """One verdict statistic; a subclass registered with `@register` is a choice of --center."""

    name: ClassVar[str]  # --center's value and a plan's `center:`
    label: ClassVar[str]  # the statistic as columns, sentences and JSON name it (never a report's p50)
    help: ClassVar[str]  # its part of --center's help
    order: ClassVar[int]  # its place among the choices (`check_center` lists them so)
    help_order: ClassVar[int]  # its place in --center's help
    described: ClassVar[str] = ""  # the legend's name of it ("mean of per-run medians")
    tested_described: ClassVar[str] = "per-run medians"  # the legend's name of what the rank test compares

    def of_medians(self, medians: Any) -> float:
        """A side's statistic from its per-run medians (a 1-d float64 array, at least one)."""
        raise NotImplementedError

    def resampled(self, medians: Any) -> Any:
        """(ops, runs, resamples) bootstrap medians -> (ops, resamples): each replicate's statistic."""
        raise NotImplementedError

    def tested(self, medians: list[float]) -> list[float]:
        """The per-run medians (sorted ascending) the rank test compares: all of them unless the statistic says."""
        return medians

    def method(self, confidence: float) -> str:
        """The legend's sentence: what the ratio, its interval and its p-value are."""
        return (f"ratio B/A of the {self.described}, {confidence:.0%} CI by hierarchical bootstrap over process runs, "
                f"p from Mann-Whitney U on {self.tested_described}")

    def run_median(self, runs: RunSamples) -> float:
        """A side's statistic from its process runs' samples."""
        import numpy as np

        from orchestrator.verdicts.estimates import run_medians

        return self.of_medians(np.array(run_medians(runs)))

    def delegates(self, pairs: Sequence[tuple[RunSamples, RunSamples]]) -> list[CenterStatistic]:
        """The statistic that judges each pair: itself, unless it hands pairs to others (auto.py does)."""
        return [self] * len(pairs)

    def estimates(self, pairs: Sequence[tuple[RunSamples, RunSamples]], confidence: float,
                  interleaved: bool = False) -> list[Estimate | None] | None:
        """Its own estimates of `pairs` (`interleaved`: the sides ran taking turns in the same jobs); None: the
        shared bootstrap and rank test (statistics.estimate_many)."""
        return None

    def significance_runs(self, alpha: float) -> int | None:
        """The fewest runs a side for a significant test, when its own test says; None: the shared rank rule."""
        return None

    def can_reach(self, runs_a: int, runs_b: int, alpha: float) -> bool | None:
        """Whether these run counts could give p < alpha under its own test; None: the shared rank rule."""
        return None


_REGISTRY: dict[str, CenterStatistic] = {}


def register(cls: type[CenterStatistic]) -> type[CenterStatistic]:
    """Class decorator: the statistic becomes a choice (one name, one statistic)."""
    if cls.name in _REGISTRY:
        raise ValueError(f"verdict statistic {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def unregister(name: str) -> None:
    """Remove a statistic (tests that register one of their own)."""
    _REGISTRY.pop(name, None)


def registered() -> list[CenterStatistic]:
    """Every statistic, in the order of the choices."""
    return sorted(_REGISTRY.values(), key=lambda s: (s.order, s.name))


def find(name: str) -> CenterStatistic | None:
    return _REGISTRY.get(str(name))

"""`fast-state`: the fast state's level, speed states modelled (states.py).

Which state each run landed in, B/A within the fast state with a t interval on the spread within states, and an
interval spanning every reading when a side may have missed the fast state. It was the default, measured best on one
quiet VM (benchmarks/README.md "Verdicts: the statistics and the nights"); on the noise corpus of issue 37 (five
environments, real jobs) its interval missed the truth in up to half of the pairs, so `mean` is the default now
(docs/guide/trust.md). Kept for old plans; it computes as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from orchestrator.verdicts.centers.base import CenterStatistic, register
from orchestrator.verdicts.estimates import Estimate, RunSamples, run_medians


@register
class FastState(CenterStatistic):
    name = "fast-state"
    label = "fast-state level"
    help = "'fast-state' (speed states modelled, fitted to one quiet VM: coverage 50-94 % on the corpus; kept for old plans)"
    order = 2
    help_order = 1

    def of_medians(self, medians: Any) -> float:
        from orchestrator.verdicts.states import states_of

        found = states_of([float(m) for m in medians])
        return math.exp(found.levels[0]) if found is not None else math.nan

    def resampled(self, medians: Any) -> Any:  # its interval is the states' (estimates), never a bootstrap
        raise NotImplementedError("fast-state estimates by its states, not by the bootstrap")

    def method(self, confidence: float) -> str:
        return (f"ratio B/A of the fast state's level (each process run's median assigned to a speed state), "
                f"{confidence:.0%} CI and p from Student's t on the spread within states")

    def estimates(self, pairs: Sequence[tuple[RunSamples, RunSamples]], confidence: float,
                  interleaved: bool = False) -> list[Estimate | None]:
        return [_state_estimate(a, b, confidence, interleaved) for a, b in pairs]

    def significance_runs(self, alpha: float) -> int:
        """Its t test (states.py) needs a spread to measure: two runs a side (the spread is floored, so a large
        effect is significant with one degree of freedom)."""
        return 2

    def can_reach(self, runs_a: int, runs_b: int, alpha: float) -> bool:
        return runs_a >= 1 and runs_b >= 1 and runs_a + runs_b >= 3  # one degree of freedom suffices


def _state_estimate(a: RunSamples, b: RunSamples, confidence: float, interleaved: bool) -> Estimate | None:
    """B/A within the fast state (states.py); None when a side has no positive per-run median."""
    from orchestrator.verdicts.states import compare_states, states_of

    states_a = states_of(run_medians(a))
    states_b = states_of(run_medians(b))
    if states_a is None or states_b is None:
        return None
    found = compare_states(states_a, states_b, confidence, interleaved)
    return Estimate(ratio=found.ratio, ci_low=found.ci_low, ci_high=found.ci_high, p_value=found.p_value,
                    runs_a=states_a.runs, runs_b=states_b.runs, median_a_ms=found.level_a_ms,
                    median_b_ms=found.level_b_ms, states_a=states_a.describe(), states_b=states_b.describe(),
                    state_note=found.note)

"""A change measured with confidence under the threshold is said, in the table, the page's words and the JSON
(issue 32, item 4), on recorded real jobs (fixtures/two_state_jobs.npz, see test_states.py)."""

from __future__ import annotations

from orchestrator.base.codec import encode
from orchestrator.report.escape import md_text
from orchestrator.report.page.comparison import _unlike_clause
from orchestrator.report.terminal.verdicts import verdict_markdown, verdict_table
from orchestrator.verdicts.compare import Comparison, Side, compare_sides
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import Verdict, VerdictSettings
from tests.unit.verdicts.test_states import jobs


def side(runs: list, source: str, contended: int = 0) -> Side:
    """Recorded runs as a side; `contended`: how many of each run's executions waited for a CPU."""
    return Side(source, "pinned", "mlp", tuple(
        SideRun(f"run-{k}", tuple(map(float, r)), None, clean=(False,) * contended + (True,) * (len(r) - contended))
        for k, r in enumerate(runs)))


def test_five_percent_more_layers_is_reported_slower_below_the_threshold() -> None:
    settings = VerdictSettings(center="fast-state")
    pair = compare_sides(side(jobs("base")[3], "base"), side(jobs("p5")[0], "p5"), settings, per_op=False)
    assert pair.verdict is Verdict.INCONCLUSIVE and not pair.regressed
    assert pair.below is not None and pair.below.direction == "slower" and pair.below.ci_low > 1.0
    words = pair.below.describe()
    assert words.startswith(f"{(pair.estimate.ratio - 1) * 100:.1f} % slower [") and "the 5% threshold" in words
    assert encode(pair)["below_threshold"]["text"] == words
    comparison = Comparison("base", "p5", settings, (pair,))
    table = verdict_table(comparison)
    assert "inconclusive (slower, below threshold); near the 5% threshold" in table and "BELOW THE THRESHOLD" in table and words in table
    assert md_text(words) in verdict_markdown(comparison) and words in "".join(map(str, _unlike_clause(pair)))


def test_the_same_model_has_nothing_below_the_threshold_to_report() -> None:
    pair = compare_sides(side(jobs("base")[3], "a"), side(jobs("base")[4], "b"), VerdictSettings(center="fast-state"),
                         per_op=False)
    assert pair.below is None and encode(pair)["below_threshold"] is None


def test_a_change_clearly_beyond_the_threshold_held_back_for_load_is_not_called_below_it() -> None:
    """Live, a 10x slower program measured under another load than its baseline read "inconclusive ... BELOW THE
    THRESHOLD: 946 % slower, not clearly beyond the 5% threshold". Held back it may be; below the threshold it is not."""
    base = jobs("base")[3]
    slower = [[3.0 * v for v in run] for run in jobs("base")[4]]
    quiet, busy = side(base, "a"), side(slower, "b", contended=len(slower[0]) // 2)
    settings = VerdictSettings(center="fast-state")
    pair = compare_sides(quiet, busy, settings, per_op=False)
    assert pair.verdict is Verdict.INCONCLUSIVE and pair.blind is not None and "different load" in pair.blind
    assert pair.estimate is not None and pair.estimate.ci_low > 1.0 + pair.threshold and pair.estimate.p_value < 0.05
    assert pair.below is None and encode(pair)["below_threshold"] is None
    assert "BELOW THE THRESHOLD" not in verdict_table(Comparison("a", "b", settings, (pair,)))
    # the same sides under one load: regressed, as seen
    assert compare_sides(quiet, side(slower, "b"), settings, per_op=False).verdict is Verdict.REGRESSED

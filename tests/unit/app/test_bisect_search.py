"""The bisect's search rule on recorded probe outcomes: halving, skips, noise, budget, an interrupt."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from orchestrator.app.bisect_search import Outcome, Reason, Step, Stop, search


def prober(outcomes: Sequence[Outcome]) -> tuple[list[int], object]:
    """A probe answering from `outcomes` (index -> outcome), recording which indices it was asked."""
    asked: list[int] = []

    def probe(index: int) -> Step:
        asked.append(index)
        return Step(f"sha{index}", f"commit {index}", outcomes[index], outcomes[index].value, measured=True)

    return asked, probe


def first_bad(count: int, culprit: int) -> list[Outcome]:
    return [Outcome.SLOWER if i >= culprit else Outcome.NOT_SLOWER for i in range(count)]


@pytest.mark.parametrize("count", [1, 2, 3, 8, 9, 64, 100])
def test_every_culprit_is_found_in_log2_probes(count: int) -> None:
    for culprit in range(count):
        asked, probe = prober(first_bad(count, culprit))
        found = search(count, probe)
        assert found.culprit == culprit and found.reason is Reason.FOUND and found.exit_code == 0
        # BAD first, then one probe per halving
        assert asked[0] == count - 1 and len(asked) <= 1 + max(1, count - 1).bit_length()


def test_bad_not_slower_is_no_regression() -> None:
    asked, probe = prober([Outcome.SLOWER, Outcome.NOT_SLOWER])
    found = search(2, probe)
    assert found.culprit is None and found.reason is Reason.NO_REGRESSION and found.exit_code == 1 and asked == [1]


def test_bad_undecided_is_too_noisy() -> None:
    _, probe = prober([Outcome.NOT_SLOWER, Outcome.UNDECIDED])
    found = search(2, probe)
    assert found.reason is Reason.TOO_NOISY and found.exit_code == 3


def test_a_skipped_commit_is_stepped_around() -> None:
    outcomes = first_bad(9, 7)
    outcomes[3] = Outcome.SKIPPED  # the first middle probed
    asked, probe = prober(outcomes)
    found = search(9, probe)
    assert found.culprit == 7 and asked[:3] == [8, 3, 4]  # then the untried commit nearest the middle


def test_culprit_among_skipped_commits_is_named_as_suspects() -> None:
    # 3 and 4 cannot be built; 5 is the first slower: the culprit is 3, 4 or 5
    outcomes = first_bad(8, 3)
    outcomes[3] = outcomes[4] = Outcome.SKIPPED
    _, probe = prober(outcomes)
    found = search(8, probe)
    assert found.culprit is None and found.reason is Reason.ALL_SKIPPED and found.suspects == (3, 4, 5)
    assert found.exit_code == 3


def test_an_inconclusive_step_between_is_too_noisy() -> None:
    outcomes = first_bad(4, 2)
    outcomes[1] = Outcome.UNDECIDED
    _, probe = prober(outcomes)
    found = search(4, probe)
    assert found.reason is Reason.TOO_NOISY and found.suspects == (1, 2)


def test_budget_stops_the_search_with_the_range_left() -> None:
    asked, probe = prober(first_bad(64, 40))
    found = search(64, probe, budget=3, measured=lambda: len(asked))
    assert found.reason is Reason.BUDGET and len(asked) == 3 and found.exit_code == 3
    assert 40 in found.suspects and len(found.suspects) <= 16


def test_a_stop_keeps_the_steps_so_far() -> None:
    asked: list[int] = []

    def probe(index: int) -> Step:
        asked.append(index)
        if len(asked) == 2:
            raise Stop("interrupted")
        return Step("s", "x", Outcome.SLOWER, "regressed")

    found = search(10, probe)
    assert found.reason is Reason.INTERRUPTED and len(found.steps) == 1

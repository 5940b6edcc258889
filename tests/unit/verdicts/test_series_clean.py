"""Which stored nights a series stands on (verdicts/series_clean.py): a night with under half of its executions
clean is left out, a night without contention data is kept, and the series verdict says which nights and why."""

from __future__ import annotations

from orchestrator.base.codec import encode
from orchestrator.verdicts.compare import PairVerdict, Side
from orchestrator.verdicts.series import SeriesPoint, SeriesVerdict
from orchestrator.verdicts.series_clean import clean_enough
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import Verdict


def night(run_id: str, contended: int | None, executions: int = 20, runs: int = 3) -> SeriesPoint:
    """A night of `runs` process runs; `contended` of each run's executions waited for a CPU (None: not measured)."""
    mask = None if contended is None else tuple(i >= contended for i in range(executions))
    side = Side(run_id, "pinned", "mlp", tuple(SideRun(f"run-{k}", (1.0,) * executions, None, clean=mask)
                                              for k in range(1, runs + 1)))
    return SeriesPoint(run_id, "2026-11-27T00:00:00", None, None, side)


def test_nights_with_under_half_their_executions_clean_are_left_out() -> None:
    points = [night("quiet", 0), night("busy", 11), night("half", 10), night("old", None)]
    kept, left = clean_enough(points)
    assert [p.run_id for p in kept] == ["quiet", "half", "old"]  # exactly half clean stays; no data stays
    (busy,) = left
    assert (busy.run_id, busy.clean, busy.measured) == ("busy", 27, 60)
    assert busy.describe() == "run busy (27 of 60 executions clean, under 50%)"


def test_the_series_verdict_names_the_nights_left_out() -> None:
    _, left = clean_enough([night("busy", 15)])
    pair = PairVerdict("pinned", "mlp", "mlp", Verdict.UNCHANGED)
    found = SeriesVerdict("every good job of the window", ("quiet",), pair, None, (), 2, left)
    assert found.describe().endswith("; left out: run busy (15 of 60 executions clean, under 50%)")
    assert encode(found)["left_out"] == [{"run_id": "busy", "clean": 15, "measured": 60,
                                            "text": "run busy (15 of 60 executions clean, under 50%)"}]
    assert "left out" not in SeriesVerdict("x", (), pair, None, (), 1).describe()


def test_a_nights_history_leaves_the_busy_nights_out_and_keeps_why(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from orchestrator.app import nightly

    stored = [night("quiet", 0), night("busy", 15), night("quiet-too", 2)]
    monkeypatch.setattr(nightly, "series_history", lambda store, job, device, model: list(stored))
    histories = nightly._Histories(store=None, job=None)  # type: ignore[arg-type]
    assert [p.run_id for p in histories("pinned", "mlp")] == ["quiet", "quiet-too"]  # what the floor and verdict read
    assert [n.run_id for n in histories.left_out[("pinned", "mlp")]] == ["busy"]


def test_a_night_whose_series_could_not_judge_is_never_green() -> None:
    """The night's own pair is `unchanged` against its last good night, but its series cannot say whether the level
    moved beyond the threshold since the drift began: the comparison could not judge it (exit 3), and says why."""
    from dataclasses import replace

    from orchestrator.verdicts.compare import Comparison
    from orchestrator.verdicts.statistics import VerdictSettings

    unchanged = PairVerdict("pinned", "mlp", "mlp", Verdict.UNCHANGED)
    drifted = replace(unchanged, verdict=Verdict.INCONCLUSIVE)
    seen = replace(unchanged, series=SeriesVerdict("the level before run r7", ("r5", "r6"), drifted, None, (), 4))
    judged = replace(unchanged, series=SeriesVerdict("the level before run r7", ("r5", "r6"), unchanged, None, (), 4))
    assert seen.unjudged and not judged.unjudged
    assert seen.unjudged_reason.startswith("its series: inconclusive") and "the level before run r7" in seen.unjudged_reason
    settings = VerdictSettings()
    assert Comparison("a", "b", settings, (seen,)).exit_code == 3
    assert Comparison("a", "b", settings, (seen,)).headline == "could not judge 1 of 1 pair(s)"
    assert Comparison("a", "b", settings, (judged,)).exit_code == 0

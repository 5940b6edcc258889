"""Judging the series (verdicts/series.py) on nights made of recorded real jobs (fixtures/two_state_jobs.npz,
see test_states.py): a creep is caught, identical nights are not, alternating models do not raise the floor.

A night here is a recorded job, optionally with every sample scaled (a model that is that much slower runs
its processes in the same states, each that much slower: what the recorded p5/p10 jobs show). The nightly's
bookkeeping is imitated: a night that is not regressed joins the good history. Deterministic."""

from __future__ import annotations

import numpy as np

from orchestrator.base.codec import encode
from orchestrator.verdicts.compare import Side
from orchestrator.verdicts.noise import estimate_floor
from orchestrator.verdicts.series import SeriesPoint, judge, levels, replicate_floor
from orchestrator.verdicts.sides import SideRun
from orchestrator.verdicts.statistics import VerdictSettings
from tests.unit.verdicts.test_states import jobs

SETTINGS = VerdictSettings(center="fast-state")  # the synthetic two-state nights are modelled for it


def point(k: int, runs: list[np.ndarray], scale: float = 1.0, content: str = "h0") -> SeriesPoint:
    side = Side(f"night-{k:02d}", "pinned", "mlp",
                tuple(SideRun(f"run-{j}", tuple(float(v) * scale for v in r), None) for j, r in enumerate(runs)))
    return SeriesPoint(f"night-{k:02d}", f"2026-11-{k + 1:02d}T03:00:00+0000", f"c{k:02d}", content, side)


def history() -> list[SeriesPoint]:
    return [point(k, runs) for k, runs in enumerate(jobs("base")[1:11])]


def test_a_creep_of_two_and_a_half_percent_a_night_is_regressed_by_the_third_night_naming_where_it_began() -> None:
    good = history()
    creep = jobs("base")[11:14] + jobs("base")[1:6]  # eight nights, +2.5 % a night
    first = None
    for night, runs in enumerate(creep, start=1):
        found = judge(good, point(10 + night, runs, 1.025**night, f"h{night}"), SETTINGS)
        assert found is not None
        if found.regressed:
            first = first or (night, found)
        else:
            good.append(point(10 + night, runs, 1.025**night, f"h{night}"))
    assert first is not None
    night, found = first
    assert night <= 2 + 2  # 1.025^2 = 1.0506: the cumulative slowdown passes 5 % on night 2
    assert found.steps and found.steps[0].run_id in ("night-11", "night-12")  # where it began
    assert found.reference_runs[0] == "night-00" and "the level before run" in found.reference
    assert "built up over night-1" in found.describe()


def test_identical_nights_are_never_regressed_even_one_wholly_in_the_slow_state() -> None:
    good = history()
    for night, runs in enumerate([*jobs("base")[11:], jobs("base")[0]], start=1):  # base_0: no run in the fast state
        found = judge(good, point(10 + night, runs), SETTINGS)
        assert found is not None and not found.regressed, found.describe()
        good.append(point(10 + night, runs))


def test_one_slow_night_is_not_a_change_point() -> None:
    found = judge(history(), point(20, jobs("base")[11], 1.3), SETTINGS)
    assert found is not None and found.steps == () and "no change point" in found.reference
    assert found.regressed  # the night itself is slower against the series' level; the nightly confirms it


def test_a_pinned_reference_is_the_reference() -> None:
    pinned = point(99, jobs("base")[12])
    found = judge(history(), point(20, jobs("base")[11], 1.10), SETTINGS, pinned=pinned)
    assert found is not None and found.reference_runs == ("night-99",) and found.regressed


def test_nights_alternating_between_two_models_do_not_raise_the_floor_above_identical_nights() -> None:
    base = jobs("base")[1:13]
    same = [point(k, runs) for k, runs in enumerate(base)]
    alternating = [point(k, runs, 1.05 if k % 2 else 1.0, "h5" if k % 2 else "h0") for k, runs in enumerate(base)]
    aa, alt = replicate_floor(same, "fast-state"), replicate_floor(alternating, "fast-state")
    assert aa.floor is not None and alt.floor is not None and alt.method == "replicates" and alt.groups == 2
    assert alt.floor <= aa.floor * 1.2, (aa, alt)
    consecutive = estimate_floor([float(np.exp(v)) for v in levels(alternating, "fast-state")])  # the old method
    assert consecutive.floor is not None and consecutive.floor > 2 * alt.floor


def test_the_series_verdict_is_in_the_table_the_legend_the_page_words_and_the_json() -> None:
    from dataclasses import replace

    from orchestrator.report.page.comparison import _unlike_clause
    from orchestrator.report.terminal.verdicts import verdict_table
    from orchestrator.verdicts.compare import Comparison, compare_sides

    good = history()
    night = point(20, jobs("base")[11], 1.08, "h8")
    found = judge(good, night, SETTINGS)
    pair = replace(compare_sides(good[-1].side, night.side, SETTINGS, per_op=False), series=found)
    assert found is not None and found.regressed and pair.regressed
    table = verdict_table(Comparison("last-good", "night-20", SETTINGS, (pair,)))
    row = next(line for line in table.splitlines() if "series" in line and "REGRESSED" in line)
    assert f"{found.night.estimate.ratio:.3f}x" in row
    assert "SERIES (the night against a reference passing nights cannot move" in table and found.describe() in table
    assert encode(pair)["series"]["regressed"] is True and encode(pair)["series"]["reference_runs"][0] == "night-00"
    assert f"series: {found.describe()}" in "".join(map(str, _unlike_clause(pair)))

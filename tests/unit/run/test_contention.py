"""results/contention.py: the one rule that drops contended executions, and what a model reports of it."""

from __future__ import annotations

import pytest

from orchestrator.results.contention import (
    WAIT_FLOOR_MS,
    WAIT_SHARE,
    Contention,
    ContentionSummary,
    clean_mask,
    contention_summary,
    wait_bound_ms,
)
from orchestrator.results.model import ModelResult, ModelStatus, ProcessRun


def test_the_bound_is_the_floor_for_short_executions_and_a_share_for_long_ones() -> None:
    assert wait_bound_ms(0.5) == WAIT_FLOOR_MS
    assert wait_bound_ms(100.0) == pytest.approx(WAIT_SHARE * 100.0)
    assert wait_bound_ms(WAIT_FLOOR_MS / WAIT_SHARE) == pytest.approx(WAIT_FLOOR_MS)


def test_an_execution_that_waited_beyond_the_bound_is_contaminated() -> None:
    execute = (1.0, 1.0, 1.0, 40.0, 40.0)
    wait = (0.0, 0.05, 0.051, 0.79, 0.81)  # at the floor: clean; just past it: not; 2 % of 40 ms is 0.8 ms
    assert clean_mask(execute, wait) == (True, True, False, True, False)


def test_without_per_execution_waits_every_execution_counts_as_clean() -> None:
    assert clean_mask((1.0, 2.0), ()) == (True, True)


def test_waits_not_aligned_with_the_executions_are_refused() -> None:
    with pytest.raises(ValueError, match="2 waits for 3 executions"):
        clean_mask((1.0, 2.0, 3.0), (0.0, 0.0))


def _run(label: str, execute: tuple[float, ...], contention: Contention | None, traced: bool = True) -> ProcessRun:
    return ProcessRun(label, traced, execute, contention=contention)


def test_a_process_run_keeps_only_its_clean_executions() -> None:
    run = _run("run-1", (1.0, 1.4, 1.1), Contention((0.01, 0.4, 0.0)))
    assert run.clean == (True, False, True)
    assert run.clean_execute_ms == (1.0, 1.1)
    assert _run("run-2", (1.0, 1.4), None).clean_execute_ms == (1.0, 1.4)  # an older runner: nothing dropped


def test_a_model_reports_how_contended_its_runs_were() -> None:
    runs = (_run("run-1", (1.0, 1.4, 1.1), Contention((0.01, 0.4, 0.0), cpu_ms=3.0, wall_ms=4.0,
                                                     involuntary_switches=2, migrations=None)),
            _run("run-2", (1.0, 1.0), None),  # measured nothing: neither in the share nor dropped
            _run("e2e-1", (0.9, 2.0), Contention((0.0, 0.9), cpu_ms=2.0, wall_ms=3.0, involuntary_switches=1,
                                                 migrations=4), traced=False))
    model = ModelResult("m", ModelStatus.OK, runs)
    assert model.clean_wall_execute_ms == (1.0, 1.1, 1.0, 1.0)  # the traced runs' clean executions
    assert model.contended_share == pytest.approx(2 / 5)
    summary = model.contention_summary
    assert (summary.executions, summary.contended, summary.wait_ms_p50, summary.wait_ms_max) == (5, 2, 0.01, 0.9)
    assert summary.cpu_over_wall == pytest.approx(5.0 / 7.0)
    assert (summary.involuntary_switches, summary.migrations) == (3, 4)
    assert model.summary()["contention"]["contended_share"] == pytest.approx(0.4)


def test_a_model_without_measurements_reports_none() -> None:
    summary = contention_summary([((1.0,), None)])
    assert summary == ContentionSummary()
    assert summary.contended_share is None


def test_how_contention_is_worded() -> None:
    from orchestrator.results.contention import contention_text

    summary = ContentionSummary(executions=80, contended=40, wait_ms_p50=0.177, wait_ms_max=23.1, cpu_over_wall=0.48)
    assert contention_text(summary) == ("40 of 80 executions waited for a CPU (50%), wait p50 0.177 ms, max 23.1 ms; "
                                        "CPU/wall 0.48")
    assert contention_text(ContentionSummary()) is None  # nothing measured: nothing said

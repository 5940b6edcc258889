"""The runner's `contention` object (runners/etfarm_sched.h) through run/runner_contract.py into ProcessRun.

Older runners print none: their runs have no contention and every execution counts as clean. A device that
prints a broken object fails as a data problem of the device, as any broken result line does."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.base.errors import DataError
from orchestrator.results.contention import Contention
from orchestrator.results.model import ProcessRun
from orchestrator.run.runner_contract import RunnerResult, parse_result
from tests.unit.run.test_runner_contract import INVOCATION, SOURCE, printed, stdout

# What the runner printed for a 3-execution run beside a numpy neighbour (2026-11-27, this VM), trimmed.
MEASURED = {"wait_ms": [0.0, 27.705876, 0.012], "cpu_ms": 8.857601, "wall_ms": 48.369213, "involuntary_switches": 2,
            "migrations": 0, "threads": 2, "read_ms": 0.339163}


def _parsed(contention: Any) -> ProcessRun:
    result = parse(contention)
    return ProcessRun.from_runner(result, label="run-1", traced=True)


def parse(contention: Any) -> RunnerResult:
    return parse_result(stdout(printed(contention=contention)), INVOCATION, SOURCE)


def test_the_contention_object_becomes_the_process_runs() -> None:
    run = _parsed(MEASURED)
    assert run.contention == Contention((0.0, 27.705876, 0.012), 8.857601, 48.369213, 2, 0, 2, 0.339163)
    assert run.clean == (True, False, True)  # 27.7 ms of waiting in a 0.66 ms execution: contended
    assert "contention" not in run.runner  # typed, not kept twice
    assert parse(MEASURED).to_dict()["contention"] == MEASURED  # result.json keeps it as printed


def test_an_older_runner_reports_no_contention_and_drops_nothing() -> None:
    run = _parsed(None)
    assert run.contention is None and run.clean == (True, True, True)


def test_figures_the_device_could_not_read_are_none() -> None:
    run = _parsed({**MEASURED, "wait_ms": [], "migrations": -1, "cpu_ms": -1.0})
    assert run.contention is not None
    assert (run.contention.wait_ms, run.contention.migrations, run.contention.cpu_ms) == ((), None, None)
    assert run.clean == (True, True, True)  # no per-execution wait: nothing can be dropped


@pytest.mark.parametrize(("contention", "problem"), [
    ([1, 2], "contention is [1, 2], not an object"),
    ({**MEASURED, "wait_ms": [0.0, 0.1]}, "contention.wait_ms holds 2 waits for 3 executions"),
    ({**MEASURED, "wait_ms": [0.0, -0.5, 0.1]}, "contention.wait_ms is [0.0, -0.5, 0.1]: not a list of times"),
    ({**MEASURED, "wait_ms": "0,0,0"}, "not a list of times"),
    ({**MEASURED, "involuntary_switches": 2.5}, "contention.involuntary_switches is 2.5: not a count or -1"),
    ({**MEASURED, "cpu_ms": -3.0}, "contention.cpu_ms is -3.0: not a time or -1"),
    ({**MEASURED, "threads": True}, "contention.threads is true: not a count or -1"),
])
def test_a_broken_contention_object_is_a_data_error_of_the_device(contention: Any, problem: str) -> None:
    with pytest.raises(DataError, match="the runner's result does not hold") as caught:
        parse(contention)
    assert problem in str(caught.value), str(caught.value)

"""run/runner_contract.py: the runner's result line is checked against its contract before it is kept.

Issue 21 (2): a device that prints negative, NaN, infinite or huge times, a missing or truncated
line, wrong types or the wrong number of executions fails as a data problem of the device, with
a message naming the device and what is wrong, never `ok` with wrong numbers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.base.errors import Blame, DataError
from orchestrator.results.model import ProcessRun
from orchestrator.run.runner_contract import (
    MAX_TIME_MS,
    RunnerInvocation,
    RunnerResult,
    parse_result,
    result_line,
)

INVOCATION = RunnerInvocation(runner="/w/bin/etfarm_runner", model="/w/m.pte", inputs=None, out_dir="/w/out/m/run-1",
                              iterations=3, warmup=2, traced=True, calibration_rounds=250)
SOURCE = "[rpi5] runner (m, run-1)"


def printed(**changes: Any) -> dict[str, Any]:
    """What etfarm_runner.cpp prints for INVOCATION (keys in its order); `changes` edit it (None drops a key)."""
    line = {"method": "forward", "load_ms": 0.592484, "program_load_ms": 0.437382, "warmup": 2, "executions": 3,
            "execute_ms": [0.601758, 0.658292, 1.530853], "etdump": True, "cpu_threads": 2, "debug_buffer_used": 0,
            "debug_buffer_overflow": False, "peak_rss_load_kb": 7292, "peak_rss_kb": 23584,
            "planned_memory_bytes": 16896, "program_bytes": 692608, "calibration_rounds": 250,
            "calibration_before_ms": 40.464923, "calibration_after_ms": 26.346936, "warmup_ms": [2.914021, 0.63117],
            "runner_ms": 1491.612083}
    line.update(changes)
    return {k: v for k, v in line.items() if v is not None}


def stdout(line: dict[str, Any] | str) -> str:
    text = line if isinstance(line, str) else json.dumps(line)
    return f"etfarm_runner: loading\nETFARM_RESULT {text}\n"


def test_a_good_line_is_typed_field_for_field_and_kept_as_printed() -> None:
    result = parse_result(stdout(printed()), INVOCATION, SOURCE)
    assert isinstance(result, RunnerResult)
    assert result.execute_ms == (0.601758, 0.658292, 1.530853) and result.executions == 3
    assert result.warmup_ms == (2.914021, 0.63117)
    assert result.calibration_rounds == 250 and result.etdump is True and result.extra == {}
    assert result.to_dict() == printed()  # result.json keeps the line as the runner printed it
    assert list(result.to_dict()) == list(printed())


def test_the_memory_object_is_typed() -> None:
    """Since issue 39: memory by owner (results/footprint.py), kept in result.json as printed."""
    split = {"program": 100, "planned": 8, "delegate": 300, "runtime": 6, "other": 50, "rss": 400, "peak_rss": 470}
    memory = {"counted": ["program", "planned", "runtime"], "delta": ["delegate", "other"], "source": "statm",
              "delegated": True, "load": split, "end": split}
    result = parse_result(stdout(printed(memory=memory)), INVOCATION, SOURCE)
    assert result.memory is not None and result.memory.end.owners().total == 464 and result.memory.delegated
    assert result.to_dict()["memory"] == memory


def test_the_last_line_counts_and_unknown_keys_are_kept() -> None:
    text = stdout(printed(load_ms=9.0)) + stdout(printed(future_field={"a": 1}))
    result = parse_result(text, INVOCATION, SOURCE)
    assert result.load_ms == 0.592484 and result.extra == {"future_field": {"a": 1}}
    assert result.to_dict()["future_field"] == {"a": 1}


def test_an_older_runner_without_warmup_times() -> None:
    result = parse_result(stdout(printed(warmup_ms=None)), INVOCATION, SOURCE)
    assert result.warmup_ms is None and "warmup_ms" not in result.to_dict()


def test_an_untraced_run_without_calibration() -> None:
    invocation = RunnerInvocation("/r", "/m", None, "/o", iterations=3, warmup=2, traced=False, calibration_rounds=0)
    line = printed(etdump=False, calibration_rounds=None, calibration_before_ms=None, calibration_after_ms=None)
    result = parse_result(stdout(line), invocation, SOURCE)
    assert result.calibration_rounds is None and result.calibration_before_ms is None
    assert result.to_dict() == line


def test_process_run_from_the_result() -> None:
    result = parse_result(stdout(printed(peak_rss_load_kb=-1, program_bytes=-1)), INVOCATION, SOURCE)
    run = ProcessRun.from_runner(result, label="run-1", traced=True, cold=True, device_state={"t": 1},
                                 artifacts=("a",), step_ms=1600.0)
    assert run.execute_ms == result.execute_ms and run.load_ms == 0.592484 and run.program_load_ms == 0.437382
    assert run.peak_rss_load_kb is None and run.program_bytes is None  # -1: the device could not tell
    assert run.peak_rss_kb == 23584 and run.planned_memory_bytes == 16896
    assert run.calibration_before_ms == 40.464923 and run.calibration_after_ms == 26.346936
    assert run.runner_ms == 1491.612083 and run.step_ms == 1600.0 and run.cold and run.artifacts == ("a",)
    # everything the ProcessRun has no field for, verbatim and in the runner's order
    assert run.runner == {"method": "forward", "warmup": 2, "executions": 3, "etdump": True, "cpu_threads": 2,
                          "debug_buffer_used": 0, "debug_buffer_overflow": False, "calibration_rounds": 250}
    assert list(run.runner) == ["method", "warmup", "executions", "etdump", "cpu_threads", "debug_buffer_used",
                                "debug_buffer_overflow", "calibration_rounds"]
    assert run.warmup_ms == (2.914021, 0.63117)  # typed, as execute_ms


BROKEN = {
    "no line": ("etfarm_runner: done\n", "printed no ETFARM_RESULT line"),
    "truncated": ('ETFARM_RESULT {"method": "forward", "load_ms": 0.5, "exec\n', "not JSON (truncated?)"),
    "not an object": ("ETFARM_RESULT [1, 2]\n", "a JSON list, not an object"),
    "NaN time": (stdout(json.dumps(printed()).replace("0.658292", "NaN")), "holds NaN, not a number"),
    "infinite time": (stdout(json.dumps(printed()).replace("0.592484", "Infinity")), "holds Infinity"),
    "overflowing time": (stdout(json.dumps(printed()).replace("0.592484", "1e999")), "holds 1e999"),
    "negative time": (stdout(printed(execute_ms=[0.6, -0.0756, 0.7])), "execute_ms holds -0.0756"),
    "huge time": (stdout(printed(execute_ms=[0.6, 1e308, 0.7])), "execute_ms holds 1e+308"),
    "huge load": (stdout(printed(load_ms=MAX_TIME_MS * 2)), "load_ms is 172800000.0"),
    "negative runner time": (stdout(printed(runner_ms=-1.0)), "runner_ms is -1.0"),
    "string time": (stdout(printed(load_ms="0.5")), 'load_ms is "0.5", not a number'),
    "bool count": (stdout(printed(warmup=True)), "warmup is true, not int"),
    "float count": (stdout(printed(executions=3.0)), "executions is 3.0, not int"),
    "samples not a list": (stdout(printed(execute_ms="0.6,0.7")), "execute_ms is \"0.6,0.7\", not a list"),
    "sample not a number": (stdout(printed(execute_ms=[0.6, "x", 0.7])), "not a list of numbers"),
    "missing fields": (stdout(printed(load_ms=None, runner_ms=None)), "it lacks load_ms, runner_ms"),
    "too few samples": (stdout(printed(execute_ms=[0.6, 0.7])), "execute_ms holds 2 times for 3 executions"),
    "too many warmups": (stdout(printed(warmup_ms=[3.0, 0.6, 0.6])), "warmup_ms holds 3 times for 2 warmup executions"),
    "negative warmup": (stdout(printed(warmup_ms=[3.0, -1.5])), "warmup_ms holds -1.5"),
    "warmups not a list": (stdout(printed(warmup_ms=3.6)), "warmup_ms is 3.6, not a list of numbers"),
    "other executions": (stdout(printed(executions=4)), "executions is 4, but 3 were asked for"),
    "other warmup": (stdout(printed(warmup=0)), "warmup is 0, but 2 were asked for"),
    "no etdump": (stdout(printed(etdump=False)), "etdump is False, but the run was traced"),
    "no calibration": (stdout(printed(calibration_rounds=None)), "calibration_rounds is None, but 250"),
    "huge size": (stdout(printed(peak_rss_kb=1 << 60)), "peak_rss_kb is 1152921504606846976"),
    "negative size": (stdout(printed(planned_memory_bytes=-1)), "planned_memory_bytes is -1"),
    "memory not an object": (stdout(printed(memory=[1])), "memory is list, not an object"),
    "memory owner unsplit": (stdout(printed(memory={"counted": ["program"], "delta": []})), "each of program"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_result_is_a_data_error_of_the_device(case: str) -> None:
    text, problem = BROKEN[case]
    with pytest.raises(DataError) as caught:
        parse_result(text, INVOCATION, SOURCE)
    message = str(caught.value)
    assert message.startswith(f"{SOURCE}: the runner's result does not hold (a device-side problem): "), message
    assert problem in message, message
    assert "\n" not in message and caught.value.blame is Blame.DATA


def test_result_line_is_the_raw_object() -> None:
    assert result_line(stdout(printed())) == printed()
    assert result_line("nothing here\n") is None

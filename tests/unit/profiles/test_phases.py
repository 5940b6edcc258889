"""profiles/phases.py: an LLM's per-op statistics split by prefill and decode, from the samples in call order."""

from __future__ import annotations

import numpy as np
import pytest

from orchestrator.profiles.analysis_core import SampleSet
from orchestrator.profiles.etdump_events import EventInfo
from orchestrator.profiles.phases import RunCalls, phase_of_samples, with_phases
from orchestrator.profiles.stat_rows import ModelStats, csv_text, rows_of


def _event(index: int, name: str) -> EventInfo:
    return EventInfo(index, name, index, None, False, True)


def samples(calls_per_run: list[int]) -> SampleSet:
    """Block 0: the method load (one instance per run); block 1: forward calls, two events each (Method::execute and
    an op). A call's op takes 10 ms in prefill-sized calls (every 4th call: k % 4 == 0) and 1 ms otherwise."""
    run, block, index, iteration, duration = [], [], [], [], []
    for r, calls in enumerate(calls_per_run):
        run += [r, r]
        block += [0, 0]
        index += [0, 1]
        iteration += [0, 0]
        duration += [5.0, 4.0]
        for k in range(calls):
            op = 10.0 if k % 4 == 0 else 1.0
            run += [r, r]
            block += [1, 1]
            index += [0, 1]
            iteration += [k, k]
            duration += [op + 0.5, op]
    return SampleSet(np.array(run, np.int32), np.array(block, np.int32), np.array(index, np.int32),
                     np.array(iteration, np.int32), np.array(duration), tuple(f"run-{r + 1}" for r in
                                                                                range(len(calls_per_run))),
                     ("Default", "Execute"), ((_event(0, "Method::init"), _event(1, "Program::load_method")),
                                              (_event(0, "Method::execute"), _event(1, "native_call_mm.out"))), None)


def stats(calls_per_run: list[int]) -> ModelStats:
    s = samples(calls_per_run)
    return ModelStats("local", "llm", rows_of(s, "local", "llm"), s)


def test_each_call_of_a_generation_is_in_its_phase() -> None:
    calls = {"run-1": RunCalls(1, 3, 2), "run-2": RunCalls(1, 3, 2)}
    phase = phase_of_samples(samples([8, 8]), calls)
    assert phase.tolist()[:2] == [-1, -1]  # the method load is no call
    assert phase.tolist()[2:18] == [0, 0] + [1, 1] * 3 + [0, 0] + [1, 1] * 3
    rows = {r.event_name: r for r in with_phases(stats([8, 8]), calls).rows}
    op = rows["native_call_mm.out"]
    assert (op.samples, op.prefill_samples, op.decode_samples) == (16, 4, 12)
    assert op.prefill_avg_ms == 10.0 and op.decode_avg_ms == 1.0 and op.prefill_p50_ms == 10.0
    assert rows["Method::execute"].decode_avg_ms == 1.5 and rows["Method::execute"].avg_ms == pytest.approx(3.75)
    assert not rows["Method::init"].phased
    header = csv_text(rows.values()).splitlines()[0]
    assert header.endswith("prefill_samples,prefill_p50_ms,prefill_avg_ms,decode_samples,decode_p50_ms,decode_avg_ms,"
                           "op_module,op_kind,op_occurrence,op_basis,debug_handles")  # identities last


def test_blocks_that_are_not_one_instance_per_call_keep_no_phases() -> None:
    whole = stats([8, 7])  # run-2 lost a call: its instances do not match 2 generations of 4 calls
    split = with_phases(whole, {"run-1": RunCalls(1, 3, 2), "run-2": RunCalls(1, 3, 2)})
    assert split.rows == whole.rows and not any(r.phased for r in split.rows)
    assert with_phases(whole, {}).rows == whole.rows  # not an LLM
    assert "prefill_samples" not in csv_text(whole.rows)  # other models' stats.csv keeps its columns

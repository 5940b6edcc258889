"""profiles/contended.py: per-op statistics leave out the samples of contended executions, and count them."""

from __future__ import annotations

import numpy as np

from orchestrator.profiles.analysis_core import SampleSet
from orchestrator.profiles.contended import contended_mask, drop_contended
from orchestrator.profiles.etdump_events import EventInfo
from orchestrator.profiles.stat_rows import ModelStats, csv_text, read_stats_csv, rows_of


def _event(index: int, name: str) -> EventInfo:
    return EventInfo(index, name, index, None, False, True)


def samples(durations: list[list[float]], calls: int = 1) -> SampleSet:
    """Per run: the method-load block (one instance), then per execution `calls` forward calls of two events
    (Method::execute and an op taking `durations[run][execution]` ms)."""
    run, block, index, iteration, duration = [], [], [], [], []
    for r, times in enumerate(durations):
        run += [r, r]
        block += [0, 0]
        index += [0, 1]
        iteration += [0, 0]
        duration += [5.0, 4.0]
        for k, ms in enumerate(t for t in times for _ in range(calls)):
            run += [r, r]
            block += [1, 1]
            index += [0, 1]
            iteration += [k, k]
            duration += [ms + 0.5, ms]
    return SampleSet(np.array(run, np.int32), np.array(block, np.int32), np.array(index, np.int32),
                     np.array(iteration, np.int32), np.array(duration), tuple(f"run-{r + 1}" for r in range(len(durations))),
                     ("Default", "Execute"), ((_event(0, "Method::init"), _event(1, "Program::load_method")),
                                              (_event(0, "Method::execute"), _event(1, "native_call_mm.out"))), None)


def stats(s: SampleSet) -> ModelStats:
    return ModelStats("local", "m", rows_of(s, "local", "m"), s)


def test_the_samples_of_contended_executions_are_left_out_and_counted() -> None:
    whole = stats(samples([[1.0, 9.0, 1.0], [1.0, 1.0, 1.0]]))  # run-1's second execution was slowed
    clean = drop_contended(whole, {"run-1": (True, False, True), "run-2": (True, True, True)}, {})
    rows = {r.event_name: r for r in clean.rows}
    op = rows["native_call_mm.out"]
    assert (op.samples, op.contended_samples, op.max_ms, op.avg_ms) == (5, 1, 1.0, 1.0)
    assert rows["Method::execute"].contended_samples == 1
    assert (rows["Method::init"].samples, rows["Method::init"].contended_samples) == (2, 0)  # the load is no execution
    assert [r.key for r in clean.rows] == [r.key for r in whole.rows]
    assert clean.kept is not None and whole.samples is not None and clean.kept.duration_ms.size == whole.samples.duration_ms.size - 2


def test_an_llms_generation_spans_its_calls() -> None:
    s = samples([[1.0, 9.0]], calls=4)  # two generations of four forward calls each
    mask = contended_mask(s, {"run-1": (True, False)}, {"run-1": 4})
    assert mask.tolist() == [False] * 2 + [False] * 8 + [True] * 8


def test_runs_measured_clean_count_zero_and_unmeasured_ones_change_nothing() -> None:
    whole = stats(samples([[1.0, 2.0]]))
    assert {r.contended_samples for r in drop_contended(whole, {"run-1": (True, True)}, {}).rows} == {0}
    assert drop_contended(whole, {}, {}) is whole  # an older runner measured nothing: the column stays empty
    assert "contended_samples" not in csv_text(whole.rows)


def test_when_no_execution_was_clean_nothing_is_left_out(tmp_path) -> None:
    whole = stats(samples([[3.0, 4.0]]))
    clean = drop_contended(whole, {"run-1": (False, False)}, {})
    assert [r.samples for r in clean.rows] == [r.samples for r in whole.rows]
    assert {r.contended_samples for r in clean.rows} == {0}
    (tmp_path / "stats.csv").write_text(csv_text(clean.rows))
    assert read_stats_csv(tmp_path / "stats.csv") == clean.rows  # the column reads back


def test_an_event_with_no_clean_sample_keeps_its_row_without_statistics() -> None:
    s = samples([[3.0, 4.0]])
    only_in_second = (s.block == 1) & (s.event_index == 1) & (s.iteration == 0)  # the op ran in execution 1 only
    keep = ~only_in_second
    s = SampleSet(s.run[keep], s.block[keep], s.event_index[keep], s.iteration[keep], s.duration_ms[keep], s.run_labels,
                  s.block_keys, s.block_events, None)
    clean = drop_contended(stats(s), {"run-1": (True, False)}, {})
    op = next(r for r in clean.rows if r.event_name == "native_call_mm.out")
    assert (op.samples, op.p50_ms, op.contended_samples) == (0, None, 1)


def test_a_run_whose_blocks_do_not_match_its_executions_keeps_its_samples() -> None:
    s = samples([[1.0, 9.0]])
    assert not contended_mask(s, {"run-1": (True, False, True)}, {}).any()  # three executions, two instances


def test_an_llms_phase_figures_are_kept_as_computed_over_every_call() -> None:
    from orchestrator.profiles.phases import RunCalls, with_phases

    phased = with_phases(stats(samples([[1.0, 9.0]], calls=4)), {"run-1": RunCalls(1, 3, 2)})
    clean = drop_contended(phased, {"run-1": (True, False)}, {"run-1": 4})
    op = next(r for r in clean.rows if r.event_name == "native_call_mm.out")
    assert (op.samples, op.contended_samples, op.prefill_samples, op.decode_samples) == (4, 4, 2, 6)

"""orchestrator.profiles.etdump_events: Inspector's grouping and timing rules on synthetic ETDumps.

The same cases run against the real Inspector in
tests/integration/test_analysis_vs_inspector.py; here the expectations are written out.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etdump import parse_etdump
from orchestrator.profiles.etdump_events import (
    MAX_UINT32,
    durations_ms,
    group_blocks,
    start_times,
)
from tests.helpers.etdumps import (
    Allocation,
    Debug,
    Profile,
    Run,
    build_etdump,
    typical_runs,
)


def groups_of(runs: list[Run]):
    dump = parse_etdump(build_etdump(runs), "t.etdp")
    return dump, group_blocks(dump)


def test_identical_blocks_merge_and_keep_inspector_order() -> None:
    dump, groups = groups_of(typical_runs(iterations=3, layers=2))
    assert [(g.name, g.blocks.tolist()) for g in groups] == [("Default", [0]), ("Execute", [1, 2, 3])]
    names = [e.name for e in groups[1].events]
    # Grouped by instruction in order of first appearance; Method::execute is (0, chain -1).
    assert names == ["native_call_op0.out", "OPERATOR_CALL", "native_call_op1.out", "OPERATOR_CALL", "Method::execute"]
    matrix = durations_ms(dump, groups[1])
    assert matrix.shape == (3, 5)
    assert matrix[:, 0].tolist() == [95 / 1e6, 96 / 1e6, 97 / 1e6]
    assert start_times(dump, groups[1]).shape == (3, 5)


def test_events_of_one_instruction_gather_at_its_first_appearance() -> None:
    _, groups = groups_of([Run("Execute", [Profile("a", instr=1), Profile("b", instr=2), Profile("c", instr=1)])])
    assert [e.name for e in groups[0].events] == ["a", "c", "b"]
    assert groups[0].sample_pos.tolist() == [0, 2, 1]


def test_repeated_signature_keeps_first_position_and_last_sample() -> None:
    dump, groups = groups_of([Run("Execute", [Profile("a", instr=1, start=0, end=10), Profile("b", instr=2), Profile("a", instr=1, start=0, end=30)])])
    assert [e.name for e in groups[0].events] == ["a", "b"]
    assert durations_ms(dump, groups[0])[0].tolist() == [30 / 1e6, 0.0]


def test_same_name_different_signatures_stay_separate_blocks() -> None:
    runs = [
        Run("Execute", [Profile("a", instr=0), Profile("b", instr=1)]),
        Run("Execute", [Profile("a", instr=0)]),
        Run("Execute", [Profile("a", instr=0), Profile("b", instr=1)]),
        Run("Execute", [Profile("a", instr=0)], bundled_input_index=1),
    ]
    _, groups = groups_of(runs)
    assert [(g.name, g.blocks.tolist(), g.bundled_input_index) for g in groups] == [
        ("Execute", [0, 2], -1),
        ("Execute", [1], -1),
        ("Execute", [3], 1),
    ]


def test_blocks_without_events_vector_are_skipped_but_empty_ones_are_blocks() -> None:
    _, groups = groups_of([Run("A", None), Run("B", []), Run("C", [Profile("x")])])
    assert [(g.name, len(g.events)) for g in groups] == [("B", 0), ("C", 1)]


def test_delegated_events_are_named_by_their_identifier() -> None:
    runs = [
        Run(
            "Execute",
            [
                Profile(dd_int=0, instr=0, start=10, end=20),
                Profile("ignored", dd_str="Conv #1", instr=0),
                Profile("DELEGATE_CALL", dd_str="", instr=0),
                Profile("DELEGATE_CALL", instr=0),
            ],
        )
    ]
    _, groups = groups_of(runs)
    events = groups[0].events
    assert [(e.name, e.delegate_debug_identifier, e.is_delegated_op) for e in events] == [
        ("0", 0, True),
        ("Conv #1", "Conv #1", True),
        ("DELEGATE_CALL", None, False),
    ]
    # "" and absent ids are different instructions but one EventSignature: the last one wins.
    assert groups[0].sample_pos.tolist() == [0, 1, 3]
    assert groups[0].delegated_timing.tolist() == [True, True, False]


def test_debug_events_join_their_instruction_and_run_outputs_are_dropped() -> None:
    runs = [
        Run(
            "Execute",
            [
                Debug(instr=0, int_value=7),
                Profile("op0", instr=0),
                Debug("only_debug", instr=1),
                Debug(instr=5, output=True),
                Profile("op2", instr=2),
            ],
        )
    ]
    _, groups = groups_of(runs)
    events = groups[0].events
    assert [(e.name, e.has_perf) for e in events] == [("op0", True), ("only_debug", False), ("op2", True)]
    assert groups[0].perf_events.tolist() == [0, 2]
    sig = groups[0].signature[1]
    assert sig[0][2] == ("", 0, None, None)  # the debug signature rides along with op0's


def test_allocation_events_are_ignored_for_grouping() -> None:
    _, groups = groups_of([Run("Execute", [Allocation(0, 64), Profile("a", instr=0)], allocators=["m"])])
    assert [e.name for e in groups[0].events] == ["a"]


def test_wraparound_uses_inspectors_32bit_rule() -> None:
    start, end = MAX_UINT32 - 100, 50
    dump, groups = groups_of([Run("Execute", [Profile("a", instr=0, start=start, end=end)])])
    assert durations_ms(dump, groups[0])[0, 0] == float((MAX_UINT32 - start) + end) / 1_000_000.0


def test_backwards_time_beyond_32_bits_is_an_error() -> None:
    dump, groups = groups_of([Run("Execute", [Profile("a", instr=0, start=2**40, end=2**40 - 5)])])
    with pytest.raises(AnalysisError, match=r"t\.etdp: block 0 event 'a' ends before it starts"):
        durations_ms(dump, groups[0])


def test_delegated_times_are_converted_before_subtracting() -> None:
    start, end = 7_047_228_134_123, 7_047_228_134_777
    dump, groups = groups_of([Run("Execute", [Profile(dd_str="k", instr=0, start=start, end=end), Profile("p", instr=1, start=start, end=end)])])
    delegated, plain = durations_ms(dump, groups[0])[0]
    assert delegated == end / 1_000_000.0 - start / 1_000_000.0  # Inspector's float path
    assert plain == (end - start) / 1_000_000.0
    assert delegated != plain  # the two rules really differ in the last bits here


def test_many_iterations_are_one_layout() -> None:
    dump, groups = groups_of(typical_runs(iterations=200, layers=3))
    assert [len(g.blocks) for g in groups] == [1, 200]
    matrix = durations_ms(dump, groups[1])
    assert matrix.shape == (200, 7)
    assert np.all(matrix > 0)

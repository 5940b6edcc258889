"""Debug values and the debug events Inspector takes them from, on synthetic ETDumps, against Inspector."""

from __future__ import annotations

import warnings

import pytest

from orchestrator.base.errors import AnalysisError
from orchestrator.profiles.etdump import parse_etdump
from orchestrator.profiles.etdump_events import event_debug_rows, group_blocks
from orchestrator.profiles.etdump_values import debug_value
from tests.helpers.etdumps import Debug, Profile, Run, build_etdump


def _block(values: list[int]) -> Run:
    events: list = []
    for instr, value in enumerate(values):
        events += [Profile(name=f"op{instr}", instr=instr, start=10 * instr, end=10 * instr + 5),
                   Debug(name=f"op{instr}", instr=instr, int_value=value)]
    events.append(Debug(instr=len(values), int_value=99))  # debug-only event (no timing)
    events.append(Debug(int_value=1234, output=True))  # a run output: not an event
    return Run(name="Execute", events=events)


def _ours(data: bytes) -> list[list[object]]:
    dump = parse_etdump(data, "synthetic")
    out = []
    for group in group_blocks(dump):
        for rows in event_debug_rows(dump, group):
            out.append([debug_value(dump, r, None) for r in rows])
    return out


def _inspector(data: bytes) -> list[list[object]]:
    import executorch.devtools.inspector as inspector_module  # a project dependency: never skipped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inspector = inspector_module.Inspector(etdump_data=data)
    return [list(e.debug_data) for b in inspector.event_blocks for e in b.events]


def test_debug_values_and_their_events_match_inspector() -> None:
    data = build_etdump([_block([3, 4, 5]), _block([3, 4, 5]), Run(name="Other", events=[Debug(instr=0, int_value=-8)])])
    ours = _ours(data)
    assert ours == _inspector(data)
    assert ours == [[3], [4], [5], [99], [-8]]


def test_a_debug_entry_pointing_outside_the_file_is_an_analysis_error() -> None:
    dump = parse_etdump(build_etdump([_block([1])]), "synthetic")
    broken = type(dump.events)(**{**dump.events.__dict__, "debug_entry_pos": dump.events.debug_entry_pos * 0 + len(dump.data) + 8})
    dump2 = type(dump)(**{**{k: v for k, v in dump.__dict__.items()}, "events": broken})
    row = int((dump.events.debug_entry_pos >= 0).nonzero()[0][0])
    with pytest.raises(AnalysisError, match="synthetic: corrupt debug event"):
        debug_value(dump2, row, None)

"""Our analysis equals ExecuTorch's Inspector on the same files: names, order, statistics
(1e-9 relative), and the ETRecord-derived columns. Real ETDumps come from the ExecuTorch
Python runtime (portable-ops and XNNPACK models; one and several process runs); synthetic
ETDumps cover the grouping corner cases real runs rarely hit.
"""

from __future__ import annotations

import sys
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from orchestrator.profiles.analysis import analyze_files, load_events, split_op_types
from orchestrator.profiles.etdump import parse_etdump
from orchestrator.profiles.etdump_events import MAX_UINT32, durations_ms, group_blocks
from tests.helpers.etdumps import (
    PORTABLE,
    XNNPACK,
    Debug,
    Profile,
    Run,
    build_etdump,
    real_etdump,
    real_model,
    typical_runs,
)

pytestmark = pytest.mark.slow
REL = 1e-9
STATS = {"p10_ms": 10, "p50_ms": 50, "p90_ms": 90}


def inspector(path: Path | None = None, etrecord: Path | None = None, data: bytes | None = None) -> Any:
    from executorch.devtools import Inspector

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if data is not None:
            return Inspector(etdump_data=data)
        return Inspector(etdump_path=str(path), etrecord=str(etrecord) if etrecord else None)


def keyed_blocks(insp: Any) -> list[tuple[str, Any]]:
    """Inspector's blocks under our keys: name, then name#2... for repeated names."""
    uses: dict[str, int] = defaultdict(int)
    out = []
    for block in insp.event_blocks:
        uses[block.name] += 1
        out.append((block.name if uses[block.name] == 1 else f"{block.name}#{uses[block.name]}", block))
    return out


def assert_close(ours: float, theirs: float, what: str) -> None:
    assert ours == pytest.approx(theirs, rel=REL, abs=0.0), what


def compare(paths: list[Path], etrecord: Path | None) -> None:
    inspectors = [inspector(p, etrecord) for p in paths]
    summary = analyze_files(paths, etrecord)
    events = load_events(paths, etrecord)
    raw: dict[tuple[str, int], list[float]] = defaultdict(list)
    for insp in inspectors:
        for key, block in keyed_blocks(insp):
            ours = events[events.event_block == key].sort_values("event_index")
            assert ours["event_name"].tolist() == [e.name for e in block.events], key
            for (_, row), event in zip(ours.iterrows(), block.events, strict=True):
                assert row["is_delegated_op"] == event.is_delegated_op
                assert row["delegate_debug_identifier"] == event.delegate_debug_identifier or (
                    row["delegate_debug_identifier"] is None and event.delegate_debug_identifier is None
                )
                assert row["instruction_id"] == event._instruction_id
                if etrecord is not None:
                    assert row["op_types"] == event.op_types, (key, event.name)
                    assert row["stack_traces"] == event.stack_traces
                    assert row["module_hierarchy"] == event.module_hierarchy
                    assert row["delegate_backend_name"] == event.delegate_backend_name
                    theirs = event.debug_handles
                    assert row["debug_handles"] == (tuple(theirs) if isinstance(theirs, list) else theirs)
                if event.perf_data is not None:
                    raw[(key, int(row["event_index"]))].extend(event.perf_data.raw)
    assert len(summary) == len(raw)
    for _, row in summary.iterrows():
        values = np.array(raw[(row["event_block"], row["event_index"])])
        assert row["samples"] == len(values)
        assert_close(row["min_ms"], min(values), "min")
        assert_close(row["max_ms"], max(values), "max")
        assert_close(row["avg_ms"], np.mean(values), "avg")
        for column, q in STATS.items():
            assert_close(row[column], np.percentile(values, q), column)
        assert_close(row["std_ms"], np.std(values, ddof=1) if len(values) > 1 else 0.0, "std")
        if etrecord is not None:
            assert split_op_types(row["op_types"]) == events.set_index(["event_block", "event_index"]).loc[
                (row["event_block"], row["event_index"]), "op_types"
            ]


def test_inspector_dataframe_single_file_portable() -> None:
    model = real_model(PORTABLE)
    path = real_etdump(PORTABLE, iterations=5)
    theirs = inspector(path, model.etrecord).to_dataframe()
    ours = analyze_files([path], model.etrecord)
    assert ours["event_name"].tolist() == theirs["event_name"].tolist()  # all events are timed here
    assert ours["event_block"].tolist() == theirs["event_block_name"].tolist()
    for column in ("p10", "p50", "p90", "avg", "min", "max"):
        np.testing.assert_allclose(ours[f"{column}_ms"], theirs[f"{column} (ms)"].astype(float), rtol=REL, atol=0)
    assert [split_op_types(v) for v in ours["op_types"]] == [list(v) for v in theirs["op_types"]]


@pytest.mark.parametrize("kind", [PORTABLE, XNNPACK])
@pytest.mark.parametrize("runs", [1, 3])
def test_statistics_names_and_links_equal_inspector(kind: str, runs: int) -> None:
    model = real_model(kind)
    paths = [real_etdump(kind, iterations=6, run=k) for k in range(runs)]
    compare(paths, model.etrecord)
    compare(paths, None)


def test_xnnpack_runtime_emits_per_kernel_events() -> None:
    model = real_model(XNNPACK)
    events = load_events([real_etdump(XNNPACK, iterations=2)], model.etrecord)
    kernels = events[events.is_delegated_op]
    assert len(kernels) >= 3  # one per XNNPACK operator (fully connected, add...)
    assert set(kernels["delegate_backend_name"]) == {"XnnpackBackend"}
    call = events[events.event_name == "DELEGATE_CALL"].iloc[0]
    assert call["delegate_backend_name"] == "XnnpackBackend" and "aten.linear.default" in call["op_types"]


def test_debug_buffer_run_with_intermediate_outputs() -> None:
    model = real_model(PORTABLE)
    path = real_etdump(PORTABLE, iterations=3, debug_buffer_size=1 << 20)
    dump = parse_etdump(path.read_bytes())
    assert (dump.events.kind == 2).any()  # debug events are really there
    compare([path], model.etrecord)


SYNTHETIC = {
    "typical": typical_runs(iterations=3, layers=3),
    "same_name_other_signatures": [
        Run("Execute", [Profile("a", instr=0, end=5), Profile("b", instr=1, end=7)]),
        Run("Execute", [Profile("a", instr=0, end=9)]),
        Run("Execute", [Profile("a", instr=0, end=6), Profile("b", instr=1, end=8)]),
        Run("Execute", [Profile("a", instr=0, end=4)], bundled_input_index=2),
    ],
    "delegates": [
        Run("Execute", [
            Profile(dd_int=0, instr=0, start=10, end=20),
            Profile("named", dd_str="Conv #1", instr=0, start=7_047_228_134_123, end=7_047_228_134_777),
            Profile("DELEGATE_CALL", dd_str="", instr=0, end=3),
            Profile("DELEGATE_CALL", instr=0, end=4),
            Profile("DELEGATE_CALL", instr=1, end=5),
        ])
    ] * 3,
    "debug_events": [
        Run("Execute", [
            Debug(instr=0, int_value=7), Profile("op0", instr=0, end=11), Debug("only_debug", instr=1),
            Debug(instr=5, output=True), Profile("op2", instr=2, end=13), Debug("late", instr=0, int_value=8),
        ])
    ] * 2,
    "duplicates_and_interleaving": [
        Run("Execute", [Profile("a", instr=1, end=10), Profile("b", instr=2, end=11), Profile("a", instr=1, end=30), Profile("c", instr=1, end=3)])
    ] * 2,
    "wraparound": [Run("Execute", [Profile("w", instr=0, start=MAX_UINT32 - 100, end=50), Profile(dd_str="k", instr=0, start=MAX_UINT32 - 7, end=9)])],
    # (Inspector cannot read a block without a name at all; we accept it as "".)
    "missing_names_and_vectors": [Run("A", None), Run("N", [Profile(instr=3, end=5), Profile(chain=1, instr=3, end=6)]), Run("B", [Profile("x", end=1)])],
}


@pytest.mark.parametrize("case", sorted(SYNTHETIC))
def test_synthetic_corner_cases_equal_inspector(case: str) -> None:
    data = build_etdump(SYNTHETIC[case])
    theirs = inspector(data=data).event_blocks
    dump = parse_etdump(data)
    ours = group_blocks(dump)
    assert [(g.name or None, g.bundled_input_index) for g in ours] == [(b.name, b.bundled_input_index) for b in theirs]
    for group, block in zip(ours, theirs, strict=True):
        assert [e.name for e in group.events] == [e.name for e in block.events]
        assert [(e.delegate_debug_identifier, e.is_delegated_op, e.instruction_id) for e in group.events] == [
            (e.delegate_debug_identifier, e.is_delegated_op, e._instruction_id) for e in block.events
        ]
        matrix = durations_ms(dump, group)
        for col, index in enumerate(group.perf_events):
            assert matrix[:, col].tolist() == block.events[index].perf_data.raw  # bit for bit
        assert [e.has_perf for e in group.events] == [e.perf_data is not None for e in block.events]
